"""Partitioned topics: key hashing as the Java client, routing modes, and the broker's partitions."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from magnetar.client import (
    AsyncClient,
    AsyncPartitionedProducer,
    Client,
    ConsumerType,
    HashingScheme,
    InitialPosition,
    InvalidConfiguration,
    PartitionsRoutingMode,
    partition_for_key,
)
from magnetar.protocol.enums import CommandType
from magnetar.testing import BrokerProcess

from ..conftest import RECEIVE_MS, create_partitioned_topic, run
from ..fakebroker import FakeBroker

# String.hashCode() & Integer.MAX_VALUE, as Java computes it (UTF-16 code units, int overflow)
JAVA_STRING_HASH = [
    ("hello", 99162322),
    ("", 0),
    ("日本", 835047),
    ("😀", 1772899),  # a surrogate pair: two UTF-16 units
    ("polygenelubricants", 0),  # hashCode() is Integer.MIN_VALUE
    ("keykeykey2", 42978643),  # hashCode() is negative
    ("keykeykeykeykey1", 434058482),  # overflows as unsigned
]
# Murmur3_32Hash of the UTF-8 bytes & Integer.MAX_VALUE (values of the Java client's tests)
MURMUR3_HASH = [("k1", 2110152746), ("k2", 1479966664), ("key1", 462881061), ("key2", 1936800180),
                ("key01", 39696932), ("key02", 751761803)]


@pytest.mark.parametrize(("key", "hashed"), JAVA_STRING_HASH)
def test_java_string_hash_routing(key: str, hashed: int) -> None:
    for n in (1, 2, 3, 7, 16, 100):
        assert partition_for_key(key, n) == hashed % n
        assert partition_for_key(key, n, HashingScheme.JavaStringHash) == hashed % n


@pytest.mark.parametrize(("key", "hashed"), MURMUR3_HASH)
def test_murmur3_hash_routing(key: str, hashed: int) -> None:
    for n in (1, 3, 5, 16):
        assert partition_for_key(key, n, HashingScheme.Murmur3_32Hash) == hashed % n


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_round_robin_switches_at_batch_boundaries() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            topic = "persistent://public/default/parted"
            fake.partitions[topic] = 4
            producer = await client.create_producer(topic)
            assert isinstance(producer, AsyncPartitionedProducer)
            assert [p.topic for p in producer.producers] == [f"{topic}-partition-{i}" for i in range(4)]
            clock = _Clock()
            producer.clock = clock
            producer._last_switch = clock.now
            first = producer.partition_for(b"x", {})
            # a whole batch's worth of messages (1000) stays on one partition, the next moves on
            picks = [producer.partition_for(b"x", {}) for _ in range(999)]
            assert set(picks) == {first}
            assert producer.partition_for(b"x", {}) == (first + 1) % 4
            # the publish delay (10 ms) closes a window as well
            clock.now += 0.0095
            assert producer.partition_for(b"x", {}) == (first + 1) % 4
            clock.now += 0.001
            start = producer.partition_for(b"k" * 1024, {})
            assert start == (first + 2) % 4
            # and so do 128 KiB (the message that would reach the limit goes to the next partition)
            picks = [producer.partition_for(b"k" * 1024, {}) for _ in range(126)]
            assert set(picks) == {start}
            assert producer.partition_for(b"k" * 1024, {}) == (start + 1) % 4
            # keys are hashed, whatever the mode
            assert producer.partition_for(b"x", {"partition_key": "hello"}) == 99162322 % 4
            # without batching the partition changes with every message
            unbatched = await client.create_producer(topic, batching_enabled=False)
            seq = [unbatched.partition_for(b"x", {}) for _ in range(8)]
            assert [(b - a) % 4 for a, b in zip(seq, seq[1:], strict=False)] == [1] * 7

    run(main())


def test_single_partition_and_custom_router() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            topic = "persistent://public/default/parted"
            fake.partitions[topic] = 5
            single = await client.create_producer(topic, message_routing_mode=PartitionsRoutingMode.UseSinglePartition)
            picks = {single.partition_for(b"x", {}) for _ in range(100)}
            assert len(picks) == 1
            assert single.partition_for(b"x", {"partition_key": "k1"}) == partition_for_key("k1", 5)

            def router(msg: object, n: int) -> int:
                return int(msg.properties()["to"]) % n  # type: ignore[attr-defined]

            custom = await client.create_producer(topic, message_router=router)
            await asyncio.gather(*[await custom.send_async(b"m", properties={"to": str(i)}) for i in range(10)])
            by_partition = Counter()
            producer_ids = {p.producer_id: i for i, p in enumerate(custom.producers)}
            for send in fake.commands(CommandType.SEND):
                if send.producer_id in producer_ids:
                    by_partition[producer_ids[send.producer_id]] += send.num_messages
            assert by_partition == Counter({i: 2 for i in range(5)})

            def bad_router(msg: object, n: int) -> int:
                return n

            broken = await client.create_producer(topic, message_router=bad_router)
            with pytest.raises(InvalidConfiguration, match="returned 5"):
                await broken.send(b"x")
            with pytest.raises(InvalidConfiguration, match="needs a message_router"):
                await (await client.create_producer(topic, message_routing_mode=PartitionsRoutingMode.CustomPartition)).send(b"x")

    run(main())


def test_partitioned_topic_on_the_broker(broker: BrokerProcess, client: Client, topic: str) -> None:
    create_partitioned_topic(broker, topic, 3)
    assert client.get_topic_partitions(topic) == [f"{topic}-partition-{i}" for i in range(3)]
    consumer = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared, initial_position=InitialPosition.Earliest)
    producer = client.create_producer(topic, batching_enabled=False)
    keys = [f"key-{i}" for i in range(30)]
    for k in keys:
        producer.send(k.encode(), partition_key=k)
    murmur = client.create_producer(topic, batching_enabled=False, hashing_scheme=HashingScheme.Murmur3_32Hash)
    for k in ("k1", "k2", "key1", "key2"):
        murmur.send(b"murmur-" + k.encode(), partition_key=k)
    unkeyed = client.create_producer(topic)
    for i in range(30):
        unkeyed.send_async(b"rr-%d" % i, None)
    unkeyed.flush()
    got = [consumer.receive(RECEIVE_MS) for _ in range(64)]
    for msg in got:
        consumer.acknowledge(msg)
    where = {m.data(): m.topic_name() for m in got}
    for k in keys:
        assert where[k.encode()] == f"{topic}-partition-{partition_for_key(k, 3)}"
    for k in ("k1", "k2", "key1", "key2"):
        assert where[b"murmur-" + k.encode()] == f"{topic}-partition-{partition_for_key(k, 3, HashingScheme.Murmur3_32Hash)}"
    assert {m.message_id().partition for m in got} == {0, 1, 2}
    assert all(m.message_id().partition == int(m.topic_name().rsplit("-", 1)[1]) for m in got)
