"""Redelivery: negative acks, explicit redelivery requests, and consumers that leave."""

from __future__ import annotations

import time

import pulsar

from .helpers import RECEIVE_MS, assert_nothing_more


def test_negative_ack_redelivers_with_incremented_count(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(
        topic, "sub", consumer_type=pulsar.ConsumerType.Shared, negative_ack_redelivery_delay_ms=100
    )
    producer = client.create_producer(topic)
    for i in range(3):
        producer.send(f"m{i}".encode())
    first = consumer.receive(timeout_millis=RECEIVE_MS)
    assert (first.data(), first.redelivery_count()) == (b"m0", 0)
    consumer.negative_acknowledge(first)
    rest = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(2)]
    assert [m.data() for m in rest] == [b"m1", b"m2"]
    for m in rest:
        consumer.acknowledge(m)

    again = consumer.receive(timeout_millis=RECEIVE_MS)
    assert again.data() == b"m0"
    assert again.message_id() == first.message_id()
    assert again.redelivery_count() == 1
    consumer.negative_acknowledge(again)
    third = consumer.receive(timeout_millis=RECEIVE_MS)
    assert (third.data(), third.redelivery_count()) == (b"m0", 2)
    consumer.acknowledge(third)
    assert_nothing_more(consumer)


def test_negative_ack_on_exclusive_subscription(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", negative_ack_redelivery_delay_ms=100)
    producer = client.create_producer(topic)
    producer.send(b"only")
    msg = consumer.receive(timeout_millis=RECEIVE_MS)
    consumer.negative_acknowledge(msg)
    again = consumer.receive(timeout_millis=RECEIVE_MS)
    assert again.data() == b"only"
    assert again.redelivery_count() == 1
    consumer.acknowledge(again)
    assert_nothing_more(consumer)


def test_redeliver_unacknowledged_messages(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Exclusive)
    producer = client.create_producer(topic)
    payloads = [f"m{i}".encode() for i in range(5)]
    for p in payloads:
        producer.send(p)
    received = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(5)]
    assert [m.data() for m in received] == payloads
    consumer.acknowledge(received[0])
    consumer.acknowledge(received[1])
    time.sleep(0.3)  # the client sends acks grouped every 100 ms
    consumer.redeliver_unacknowledged_messages()
    back = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(3)]
    assert [m.data() for m in back] == payloads[2:]
    assert all(m.redelivery_count() == 1 for m in back)
    for m in back:
        consumer.acknowledge(m)
    assert_nothing_more(consumer)


def test_unacked_messages_of_closed_consumer_go_to_another(
    client: pulsar.Client, client2: pulsar.Client, topic: str
) -> None:
    c1 = client.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic)
    payloads = [f"m{i}".encode() for i in range(10)]
    for p in payloads:
        producer.send(p)
    # every message is in flight to c1 (its receiver queue) before the second consumer joins
    received = [c1.receive(timeout_millis=RECEIVE_MS) for _ in range(4)]
    assert [m.data() for m in received] == payloads[:4]
    c2 = client2.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared)
    c1.acknowledge(received[0])
    c1.acknowledge(received[1])
    c1.close()

    got = [c2.receive(timeout_millis=RECEIVE_MS) for _ in range(8)]
    assert sorted(m.data() for m in got) == sorted(payloads[2:])
    by_payload = {m.data(): m for m in got}
    # the two c1 received without acking were certainly delivered before: redelivered
    assert by_payload[b"m2"].redelivery_count() >= 1
    assert by_payload[b"m3"].redelivery_count() >= 1
    assert by_payload[b"m2"].message_id() == received[2].message_id()
    for m in got:
        c2.acknowledge(m)
    assert_nothing_more(c2)
