"""Readers (start positions, has_message_available) and seek, through magnetar's client."""

from __future__ import annotations

import time

from magnetar.client import AsyncClient, Client, InitialPosition, MessageId

from ..conftest import RECEIVE_MS, run
from ..test_roundtrip import nothing_more


def _produce(client: Client, topic: str, payloads: list[bytes], **options: object) -> list[MessageId]:
    producer = client.create_producer(topic, batching_enabled=False, **options)
    ids = [producer.send(p) for p in payloads]
    producer.close()
    return ids


def _read(reader: object, n: int) -> list:
    return [reader.read_next(RECEIVE_MS) for _ in range(n)]  # type: ignore[attr-defined]


def test_reader_from_earliest_and_latest(client: Client, topic: str) -> None:
    payloads = [b"m%d" % i for i in range(10)]
    ids = _produce(client, topic, payloads)
    reader = client.create_reader(topic, MessageId.earliest)
    got = _read(reader, 10)
    assert [m.data() for m in got] == payloads
    assert [m.message_id() for m in got] == ids
    assert not reader.has_message_available()
    nothing_more(reader._consumer)
    latest = client.create_reader(topic, MessageId.latest)
    assert not latest.has_message_available()
    _produce(client, topic, [b"new-1", b"new-2"])
    assert [m.data() for m in _read(latest, 2)] == [b"new-1", b"new-2"]


def test_reader_from_message_id_exclusive_and_inclusive(client: Client, topic: str) -> None:
    payloads = [b"m%d" % i for i in range(6)]
    ids = _produce(client, topic, payloads)
    exclusive = client.create_reader(topic, ids[2])
    assert [m.data() for m in _read(exclusive, 3)] == payloads[3:]
    assert not exclusive.has_message_available()
    inclusive = client.create_reader(topic, ids[2], start_message_id_inclusive=True)
    assert [m.data() for m in _read(inclusive, 4)] == payloads[2:]
    restored = MessageId.deserialize(ids[4].serialize())
    assert [m.data() for m in _read(client.create_reader(topic, restored), 1)] == payloads[5:]
    last_inclusive = client.create_reader(topic, MessageId.latest, start_message_id_inclusive=True)
    assert last_inclusive.has_message_available()
    assert last_inclusive.read_next(RECEIVE_MS).data() == b"m5"


def test_reader_from_a_batch_message_id(client: Client, topic: str) -> None:
    producer = client.create_producer(topic, batching_max_messages=8, batching_max_publish_delay_ms=1000)
    payloads = [b"b%d" % i for i in range(8)]
    for p in payloads:
        producer.send_async(p, None)
    producer.flush()
    producer.send(b"after-batch")
    everything = _read(client.create_reader(topic, MessageId.earliest), 9)
    assert [m.data() for m in everything] == [*payloads, b"after-batch"]
    start = everything[3].message_id()
    assert start.batch_index == 3
    assert [m.data() for m in _read(client.create_reader(topic, start), 5)] == [*payloads[4:], b"after-batch"]
    inclusive = client.create_reader(topic, start, start_message_id_inclusive=True)
    assert [m.data() for m in _read(inclusive, 6)] == [*payloads[3:], b"after-batch"]


def test_has_message_available_transitions(client: Client, topic: str) -> None:
    reader = client.create_reader(topic, MessageId.earliest)
    assert not reader.has_message_available()
    _produce(client, topic, [b"one", b"two"])
    assert reader.has_message_available()
    assert reader.read_next(RECEIVE_MS).data() == b"one"
    assert reader.has_message_available()
    assert reader.read_next(RECEIVE_MS).data() == b"two"
    assert not reader.has_message_available()
    _produce(client, topic, [b"three"])
    assert reader.has_message_available()
    assert reader.read_next(RECEIVE_MS).data() == b"three"
    assert not reader.has_message_available()


def test_async_reader(url: str, client: Client, topic: str) -> None:
    _produce(client, topic, [b"a", b"b", b"c"])

    async def main() -> None:
        async with AsyncClient(url) as ac:
            reader = await ac.create_reader(topic, MessageId.earliest)
            assert [(await reader.read_next(RECEIVE_MS)).data() for _ in range(3)] == [b"a", b"b", b"c"]
            assert not await reader.has_message_available()

    run(main())


def test_consumer_seek_by_id_and_time(client: Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", initial_position=InitialPosition.Earliest, start_message_id_inclusive=True)
    early = [b"early-%d" % i for i in range(5)]
    ids = _produce(client, topic, early)
    time.sleep(0.05)
    boundary = int(time.time() * 1000)
    time.sleep(0.05)
    late = [b"late-%d" % i for i in range(5)]
    _produce(client, topic, late)
    received = [consumer.receive(RECEIVE_MS) for _ in range(10)]
    assert [m.data() for m in received] == early + late
    for msg in received:
        consumer.acknowledge(msg)
    consumer.seek(ids[3])
    assert [consumer.receive(RECEIVE_MS).data() for _ in range(7)] == early[3:] + late
    consumer.seek(boundary)
    assert [consumer.receive(RECEIVE_MS).data() for _ in range(5)] == late
    nothing_more(consumer)
    consumer.seek(0)
    assert [consumer.receive(RECEIVE_MS).data() for _ in range(10)] == early + late
    consumer.seek(int(time.time() * 1000) + 60_000)
    nothing_more(consumer)


def test_consumer_seek_default_is_exclusive(client: Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", initial_position=InitialPosition.Earliest)
    payloads = [b"m%d" % i for i in range(10)]
    ids = _produce(client, topic, payloads)
    for _ in range(10):
        consumer.acknowledge(consumer.receive(RECEIVE_MS))
    consumer.seek(ids[3])
    assert [consumer.receive(RECEIVE_MS).data() for _ in range(6)] == payloads[4:]
    nothing_more(consumer)


def test_reader_seek(client: Client, topic: str) -> None:
    payloads = [b"m%d" % i for i in range(10)]
    ids = _produce(client, topic, payloads)
    reader = client.create_reader(topic, MessageId.earliest, start_message_id_inclusive=True)
    got = _read(reader, 10)
    assert [m.data() for m in got] == payloads
    reader.seek(ids[5])
    assert [m.data() for m in _read(reader, 5)] == payloads[5:]
    nothing_more(reader._consumer)
    reader.seek(MessageId.earliest)
    assert reader.read_next(RECEIVE_MS).data() == payloads[0]
    reader.seek(got[7].publish_timestamp())
    first = reader.read_next(RECEIVE_MS)
    assert payloads.index(first.data()) <= 7
