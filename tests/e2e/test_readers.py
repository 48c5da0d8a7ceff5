"""Readers: start positions (earliest, latest, a message id exclusive or inclusive) and
has_message_available."""

from __future__ import annotations

import pulsar

from .helpers import RECEIVE_MS, assert_nothing_more


def _produce(
    client: pulsar.Client, topic: str, payloads: list[bytes], **kwargs: object
) -> list[pulsar.MessageId]:
    producer = client.create_producer(topic, **kwargs)
    ids = [producer.send(p) for p in payloads]
    producer.close()
    return ids


def _read(reader: pulsar.Reader, n: int) -> list[pulsar.Message]:
    return [reader.read_next(timeout_millis=RECEIVE_MS) for _ in range(n)]


def test_reader_from_earliest(client: pulsar.Client, topic: str) -> None:
    payloads = [f"m{i}".encode() for i in range(10)]
    ids = _produce(client, topic, payloads)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    got = _read(reader, 10)
    assert [m.data() for m in got] == payloads
    assert [m.message_id() for m in got] == ids
    assert not reader.has_message_available()
    assert_nothing_more(reader)


def test_reader_from_latest_gets_only_later_messages(client: pulsar.Client, topic: str) -> None:
    _produce(client, topic, [b"old-1", b"old-2"])
    reader = client.create_reader(topic, pulsar.MessageId.latest)
    assert not reader.has_message_available()
    _produce(client, topic, [b"new-1", b"new-2"])
    assert [m.data() for m in _read(reader, 2)] == [b"new-1", b"new-2"]
    assert_nothing_more(reader)


def test_reader_from_message_id_exclusive_and_inclusive(client: pulsar.Client, topic: str) -> None:
    payloads = [f"m{i}".encode() for i in range(6)]
    ids = _produce(client, topic, payloads)

    exclusive = client.create_reader(topic, ids[2])
    assert [m.data() for m in _read(exclusive, 3)] == payloads[3:]
    assert not exclusive.has_message_available()

    inclusive = client.create_reader(topic, ids[2], start_message_id_inclusive=True)
    assert [m.data() for m in _read(inclusive, 4)] == payloads[2:]
    assert not inclusive.has_message_available()

    # an id deserialized from bytes works the same
    restored = pulsar.MessageId.deserialize(ids[4].serialize())
    from_bytes = client.create_reader(topic, restored)
    assert [m.data() for m in _read(from_bytes, 1)] == payloads[5:]


def test_reader_from_batch_message_id(client: pulsar.Client, topic: str) -> None:
    producer = client.create_producer(
        topic, batching_enabled=True, batching_max_messages=8, batching_max_publish_delay_ms=1000
    )
    payloads = [f"b{i}".encode() for i in range(8)]
    for p in payloads:
        producer.send_async(p, None)
    producer.flush()
    producer.send(b"after-batch")  # a later entry (the batch is full, so this starts a new one)
    everything = _read(client.create_reader(topic, pulsar.MessageId.earliest), 9)
    assert [m.data() for m in everything] == [*payloads, b"after-batch"]
    start = everything[3].message_id()
    assert start.batch_index() == 3

    exclusive = client.create_reader(topic, start)
    assert [m.data() for m in _read(exclusive, 5)] == [*payloads[4:], b"after-batch"]
    inclusive = client.create_reader(topic, start, start_message_id_inclusive=True)
    assert [m.data() for m in _read(inclusive, 6)] == [*payloads[3:], b"after-batch"]


def test_has_message_available_transitions(client: pulsar.Client, topic: str) -> None:
    # an empty topic: the reader creates it and has nothing to read
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert not reader.has_message_available()
    assert_nothing_more(reader)

    _produce(client, topic, [b"one", b"two"])
    assert reader.has_message_available()
    assert reader.read_next(timeout_millis=RECEIVE_MS).data() == b"one"
    assert reader.has_message_available()
    assert reader.read_next(timeout_millis=RECEIVE_MS).data() == b"two"
    assert not reader.has_message_available()

    _produce(client, topic, [b"three"])
    assert reader.has_message_available()
    assert reader.read_next(timeout_millis=RECEIVE_MS).data() == b"three"
    assert not reader.has_message_available()


def test_has_message_available_with_latest_on_empty_topic(client: pulsar.Client, topic: str) -> None:
    reader = client.create_reader(topic, pulsar.MessageId.latest)
    assert not reader.has_message_available()
    _produce(client, topic, [b"x"])
    assert reader.has_message_available()
    assert reader.read_next(timeout_millis=RECEIVE_MS).data() == b"x"
    assert not reader.has_message_available()


def test_readers_do_not_leave_subscriptions_behind(client: pulsar.Client, topic: str) -> None:
    payloads = [f"m{i}".encode() for i in range(3)]
    _produce(client, topic, payloads)
    for _ in range(3):
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        assert [m.data() for m in _read(reader, 3)] == payloads
        reader.close()
    # a durable consumer from earliest still sees everything: readers acked nothing for it
    consumer = client.subscribe(topic, "durable", initial_position=pulsar.InitialPosition.Earliest)
    assert [consumer.receive(timeout_millis=RECEIVE_MS).data() for _ in range(3)] == payloads


def test_inclusive_reader_from_latest_reads_the_last_message(client: pulsar.Client, topic: str) -> None:
    _produce(client, topic, [b"m0", b"m1", b"m2"])
    reader = client.create_reader(topic, pulsar.MessageId.latest, start_message_id_inclusive=True)
    assert reader.has_message_available()
    assert reader.read_next(timeout_millis=RECEIVE_MS).data() == b"m2"
    assert not reader.has_message_available()
    _produce(client, topic, [b"m3"])
    assert reader.read_next(timeout_millis=RECEIVE_MS).data() == b"m3"


def test_inclusive_reader_from_earliest(client: pulsar.Client, topic: str) -> None:
    reader = client.create_reader(topic, pulsar.MessageId.earliest, start_message_id_inclusive=True)
    assert not reader.has_message_available()
    _produce(client, topic, [b"m0", b"m1"])
    assert reader.has_message_available()
    assert [m.data() for m in _read(reader, 2)] == [b"m0", b"m1"]
    assert not reader.has_message_available()
