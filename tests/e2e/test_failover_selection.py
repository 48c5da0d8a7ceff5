"""Which Failover consumer is active on non-partitioned topics (issue 12, defect 10).

As Apache Pulsar's ``AbstractDispatcherSingleActiveConsumer`` does: the consumers of the best
priority level are placed on a hash ring (Murmur3 of the consumer name followed by 0..99) and the
topic name's hash picks one. So the choice depends neither on the order of subscription nor on
the alphabet, and a pair of consumers of many topics shares the topics between them.
"""

from __future__ import annotations

import uuid

import pulsar

from magnetar.broker.subscriptions.dispatchers.single_active import java_murmur_hash, ring_index

from .failover_helpers import failover_topic
from .helpers import RECEIVE_MS, assert_nothing_more


def test_murmur_hash_is_pulsars() -> None:
    """Murmur3 x86_32 (seed 0) of the UTF-8 bytes with the sign bit cleared, as Pulsar's Java hash."""
    assert java_murmur_hash("") == 0
    assert java_murmur_hash("hello") == 0x248BFA47
    assert java_murmur_hash("Hello, world!") == 0xC0363E43 & 0x7FFFFFFF


def test_active_consumer_follows_the_ring_not_the_name(client: pulsar.Client, client2: pulsar.Client) -> None:
    """A later subscriber whose name sorts first ("alpha") does not take over from "zeta" when the
    topic's hash picks "zeta"."""
    topic = failover_topic(["alpha", "zeta"], active="zeta")
    zeta = client.subscribe(topic, "fo", consumer_type=pulsar.ConsumerType.Failover, consumer_name="zeta")
    alpha = client2.subscribe(topic, "fo", consumer_type=pulsar.ConsumerType.Failover, consumer_name="alpha")
    producer = client2.create_producer(topic, batching_enabled=False)
    for i in range(5):
        producer.send(b"m%d" % i)
    assert [zeta.receive(timeout_millis=RECEIVE_MS).data() for _ in range(5)] == [b"m%d" % i for i in range(5)]
    assert_nothing_more(alpha)


def test_a_pair_of_consumers_shares_many_topics_by_hash(client: pulsar.Client, client2: pulsar.Client) -> None:
    """Two Failover consumers of the same 20 non-partitioned topics each get the topics the ring
    gives them: both get some, none gets a topic twice."""
    tag = uuid.uuid4().hex[:10]
    topics = [f"persistent://public/default/fo-multi-{tag}-{i}" for i in range(20)]
    names = ["consumer-a", "consumer-b"]
    consumers = {
        name: c.subscribe(topics, "fo", consumer_type=pulsar.ConsumerType.Failover, consumer_name=name)
        for name, c in zip(names, (client, client2), strict=True)
    }
    producer_client = client2
    for topic in topics:
        producer = producer_client.create_producer(topic, batching_enabled=False)
        producer.send(topic.encode())
        producer.close()
    expected = {name: {t for t in topics if names[ring_index(t, names)] == name} for name in names}
    assert expected["consumer-a"] and expected["consumer-b"]
    for name, consumer in consumers.items():
        got = {consumer.receive(timeout_millis=RECEIVE_MS).data().decode() for _ in expected[name]}
        assert got == expected[name]
        assert_nothing_more(consumer)
