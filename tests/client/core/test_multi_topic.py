"""Multi-topic consumers: topic lists, patterns with discovery and modes, partitioned topics, readers."""

from __future__ import annotations

import re
import time
import uuid

import pytest

from magnetar.client import (
    AsyncClient,
    Client,
    ConsumerType,
    InitialPosition,
    MessageId,
    OperationNotSupported,
    RegexSubscriptionMode,
    Timeout,
)
from magnetar.testing import BrokerProcess

from ..conftest import RECEIVE_MS, create_partitioned_topic, run


def _receive_all(consumer: object, n: int) -> list:
    return [consumer.receive(RECEIVE_MS) for _ in range(n)]  # type: ignore[attr-defined]


def test_topic_list(client: Client, topic: str) -> None:
    topics = [f"{topic}-a", f"{topic}-b", f"{topic}-c"]
    consumer = client.subscribe(topics, "sub", consumer_type=ConsumerType.Shared)
    for t in topics:
        producer = client.create_producer(t)
        for i in range(3):
            producer.send(f"{t[-1]}{i}".encode())
    got = _receive_all(consumer, 9)
    assert sorted(m.data() for m in got) == sorted(f"{t[-1]}{i}".encode() for t in topics for i in range(3))
    for t in topics:  # per topic, in order
        mine = [m.data() for m in got if m.topic_name() == t]
        assert mine == [f"{t[-1]}{i}".encode() for i in range(3)]
    for m in got:
        consumer.acknowledge(m)
    consumer.close()
    again = client.subscribe(topics, "sub", consumer_type=ConsumerType.Shared)
    try:
        msg = again.receive(500)
        raise AssertionError(f"acknowledged message came back: {msg.data()!r}")
    except Timeout:
        pass


def test_pattern_subscription_discovers_new_topics(client: Client) -> None:
    prefix = f"pat-{uuid.uuid4().hex[:8]}"
    before = f"persistent://public/default/{prefix}-one"
    client.create_producer(before).send(b"creates the topic")
    consumer = client.subscribe(
        re.compile(f"persistent://public/default/{prefix}-.*"), "sub",
        pattern_auto_discovery_period=0.3, initial_position=InitialPosition.Earliest,
    )
    assert consumer.receive(RECEIVE_MS).data() == b"creates the topic"
    later = f"persistent://public/default/{prefix}-two"
    other = f"persistent://public/default/other-{prefix}"
    client.create_producer(other).send(b"does not match")
    producer = client.create_producer(later)
    producer.send(b"found later")
    deadline = time.monotonic() + 10
    while later not in consumer.core.topics() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert later in consumer.core.topics() and other not in consumer.core.topics()
    assert consumer.receive(RECEIVE_MS).data() == b"found later"


def test_pattern_with_a_short_name(client: Client) -> None:
    prefix = f"short-{uuid.uuid4().hex[:8]}"
    for i in range(2):
        client.create_producer(f"{prefix}-{i}").send(b"%d" % i)
    consumer = client.subscribe(re.compile(f"{prefix}-.*"), "sub", initial_position=InitialPosition.Earliest,
                                regex_subscription_mode=RegexSubscriptionMode.PersistentOnly)
    assert sorted(m.data() for m in _receive_all(consumer, 2)) == [b"0", b"1"]


def test_partitioned_topic_consumer_and_reader(broker: BrokerProcess, client: Client, topic: str) -> None:
    create_partitioned_topic(broker, topic, 4)
    consumer = client.subscribe(topic, "sub", initial_position=InitialPosition.Earliest)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(40):
        producer.send(b"%02d" % i, partition_key=f"k{i}")
    got = _receive_all(consumer, 40)
    assert sorted(m.data() for m in got) == [b"%02d" % i for i in range(40)]
    assert {m.topic_name() for m in got} == {f"{topic}-partition-{i}" for i in range(4)}
    # acknowledging by message id finds the partition from the id
    for m in got:
        consumer.acknowledge(m.message_id())
    reader = client.create_reader(topic, MessageId.earliest)
    assert sorted(reader.read_next(RECEIVE_MS).data() for _ in range(40)) == [b"%02d" % i for i in range(40)]
    assert not reader.has_message_available()


def _subscribed_in_each_mode(client: Client, pattern: re.Pattern, np_topic: str, p_topic: str) -> tuple:
    """Subscribe ``pattern`` in the three regex modes; check each found its topics; (all, non-persistent only)."""
    every = client.subscribe(pattern, "all", regex_subscription_mode=RegexSubscriptionMode.AllTopics)
    only_np = client.subscribe(pattern, "np", regex_subscription_mode=RegexSubscriptionMode.NonPersistentOnly)
    only_p = client.subscribe(pattern, "p", regex_subscription_mode=RegexSubscriptionMode.PersistentOnly)
    assert every.core.topics() == sorted([np_topic, p_topic])
    assert only_np.core.topics() == [np_topic]
    assert only_p.core.topics() == [p_topic]
    return every, only_np


def test_pattern_modes_persistent_non_persistent_all(client: Client) -> None:
    prefix = f"mode-{uuid.uuid4().hex[:8]}"
    np_topic = f"non-persistent://public/default/{prefix}-np"
    p_topic = f"persistent://public/default/{prefix}-p"
    np_producer = client.create_producer(np_topic)  # a non-persistent topic lives while it is used
    client.create_producer(p_topic).send(b"stored")
    pattern = re.compile(f"{prefix}-.*")
    every, only_np = _subscribed_in_each_mode(client, pattern, np_topic, p_topic)
    np_producer.send(b"live")
    assert every.receive(RECEIVE_MS).data() == b"live"
    assert only_np.receive(RECEIVE_MS).data() == b"live"


def test_pattern_without_a_domain_matches_topics_of_every_domain_the_mode_lists(client: Client) -> None:
    prefix = f"nodomain-{uuid.uuid4().hex[:8]}"
    np_topic = f"non-persistent://public/default/{prefix}-np"
    p_topic = f"persistent://public/default/{prefix}-p"
    client.create_producer(np_topic)  # (the non-persistent topic lives while its producer does)
    client.create_producer(p_topic)
    client.create_producer(f"persistent://public/default/no-match-{prefix}")
    pattern = re.compile(f"public/default/{prefix}-.*")
    _subscribed_in_each_mode(client, pattern, np_topic, p_topic)
    # a pattern with a domain is matched without it, as the Java and C++ clients match it
    with_domain = client.subscribe(re.compile(f"persistent://public/default/{prefix}-.*"), "d",
                                   regex_subscription_mode=RegexSubscriptionMode.AllTopics)
    assert with_domain.core.topics() == sorted([np_topic, p_topic])


def test_an_id_a_producer_returned_does_not_say_which_topic(url: str, topic: str) -> None:
    async def main() -> None:
        async with AsyncClient(url) as client:
            producer = await client.create_producer(topic)
            consumer = await client.subscribe([topic, f"{topic}-another"], "sub", initial_position=InitialPosition.Earliest)
            sent = await producer.send(b"x")
            assert sent.topic is None
            with pytest.raises(OperationNotSupported):
                consumer.acknowledge(sent)
            with pytest.raises(OperationNotSupported):
                consumer.child_for(sent)
            received = await consumer.receive(RECEIVE_MS)
            assert received.message_id() == sent and received.message_id().topic == topic
            assert consumer.child_for(received.message_id()).topic == topic
            consumer.acknowledge(received.message_id())
            # with the topic given, a deserialized id finds its topic again
            restored = MessageId.deserialize(sent.serialize(), topic=topic)
            assert consumer.child_for(restored).topic == topic

    run(main())
