"""Batched entries through the whole path: permits, partial acks, nacks, readers, last ids."""

from __future__ import annotations

import pulsar

from .helpers import RECEIVE_MS, assert_nothing_more


def _batch_producer(client: pulsar.Client, topic: str, size: int) -> pulsar.Producer:
    return client.create_producer(
        topic, batching_enabled=True, batching_max_messages=size, batching_max_publish_delay_ms=1000
    )


def _send_batch(producer: pulsar.Producer, payloads: list[bytes]) -> None:
    for p in payloads:
        producer.send_async(p, None)
    producer.flush()


def test_batches_reach_a_consumer_with_a_tiny_receiver_queue(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", receiver_queue_size=1)
    producer = _batch_producer(client, topic, 10)
    payloads = [f"m{i}".encode() for i in range(30)]
    _send_batch(producer, payloads)
    got = []
    for _ in payloads:
        msg = consumer.receive(timeout_millis=RECEIVE_MS)
        got.append(msg.data())
        consumer.acknowledge(msg)
    assert got == payloads
    assert_nothing_more(consumer)


def test_shared_consumers_split_batches_whole(
    client: pulsar.Client, client2: pulsar.Client, topic: str
) -> None:
    c1 = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=20)
    c2 = client2.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=20)
    producer = _batch_producer(client, topic, 5)
    payloads = [f"m{i}".encode() for i in range(100)]
    _send_batch(producer, payloads)
    entries: dict[tuple[int, int], set[int]] = {}
    got: list[bytes] = []
    for which, consumer in enumerate((c1, c2, c1, c2) * 50):
        if len(got) == len(payloads):
            break
        try:
            msg = consumer.receive(timeout_millis=200)
        except pulsar.Timeout:
            continue
        got.append(msg.data())
        mid = msg.message_id()
        entries.setdefault((mid.ledger_id(), mid.entry_id()), set()).add(which % 2)
        consumer.acknowledge(msg)
    assert sorted(got) == sorted(payloads)
    # a batch is one entry and goes to one consumer
    assert all(len(owners) == 1 for owners in entries.values())


def test_cumulative_ack_inside_a_batch(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", batch_index_ack_enabled=True)
    producer = _batch_producer(client, topic, 10)
    payloads = [f"m{i}".encode() for i in range(10)]
    _send_batch(producer, payloads)
    received = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(10)]
    assert len({m.message_id().entry_id() for m in received}) == 1
    consumer.acknowledge_cumulative(received[6])
    consumer.close()
    again = client.subscribe(topic, "sub", batch_index_ack_enabled=True)
    assert [again.receive(timeout_millis=RECEIVE_MS).data() for _ in range(3)] == payloads[7:]
    assert_nothing_more(again)


def test_negative_ack_of_one_message_in_a_batch(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(
        topic,
        "sub",
        consumer_type=pulsar.ConsumerType.Shared,
        batch_index_ack_enabled=True,
        negative_ack_redelivery_delay_ms=100,
    )
    producer = _batch_producer(client, topic, 5)
    payloads = [f"m{i}".encode() for i in range(5)]
    _send_batch(producer, payloads)
    received = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(5)]
    for i, msg in enumerate(received):
        if i == 2:
            consumer.negative_acknowledge(msg)
        else:
            consumer.acknowledge(msg)
    back = consumer.receive(timeout_millis=RECEIVE_MS)
    assert back.data() == b"m2"
    assert back.redelivery_count() == 1
    consumer.acknowledge(back)
    assert_nothing_more(consumer)


def test_reader_has_message_available_inside_a_batch(client: pulsar.Client, topic: str) -> None:
    producer = _batch_producer(client, topic, 8)
    payloads = [f"m{i}".encode() for i in range(8)]
    _send_batch(producer, payloads)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    for i in range(8):
        assert reader.has_message_available(), i
        assert reader.read_next(timeout_millis=RECEIVE_MS).data() == payloads[i]
    assert not reader.has_message_available()


def test_get_last_message_id(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    ids = [producer.send(f"m{i}".encode()) for i in range(3)]
    last = consumer.get_last_message_id()
    assert (last.ledger_id(), last.entry_id()) == (ids[-1].ledger_id(), ids[-1].entry_id())

    batcher = _batch_producer(client, topic, 4)
    _send_batch(batcher, [b"b0", b"b1", b"b2", b"b3"])
    last = consumer.get_last_message_id()
    assert last.entry_id() == ids[-1].entry_id() + 1
    assert last.batch_index() == 3
