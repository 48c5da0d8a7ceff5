"""Batch-level reading and writing (magnetar.client.bulk): entries in, column lists out, batches sent whole."""

from __future__ import annotations

import asyncio
from typing import Any

from magnetar.client import AsyncClient, Client, MessageId
from magnetar.client.bulk import Entry, MessageColumns, encode_batch_payload, open_entry_reader, send_batch
from magnetar.client.core.batch_messages import split_batch
from magnetar.protocol.schema import MessageMetadata
from magnetar.protocol.single_metadata import encode_single_metadata

from .conftest import RECEIVE_MS, run


def _entry(payload: bytes, count: int, entry_id: int = 0, event_time: int = 0) -> Entry:
    meta = MessageMetadata(producer_name="p", sequence_id=0, publish_time=1, num_messages_in_batch=count, event_time=event_time)
    return Entry(1, entry_id, meta, payload)


class _FakeConsumer:
    topic = "t"
    partition = -1

    class config:  # noqa: N801 - stands for a ConsumerConfig
        schema = None


def test_columns_read_what_the_producer_batches() -> None:
    """Every layout the producer writes (key, properties, event time, null value) reads back as the
    client's own batch splitting reads it."""
    rows: list[tuple[bytes, str | None, dict[str, str] | None, int, bool]] = [
        (b"plain", None, None, 0, False),
        (b"keyed", "k1", None, 0, False),
        (b"", "", None, 0, False),
        (b"props", "k2", {"a": "1", "b": "2"}, 0, False),
        (b"event", None, None, 1_700_000_000_123, False),
        (b"", "gone", None, 0, True),
        (b"y" * 300, "long", None, 0, False),
        (b"z" * 20_000, None, None, 0, False),
    ]
    parts = []
    for data, key, props, event, null in rows:
        single = encode_single_metadata(len(data), props, key, None, event, None, null)
        parts.append(len(single).to_bytes(4, "big") + single + data)
    payload = b"".join(parts)
    cols = MessageColumns()
    assert cols.add(_entry(payload, len(rows), event_time=5)) == len(rows)
    msgs = split_batch(payload, _entry(payload, len(rows)).meta, None, (1, 0), 0, _FakeConsumer(), None, True)
    assert cols.payloads == [None if m.is_null_value() else m.data() for m in msgs]
    assert cols.keys == [m.partition_key() if m.has_key() else None for m in msgs]
    assert cols.properties is not None and cols.properties[3] == {"a": "1", "b": "2"}
    assert [p or {} for p in cols.properties] == [m.properties() for m in msgs]
    assert cols.event_times == [1_700_000_000_123 if i == 4 else 5 for i in range(len(rows))]
    assert cols.batch_indexes == list(range(len(rows)))


def test_encoded_batches_read_back_and_cut() -> None:
    values = [b"v%d" % i for i in range(10)]
    keys = [f"k{i % 3}" if i % 4 else None for i in range(10)]
    props: list[dict[str, str] | None] = [None] * 10
    props[7] = {"x": "y"}
    events: list[int | None] = [None] * 10
    events[2] = 42
    payload = encode_batch_payload([None if i == 5 else v for i, v in enumerate(values)], keys, props, events)
    cols = MessageColumns()
    cols.add(_entry(payload, 10))
    assert cols.payloads == [None if i == 5 else v for i, v in enumerate(values)]
    assert cols.keys == keys
    assert cols.properties is not None and cols.properties[7] == {"x": "y"} and cols.properties[6] is None
    assert cols.event_times[2] == 42 and cols.event_times[3] == 0
    # a start inside the entry, an end inside it, and messages acknowledged by batch index
    entry = _entry(payload, 10)
    entry.first, entry.stop, entry.mask = 2, 8, 0b1111011111
    cut = MessageColumns()
    assert cut.add(entry) == 5
    assert cut.batch_indexes == [2, 3, 4, 6, 7]


def test_entry_reader_and_send_batch(url: str, topic: str) -> None:
    async def main() -> None:
        client = AsyncClient(url, operation_timeout_seconds=10)
        try:
            producer = await client.create_producer(topic)
            got: list[Any] = []
            done = asyncio.Event()

            def receipt(error: Exception | None, msg_id: Any) -> None:
                got.append((error, msg_id))
                if len(got) == 2:
                    done.set()

            send_batch(producer, encode_batch_payload([b"a%d" % i for i in range(100)]), 100, 0, 99, receipt)
            send_batch(producer, encode_batch_payload([b"b%d" % i for i in range(50)], ["k"] * 50), 50, 100, 149, receipt)
            await asyncio.wait_for(done.wait(), 10)
            assert [e for e, _ in got] == [None, None]
            first_id = got[0][1]
            # from the 10th message of the first entry, inclusive
            start = MessageId(first_id.ledger_id, first_id.entry_id, 10)
            reader = await open_entry_reader(client, topic, start, receiver_queue_size=60)
            entries: list[Entry] = []
            while sum(e.count for e in entries) < 150:
                entries += await reader.receive(1000, RECEIVE_MS)
            assert [e.count for e in entries] == [100, 50]
            cols = MessageColumns()
            for e in entries:
                cols.add(e)
            assert cols.payloads == [b"a%d" % i for i in range(10, 100)] + [b"b%d" % i for i in range(50)]
            assert cols.keys == [None] * 90 + ["k"] * 50
            reader.acknowledge_cumulative(entries[-1])
            await reader.close()
        finally:
            await client.close()

    run(main())


def test_entry_reader_goes_on_after_a_reconnection(url: str, topic: str, client: Client) -> None:
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(6):
        producer.send(b"m%d" % i)

    async def main() -> None:
        core = AsyncClient(url, operation_timeout_seconds=10)
        try:
            reader = await open_entry_reader(core, topic, MessageId.earliest)
            first = await reader.receive(3, RECEIVE_MS)
            while sum(e.count for e in first) < 3:
                first += await reader.receive(3 - sum(e.count for e in first), RECEIVE_MS)
            assert reader.conn is not None
            reader.conn.close()  # the reader registers again, after the last entry it handed over
            rest: list[Entry] = []
            while len(rest) < 3:
                rest += await reader.receive(10, RECEIVE_MS)
            assert [e.payload for e in first + rest] == [b"m%d" % i for i in range(6)]
            await reader.close()
        finally:
            await core.close()

    run(main())
