"""The "pulsar" sink: ``df.write.format("pulsar")`` and ``df.writeStream.format("pulsar")``.

Columns: ``value`` (binary or string) is the payload; without one, each row's columns are
written as a record (JSON, or Avro when the topic's schema is AVRO). ``__key`` (string),
``__topic`` (string; the ``topic`` option wins), ``__eventTime`` (timestamp) and
``__messageProperties`` (map<string,string>) fill the message metadata; the read-only columns of
the source (``__partition``, ``__messageId``, ``__publishTime``) are ignored, so a read can be
written back as it is.

Delivery: at least once (a task that fails is retried and sends again). Each task's producer
has a name derived from the query (or job) and the task's partition, and each row a sequence
id derived from the micro-batch id and the row's position, and batches are cut at fixed row
counts; a topic with deduplication enabled therefore drops whatever a replayed task or
micro-batch sends again: effectively once. Rows without a key go to the partitions of a
partitioned topic in fixed blocks of rows for the same reason (keyed rows go by the key's hash,
as the Java client routes them).

With ``pulsar.producer.transactional=true``: exactly once through transactions, each task's rows in
a transaction the driver commits with the job or micro-batch (:mod:`magnetar.spark.transactional`).

Batches are built here, not message by message in the producer: each partition's rows collect
in an open batch that is encoded in one go (:func:`magnetar.client.bulk.encode_batch_payload`)
and handed to the producer as one send (:func:`magnetar.client.bulk.send_batch`) once it holds
``batchingMaxMessages`` rows or ``batchingMaxBytes`` bytes, at every ``FLUSH_ROWS`` rows and
at the end; the cuts are the producer's own, so a replay cuts the same batches.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import BinaryType, MapType, StringType, StructType, TimestampType

from magnetar.protocol.enums import SchemaType
from magnetar.protocol.topic_name import TopicName
from magnetar.spark.batching import OpenBatch, fill, partitions_of
from magnetar.spark.broker import Broker
from magnetar.spark.options import ClientSettings, sink_options
from magnetar.spark.schemas import (
    META_NAMES,
    PulsarSchemaError,
    avro_encoder,
    check_record_fits,
    json_encoder,
    plain_converter,
    spark_to_avro,
)
from magnetar.spark.transactional import (
    TxnPlan,
    abort_micro_batch,
    abort_quietly,
    commit_micro_batch,
    end_transactions,
    open_transaction,
    plan_transactions,
    register_partitions,
    txns_of,
)

log = logging.getLogger("magnetar.spark")

#: sequence ids of micro-batch N are N * SEQUENCE_STRIDE + row position in the task
SEQUENCE_STRIDE = 1_000_000_000
#: a task waits for its receipts every this many rows (fixed points: batches stay the same on replay)
FLUSH_ROWS = 50_000
#: columns of the source that the sink ignores
_IGNORED = {"__partition", "__messageId", "__publishTime"}


class PulsarWriteError(RuntimeError):
    """Messages could not be written."""


@dataclass
class WritePlan:
    """What executors need to write (picklable)."""

    settings: ClientSettings
    topic: str | None
    #: "binary" or "string" for a value column; None: rows are records
    value: str | None
    record_columns: list[str]
    #: JSON definition derived from the record columns (registered on topics without a schema)
    derived: str | None
    #: Spark types of the record columns
    record_types: dict[str, Any] = field(default_factory=dict)
    producer: dict[str, Any] = field(default_factory=dict)
    job_id: str = ""
    streaming: bool = False
    columns: list[str] = field(default_factory=list)
    #: exactly once through transactions (None: at least once)
    txn: TxnPlan | None = None


class PulsarCommitMessage(WriterCommitMessage):
    """What a task wrote."""

    def __init__(self, partition: int, written: int, duplicates: int, producer_name: str,
                 txn: tuple[int, int] | None = None) -> None:
        self.partition = partition
        #: the task's transaction, committed by the driver (None without transactions)
        self.txn = txn
        self.written = written
        self.duplicates = duplicates
        self.producer_name = producer_name

    def __repr__(self) -> str:
        return f"PulsarCommitMessage(partition={self.partition}, written={self.written}, duplicates={self.duplicates})"


def plan_write(options: Any, schema: StructType, streaming: bool) -> WritePlan:
    """Check the options and the DataFrame's columns (on the driver, when the query is planned)."""
    opts = sink_options(options)
    types = {f.name: f.dataType for f in schema.fields}
    if opts.topic is None and "__topic" not in types:
        raise PulsarSchemaError("the pulsar sink needs a topic option (or a __topic column)")
    expect = {"__key": StringType(), "__topic": StringType(), "__eventTime": TimestampType(),
              "__messageProperties": MapType(StringType(), StringType())}
    for name, dtype in expect.items():
        if name in types and not _same_type(types[name], dtype):
            raise PulsarSchemaError(f"column {name} must be {dtype.simpleString()}, not {types[name].simpleString()}")
    value = None
    records: list[str] = []
    derived = None
    if "value" in types:
        vtype = types["value"]
        if isinstance(vtype, BinaryType):
            value = "binary"
        elif isinstance(vtype, StringType):
            value = "string"
        else:
            raise PulsarSchemaError(
                f"column value must be binary or string, not {vtype.simpleString()}"
                " (to write rows as JSON or Avro records, have no value column)"
            )
        extra = [c for c in types if c != "value" and c not in META_NAMES]
        if extra:
            raise PulsarSchemaError(
                f"column(s) {', '.join(extra)} would not be written: drop them, or drop the value column"
                " to write each row as a record"
            )
    else:
        records = [c for c in types if c not in META_NAMES]
        if not records:
            raise PulsarSchemaError("nothing to write: no value column and no other column")
        record_type = StructType([f for f in schema.fields if f.name in records])
        derived = json.dumps(spark_to_avro(record_type), separators=(",", ":"))
        if opts.topic is not None:
            _check_topic_schema(opts.settings, opts.topic, record_type)
    producer, settings, txn = plan_transactions(opts.producer, opts.settings, opts.checkpoint, streaming)
    return WritePlan(
        settings=settings, topic=opts.topic, value=value, record_columns=records, derived=derived,
        record_types={c: types[c] for c in records},
        producer=producer, job_id=uuid.uuid4().hex[:12], streaming=streaming,
        columns=[f.name for f in schema.fields], txn=txn,
    )


def _same_type(a: Any, b: Any) -> bool:
    if isinstance(b, MapType):
        return isinstance(a, MapType) and isinstance(a.keyType, StringType) and isinstance(a.valueType, StringType)
    return type(a) is type(b)


def _check_topic_schema(settings: ClientSettings, topic: str, record_type: StructType) -> None:
    """Refuse, at planning, a DataFrame that does not fit the topic's record schema."""

    broker = Broker(settings)
    try:
        info = broker.schema_of(topic)
    finally:
        broker.close()
    if info is None:
        return
    kind = int(info.type)
    if kind == SchemaType.AVRO:
        check_record_fits(json.loads(bytes(info.schema_data)), record_type)
    elif kind != SchemaType.JSON:
        raise PulsarSchemaError(
            f"topic {topic} has a {SchemaType(kind).name} schema: write a value column, not records"
        )


def _registry_schema(kind: int, name: str, definition: bytes, properties: dict[str, str]) -> Any:
    """A client Schema announcing exactly this definition (payloads are encoded by the sink)."""
    from magnetar.client.schema import Schema  # the client: 200-350 ms CPU, not at import

    class RegistrySchema(Schema):
        schema_type = SchemaType(kind)

        def definition(self) -> bytes:
            return definition

        def properties(self) -> dict[str, str]:
            return properties

        def encode(self, value: Any) -> bytes:
            return value

        def decode(self, data: bytes) -> Any:
            return data

    schema = RegistrySchema()
    schema.name = name
    return schema


class _Target:
    """The producers of one topic (one per partition) and how rows become payloads."""

    def __init__(self, writer: _TaskWriter, topic: str) -> None:
        from magnetar.client.schema import AvroCodec  # the client: 200-350 ms CPU, not at import

        plan = writer.plan
        client = writer.client
        self.encode: Any = None
        schema = None
        info = None

        parent = str(TopicName.parse(topic).partitioned_parent)
        info = writer.run(client.async_client.lookup.get_schema(parent))
        kind = int(info.type) if info is not None else None
        props = {kv.key: kv.value for kv in info.properties} if info is not None else {}
        if plan.value == "binary":
            self.encode = bytes
        elif plan.value == "string":
            self.encode = str.encode
            if kind == SchemaType.STRING:
                schema = _registry_schema(kind, info.name, bytes(info.schema_data), props)
        else:
            columns = [(c, plain_converter(plan.record_types[c])) for c in plan.record_columns]
            if kind is None or kind == SchemaType.NONE:
                schema = _registry_schema(SchemaType.JSON, TopicName.parse(parent).local_name, plan.derived.encode(), {})
                self.encode = json_encoder(columns)
            elif kind == SchemaType.JSON:
                schema = _registry_schema(kind, info.name, bytes(info.schema_data), props)
                self.encode = json_encoder(columns)
            elif kind == SchemaType.AVRO:
                avro = json.loads(bytes(info.schema_data))
                schema = _registry_schema(kind, info.name, bytes(info.schema_data), props)
                self.encode = avro_encoder(AvroCodec(avro), avro, columns)
            else:
                raise PulsarSchemaError(f"topic {topic} has a {SchemaType(kind).name} schema: write a value column, not records")
        partitions = client.get_topic_partitions(topic)
        self.partitioned = len(partitions) > 1 or partitions[0] != topic
        config = dict(batching_enabled=True, batching_max_messages=1000, batching_max_publish_delay_ms=3_600_000)
        config.update(plan.producer)
        config["max_pending_messages"] = 0
        self.batching = bool(config.get("batching_enabled", True))
        self.block = config["batching_max_messages"] if self.batching else 1
        self.producers = [
            client.create_producer(p, producer_name=writer.producer_name, schema=schema, **config) for p in partitions
        ]
        if writer.txn is not None:
            writer.run(register_partitions(writer.txn, partitions))
        self.max_bytes = self.producers[0].core.config.batching_max_allowed_size_in_bytes
        #: the rows of each producer not handed over yet
        self.open = [OpenBatch() for _ in self.producers]
        self._partition_of: dict[str, int] = {}

    def index_for(self, key: str | None, row: int) -> int:
        """The producer (index) of a row: by the key's hash, or by blocks of rows without a key."""
        n = len(self.producers)
        if n == 1:
            return 0
        if not key:
            return (row // self.block) % n
        index = self._partition_of.get(key)
        if index is None:
            from magnetar.client import partition_for_key  # the client: 200-350 ms CPU, not at import

            index = partition_for_key(key, n)
            if len(self._partition_of) < 100_000:
                self._partition_of[key] = index
        return index


class _TaskWriter:
    """One task's writing: producers, sequence ids, batches, receipts."""

    def __init__(self, plan: WritePlan) -> None:
        import asyncio

        from pyspark import TaskContext

        self.plan = plan
        ctx = TaskContext.get()
        self.partition = ctx.partitionId() if ctx is not None else 0
        base = 0
        owner = plan.job_id
        if plan.streaming and ctx is not None:
            query = ctx.getLocalProperty("sql.streaming.queryId")
            batch = ctx.getLocalProperty("streaming.sql.batchId")
            if query:
                owner = query
            if batch is not None:
                base = int(batch) * SEQUENCE_STRIDE
        self.base = base
        self.producer_name = f"spark-{owner}-{self.partition}"
        self.client = plan.settings.make()
        self._asyncio = asyncio
        self.targets: dict[str, _Target] = {}
        self.errors: list[Exception] = []
        self.duplicates = 0
        self.done = 0
        self._lock = threading.Lock()
        #: the task's transaction (plan.txn), its id on every send
        self.txn = open_transaction(self.client, plan.txn, base // SEQUENCE_STRIDE if plan.streaming else None)
        self.txn_id = None if self.txn is None else self.txn.id()

    def run(self, coro: Any) -> Any:
        fut = self._asyncio.run_coroutine_threadsafe(coro, self.client.loop)
        return fut.result(self.client.async_client.operation_timeout * 2 + 10)

    def target(self, topic: str) -> _Target:
        t = self.targets.get(topic)
        if t is None:
            t = self.targets[topic] = _Target(self, topic)
        return t

    def callback(self, error: Exception | None, msg_id: Any, count: int = 1) -> None:
        """(client's loop) ``count`` messages sent together got their receipt, or failed."""
        with self._lock:
            if error is not None:
                self.errors.append(error)
            else:
                self.done += count
                if msg_id is not None and msg_id.ledger_id < 0:
                    self.duplicates += count

    def _batch_callback(self, count: int) -> Any:
        callback = self.callback
        return lambda error, msg_id: callback(error, msg_id, count)

    def hand_over(self, target: _Target, index: int) -> None:
        """Send the open batch of one producer (one hop to the client's loop)."""
        batch = target.open[index]
        count = len(batch.values)
        if not count:
            return
        target.open[index] = OpenBatch()
        keys = batch.keys if any(k is not None for k in batch.keys) else None
        props = batch.props if any(batch.props) else None
        events = batch.events if any(batch.events) else None
        from magnetar.client.bulk import encode_batch_payload  # the client: 200-350 ms CPU, not at import

        payload = encode_batch_payload(batch.values, keys, props, events)
        core = target.producers[index].core
        done = self._batch_callback(count)
        self.client.loop.call_soon_threadsafe(
            self._send_batch, core, payload, count, batch.first_seq, batch.last_seq, done, self.txn_id
        )

    @staticmethod
    def _send_batch(core: Any, payload: bytes, count: int, first: int, last: int, done: Any, txn: Any) -> None:
        from magnetar.client.bulk import send_batch  # the client: 200-350 ms CPU, not at import

        try:
            send_batch(core, payload, count, first, last, done, txn)
        except Exception as exc:  # refused before it was queued (closed, fenced)
            done(exc, None)

    @staticmethod
    def _send_single(core: Any, content: bytes | None, callback: Any, options: dict[str, Any]) -> None:
        try:
            core.send_nowait(content, callback, **options)
        except Exception as exc:  # refused before it was queued
            callback(exc, None)

    def flush(self) -> None:
        """Hand over every open batch and wait for all receipts."""
        for t in self.targets.values():
            for i in range(len(t.producers)):
                self.hand_over(t, i)
        for t in self.targets.values():
            for p in t.producers:
                p.flush()
        if self.errors:
            raise PulsarWriteError(f"writing to pulsar failed: {self.errors[0]}") from self.errors[0]

    def write(self, batches: Iterator[Any]) -> PulsarCommitMessage:
        row = 0
        try:
            for batch in batches:
                if batch.num_rows:
                    row = self._write_rows(batch, row)
            self.flush()
        except BaseException:
            abort_quietly(self.txn)
            raise
        finally:
            self.client.close()
        return PulsarCommitMessage(self.partition, self.done, self.duplicates, self.producer_name, self.txn_id)

    def _columns(self, batch: Any) -> tuple[Any, ...]:
        """(topics, keys, properties, event times in microseconds, values) of an Arrow batch as lists."""
        import pyarrow as pa

        plan = self.plan
        col = {name: batch.column(i) for i, name in enumerate(batch.schema.names)}

        def listed(name: str, arrow_type: Any = None) -> list | None:
            column = col.get(name)
            if column is None or column.null_count == len(column):
                return None
            return (column if arrow_type is None else column.cast(arrow_type)).to_pylist()

        topics = col["__topic"].to_pylist() if plan.topic is None else None
        if plan.value is not None:
            values = col["value"].to_pylist()
        else:
            values = batch.select(plan.record_columns).to_pylist()
        return topics, listed("__key"), listed("__messageProperties"), listed("__eventTime", pa.int64()), values

    def _write_plain(self, batch: Any, row: int) -> int | None:
        """The rows of an Arrow batch of plain rows (a value column, the topic option, no
        properties or event times), routed and cut column by column; None: not plain rows."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        plan = self.plan
        if plan.topic is None or plan.value is None:
            return None
        names = batch.schema.names
        for name in ("__messageProperties", "__eventTime"):
            if name in names and batch.column(names.index(name)).null_count < batch.num_rows:
                return None
        value = batch.column(names.index("value"))
        if value.null_count:
            return None
        target = self.target(plan.topic)
        if value.type != pa.binary():
            value = value.cast(pa.binary())
        sizes = pc.binary_length(value).to_numpy(zero_copy_only=False).astype(np.int64)
        if not target.batching or sizes.max() >= target.max_bytes:
            return None
        keys = batch.column(names.index("__key")) if "__key" in names else None
        n = batch.num_rows
        # segments ending at the fixed flush points (every FLUSH_ROWS rows of the task)
        lo = 0
        while lo < n:
            hi = min(n, lo + FLUSH_ROWS - (row + lo) % FLUSH_ROWS)
            self._plain_segment(target, value.slice(lo, hi - lo), None if keys is None else keys.slice(lo, hi - lo),
                                sizes[lo:hi], row + lo)
            lo = hi
            if (row + lo) % FLUSH_ROWS == 0:
                self.flush()
        return row + n

    def _plain_segment(self, target: _Target, value: Any, keys: Any, sizes: Any, row: int) -> None:
        import numpy as np

        n = len(value)
        producers = len(target.producers)
        seqs = self.base + row + np.arange(n, dtype=np.int64)
        if producers == 1:
            groups = [(0, None)]
        else:
            parts = partitions_of(keys, n, producers, target.block, row, lambda k: target.index_for(k, 0))
            groups = [(p, np.flatnonzero(parts == p)) for p in range(producers)]
        for index, rows in groups:
            if rows is not None and not len(rows):
                continue
            values = (value if rows is None else value.take(rows)).to_pylist()
            if keys is None:
                key_list: list[str | None] = [None] * len(values)
            else:
                key_list = (keys if rows is None else keys.take(rows)).to_pylist()

            def cut(index: int = index) -> OpenBatch:
                self.hand_over(target, index)
                return target.open[index]

            target.open[index] = fill(target.open[index], values, key_list, sizes if rows is None else sizes[rows],
                                      seqs if rows is None else seqs[rows], target.block, target.max_bytes, cut)

    def _write_rows(self, batch: Any, row: int) -> int:
        """Collect the rows of one Arrow batch into the producers' open batches; the next row number."""
        plan = self.plan
        if row + batch.num_rows < SEQUENCE_STRIDE:
            end = self._write_plain(batch, row)
            if end is not None:
                return end
        topics, keys, props, events, values = self._columns(batch)
        raw = plan.value is not None
        topic = plan.topic
        target = None if topic is None else self.target(topic)
        for i in range(batch.num_rows):
            if topics is not None:
                topic = topics[i]
                if topic is None:
                    raise PulsarWriteError("a row has a null __topic and the sink has no topic option")
                target = self.target(topic)
            assert target is not None
            key = keys[i] if keys is not None else None
            value = values[i]
            content = (None if value is None else target.encode(value)) if raw else target.encode(value)
            prop = dict(props[i]) if props is not None and props[i] else None
            event = events[i] // 1000 if events is not None and events[i] is not None else None
            index = target.index_for(key, row)
            self._add(target, index, content, key, prop, event, self.base + row)
            row += 1
            if row >= SEQUENCE_STRIDE:
                raise PulsarWriteError(f"a task may write at most {SEQUENCE_STRIDE - 1} rows per micro-batch")
            if row % FLUSH_ROWS == 0:
                self.flush()
        return row

    def _add(self, target: _Target, index: int, content: bytes | None, key: str | None,
             prop: dict[str, str] | None, event: int | None, sequence_id: int) -> None:
        """One row into its producer's open batch (cut as the producer cuts its batches)."""
        size = 0 if content is None else len(content)
        if not target.batching or size >= target.max_bytes:
            # sent on its own, as the producer sends it (after what it collected before, in order)
            self.hand_over(target, index)
            options: dict[str, Any] = {"sequence_id": sequence_id}
            if key is not None:
                options["partition_key"] = key
            if prop:
                options["properties"] = prop
            if event is not None:
                options["event_timestamp"] = event
            if self.txn is not None:
                options["txn"] = self.txn.core
            core = target.producers[index].core
            self.client.loop.call_soon_threadsafe(self._send_single, core, content, self.callback, options)
            return
        batch = target.open[index]
        if batch.values and batch.size + size > target.max_bytes:
            self.hand_over(target, index)
            batch = target.open[index]
        batch.values.append(content)
        batch.keys.append(key)
        batch.props.append(prop)
        batch.events.append(event)
        if batch.first_seq < 0:
            batch.first_seq = sequence_id
        batch.last_seq = sequence_id
        batch.size += size
        if len(batch.values) >= target.block or batch.size >= target.max_bytes:
            self.hand_over(target, index)


def _summary(messages: list[Any], what: str) -> None:
    written = sum(m.written for m in messages if isinstance(m, PulsarCommitMessage))
    dups = sum(m.duplicates for m in messages if isinstance(m, PulsarCommitMessage))
    log.info("%s: %d messages acknowledged, %d of them dropped by the broker as duplicates", what, written, dups)


class PulsarBatchWriter(DataSourceArrowWriter):
    """``df.write.format("pulsar")``."""

    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan
        #: the commit messages of the last job (read by tests and tools)
        self.committed: list[Any] = []

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _TaskWriter(self.plan).write(iterator)

    def commit(self, messages: list[Any]) -> None:
        if self.plan.txn is not None:
            end_transactions(self.plan.settings, txns_of(messages), commit=True)
        _summary(messages, f"pulsar write {self.plan.job_id}")

    def abort(self, messages: list[Any]) -> None:
        if self.plan.txn is not None:
            end_transactions(self.plan.settings, txns_of(messages), commit=False)
            log.warning("pulsar write %s aborted: its transactions are aborted", self.plan.job_id)
            return
        log.warning("pulsar write %s aborted: messages already sent stay in the topic", self.plan.job_id)


class PulsarStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("pulsar")``."""

    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _TaskWriter(self.plan).write(iterator)

    def commit(self, messages: list[Any], batchId: int) -> None:  # noqa: N803 - Spark's name
        if self.plan.txn is not None:
            commit_micro_batch(self.plan.settings, self.plan.txn, batchId, messages)
        _summary(messages, f"pulsar sink, micro-batch {batchId}")

    def abort(self, messages: list[Any], batchId: int) -> None:  # noqa: N803
        if self.plan.txn is not None:
            abort_micro_batch(self.plan.settings, self.plan.txn, batchId, messages)
        log.warning("pulsar sink: micro-batch %d aborted; it is sent again when replayed", batchId)
