"""The ``pulsar.asyncio`` face: a second close of a producer, shutdown(), keyed sends and
pattern subscriptions behave as the official asyncio client's."""

from __future__ import annotations

import uuid

import pytest

from magnetar.client import AlreadyClosed, InitialPosition, Result
from magnetar.client.asyncio import Client, PulsarException
from magnetar.client.core.sends import key_bytes
from magnetar.testing import BrokerProcess

from .conftest import RECEIVE_MS, create_partitioned_topic, run


def test_closing_a_producer_twice_raises_already_closed(url: str, topic: str) -> None:
    async def main() -> None:
        client = Client(url)
        try:
            producer = await client.create_producer(topic)
            await producer.close()
            assert not producer.is_connected()
            with pytest.raises(PulsarException) as closed:
                await producer.close()
            assert closed.value.error() == Result.AlreadyClosed
            with pytest.raises(AlreadyClosed):
                await producer.send(b"late")
        finally:
            await client.close()

    run(main())


def test_closing_a_partitioned_producer_twice_raises_already_closed(broker: BrokerProcess, url: str, topic: str) -> None:
    create_partitioned_topic(broker, topic, 2)

    async def main() -> None:
        client = Client(url)
        try:
            producer = await client.create_producer(topic)
            await producer.close()
            with pytest.raises(AlreadyClosed):
                await producer.close()
        finally:
            await client.close()

    run(main())


def test_after_shutdown_everything_raises_already_closed(url: str, topic: str) -> None:
    async def main() -> None:
        client = Client(url)
        producer = await client.create_producer(topic)
        consumer = await client.subscribe(topic, "sub")
        await producer.send(b"hello")
        client.shutdown()
        for attempt in (producer.send(b"hello"), producer.flush(), producer.close(), consumer.receive(RECEIVE_MS),
                        client.create_producer(topic)):
            with pytest.raises(PulsarException) as refused:
                await attempt
            assert refused.value.error() == Result.AlreadyClosed
        client.shutdown()  # again: nothing more happens
        await client.close()  # waits for the shutdown's closing
        assert not producer.is_connected() and not consumer.is_connected()

    run(main())


def test_after_shutdown_receive_and_acknowledge_name_the_topic(url: str, topic: str) -> None:
    async def main() -> None:
        client = Client(url)
        producer = await client.create_producer(topic)
        consumer = await client.subscribe(topic, "sub")
        await producer.send(b"hello")
        msg = await consumer.receive(RECEIVE_MS)
        client.shutdown()
        for attempt in (consumer.receive(RECEIVE_MS), consumer.acknowledge(msg)):
            with pytest.raises(PulsarException) as refused:
                await attempt
            assert refused.value.error() == Result.AlreadyClosed
            assert str(refused.value) == f"consumer on {consumer.topic()}: the client was shut down"
        with pytest.raises(PulsarException, match=f"^producer on {producer.topic()}: the client was shut down$"):
            await producer.flush()
        await client.close()

    run(main())


def test_keyed_message_keeps_its_keys_and_properties(url: str, topic: str) -> None:
    async def main() -> None:
        client = Client(url)
        try:
            producer = await client.create_producer(topic)
            consumer = await client.subscribe(topic, "sub")
            await producer.send(b"msg", partition_key="key0", ordering_key="key1", properties={"my-prop": "my-value"})
            msg = await consumer.receive(RECEIVE_MS)
            assert (msg.data(), msg.partition_key(), msg.properties()) == (b"msg", "key0", {"my-prop": "my-value"})
            assert key_bytes(msg.ordering_key()) == b"key1"
        finally:
            await client.close()

    run(main())


def test_pattern_subscription_from_a_string(url: str) -> None:
    prefix = f"asyncio-pattern-{uuid.uuid4().hex[:8]}"
    topics = [f"persistent://public/default/{prefix}-1", f"persistent://public/default/{prefix}-2"]

    async def main() -> None:
        client = Client(url)
        try:
            for i, topic in enumerate(topics):
                await (await client.create_producer(topic)).send(b"from-%d" % i)
            consumer = await client.subscribe(
                f"public/default/{prefix}-.*", "sub", is_pattern_topic=True, initial_position=InitialPosition.Earliest
            )
            received = set()
            for _ in topics:
                msg = await consumer.receive(RECEIVE_MS)
                received.add(msg.data())
                await consumer.acknowledge(msg.message_id())
            assert received == {b"from-0", b"from-1"}
            await consumer.close()
        finally:
            await client.close()

    run(main())
