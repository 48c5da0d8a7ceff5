"""Produce and consume through magnetar's client against magnetar: payloads, metadata, ids,
compression x batching, subscription types with two separate clients."""

from __future__ import annotations

import time

import pytest

from magnetar.client import (
    AsyncClient,
    Client,
    CompressionType,
    ConsumerBusy,
    ConsumerKeySharedPolicy,
    ConsumerType,
    InitialPosition,
    KeySharedMode,
    Timeout,
)
from magnetar.protocol.hashing import key_shared_hash

from .conftest import QUIET_MS, RECEIVE_MS, run


def nothing_more(consumer: object, timeout_ms: int = QUIET_MS) -> None:
    """Assert that no message arrives within ``timeout_ms``."""
    try:
        msg = consumer.receive(timeout_ms)  # type: ignore[attr-defined]
    except Timeout:
        return
    raise AssertionError(f"unexpected message {msg.data()!r} id={msg.message_id()}")


@pytest.mark.parametrize("batching", [False, True], ids=["single", "batched"])
def test_payload_key_properties_event_time_and_ids(client: Client, topic: str, batching: bool) -> None:
    consumer = client.subscribe(topic, "sub", initial_position=InitialPosition.Earliest)
    producer = client.create_producer(topic, batching_enabled=batching)
    sent = []
    for i in range(20):
        payload = f"message-{i}".encode() + bytes(range(i % 5))
        mid = producer.send(
            payload, partition_key=f"key-{i % 3}", ordering_key=b"ok-%d" % (i % 2),
            properties={"index": str(i), "kind": "client"}, event_timestamp=1_700_000_000_000 + i,
        )
        sent.append((payload, mid))
    received = [consumer.receive(RECEIVE_MS) for _ in range(20)]
    for i, (msg, (payload, send_id)) in enumerate(zip(received, sent, strict=True)):
        assert msg.data() == payload
        assert msg.partition_key() == f"key-{i % 3}" and msg.has_key()
        assert msg.ordering_key() == f"ok-{i % 2}"
        assert msg.properties() == {"index": str(i), "kind": "client"}
        assert msg.event_timestamp() == 1_700_000_000_000 + i
        assert msg.publish_timestamp() > 0
        assert msg.producer_name() == producer.producer_name()
        assert msg.redelivery_count() == 0
        assert msg.message_id() == send_id
        assert msg.topic_name() == topic
        consumer.acknowledge(msg)
    ids = [m.message_id() for m in received]
    assert all(a < b for a, b in zip(ids, ids[1:], strict=False))
    nothing_more(consumer)


def test_message_without_key_or_properties_and_late_subscription(client: Client, topic: str) -> None:
    producer = client.create_producer(topic)
    producer.send(b"before")
    consumer = client.subscribe(topic, "latest-sub")  # default initial position: latest
    producer.send(b"")
    producer.send(b"plain")
    first, second = consumer.receive(RECEIVE_MS), consumer.receive(RECEIVE_MS)
    assert (first.data(), second.data()) == (b"", b"plain")
    assert second.partition_key() == "" and not second.has_key()
    assert second.properties() == {} and second.event_timestamp() == 0
    nothing_more(consumer)


@pytest.mark.parametrize("codec", list(CompressionType), ids=[c.name for c in CompressionType])
@pytest.mark.parametrize("batching", [False, True], ids=["single", "batched"])
def test_compression_and_batching_round_trip(url: str, topic: str, codec: CompressionType, batching: bool) -> None:
    async def main() -> None:
        async with AsyncClient(url) as client:
            consumer = await client.subscribe(topic, "sub", initial_position=InitialPosition.Earliest)
            producer = await client.create_producer(topic, compression_type=codec, batching_enabled=batching)
            payloads = [(b"repetitive payload %d " % i) * (1 + i % 40) for i in range(60)]
            futures = [await producer.send_async(p, properties={"i": str(i)}) for i, p in enumerate(payloads)]
            for fut in futures:
                await fut
            got = [await consumer.receive(RECEIVE_MS) for _ in payloads]
            assert [m.data() for m in got] == payloads
            assert [m.properties()["i"] for m in got] == [str(i) for i in range(60)]
            if batching:
                assert any(m.message_id().batch_index > 0 for m in got)

    run(main())


def test_positional_options_and_official_enums(client: Client, topic: str) -> None:
    import pulsar

    consumer = client.subscribe(topic, "sub", pulsar.ConsumerType.Shared, None, None,
                                initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic, "positional-name", None, compression_type=pulsar.CompressionType.LZ4)
    producer.send(b"x")
    msg = consumer.receive(RECEIVE_MS)
    assert (msg.data(), msg.producer_name()) == (b"x", "positional-name")
    assert consumer.core.config.consumer_type == ConsumerType.Shared
    with pytest.raises(Exception, match="Shared"):
        consumer.acknowledge_cumulative(msg)


def test_exclusive_refuses_a_second_consumer(client: Client, client2: Client, topic: str) -> None:
    first = client.subscribe(topic, "excl", consumer_type=ConsumerType.Exclusive)
    with pytest.raises(ConsumerBusy, match=r"could not subscribe to .* as 'excl'"):
        client2.subscribe(topic, "excl", consumer_type=ConsumerType.Exclusive)
    with pytest.raises(ConsumerBusy):
        client2.subscribe(topic, "excl", consumer_type=ConsumerType.Shared)
    producer = client2.create_producer(topic)
    for i in range(5):
        producer.send(b"m%d" % i)
    got = [first.receive(RECEIVE_MS) for _ in range(5)]
    assert [m.data() for m in got] == [b"m%d" % i for i in range(5)]
    first.acknowledge_cumulative(got[-1])
    first.close()
    second = client2.subscribe(topic, "excl")
    producer.send(b"after")
    assert second.receive(RECEIVE_MS).data() == b"after"


def _drain(consumers: list, total: int, deadline_s: float = 20.0) -> list[list[bytes]]:
    got: list[list[bytes]] = [[] for _ in consumers]
    deadline = time.monotonic() + deadline_s
    while sum(map(len, got)) < total and time.monotonic() < deadline:
        for i, consumer in enumerate(consumers):
            try:
                msg = consumer.receive(50)
            except Timeout:
                continue
            got[i].append(msg)
            consumer.acknowledge(msg)
    return got


def test_shared_splits_messages_between_clients(client: Client, client2: Client, topic: str) -> None:
    c1 = client.subscribe(topic, "shared", consumer_type=ConsumerType.Shared, receiver_queue_size=10)
    c2 = client2.subscribe(topic, "shared", consumer_type=ConsumerType.Shared, receiver_queue_size=10)
    producer = client.create_producer(topic, batching_enabled=False)
    expected = [b"msg-%d" % i for i in range(200)]
    for payload in expected:
        producer.send_async(payload, None)
    producer.flush()
    got1, got2 = ([m.data() for m in ms] for ms in _drain([c1, c2], 200))
    assert sorted(got1 + got2) == sorted(expected)
    assert got1 and got2
    assert got1 == sorted(got1, key=expected.index) and got2 == sorted(got2, key=expected.index)


def _first_receiver(consumers: list, deadline_s: float = RECEIVE_MS / 1000) -> tuple[int, object]:
    """(index of the consumer that received, the message): the active one of a Failover subscription."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        for i, consumer in enumerate(consumers):
            try:
                return i, consumer.receive(50)
            except Timeout:
                continue
    raise AssertionError("no consumer received anything")


def test_failover_standby_takes_over_unacked(client: Client, client2: Client, topic: str) -> None:
    # which consumer is active depends on the topic's name (Pulsar's hash ring): find out
    consumers = [
        client.subscribe(topic, "fo", consumer_type=ConsumerType.Failover, consumer_name="a-active"),
        client2.subscribe(topic, "fo", consumer_type=ConsumerType.Failover, consumer_name="b-standby"),
    ]
    producer = client.create_producer(topic, batching_enabled=False)
    expected = [b"m%d" % i for i in range(20)]
    for payload in expected[:10]:
        producer.send(payload)
    index, first = _first_receiver(consumers)
    active, standby = consumers[index], consumers[1 - index]
    received = [first] + [active.receive(RECEIVE_MS) for _ in range(9)]
    assert [m.data() for m in received] == expected[:10]
    nothing_more(standby)
    for msg in received[:4]:
        active.acknowledge(msg)
    active.close()
    for payload in expected[10:]:
        producer.send(payload)
    got = [standby.receive(RECEIVE_MS) for _ in range(16)]
    assert [m.data() for m in got] == expected[4:]


def test_key_shared_keeps_each_key_on_one_consumer(client: Client, client2: Client, topic: str) -> None:
    c1 = client.subscribe(topic, "ks", consumer_type=ConsumerType.Key_Shared, consumer_name="c1")
    c2 = client2.subscribe(topic, "ks", consumer_type=ConsumerType.Key_Shared, consumer_name="c2")
    producer = client.create_producer(topic, batching_enabled=False)
    keys = [f"key-{i}" for i in range(20)]
    for i in range(100):
        producer.send_async(b"%d" % i, None, partition_key=keys[i % 20])
    producer.flush()
    got1, got2 = _drain([c1, c2], 100)
    owners = {}
    for who, msgs in ((1, got1), (2, got2)):
        for m in msgs:
            assert owners.setdefault(m.partition_key(), who) == who
        for key in {m.partition_key() for m in msgs}:
            values = [int(m.data()) for m in msgs if m.partition_key() == key]
            assert values == sorted(values)
    assert len(owners) == 20


def test_key_shared_sticky_ranges(client: Client, client2: Client, topic: str) -> None:
    low = ConsumerKeySharedPolicy(KeySharedMode.Sticky, sticky_ranges=[(0, 32767)])
    high = ConsumerKeySharedPolicy(KeySharedMode.Sticky, sticky_ranges=[(32768, 65535)])
    c1 = client.subscribe(topic, "sticky", consumer_type=ConsumerType.Key_Shared, key_shared_policy=low)
    c2 = client2.subscribe(topic, "sticky", consumer_type=ConsumerType.Key_Shared, key_shared_policy=high)
    producer = client.create_producer(topic, batching_enabled=False)
    keys = [f"k{i}" for i in range(30)]
    for key in keys:
        producer.send_async(key.encode(), None, partition_key=key)
    producer.flush()
    got1, got2 = _drain([c1, c2], 30)
    assert all(key_shared_hash(m.partition_key()) <= 32767 for m in got1)
    assert all(key_shared_hash(m.partition_key()) >= 32768 for m in got2)
    assert len(got1) + len(got2) == 30
