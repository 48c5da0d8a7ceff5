"""Seek on live consumers and readers, by message id and by publish time."""

from __future__ import annotations

import time

import pulsar

from .helpers import RECEIVE_MS, assert_nothing_more


def _produce(client: pulsar.Client, topic: str, n: int, prefix: str = "m") -> tuple[list[bytes], list]:
    producer = client.create_producer(topic)
    payloads = [f"{prefix}{i}".encode() for i in range(n)]
    ids = [producer.send(p) for p in payloads]
    producer.close()
    return payloads, ids


def _receive(consumer: pulsar.Consumer, n: int) -> list[pulsar.Message]:
    return [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(n)]


def test_consumer_seek_to_message_id_inclusive(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(
        topic, "sub", initial_position=pulsar.InitialPosition.Earliest, start_message_id_inclusive=True
    )
    payloads, ids = _produce(client, topic, 10)
    for msg in _receive(consumer, 10):
        consumer.acknowledge(msg)
    consumer.seek(ids[3])
    got = _receive(consumer, 7)
    assert [m.data() for m in got] == payloads[3:]
    assert [m.message_id() for m in got] == ids[3:]
    assert_nothing_more(consumer)


def test_consumer_seek_to_message_id_default(client: pulsar.Client, topic: str) -> None:
    # the broker delivers from the sought entry on; the client, whose start id is exclusive by
    # default, drops the sought message itself
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    payloads, ids = _produce(client, topic, 10)
    for msg in _receive(consumer, 10):
        consumer.acknowledge(msg)
    consumer.seek(ids[3])
    assert [m.data() for m in _receive(consumer, 6)] == payloads[4:]
    assert_nothing_more(consumer)


def test_consumer_seek_back_forgets_later_acks(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(
        topic, "sub", initial_position=pulsar.InitialPosition.Earliest, start_message_id_inclusive=True
    )
    payloads, ids = _produce(client, topic, 6)
    for msg in _receive(consumer, 6):
        consumer.acknowledge(msg)
    consumer.seek(pulsar.MessageId.earliest)
    assert [m.data() for m in _receive(consumer, 6)] == payloads
    assert_nothing_more(consumer)


def test_consumer_seek_forward_skips_messages(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(
        topic, "sub", initial_position=pulsar.InitialPosition.Earliest, start_message_id_inclusive=True
    )
    payloads, ids = _produce(client, topic, 10)
    assert consumer.receive(timeout_millis=RECEIVE_MS).data() == payloads[0]
    consumer.seek(ids[8])
    assert [m.data() for m in _receive(consumer, 2)] == payloads[8:]
    assert_nothing_more(consumer)
    # the skipped messages count as acknowledged: a new consumer of the subscription starts at 8
    consumer.close()
    again = client.subscribe(topic, "sub")
    assert [m.data() for m in _receive(again, 2)] == payloads[8:]


def test_consumer_seek_by_timestamp(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    early, _ = _produce(client, topic, 5, prefix="early-")
    time.sleep(0.05)
    boundary = int(time.time() * 1000)
    time.sleep(0.05)
    late, _ = _produce(client, topic, 5, prefix="late-")
    received = _receive(consumer, 10)
    assert [m.data() for m in received] == early + late
    assert received[4].publish_timestamp() < boundary <= received[5].publish_timestamp()
    for msg in received:
        consumer.acknowledge(msg)

    consumer.seek(boundary)
    assert [m.data() for m in _receive(consumer, 5)] == late
    assert_nothing_more(consumer)

    consumer.seek(0)
    assert [m.data() for m in _receive(consumer, 10)] == early + late

    consumer.seek(int(time.time() * 1000) + 60_000)
    assert_nothing_more(consumer)


def test_reader_seek(client: pulsar.Client, topic: str) -> None:
    payloads, ids = _produce(client, topic, 10)
    reader = client.create_reader(topic, pulsar.MessageId.earliest, start_message_id_inclusive=True)
    got = [reader.read_next(timeout_millis=RECEIVE_MS) for _ in range(10)]
    assert [m.data() for m in got] == payloads

    reader.seek(ids[5])
    assert [reader.read_next(timeout_millis=RECEIVE_MS).data() for _ in range(5)] == payloads[5:]
    assert_nothing_more(reader)

    exclusive = client.create_reader(topic, pulsar.MessageId.earliest)
    assert exclusive.read_next(timeout_millis=RECEIVE_MS).data() == payloads[0]
    exclusive.seek(ids[5])
    assert [exclusive.read_next(timeout_millis=RECEIVE_MS).data() for _ in range(4)] == payloads[6:]
    assert_nothing_more(exclusive)

    reader.seek(got[2].publish_timestamp())
    first = reader.read_next(timeout_millis=RECEIVE_MS)
    # publish times have millisecond resolution: the seek lands on the first message of that ms
    start = payloads.index(first.data())
    assert start <= 2
    assert got[start].publish_timestamp() == got[2].publish_timestamp()
    rest = [reader.read_next(timeout_millis=RECEIVE_MS).data() for _ in range(9 - start)]
    assert [first.data(), *rest] == payloads[start:]

    reader.seek(pulsar.MessageId.earliest)
    assert reader.read_next(timeout_millis=RECEIVE_MS).data() == payloads[0]
