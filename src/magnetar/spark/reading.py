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
from operator import attrgetter
from typing import Any

from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import StructType

from magnetar.protocol.varint import encode_varint
from magnetar.spark.options import ClientSettings
from magnetar.spark.positions import Position, parse
from magnetar.spark.schemas import META_NAMES, ValueDecoder, ValueFormat

log = logging.getLogger("magnetar.spark")

#: rows per Arrow record batch handed to Spark
ROWS_PER_BATCH = 10_000
#: messages taken from the reader's queue per hop to the client's loop
FETCH_MESSAGES = 5_000
#: (ledger, entry) of a message id
_ENTRY = attrgetter("ledger_id", "entry_id")
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

def message_id_bytes(ledger: int, entry: int, batch: int, partition: int, batch_size: int) -> bytes:
    """``MessageId(ledger, entry, batch, partition, batch_size).serialize()``, without protobuf."""
    return _id_prefix(ledger, entry, partition) + _id_suffix(batch, batch_size)


def _id_prefix(ledger: int, entry: int, partition: int) -> bytes:
    out = b"\x08" + encode_varint(ledger) + b"\x10" + encode_varint(entry)
    if partition >= 0:
        out += b"\x18" + encode_varint(partition)
    return out


_SUFFIXES: dict[tuple[int, int], bytes] = {}


_TABLES: dict[int, list[bytes]] = {}


def _suffix_table(batch_size: int) -> list[bytes]:
    """The id suffixes of the messages 0..batch_size-1 of a batch."""
    table = _TABLES.get(batch_size)
    if table is None:
        table = [_id_suffix(i, batch_size) for i in range(batch_size)]
        if len(_TABLES) < 1000:
            _TABLES[batch_size] = table
    return table


def _id_suffix(batch: int, batch_size: int) -> bytes:
    key = (batch, batch_size)
    out = _SUFFIXES.get(key)
    if out is None:
        out = b""
        if batch >= 0:
            out += b"\x20" + encode_varint(batch)
        if batch_size:
            out += b"\x30" + encode_varint(batch_size)
        if len(_SUFFIXES) < 100_000:
            _SUFFIXES[key] = out
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

    def build(self, msgs: list[Any], mids: list[Any]) -> Any:
        """One record batch of these messages (``mids``: their message ids)."""
        pa = self.pa
        import pyarrow.compute as pc

        n = len(msgs)
        partition = self.partition
        topic = self.topic
        payloads = [m.data() for m in msgs]
        # a null value (tombstone) has an empty payload: ask only those
        for i in [i for i, p in enumerate(payloads) if not p]:
            if msgs[i].is_null_value():
                payloads[i] = None
        versions = [m.schema_version() for m in msgs] if self.with_versions else None

        def where(i: int) -> str:
            mid = mids[i]
            return f"message {mid.ledger_id}:{mid.entry_id}:{mid.batch_index} of {topic}"

        value_cols = self.decoder.columns(payloads, versions, where)
        keys = [m.partition_key() for m in msgs]
        for i in [i for i, k in enumerate(keys) if not k]:
            if not msgs[i].has_key():
                keys[i] = None
        ids = []
        publish_ms = []
        ledger = entry = None
        prefix = b""
        table: list[bytes] = [b""]
        published = 0
        for m, mid in zip(msgs, mids, strict=True):
            if mid.entry_id != entry or mid.ledger_id != ledger:
                ledger, entry = mid.ledger_id, mid.entry_id
                prefix = _id_prefix(ledger, entry, partition)
                table = _suffix_table(mid.batch_size) if mid.batch_index >= 0 else [_id_suffix(-1, mid.batch_size)]
                # the publish time is the entry's (MessageMetadata): the same for a whole batch
                published = m.publish_timestamp()
            ids.append(prefix + table[mid.batch_index])
            publish_ms.append(published)
        publish = pa.array(publish_ms, pa.int64())
        event = pa.array([m.event_timestamp() for m in msgs], pa.int64())
        event = pc.if_else(pc.equal(event, 0), pa.scalar(None, pa.int64()), event)
        props = [m.properties() for m in msgs]
        if any(props):
            offsets = [0]
            prop_keys: list[str] = []
            prop_values: list[str] = []
            for p in props:
                if p:
                    prop_keys.extend(p.keys())
                    prop_values.extend(p.values())
                offsets.append(len(prop_keys))
            offsets_arr = pa.array(offsets, pa.int32())
        else:
            offsets_arr = pa.array([0] * (n + 1), pa.int32())
            prop_keys, prop_values = [], []
        props_arr = pa.MapArray.from_arrays(offsets_arr, pa.array(prop_keys, pa.string()), pa.array(prop_values, pa.string()))
        if props_arr.type != self.map_type:
            props_arr = props_arr.cast(self.map_type)
        ts = self.ts_type
        columns = [
            *value_cols,
            pa.array(keys, pa.string()),
            pa.array([topic] * n, pa.string()),
            pa.array([partition] * n, pa.int32()),
            pa.array(ids, pa.binary()),
            pc.multiply(publish, 1000).cast(ts),
            pc.multiply(event, 1000).cast(ts),
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
        fetch_n = FETCH_MESSAGES
        end_key = (end.ledger, end.entry, end.batch)
        # the entry the next new entry must be (None: no check)
        expect: tuple[int, int] | None = (start.ledger, start.entry) if part.check_loss and not start.is_earliest else None
        pending: list[Any] = []
        pending_ids: list[Any] = []
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
            mids = [m.message_id() for m in msgs]
            cut, done = _cut_at_end(mids, end_key)
            if expect is not None:
                # every new entry must follow the previous one (the first: the range's start)
                expect = _check_continuity(plan, topic, mids[: max(cut, 1)], expect, end)
            if cut:
                pending.extend(msgs[:cut])
                pending_ids.extend(mids[:cut])
                last_seen = mids[cut - 1]
            if len(pending) >= ROWS_PER_BATCH or (done and pending):
                for i in range(0, len(pending), ROWS_PER_BATCH):
                    yield batcher.build(pending[i : i + ROWS_PER_BATCH], pending_ids[i : i + ROWS_PER_BATCH])
                pending = []
                pending_ids = []
    finally:
        client.close()


def _cut_at_end(mids: list[Any], end_key: tuple[int, int, int]) -> tuple[int, bool]:
    """(how many of these messages are before the range's end, whether the end is reached)."""
    last = mids[-1]
    if (last.ledger_id, last.entry_id, last.batch_index) < end_key and _after(last) < end_key:
        return len(mids), False
    for i, mid in enumerate(mids):
        if (mid.ledger_id, mid.entry_id, mid.batch_index) >= end_key:
            return i, True
        if _after(mid) >= end_key:
            return i + 1, True
    return len(mids), True


def _check_continuity(plan: ReadPlan, topic: str, seen: list[Any], expect: tuple[int, int], end: Position) -> tuple[int, int]:
    """Check that the entries of ``seen`` follow ``expect`` with none missing; the next expected entry."""
    entries = [mid.entry_id for mid in seen]
    first_id, last_id = seen[0], seen[-1]
    if (first_id.ledger_id == last_id.ledger_id == expect[0] and entries[0] <= expect[1]
            and entries[-1] - entries[0] + 1 == len(set(entries))):
        # one ledger, no entry missing (the common case, checked without a loop)
        return (expect[0], max(expect[1], entries[-1] + 1))
    for ledger, entry in sorted({(mid.ledger_id, mid.entry_id) for mid in seen}):
        if (ledger, entry) < expect:
            continue
        if (ledger, entry) > expect:
            mid = next(x for x in seen if (x.ledger_id, x.entry_id) == (ledger, entry))
            first = mid.first_chunk_message_id() if mid.is_chunked() else mid
            if (first.ledger_id, first.entry_id) > expect:
                _lost(plan, topic, expect, (first.ledger_id, first.entry_id), end)
        expect = (ledger, entry + 1)
    return expect


def _after(mid: Any) -> tuple[int, int, int]:
    """The position right after a message, as a tuple."""
    batch = mid.batch_index
    if batch >= 0 and batch + 1 < mid.batch_size:
        return (mid.ledger_id, mid.entry_id, batch + 1)
    return (mid.ledger_id, mid.entry_id + 1, -1)


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
