"""Non-persistent topics: live delivery only, drops instead of buffering, nothing on disk."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pulsar
import pytest

from magnetar.testing import BrokerProcess

from .failover_helpers import failover_topic
from .helpers import QUIET_MS, RECEIVE_MS, assert_nothing_more


@pytest.fixture
def np_topic() -> str:
    """A non-persistent topic no other test uses."""
    return f"non-persistent://public/default/e2e-np-{uuid.uuid4().hex}"


def _ledger_listing(data_dir: Path) -> dict[str, int]:
    ledgers = data_dir / "ledgers"
    return {str(p.relative_to(ledgers)): p.stat().st_size for p in ledgers.rglob("*") if p.is_file()}


def _receive_until_quiet(consumer: pulsar.Consumer, quiet_ms: int = 500, limit: int = 1000) -> list[bytes]:
    got = []
    while len(got) < limit:
        try:
            msg = consumer.receive(timeout_millis=quiet_ms)
        except pulsar.Timeout:
            break
        consumer.acknowledge(msg)
        got.append(msg.data())
    return got


def test_connected_consumer_gets_every_message_in_order(
    broker: BrokerProcess, client: pulsar.Client, client2: pulsar.Client, np_topic: str
) -> None:
    before = _ledger_listing(broker.data_dir)
    consumer = client.subscribe(np_topic, "live")
    producer = client2.create_producer(np_topic)
    expected = [f"np-{i}".encode() for i in range(50)]
    for payload in expected:
        producer.send(payload)
    got = []
    ledger_ids = set()
    for _ in expected:
        msg = consumer.receive(timeout_millis=RECEIVE_MS)
        consumer.acknowledge(msg)
        got.append(msg.data())
        ledger_ids.add(msg.message_id().ledger_id())
        assert msg.topic_name() == np_topic
    assert got == expected
    assert_nothing_more(consumer)
    # nothing of this topic reached the disk: no ledger directory, no new or grown segment file
    # (files of other tests' topics may only disappear, when fully acknowledged segments are trimmed)
    for ledger_id in ledger_ids:
        assert not (broker.data_dir / "ledgers" / str(ledger_id)).exists()
    after = _ledger_listing(broker.data_dir)
    assert set(after) <= set(before), sorted(set(after) - set(before))
    assert {name: after[name] for name in after} == {name: before[name] for name in after}


def test_messages_without_consumer_are_dropped(
    client: pulsar.Client, client2: pulsar.Client, np_topic: str
) -> None:
    producer = client2.create_producer(np_topic)
    # no subscription at all: these go nowhere
    for i in range(5):
        producer.send(f"early-{i}".encode())
    consumer = client.subscribe(np_topic, "late", initial_position=pulsar.InitialPosition.Earliest)
    producer.send(b"live-0")
    assert consumer.receive(timeout_millis=RECEIVE_MS).data() == b"live-0"
    assert_nothing_more(consumer)
    # the subscription's consumer leaves: messages published meanwhile are not kept for it
    consumer.close()
    for i in range(5):
        producer.send(f"gap-{i}".encode())
    again = client.subscribe(np_topic, "late", initial_position=pulsar.InitialPosition.Earliest)
    producer.send(b"live-1")
    assert again.receive(timeout_millis=RECEIVE_MS).data() == b"live-1"
    assert_nothing_more(again)
    # a reader from earliest sees nothing of the past either
    reader = client.create_reader(np_topic, pulsar.MessageId.earliest)
    producer.send(b"live-2")
    assert reader.read_next(timeout_millis=RECEIVE_MS).data() == b"live-2"
    assert_nothing_more(reader)
    assert again.receive(timeout_millis=RECEIVE_MS).data() == b"live-2"
    reader.close()


def test_full_receiver_queue_drops_instead_of_buffering(
    client: pulsar.Client, client2: pulsar.Client, np_topic: str
) -> None:
    queue = 10
    consumer = client.subscribe(np_topic, "slow", receiver_queue_size=queue)
    producer = client2.create_producer(np_topic)
    # one round trip first, so the consumer's permits are known to be with the broker
    producer.send(b"warm-up")
    assert consumer.receive(timeout_millis=RECEIVE_MS).data() == b"warm-up"
    n = 200
    published = [f"burst-{i}".encode() for i in range(n)]
    for payload in published:
        producer.send(payload)  # each send returns once the broker handled it: no error, no blocking
    got = _receive_until_quiet(consumer)
    # only what fit in the receiver queue arrived; the rest was dropped, not buffered
    assert queue // 2 <= len(got) <= queue, len(got)
    assert got == published[: len(got)]
    # the consumer keeps working for new messages
    later = [f"later-{i}".encode() for i in range(3)]
    for payload in later:
        producer.send(payload)
    assert [consumer.receive(timeout_millis=RECEIVE_MS).data() for _ in later] == later
    assert_nothing_more(consumer, QUIET_MS // 2)


def test_exclusive_on_non_persistent(client: pulsar.Client, client2: pulsar.Client, np_topic: str) -> None:
    first = client.subscribe(np_topic, "excl", consumer_type=pulsar.ConsumerType.Exclusive)
    with pytest.raises(pulsar.ConsumerBusy):
        client2.subscribe(np_topic, "excl", consumer_type=pulsar.ConsumerType.Exclusive)
    producer = client2.create_producer(np_topic)
    expected = [f"e-{i}".encode() for i in range(10)]
    for payload in expected:
        producer.send(payload)
    assert [first.receive(timeout_millis=RECEIVE_MS).data() for _ in expected] == expected
    assert_nothing_more(first)


def test_shared_on_non_persistent_each_message_once(
    broker: BrokerProcess, client_factory, np_topic: str
) -> None:
    c1 = client_factory(broker.service_url).subscribe(
        np_topic, "shared", consumer_type=pulsar.ConsumerType.Shared
    )
    client2 = client_factory(broker.service_url)
    c2 = client2.subscribe(np_topic, "shared", consumer_type=pulsar.ConsumerType.Shared)
    producer = client2.create_producer(np_topic)
    n = 100
    expected = [f"s-{i}".encode() for i in range(n)]
    for payload in expected:
        producer.send(payload)
    got1: list[bytes] = []
    got2: list[bytes] = []
    deadline = time.monotonic() + 15
    while len(got1) + len(got2) < n and time.monotonic() < deadline:
        for consumer, sink in ((c1, got1), (c2, got2)):
            try:
                msg = consumer.receive(timeout_millis=100)
            except pulsar.Timeout:
                continue
            consumer.acknowledge(msg)
            sink.append(msg.data())
    assert len(got1) + len(got2) == n
    assert sorted(got1 + got2) == sorted(expected)
    assert got1 and got2, (len(got1), len(got2))
    assert got1 == sorted(got1, key=expected.index)
    assert got2 == sorted(got2, key=expected.index)
    assert_nothing_more(c1, QUIET_MS // 2)
    assert_nothing_more(c2, QUIET_MS // 2)


def test_failover_on_non_persistent(broker: BrokerProcess, client_factory, np_topic: str) -> None:
    np_topic = failover_topic(["a", "b"], active="a", prefix="non-persistent://public/default/e2e-np")
    client_a = client_factory(broker.service_url)
    client_b = client_factory(broker.service_url)
    a = client_a.subscribe(np_topic, "fo", consumer_type=pulsar.ConsumerType.Failover, consumer_name="a")
    b = client_b.subscribe(np_topic, "fo", consumer_type=pulsar.ConsumerType.Failover, consumer_name="b")
    producer = client_b.create_producer(np_topic)
    first = [f"f-{i}".encode() for i in range(10)]
    for payload in first:
        producer.send(payload)
    assert [a.receive(timeout_millis=RECEIVE_MS).data() for _ in first] == first
    assert_nothing_more(b, QUIET_MS // 2)
    a.close()
    second = [f"g-{i}".encode() for i in range(10)]
    for payload in second:
        producer.send(payload)
    assert [b.receive(timeout_millis=RECEIVE_MS).data() for _ in second] == second
    assert_nothing_more(b, QUIET_MS // 2)


def test_key_shared_on_non_persistent(broker: BrokerProcess, client_factory, np_topic: str) -> None:
    clients = [client_factory(broker.service_url) for _ in range(2)]
    consumers = [
        c.subscribe(np_topic, "ks", consumer_type=pulsar.ConsumerType.KeyShared, consumer_name=f"ks-{i}")
        for i, c in enumerate(clients)
    ]
    producer = clients[1].create_producer(np_topic, batching_enabled=False)
    keys = [f"key-{k}" for k in range(16)]
    n = 0
    for round_no in range(5):
        for key in keys:
            producer.send(f"{key}/{round_no}".encode(), partition_key=key)
            n += 1
    owner: dict[str, set[int]] = {}
    rounds: dict[str, list[int]] = {}
    total = 0
    deadline = time.monotonic() + 15
    while total < n and time.monotonic() < deadline:
        for i, consumer in enumerate(consumers):
            try:
                msg = consumer.receive(timeout_millis=100)
            except pulsar.Timeout:
                continue
            consumer.acknowledge(msg)
            key, round_no = msg.data().decode().split("/")
            assert key == msg.partition_key()
            owner.setdefault(key, set()).add(i)
            rounds.setdefault(key, []).append(int(round_no))
            total += 1
    assert total == n
    # each key went to one consumer only, in publish order, each message exactly once
    assert {k: len(v) for k, v in owner.items()} == dict.fromkeys(keys, 1)
    assert rounds == {k: list(range(5)) for k in keys}
    # sixteen keys are spread over both consumers
    assert set().union(*owner.values()) == {0, 1}
    for consumer in consumers:
        assert_nothing_more(consumer, QUIET_MS // 2)
