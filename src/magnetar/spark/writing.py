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
from magnetar.spark.options import ClientSettings, sink_options
from magnetar.spark.schemas import (
    META_NAMES,
    PulsarSchemaError,
    check_record_fits,
    json_default,
    plain_converter,
    spark_to_avro,
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


class PulsarCommitMessage(WriterCommitMessage):
    """What a task wrote."""

    def __init__(self, partition: int, written: int, duplicates: int, producer_name: str) -> None:
        self.partition = partition
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
    return WritePlan(
        settings=opts.settings, topic=opts.topic, value=value, record_columns=records, derived=derived,
        record_types={c: types[c] for c in records},
        producer=dict(opts.producer), job_id=uuid.uuid4().hex[:12], streaming=streaming,
        columns=[f.name for f in schema.fields],
    )


def _same_type(a: Any, b: Any) -> bool:
    if isinstance(b, MapType):
        return isinstance(a, MapType) and isinstance(a.keyType, StringType) and isinstance(a.valueType, StringType)
    return type(a) is type(b)


def _check_topic_schema(settings: ClientSettings, topic: str, record_type: StructType) -> None:
    """Refuse, at planning, a DataFrame that does not fit the topic's record schema."""
    from magnetar.spark.broker import Broker

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
    from magnetar.client.schema import Schema

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
        from magnetar.client.schema import AvroCodec

        plan = writer.plan
        client = writer.client
        self.encode: Any = None
        schema = None
        info = None
        from magnetar.protocol.topic_name import TopicName

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
                self.encode = _json_encoder(columns)
            elif kind == SchemaType.JSON:
                schema = _registry_schema(kind, info.name, bytes(info.schema_data), props)
                self.encode = _json_encoder(columns)
            elif kind == SchemaType.AVRO:
                avro = json.loads(bytes(info.schema_data))
                schema = _registry_schema(kind, info.name, bytes(info.schema_data), props)
                self.encode = _avro_encoder(AvroCodec(avro), avro, columns)
            else:
                raise PulsarSchemaError(f"topic {topic} has a {SchemaType(kind).name} schema: write a value column, not records")
        partitions = client.get_topic_partitions(topic)
        self.partitioned = len(partitions) > 1 or partitions[0] != topic
        config = dict(batching_enabled=True, batching_max_messages=1000, batching_max_publish_delay_ms=3_600_000)
        config.update(plan.producer)
        config["max_pending_messages"] = 0
        self.block = config["batching_max_messages"] if config.get("batching_enabled", True) else 1
        self.producers = [
            client.create_producer(p, producer_name=writer.producer_name, schema=schema, **config) for p in partitions
        ]

    def producer_for(self, key: str | None, row: int) -> Any:
        producers = self.producers
        if len(producers) == 1:
            return producers[0]
        from magnetar.client import partition_for_key

        if key:
            return producers[partition_for_key(key, len(producers))]
        return producers[(row // self.block) % len(producers)]


def _json_encoder(convs: list[tuple[str, Any]]) -> Any:
    dumps = json.dumps

    def encode(row: dict) -> bytes:
        return dumps({c: conv(row.get(c)) for c, conv in convs}, separators=(",", ":"), default=json_default).encode()

    return encode


def _avro_encoder(codec: Any, avro: dict, convs: list[tuple[str, Any]]) -> Any:
    names = {f["name"] for f in avro["fields"]}
    present = [(c, conv) for c, conv in convs if c in names]
    columns = {c for c, _ in convs}
    # fields without a column: null when nullable (the codec uses the default of the others)
    nulls = {
        f["name"]: None for f in avro["fields"]
        if f["name"] not in columns and isinstance(f["type"], list) and "null" in f["type"]
    }

    def encode(row: dict) -> bytes:
        return codec.encode({**nulls, **{c: conv(row[c]) for c, conv in present}})

    return encode


class _TaskWriter:
    """One task's writing: producers, sequence ids, receipts."""

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

    def run(self, coro: Any) -> Any:
        fut = self._asyncio.run_coroutine_threadsafe(coro, self.client.loop)
        return fut.result(self.client.async_client.operation_timeout * 2 + 10)

    def target(self, topic: str) -> _Target:
        t = self.targets.get(topic)
        if t is None:
            t = self.targets[topic] = _Target(self, topic)
        return t

    def callback(self, error: Exception | None, msg_id: Any) -> None:
        with self._lock:
            if error is not None:
                self.errors.append(error)
            else:
                self.done += 1
                if msg_id is not None and msg_id.ledger_id < 0:
                    self.duplicates += 1

    def flush(self) -> None:
        for t in self.targets.values():
            for p in t.producers:
                p.flush()
        if self.errors:
            raise PulsarWriteError(f"writing to pulsar failed: {self.errors[0]}") from self.errors[0]

    def write(self, batches: Iterator[Any]) -> PulsarCommitMessage:
        import pyarrow as pa

        plan = self.plan
        row = 0
        default_topic = plan.topic
        callback = self.callback
        try:
            for batch in batches:
                n = batch.num_rows
                if n == 0:
                    continue
                names = batch.schema.names
                col = {name: batch.column(i) for i, name in enumerate(names)}
                topics = col["__topic"].to_pylist() if default_topic is None else None
                keys = col["__key"].to_pylist() if "__key" in col else None
                props = col["__messageProperties"].to_pylist() if "__messageProperties" in col else None
                events = None
                if "__eventTime" in col:
                    events = col["__eventTime"].cast(pa.int64()).to_pylist()
                if plan.value is not None:
                    values = col["value"].to_pylist()
                else:
                    values = batch.select(plan.record_columns).to_pylist()
                for i in range(n):
                    topic = default_topic if topics is None else topics[i]
                    if topic is None:
                        raise PulsarWriteError("a row has a null __topic and the sink has no topic option")
                    target = self.target(topic)
                    key = keys[i] if keys is not None else None
                    options: dict[str, Any] = {"sequence_id": self.base + row}
                    if key is not None:
                        options["partition_key"] = key
                    if props is not None and props[i]:
                        options["properties"] = dict(props[i])
                    if events is not None and events[i] is not None:
                        options["event_timestamp"] = events[i] // 1000
                    value = values[i]
                    if plan.value is not None:
                        content = None if value is None else target.encode(value)
                    else:
                        content = target.encode(value)
                    target.producer_for(key, row).send_async(content, callback, **options)
                    row += 1
                    if row >= SEQUENCE_STRIDE:
                        raise PulsarWriteError(f"a task may write at most {SEQUENCE_STRIDE - 1} rows per micro-batch")
                    if row % FLUSH_ROWS == 0:
                        self.flush()
            self.flush()
        finally:
            self.client.close()
        return PulsarCommitMessage(self.partition, self.done, self.duplicates, self.producer_name)


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
        _summary(messages, f"pulsar write {self.plan.job_id}")

    def abort(self, messages: list[Any]) -> None:
        log.warning("pulsar write %s aborted: messages already sent stay in the topic", self.plan.job_id)


class PulsarStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("pulsar")``."""

    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _TaskWriter(self.plan).write(iterator)

    def commit(self, messages: list[Any], batchId: int) -> None:  # noqa: N803 - Spark's name
        _summary(messages, f"pulsar sink, micro-batch {batchId}")

    def abort(self, messages: list[Any], batchId: int) -> None:  # noqa: N803
        log.warning("pulsar sink: micro-batch %d aborted; it is sent again when replayed", batchId)
