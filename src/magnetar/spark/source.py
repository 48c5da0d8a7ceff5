"""The "pulsar" data source: batch reads, streaming reads, and the planning both need.

Planning happens on the driver: the topics are listed, their schema read from the registry
(:meth:`PulsarDataSource.schema`), start and end positions resolved, and one task planned per
topic-partition range (:mod:`magnetar.spark.reading` does the reading on executors). The
reader objects hold only picklable settings; the streaming reader's client lives in a lazily
created :class:`Broker` that pickling leaves behind.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from magnetar.protocol.topic_name import TopicName
from magnetar.spark.broker import Broker
from magnetar.spark.options import LATEST, PulsarOptionError, SourceOptions, source_options
from magnetar.spark.positions import EARLIEST, Position, dump_offsets, load_offsets, parse
from magnetar.spark.reading import PulsarPartition, ReadPlan, ranges, read_range
from magnetar.spark.schemas import PulsarSchemaError, ValueFormat, format_of

log = logging.getLogger("magnetar.spark")


class PulsarDataSource(DataSource):
    """``spark.read.format("pulsar")``, ``readStream``, ``write`` and ``writeStream`` (see docs/SPARK.md)."""

    @classmethod
    def name(cls) -> str:
        return "pulsar"

    # -- reading ---------------------------------------------------------------------------------
    def _value_format(self) -> ValueFormat:
        fmt = self.__dict__.get("_fmt")
        if fmt is None:
            fmt = self._fmt = resolve_format(source_options(self.options, streaming=None))
        return fmt

    def schema(self) -> StructType:
        return self._value_format().spark_schema()

    def _check_schema(self, schema: StructType, fmt: ValueFormat) -> None:
        expected = fmt.spark_schema()
        if schema != expected:
            raise PulsarSchemaError(
                "the pulsar source's columns come from the topic's schema; do not give one with .schema()"
                f" (expected {expected.simpleString()}, got {schema.simpleString()})"
            )

    def reader(self, schema: StructType) -> DataSourceReader:
        opts = source_options(self.options, streaming=False)
        fmt = self._value_format()
        self._check_schema(schema, fmt)
        return PulsarBatchReader(opts, fmt, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        opts = source_options(self.options, streaming=True)
        fmt = self._value_format()
        self._check_schema(schema, fmt)
        return PulsarStreamReader(opts, fmt, schema)

    # -- writing ---------------------------------------------------------------------------------
    def writer(self, schema: StructType, overwrite: bool) -> Any:
        # the sink, for writes only: 5 ms CPU (python -X importtime)
        from magnetar.spark.writing import PulsarBatchWriter, plan_write

        return PulsarBatchWriter(plan_write(self.options, schema, streaming=False))

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:
        # the sink, for writes only: 5 ms CPU (python -X importtime)
        from magnetar.spark.writing import PulsarStreamWriter, plan_write

        return PulsarStreamWriter(plan_write(self.options, schema, streaming=True))


def resolve_format(opts: SourceOptions) -> ValueFormat:
    """The value format of the topics read, from the schema registry."""
    broker = Broker(opts.settings, opts.poll_timeout_ms, opts.subscription_prefix)
    try:
        if opts.pattern is not None:
            parents = sorted({str(TopicName.parse(tp).partitioned_parent) for tp in broker.discover(opts)})
        else:
            parents = list(opts.topics)
        found: dict[str, Any] = {}
        for topic in parents:
            found[topic] = broker.schema_of(topic)
    finally:
        broker.close()
    formats = {topic: format_of(info) for topic, info in found.items()}
    distinct = {(f.schema_type, f.definition) for f in formats.values()}
    if len(distinct) <= 1:
        return next(iter(formats.values())) if formats else ValueFormat()
    if opts.allow_different_schemas:
        return ValueFormat(description="topics with different schemas: values as bytes")
    listing = "; ".join(f"{t}: {f.description}" for t, f in formats.items())
    raise PulsarSchemaError(
        f"the topics read have different schemas ({listing}); read them separately, or set"
        " allowDifferentTopicSchemas=true to read every value as bytes"
    )


def _plan(opts: SourceOptions, fmt: ValueFormat, schema: StructType) -> ReadPlan:
    return ReadPlan(
        settings=opts.settings, fmt=fmt, schema=schema, fail_on_data_loss=opts.fail_on_data_loss,
        poll_timeout_ms=opts.poll_timeout_ms, reader=dict(opts.reader), prefix=opts.subscription_prefix,
    )


def _per_partition(option: str, spec: dict[str, Any], tps: list[str], default: Any) -> dict[str, Any]:
    """A JSON offsets option spread over topic-partitions (a partitioned topic's name: all of them)."""
    out = {}
    for tp in tps:
        value = spec.get(tp)
        if value is None:
            parent = str(TopicName.parse(tp).partitioned_parent)
            value = spec.get(parent)
            if isinstance(value, Position) and not value.is_earliest and parent != tp:
                raise PulsarOptionError(
                    f"option {option}: {parent} is partitioned; give a position per partition ({tp}, ...)"
                )
        out[tp] = default if value is None else value
    return out


def resolve_starts(
    broker: Broker, opts: SourceOptions, tps: list[str], streaming: bool = False
) -> tuple[dict[str, Position], dict[str, bool]]:
    """(start position, whether a gap there is data loss) of each topic-partition; those a JSON
    ``startingOffsets`` leaves out start at the default (batch: earliest, streaming: latest)."""
    if not tps:
        return {}, {}
    if opts.starting_time is not None:
        return broker.at_time(tps, opts.starting_time), dict.fromkeys(tps, False)
    spec = opts.starting
    if spec == "earliest":
        return broker.earliest(tps), dict.fromkeys(tps, False)
    if spec == LATEST:
        return broker.ends(tps), dict.fromkeys(tps, False)
    wanted = _per_partition("startingOffsets", spec, tps, LATEST if streaming else EARLIEST)
    earliest = [tp for tp, v in wanted.items() if isinstance(v, Position) and v.is_earliest]
    latest = [tp for tp, v in wanted.items() if v == LATEST]
    resolved = {**broker.earliest(earliest), **broker.ends(latest)}
    starts = {tp: resolved.get(tp, v) for tp, v in wanted.items()}
    return starts, {tp: tp not in resolved for tp in tps}


def resolve_ends(broker: Broker, opts: SourceOptions, tps: list[str]) -> dict[str, Position]:
    """End position (exclusive) of each topic-partition for a batch read."""
    if not tps:
        return {}
    if opts.ending_time is not None:
        return broker.at_time(tps, opts.ending_time)
    ends = broker.ends(tps)
    if opts.ending == LATEST:
        return ends
    wanted = _per_partition("endingOffsets", opts.ending, tps, LATEST)
    return {tp: ends[tp] if v == LATEST else v for tp, v in wanted.items()}


class PulsarBatchReader(DataSourceReader):
    """Batch read: every topic-partition from its start to the end fixed when the query is planned."""

    def __init__(self, opts: SourceOptions, fmt: ValueFormat, schema: StructType) -> None:
        self.opts = opts
        self.plan = _plan(opts, fmt, schema)

    def partitions(self) -> list[InputPartition]:
        opts = self.opts
        broker = Broker(opts.settings, opts.poll_timeout_ms, opts.subscription_prefix)
        try:
            tps = broker.discover(opts)
            starts, checks = resolve_starts(broker, opts, tps)
            ends = resolve_ends(broker, opts, tps)
        finally:
            broker.close()
        out: list[InputPartition] = []
        for tp in tps:
            out.extend(ranges(tp, starts[tp], ends[tp], checks[tp], opts.split_entries))
        return out

    def read(self, partition: InputPartition) -> Any:
        if not isinstance(partition, PulsarPartition):
            return iter(())
        return read_range(self.plan, partition)


def allocate(budget: int, backlogs: dict[str, int]) -> dict[str, int]:
    """Split a budget of entries over topic-partitions in proportion to their backlogs."""
    total = sum(backlogs.values())
    if total <= budget:
        return dict(backlogs)
    shares = {tp: budget * b // total for tp, b in backlogs.items()}
    rest = budget - sum(shares.values())
    for tp in sorted(backlogs, key=lambda t: (-(backlogs[t] * budget % total), t)):
        if rest <= 0:
            break
        if shares[tp] < backlogs[tp]:
            shares[tp] += 1
            rest -= 1
    return shares


class PulsarStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streaming read: offsets are positions per topic-partition (see magnetar.spark.positions)."""

    def __init__(self, opts: SourceOptions, fmt: ValueFormat, schema: StructType) -> None:
        self.opts = opts
        self.plan = _plan(opts, fmt, schema)
        self._broker: Broker | None = None
        #: Trigger.AvailableNow: the ends recorded when the query started
        self._target: dict[str, Position] | None = None
        if opts.subscription_prefix is None:
            # a recognisable name for the readers of this query (not part of any offset)
            self.plan.prefix = f"spark-{uuid.uuid4().hex[:8]}"

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_broker"] = None
        return state

    @property
    def broker(self) -> Broker:
        if self._broker is None:
            self._broker = Broker(self.opts.settings, self.opts.poll_timeout_ms, self.plan.prefix)
        return self._broker

    def initialOffset(self) -> dict:
        broker = self.broker
        tps = broker.discover(self.opts)
        starts, _ = resolve_starts(broker, self.opts, tps, streaming=True)
        if self.opts.predefined_subscription and tps:
            # created (if need be) and moved to where the query starts: retention keeps the rest
            broker.advance_subscription(self.opts.predefined_subscription, starts)
        return dump_offsets(starts)

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.opts.max_entries_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        broker = self.broker
        self._target = broker.ends(broker.discover(self.opts))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        broker = self.broker
        known = load_offsets(start)
        tps = broker.discover(self.opts)
        for gone in sorted(set(known) - set(tps)):
            log.warning("topic-partition %s is no longer there (deleted?): no longer read", gone)
        target = self._target
        if target is not None:
            tps = [tp for tp in tps if tp in target]
        ends = broker.ends(tps)
        if target is not None:
            ends = {tp: min(ends[tp], target[tp]) for tp in tps}
        new = [tp for tp in tps if tp not in known]
        new_starts = broker.earliest(new) if new else {}
        starts = {tp: known.get(tp) or new_starts[tp] for tp in tps}
        avail = {tp: max(starts[tp], ends[tp]) for tp in tps}
        if isinstance(limit, ReadMaxRows):
            backlog = {tp: starts[tp].entries_until(avail[tp]) for tp in tps}
            shares = allocate(limit.max_rows, backlog)
            avail = {tp: min(avail[tp], starts[tp].advance(shares[tp])) for tp in tps}
        offset = dump_offsets(avail)
        if new_starts:
            # where partitions seen for the first time start (the previous offset does not have them)
            offset["new"] = {tp: str(new_starts[tp]) for tp in sorted(new_starts)}
        return offset

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        begin = load_offsets(start)
        finish = load_offsets(end)
        new = {tp: parse(text) for tp, text in end.get("new", {}).items()}
        out: list[InputPartition] = []
        for tp in sorted(finish):
            s = begin.get(tp) or new.get(tp) or EARLIEST
            out.extend(ranges(tp, s, finish[tp], True, self.opts.split_entries))
        return out

    def read(self, partition: InputPartition) -> Any:
        if not isinstance(partition, PulsarPartition):
            return iter(())
        return read_range(self.plan, partition)

    def commit(self, end: dict) -> None:
        sub = self.opts.predefined_subscription
        if sub:
            self.broker.advance_subscription(sub, load_offsets(end))

    def stop(self) -> None:
        if self._broker is not None:
            self._broker.close()
            self._broker = None
