"""Reading one range of one topic-partition into Arrow record batches (runs on executors).

A task opens its own client and an entry reader (:class:`magnetar.client.bulk.EntryReader`) at
the range's start: whole entries cross from the client's loop, a few thousand messages per hop,
with no object per message. Entries are cut at the range's (exclusive) end, and about every
``ROWS_PER_BATCH`` messages become one ``pyarrow.RecordBatch`` of the query's schema: the
batches are split into column lists in one loop (:class:`magnetar.client.bulk.MessageColumns`)
and every Arrow array is built from a list, or repeated from one value, in one call.

Lost data is noticed where it shows: entry ids of a topic are consecutive, so the first message
read must be in the entry the range starts at, and each new entry must follow the previous one.
A message beyond that means the entries in between were deleted (retention, TTL) before this
query read them: an error naming the lost range when ``failOnDataLoss`` is true, a warning and
the rest of the range otherwise.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import StructType

from magnetar.protocol.message_id_bytes import message_id_prefix, message_id_suffixes
from magnetar.spark.options import ClientSettings
from magnetar.spark.positions import Position, parse
from magnetar.spark.schemas import META_NAMES, ValueDecoder, ValueFormat

log = logging.getLogger("magnetar.spark")

#: rows per Arrow record batch handed to Spark
ROWS_PER_BATCH = 10_000
#: messages (in whole entries) taken from the reader's queue per hop to the client's loop
FETCH_MESSAGES = 5_000
#: receiver queue of the readers (unless pulsar.reader.receiverQueueSize says otherwise)
RECEIVER_QUEUE = 10_000


class PulsarReadError(RuntimeError):
    """Reading a topic-partition failed."""


class DataLossError(PulsarReadError):
    """Messages a query was to read were deleted before it read them (failOnDataLoss=true)."""


class PulsarPartition(InputPartition):
    """One range ``[start, end)`` of one topic-partition: one Spark task."""

    def __init__(self, topic: str, partition: int, start: Position, end: Position, check_loss: bool) -> None:
        self.topic = topic
        self.partition = partition
        self.start = str(start)
        self.end = str(end)
        self.check_loss = check_loss

    def __repr__(self) -> str:
        return f"PulsarPartition({self.topic} [{self.start}, {self.end}))"


@dataclass
class ReadPlan:
    """What an executor needs to read (picklable)."""

    settings: ClientSettings
    fmt: ValueFormat
    schema: StructType
    fail_on_data_loss: bool
    poll_timeout_ms: int
    reader: dict[str, Any] = field(default_factory=dict)
    prefix: str | None = None


def ranges(topic: str, start: Position, end: Position, check_loss: bool, split_entries: int) -> list[PulsarPartition]:
    """The tasks reading ``[start, end)`` of a topic-partition: one per ``split_entries`` entries."""
    # on the executors' read path: 0-6 ms CPU (the protocol package, python -X importtime)
    from magnetar.protocol.topic_name import TopicName

    index = TopicName.parse(topic).partition_index
    if not start.is_earliest and start >= end:
        return []
    out = []
    if not start.is_earliest:
        while start.entries_until(end) > split_entries:
            nxt = start.advance(split_entries)
            out.append(PulsarPartition(topic, index, start, nxt, check_loss))
            start, check_loss = nxt, True
    out.append(PulsarPartition(topic, index, start, end, check_loss))
    return out


async def _fetch(reader: Any, n: int, timeout_ms: int) -> list[Any]:
    """Entries holding up to ``n`` messages (waiting up to ``timeout_ms`` for the first)."""
    entries = reader.take(n)
    if not entries:
        entries = await reader.receive(n, timeout_ms)
    # a reader acknowledges what it read, as the Java client's readers do: the broker counts
    # unacknowledged messages of every consumer (readers included) against its limits
    reader.acknowledge_cumulative(entries[-1])
    return entries


class _Batcher:
    """Builds the Arrow record batches of one topic-partition from whole entries."""

    def __init__(self, plan: ReadPlan, topic: str, partition: int, fetch_schema: Any) -> None:
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        self.pa = pa
        self.arrow_schema = to_arrow_schema(plan.schema, timezone="UTC")
        names = self.arrow_schema.names
        if names[-len(META_NAMES):] != META_NAMES:
            raise PulsarReadError(f"unexpected schema for the pulsar source: {names}")
        n_value = len(names) - len(META_NAMES)
        self.value_types = [self.arrow_schema.field(i).type for i in range(n_value)]
        self.decoder = ValueDecoder(plan.fmt, self.value_types, fetch_schema)
        self.with_versions = plan.fmt.is_record
        self.topic = topic
        self.partition = partition
        self.ts_type = self.arrow_schema.field("__publishTime").type
        self.map_type = self.arrow_schema.field("__messageProperties").type
        self.topic_value = pa.scalar(topic, pa.string())
        self.partition_value = pa.scalar(partition, pa.int32())

    def build(self, entries: list[Any]) -> Any:
        """One record batch of the messages of these entries (:class:`magnetar.client.bulk.Entry`)."""
        # the client, when a query runs, not when the module loads: 200-350 ms CPU (python -X importtime)
        from magnetar.client.bulk import MessageColumns

        pa = self.pa
        import pyarrow.compute as pc

        cols = MessageColumns()
        ids: list[bytes] = []
        publish_ms: list[int] = []
        versions: list[bytes] | None = [] if self.with_versions else None
        starts: list[tuple[int, Any]] = []
        partition = self.partition
        for entry in entries:
            row = len(cols)
            added = cols.add(entry)
            if not added:
                continue
            starts.append((row, entry))
            prefix = message_id_prefix(entry.ledger_id, entry.entry_id, partition)
            if entry.batched:
                table = message_id_suffixes(entry.count)
                if added == entry.count:
                    ids.extend([prefix + suffix for suffix in table])
                else:
                    ids.extend([prefix + table[i] for i in cols.batch_indexes[row:]])
            else:
                ids.append(prefix)
            publish_ms.extend([entry.meta.publish_time] * added)
            if versions is not None:
                versions.extend([entry.meta.schema_version] * added)
        n = len(cols)
        value_cols = self.decoder.columns(cols.payloads, versions, lambda i: self._where(starts, cols, i))
        event = pa.array(cols.event_times, pa.int64())
        event = pc.if_else(pc.equal(event, 0), pa.scalar(None, pa.int64()), event)
        ts = self.ts_type
        columns = [
            *value_cols,
            pa.array(cols.keys, pa.string()),
            pa.repeat(self.topic_value, n),
            pa.repeat(self.partition_value, n),
            pa.array(ids, pa.binary()),
            pc.multiply(pa.array(publish_ms, pa.int64()), 1000).cast(ts),
            pc.multiply(event, 1000).cast(ts),
            self._properties(cols.properties, n),
        ]
        return pa.RecordBatch.from_arrays(columns, schema=self.arrow_schema)

    def _properties(self, props: list[Any] | None, n: int) -> Any:
        """The map column: empty maps unless some message has properties."""
        pa = self.pa
        prop_keys: list[str] = []
        prop_values: list[str] = []
        if props is None:
            offsets = pa.array([0] * (n + 1), pa.int32())
        else:
            counts = [0]
            for p in props:
                if p:
                    prop_keys.extend(p.keys())
                    prop_values.extend(p.values())
                counts.append(len(prop_keys))
            offsets = pa.array(counts, pa.int32())
        out = pa.MapArray.from_arrays(offsets, pa.array(prop_keys, pa.string()), pa.array(prop_values, pa.string()))
        return out if out.type == self.map_type else out.cast(self.map_type)

    def _where(self, starts: list[tuple[int, Any]], cols: Any, i: int) -> str:
        """Which message row ``i`` is (for errors)."""
        entry = next(e for row, e in reversed(starts) if row <= i)
        return f"message {entry.ledger_id}:{entry.entry_id}:{cols.batch_indexes[i]} of {self.topic}"


def read_range(plan: ReadPlan, part: PulsarPartition) -> Iterator[Any]:
    """The Arrow record batches of the messages in ``[part.start, part.end)``."""
    # the client, when a query runs, not when the module loads: 200-350 ms CPU (python -X importtime)
    from magnetar.client import MessageId, Timeout
    from magnetar.client.bulk import open_entry_reader
    from magnetar.protocol.topic_name import TopicName

    start = parse(part.start)
    end = parse(part.end)
    if not start.is_earliest and start >= end:
        return
    topic = part.topic
    client = plan.settings.make()
    reader: Any = None
    try:
        core = client.async_client
        loop = client.loop
        op_timeout = core.operation_timeout

        def run(coro: Any, timeout: float | None = None) -> Any:
            return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout if timeout is not None else op_timeout * 2 + 10)

        parent = str(TopicName.parse(topic).partitioned_parent)

        def fetch_schema(version: bytes) -> Any:
            return run(core.lookup.get_schema(parent, version))

        batcher = _Batcher(plan, topic, part.partition, fetch_schema)
        kwargs = dict(plan.reader)
        kwargs.setdefault("receiver_queue_size", RECEIVER_QUEUE)
        if plan.prefix:
            kwargs.setdefault("subscription_role_prefix", plan.prefix)
        start_id = MessageId.earliest if start.is_earliest else MessageId(start.ledger, start.entry, start.batch)
        reader = run(open_entry_reader(core, topic, start_id, inclusive=True, **kwargs))
        # the entry the next new entry must be (None: no check)
        expect: tuple[int, int] | None = (start.ledger, start.entry) if part.check_loss and not start.is_earliest else None
        pending: list[Any] = []
        pending_rows = 0
        last_seen: Any = None
        done = False
        wait_ms = plan.poll_timeout_ms
        while not done:
            try:
                entries = run(_fetch(reader, FETCH_MESSAGES, wait_ms), wait_ms / 1000 + op_timeout + 10)
            except Timeout:
                where = f"after {last_seen}" if last_seen is not None else f"from {start}"
                raise PulsarReadError(
                    f"no message from {topic} within pollTimeoutMs={wait_ms} ms while reading {where} up to {end}"
                ) from None
            cut, done = _cut_at_end(entries, end)
            if expect is not None:
                # every new entry must follow the previous one (the first: the range's start)
                expect = _check_continuity(plan, topic, entries[: max(cut, 1)], expect, end)
            if cut:
                pending.extend(entries[:cut])
                pending_rows += sum(e.stop - e.first for e in entries[:cut])
                last = entries[cut - 1]
                last_seen = f"{last.ledger_id}:{last.entry_id}"
            if pending_rows >= ROWS_PER_BATCH or (done and pending):
                batch = batcher.build(pending)
                pending = []
                pending_rows = 0
                if batch.num_rows:  # (entries whose messages were all compacted out or acknowledged)
                    yield batch
    finally:
        try:
            if reader is not None:
                run(reader.close())
        finally:
            client.close()


def _cut_at_end(entries: list[Any], end: Position) -> tuple[int, bool]:
    """(how many of these entries hold messages before the range's end, whether the end is reached).

    The entry at the end position is cut there (its ``stop``); reaching the end also means the
    next message after the last entry is at or past it.
    """
    end_entry = (end.ledger, end.entry)
    for i, entry in enumerate(entries):
        key = (entry.ledger_id, entry.entry_id)
        if key < end_entry:
            continue
        if key == end_entry and end.batch >= 0 and entry.batched:
            entry.stop = min(entry.stop, end.batch)
            return (i + 1, True) if entry.stop > entry.first else (i, True)
        return i, True
    last = entries[-1]
    return len(entries), (last.ledger_id, last.entry_id + 1, -1) >= tuple(end)


def _check_continuity(plan: ReadPlan, topic: str, seen: list[Any], expect: tuple[int, int], end: Position) -> tuple[int, int]:
    """Check that the entries ``seen`` follow ``expect`` with none missing; the next expected entry."""
    first, last = seen[0], seen[-1]
    if (first.ledger_id == last.ledger_id == expect[0] and first.entry_id <= expect[1]
            and last.entry_id - first.entry_id + 1 == len(seen) and not first.chunk_ids):
        # one ledger, no entry missing (the common case, checked without a loop)
        return (expect[0], max(expect[1], last.entry_id + 1))
    for entry in seen:
        key = (entry.ledger_id, entry.entry_id)
        if key < expect:
            continue
        if key > expect and entry.first_entry() > expect:
            _lost(plan, topic, expect, entry.first_entry(), end)
        expect = (entry.ledger_id, entry.entry_id + 1)
    return expect


def _lost(plan: ReadPlan, topic: str, expect: tuple[int, int], here: tuple[int, int], end: Position) -> None:
    """Entries from ``expect`` to before ``here`` are gone: fail or warn."""
    ledger, first = expect
    if here[0] != ledger:
        what = f"entries from {ledger}:{first} on (the topic's ledger is now {here[0]}: was it deleted and created again?)"
    else:
        last = min(here[1], end.entry + (1 if end.batch >= 0 else 0)) - 1
        count = last - first + 1
        what = f"entries {ledger}:{first}..{ledger}:{last} ({count} entr{'y' if count == 1 else 'ies'})"
    text = f"data loss in {topic}: {what} were deleted (retention or TTL) before this query read them"
    if plan.fail_on_data_loss:
        raise DataLossError(text + "; set failOnDataLoss=false to skip lost data and go on")
    log.warning("%s; skipped (failOnDataLoss=false)", text)
