"""A custom message router sees the message as the official client's router does: its payload
as bytes (``value()`` and ``data()``, encoded with the producer's schema), its keys as str."""

from __future__ import annotations

from typing import Any

from magnetar.client import AsyncClient, Client, InitialPosition, StringSchema
from magnetar.client.core.partitioned import AsyncPartitionedProducer
from magnetar.testing import BrokerProcess

from ..conftest import RECEIVE_MS, create_partitioned_topic, run
from ..fakebroker import FakeBroker


def test_the_router_sees_bytes_and_str_keys() -> None:
    seen: list[tuple[Any, ...]] = []

    def router(msg: Any, partitions: int) -> int:
        seen.append((msg.value(), msg.data(), msg.partition_key(), msg.ordering_key(), msg.properties(), partitions))
        return 3

    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            topic = "persistent://public/default/routed"
            fake.partitions[topic] = 5
            plain = await client.create_producer(topic, message_router=router)
            assert isinstance(plain, AsyncPartitionedProducer)
            await plain.send(b"hello", ordering_key="o1", properties={"a": "1"})
            await plain.send(b"bytes-key", ordering_key=b"o2")
            typed = await client.create_producer(topic, schema=StringSchema(), message_router=router)
            await typed.send("text", partition_key="k")
            assert plain.partition_for(b"x", {}) == 3

    run(main())
    assert seen[0] == (b"hello", b"hello", "", "o1", {"a": "1"}, 5)
    assert seen[1][3] == "o2"
    assert seen[2][:4] == (b"text", b"text", "k", "")


def test_routed_messages_land_on_the_partitions_the_router_picks(broker: BrokerProcess, client: Client, topic: str) -> None:
    create_partitioned_topic(broker, topic, 5)

    def router(msg: Any, partitions: int) -> int:
        return (10 if msg.value().decode("utf-8").startswith("hello-") else 11) % partitions

    producer = client.create_producer(topic, message_router=router)
    for body in (b"hello-0", b"hello-1", b"world-0", b"world-1"):
        producer.send(body)
    consumer = client.subscribe(topic, "sub", initial_position=InitialPosition.Earliest)
    by_partition: dict[int, list[bytes]] = {}
    for _ in range(4):
        msg = consumer.receive(RECEIVE_MS)
        by_partition.setdefault(msg.message_id().partition(), []).append(msg.value())
    assert by_partition == {0: [b"hello-0", b"hello-1"], 1: [b"world-0", b"world-1"]}
