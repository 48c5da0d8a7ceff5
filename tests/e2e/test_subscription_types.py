"""Exclusive, Shared and Failover subscriptions with consumers on two separate clients."""

from __future__ import annotations

import time

import pulsar
import pytest

from .failover_helpers import failover_topic
from .helpers import RECEIVE_MS, assert_nothing_more


def test_exclusive_refuses_second_consumer(client: pulsar.Client, client2: pulsar.Client, topic: str) -> None:
    first = client.subscribe(topic, "excl", consumer_type=pulsar.ConsumerType.Exclusive)
    with pytest.raises(pulsar.ConsumerBusy):
        client2.subscribe(topic, "excl", consumer_type=pulsar.ConsumerType.Exclusive)
    # a different type on the same subscription is refused as well while the first is attached
    with pytest.raises(pulsar.ConsumerBusy):
        client2.subscribe(topic, "excl", consumer_type=pulsar.ConsumerType.Shared)
    # the refused client's connection still works: a producer on it publishes normally
    producer = client2.create_producer(topic)
    for i in range(5):
        producer.send(f"m{i}".encode())
    got = [first.receive(timeout_millis=RECEIVE_MS).data() for _ in range(5)]
    assert got == [f"m{i}".encode() for i in range(5)]
    assert_nothing_more(first)


def test_exclusive_subscription_is_free_again_after_close(
    client: pulsar.Client, client2: pulsar.Client, topic: str
) -> None:
    first = client.subscribe(topic, "excl", consumer_type=pulsar.ConsumerType.Exclusive)
    producer = client.create_producer(topic)
    producer.send(b"a")
    msg = first.receive(timeout_millis=RECEIVE_MS)
    first.acknowledge(msg)
    first.close()
    second = client2.subscribe(topic, "excl", consumer_type=pulsar.ConsumerType.Exclusive)
    producer.send(b"b")
    assert second.receive(timeout_millis=RECEIVE_MS).data() == b"b"
    assert_nothing_more(second)


def _drain(consumers: list[pulsar.Consumer], total: int, deadline_s: float = 20.0) -> list[list[bytes]]:
    """Receive from several consumers in turn until ``total`` messages arrived (bounded)."""
    got: list[list[bytes]] = [[] for _ in consumers]
    deadline = time.monotonic() + deadline_s
    while sum(map(len, got)) < total and time.monotonic() < deadline:
        for i, consumer in enumerate(consumers):
            try:
                msg = consumer.receive(timeout_millis=100)
            except pulsar.Timeout:
                continue
            got[i].append(msg.data())
            consumer.acknowledge(msg)
    return got


def test_shared_splits_messages_between_clients(
    client: pulsar.Client, client2: pulsar.Client, topic: str
) -> None:
    c1 = client.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=10)
    c2 = client2.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=10)
    producer = client.create_producer(topic)
    n = 200
    expected = [f"msg-{i}".encode() for i in range(n)]
    for payload in expected:
        producer.send_async(payload, None)
    producer.flush()
    got1, got2 = _drain([c1, c2], n)
    assert len(got1) + len(got2) == n
    assert sorted(got1 + got2) == sorted(expected)
    assert got1 and got2, (len(got1), len(got2))
    # each consumer sees its share in publish order
    assert got1 == sorted(got1, key=expected.index)
    assert got2 == sorted(got2, key=expected.index)
    assert_nothing_more(c1)
    assert_nothing_more(c2)


def test_failover_only_active_receives_then_other_takes_over(
    client: pulsar.Client, client2: pulsar.Client, topic: str
) -> None:
    # the topic's hash picks "a-active" on the ring of the two consumers (on the first client)
    topic = failover_topic(["a-active", "b-standby"], active="a-active")
    active = client.subscribe(
        topic, "fo", consumer_type=pulsar.ConsumerType.Failover, consumer_name="a-active"
    )
    standby = client2.subscribe(
        topic, "fo", consumer_type=pulsar.ConsumerType.Failover, consumer_name="b-standby"
    )
    producer = client.create_producer(topic)
    expected = [f"m{i}".encode() for i in range(20)]
    for payload in expected[:10]:
        producer.send(payload)
    received = [active.receive(timeout_millis=RECEIVE_MS) for _ in range(10)]
    assert [m.data() for m in received] == expected[:10]
    assert_nothing_more(standby)
    for msg in received[:4]:
        active.acknowledge(msg)
    active.close()
    # the standby becomes active: it gets the 6 unacked messages and everything after, in order
    for payload in expected[10:]:
        producer.send(payload)
    got = [standby.receive(timeout_millis=RECEIVE_MS) for _ in range(16)]
    assert [m.data() for m in got] == expected[4:]
    for msg in got:
        standby.acknowledge(msg)
    assert_nothing_more(standby)


def test_failover_standby_gets_nothing_while_active_lives(
    client: pulsar.Client, client2: pulsar.Client, topic: str
) -> None:
    topic = failover_topic(["a", "b"], active="a")
    active = client.subscribe(topic, "fo", consumer_type=pulsar.ConsumerType.Failover, consumer_name="a")
    standby = client2.subscribe(topic, "fo", consumer_type=pulsar.ConsumerType.Failover, consumer_name="b")
    producer = client2.create_producer(topic)
    for i in range(50):
        producer.send_async(f"m{i}".encode(), None)
    producer.flush()
    got = [active.receive(timeout_millis=RECEIVE_MS).data() for _ in range(50)]
    assert got == [f"m{i}".encode() for i in range(50)]
    assert_nothing_more(standby)


def test_failover_new_preferred_consumer_takes_over_unacked(
    client: pulsar.Client, client2: pulsar.Client, topic: str
) -> None:
    topic = failover_topic(["a", "b"], active="a")
    first = client.subscribe(topic, "fo", consumer_type=pulsar.ConsumerType.Failover, consumer_name="b")
    producer = client.create_producer(topic)
    expected = [f"m{i}".encode() for i in range(20)]
    for payload in expected[:10]:
        producer.send(payload)
    for _ in range(5):
        first.acknowledge(first.receive(timeout_millis=RECEIVE_MS))
    time.sleep(0.3)  # the client sends acks grouped every 100 ms
    # the topic's hash picks "a" on the ring of ("a", "b"): it becomes the active consumer and
    # gets what "b" did not acknowledge
    preferred = client2.subscribe(topic, "fo", consumer_type=pulsar.ConsumerType.Failover, consumer_name="a")
    for payload in expected[10:]:
        producer.send(payload)
    got = [preferred.receive(timeout_millis=RECEIVE_MS).data() for _ in range(15)]
    assert got == expected[5:]
    assert_nothing_more(preferred)
