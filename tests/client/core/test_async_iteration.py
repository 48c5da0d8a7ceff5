"""``async for`` over consumers and readers of magnetar's asyncio client: each message once, in
order, and the loop ends when the consumer is closed, also while it waits for the next message."""

from __future__ import annotations

import asyncio

from magnetar.client import AsyncClient, ConsumerType, InitialPosition, MessageId

from ..conftest import run


async def _produce(client: AsyncClient, topic: str, payloads: list[bytes]) -> None:
    producer = await client.create_producer(topic, batching_enabled=False)
    for payload in payloads:
        await producer.send(payload)
    await producer.close()


def test_async_for_over_a_consumer_ends_when_it_is_closed(url: str, topic: str) -> None:
    payloads = [f"m-{i}".encode() for i in range(20)]

    async def main() -> list[bytes]:
        async with AsyncClient(url) as client:
            consumer = await client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared)
            await _produce(client, topic, payloads)
            seen: list[bytes] = []

            async def close_when_all_seen() -> None:
                while len(seen) < len(payloads):
                    await asyncio.sleep(0.01)
                await asyncio.sleep(0.1)  # the loop is now waiting for a 21st message
                await consumer.close()

            closer = asyncio.ensure_future(close_when_all_seen())
            async for msg in consumer:
                seen.append(msg.data())
                await consumer.acknowledge(msg)
            await closer
            return seen

    assert run(main(), timeout=30) == payloads


def test_async_for_over_a_closed_consumer_yields_nothing(url: str, topic: str) -> None:
    async def main() -> list[bytes]:
        async with AsyncClient(url) as client:
            consumer = await client.subscribe(topic, "sub")
            await _produce(client, topic, [b"never-read"])
            await consumer.close()
            return [msg.data() async for msg in consumer]

    assert run(main(), timeout=30) == []


def test_async_for_over_a_reader_and_a_multi_topic_consumer(url: str, topic: str) -> None:
    other = topic + "-other"

    async def main() -> tuple[list[bytes], set[bytes]]:
        async with AsyncClient(url) as client:
            await _produce(client, topic, [b"a", b"b", b"c"])
            await _produce(client, other, [b"x", b"y"])
            reader = await client.create_reader(topic, MessageId.earliest)
            read: list[bytes] = []
            async for msg in reader:
                read.append(msg.data())
                if len(read) == 3:
                    break
            await reader.close()
            consumer = await client.subscribe(
                [topic, other], "multi", initial_position=InitialPosition.Earliest
            )
            both: set[bytes] = set()
            async for msg in consumer:
                both.add(msg.data())
                if len(both) == 5:
                    await consumer.close()
            return read, both

    assert run(main(), timeout=30) == ([b"a", b"b", b"c"], {b"a", b"b", b"c", b"x", b"y"})
