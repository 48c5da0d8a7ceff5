"""Reading one range of one topic-partition into Arrow record batches (runs on executors).

A task opens its own client and a non-durable reader at the range's start, takes messages from
the reader's queue in bulk (one hop to the client's event loop per few thousand messages),
and turns every ``ROWS_PER_BATCH`` messages into one ``pyarrow.RecordBatch`` of the query's
schema. It stops at the message right before the range's (exclusive) end.

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

from .options import ClientSettings
from .positions import Position, parse
from .schemas import META_NAMES, ValueDecoder, ValueFormat

log = logging.getLogger("magnetar.spark")

#: rows per Arrow record batch handed to Spark
ROWS_PER_BATCH = 10_000
#: messages taken from the reader's queue per hop to the client's loop
FETCH_MESSAGES = 5_000
#: receiver queue of the readers (unless pulsar.reader.receiverQueueSize says otherwise)
RECEIVER_QUEUE = 5_000


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


# -- message ids as MessageId.serialize() writes them ------------------------------------------------

def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def message_id_bytes(ledger: int, entry: int, batch: int, partition: int, batch_size: int) -> bytes:
    """``MessageId(ledger, entry, batch, partition, batch_size).serialize()``, without protobuf."""
    out = b"\x08" + _varint(ledger) + b"\x10" + _varint(entry)
    if partition >= 0:
        out += b"\x18" + _varint(partition)
    if batch >= 0:
        out += b"\x20" + _varint(batch)
    if batch_size:
        out += b"\x30" + _varint(batch_size)
    return out


async def _fetch(consumer: Any, n: int, timeout_ms: int) -> list[Any]:
    """Up to ``n`` queued messages (waiting up to ``timeout_ms`` for the first)."""
    msgs = consumer.receive_nowait(n)
    if not msgs:
        first = await consumer.receive(timeout_ms)
        msgs = [first, *consumer.receive_nowait(n - 1)]
    # a reader acknowledges what it read, as the Java client's readers do: the broker counts
    # unacknowledged messages of every consumer (readers included) against its limits
    consumer.acknowledge_cumulative(msgs[-1])
    return msgs


class _Batcher:
    """Builds the Arrow record batches of one topic-partition."""

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

    def build(self, msgs: list[Any]) -> Any:
        pa = self.pa
        import pyarrow.compute as pc

        n = len(msgs)
        partition = self.partition
        payloads = [None if m.is_null_value() else m.data() for m in msgs]
        versions = [m.schema_version() for m in msgs] if self.with_versions else None
        topic = self.topic

        def where(i: int) -> str:
            mid = msgs[i].message_id()
            return f"message {mid.ledger_id}:{mid.entry_id}:{mid.batch_index} of {topic}"

        value_cols = self.decoder.columns(payloads, versions, where)
        keys = [m.partition_key() if m.has_key() else None for m in msgs]
        ids = []
        publish = []
        event = []
        offsets = [0]
        prop_keys: list[str] = []
        prop_values: list[str] = []
        for m in msgs:
            mid = m.message_id()
            ids.append(message_id_bytes(mid.ledger_id, mid.entry_id, mid.batch_index, partition, mid.batch_size))
            publish.append(m.publish_timestamp())
            et = m.event_timestamp()
            event.append(et if et else None)
            props = m.properties()
            if props:
                prop_keys.extend(props.keys())
                prop_values.extend(props.values())
            offsets.append(len(prop_keys))
        ts = self.ts_type
        props_arr = pa.MapArray.from_arrays(
            pa.array(offsets, pa.int32()), pa.array(prop_keys, pa.string()), pa.array(prop_values, pa.string())
        )
        if props_arr.type != self.map_type:
            props_arr = props_arr.cast(self.map_type)
        columns = [
            *value_cols,
            pa.array(keys, pa.string()),
            pa.array([topic] * n, pa.string()),
            pa.array([partition] * n, pa.int32()),
            pa.array(ids, pa.binary()),
            pc.multiply(pa.array(publish, pa.int64()), 1000).cast(ts),
            pc.multiply(pa.array(event, pa.int64()), 1000).cast(ts),
            props_arr,
        ]
        return pa.RecordBatch.from_arrays(columns, schema=self.arrow_schema)


def read_range(plan: ReadPlan, part: PulsarPartition) -> Iterator[Any]:
    """The Arrow record batches of the messages in ``[part.start, part.end)``."""
    from magnetar.client import MessageId, Timeout
    from magnetar.protocol.topic_name import TopicName

    start = parse(part.start)
    end = parse(part.end)
    if not start.is_earliest and start >= end:
        return
    topic = part.topic
    client = plan.settings.make()
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
        reader = run(core.create_reader(topic, start_id, start_message_id_inclusive=True, **kwargs))
        consumer = reader.consumer
        fetch_n = max(FETCH_MESSAGES, kwargs["receiver_queue_size"])
        end_key = (end.ledger, end.entry, end.batch)
        # the entry the next new entry must be (None: no check)
        expect: tuple[int, int] | None = (start.ledger, start.entry) if part.check_loss and not start.is_earliest else None
        current: tuple[int, int] | None = None
        pending: list[Any] = []
        last_seen: Any = None
        done = False
        wait_ms = plan.poll_timeout_ms
        while not done:
            try:
                msgs = run(_fetch(consumer, fetch_n, wait_ms), wait_ms / 1000 + op_timeout + 10)
            except Timeout:
                where = f"after {last_seen}" if last_seen is not None else f"from {start}"
                raise PulsarReadError(
                    f"no message from {topic} within pollTimeoutMs={wait_ms} ms while reading {where} up to {end}"
                ) from None
            for m in msgs:
                mid = m.message_id()
                ledger, entry, batch = mid.ledger_id, mid.entry_id, mid.batch_index
                if (ledger, entry) != current:
                    current = (ledger, entry)
                    if expect is not None:
                        first = mid.first_chunk_message_id() if mid.is_chunked() else mid
                        here = (first.ledger_id, first.entry_id)
                        if here > expect:
                            _lost(plan, topic, expect, here, end)
                        expect = (ledger, entry + 1)
                if (ledger, entry, batch) >= end_key:
                    done = True
                    break
                pending.append(m)
                last_seen = mid
                if batch >= 0 and batch + 1 < mid.batch_size:
                    after = (ledger, entry, batch + 1)
                else:
                    after = (ledger, entry + 1, -1)
                if after >= end_key:
                    done = True
                    break
            if len(pending) >= ROWS_PER_BATCH or (done and pending):
                for i in range(0, len(pending), ROWS_PER_BATCH):
                    yield batcher.build(pending[i : i + ROWS_PER_BATCH])
                pending = []
    finally:
        client.close()


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
