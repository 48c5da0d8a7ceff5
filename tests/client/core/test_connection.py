"""The connection layer against the fake broker: timeouts, keep-alive, reconnection, backoff."""

from __future__ import annotations

import asyncio
import random
import time

import pytest

from magnetar.client import AsyncClient, ConnectError, InvalidConfiguration, Timeout
from magnetar.client.core.trackers import Backoff
from magnetar.protocol.enums import CommandType
from magnetar.protocol.schema import BaseCommand
from magnetar.testing import free_port

from ..conftest import run
from ..fakebroker import FakeBroker


def test_connection_refused_says_where_and_why() -> None:
    port = free_port()

    async def main() -> None:
        async with AsyncClient(f"pulsar://127.0.0.1:{port}", operation_timeout_seconds=2) as client:
            with pytest.raises(ConnectError, match=rf"could not create a producer.*127\.0\.0\.1:{port}"):
                await client.create_producer("t")

    run(main())


def test_connection_timeout_when_broker_never_answers_connect() -> None:
    async def main() -> None:
        async with FakeBroker() as fake:
            fake.answer_connect = False
            async with AsyncClient(fake.url, connection_timeout_ms=300, operation_timeout_seconds=2) as client:
                started = time.monotonic()
                with pytest.raises(ConnectError, match=r"within 0\.3 s"):
                    await client.create_producer("t")
                assert time.monotonic() - started < 2

    run(main())


def test_operation_timeout_when_broker_never_answers() -> None:
    async def main() -> None:
        async with FakeBroker() as fake:
            fake.answer_producers = False
            async with AsyncClient(fake.url, operation_timeout_seconds=0.3) as client:
                with pytest.raises(Timeout, match=r"could not create a producer on .*/t: no answer to PRODUCER within 0\.3 s"):
                    await client.create_producer("t")

    run(main())


def test_invalid_urls_and_options_are_refused() -> None:
    async def main() -> None:
        with pytest.raises(InvalidConfiguration, match="invalid service URL"):
            AsyncClient("kafka://localhost:9092")
        with pytest.raises(InvalidConfiguration, match="bad port"):
            AsyncClient("pulsar://localhost:port")
        with pytest.raises(InvalidConfiguration, match="positive"):
            AsyncClient("pulsar://localhost:6650", operation_timeout_seconds=0)
        async with AsyncClient("pulsar://127.0.0.1:1") as client:
            with pytest.raises(InvalidConfiguration, match="unexpected keyword"):
                await client.create_producer("t", no_such_option=1)

    run(main())


def test_keepalive_pings_and_answers_broker_pings() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url, keep_alive_interval_seconds=0.1) as client:
            await client.create_producer("t")
            await fake.wait_for(lambda: len(fake.commands(CommandType.PING)) >= 3, timeout=3)
            # the broker pinging the client gets a PONG
            ping = BaseCommand(type=CommandType.PING)
            ping.ping.SetInParent()
            fake.connections[0].send(ping)
            await fake.wait_for(lambda: fake.commands(CommandType.PONG), timeout=3)
            # a broker that answers keeps the one connection
            assert len(fake.commands(CommandType.CONNECT)) == 1

    run(main())


def test_silent_broker_connection_is_dropped_and_reopened() -> None:
    async def main() -> None:
        async with FakeBroker() as fake:
            fake.answer_pings = False
            async with AsyncClient(fake.url, keep_alive_interval_seconds=0.1) as client:
                producer = await client.create_producer("t")
                # no answer for two intervals: the client closes the connection and the
                # producer registers again on a new one
                await fake.wait_for(lambda: len(fake.commands(CommandType.PRODUCER)) >= 2, timeout=5)
                assert len(fake.commands(CommandType.CONNECT)) >= 2
                fake.answer_pings = True
                await fake.wait_for(producer.is_connected, timeout=5)
                await producer.send(b"after reconnection")

    run(main())


def test_pending_sends_are_resent_in_order_after_reconnection() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            fake.answer_sends = False
            producer = await client.create_producer("t", batching_enabled=False)
            futures = [await producer.send_async(f"m{i}".encode()) for i in range(5)]
            await fake.wait_for(lambda: len(fake.commands(CommandType.SEND)) == 5)
            first_conn = fake.connections[0]
            fake.answer_sends = True
            first_conn.abort()
            ids = await asyncio.gather(*futures)
            assert len(set(ids)) == 5
            later = [f for c, f in fake.received if c is not first_conn and f.command.type == CommandType.SEND]
            assert [f.command.send.sequence_id for f in later] == [0, 1, 2, 3, 4]
            # sends made while reconnecting go after the resent ones
            await producer.send(b"m5")
            assert fake.commands(CommandType.SEND)[-1].sequence_id == 5

    run(main())


def test_consumer_resubscribes_after_connection_loss() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub", receiver_queue_size=10)
            await fake.wait_for(lambda: fake.commands(CommandType.FLOW))
            fake.connections[0].abort()
            await fake.wait_for(lambda: len(fake.commands(CommandType.SUBSCRIBE)) == 2, timeout=5)
            await fake.wait_for(consumer.is_connected, timeout=5)
            await fake.wait_for(lambda: len(fake.commands(CommandType.FLOW)) == 2, timeout=5)
            assert [f.message_permits for f in fake.commands(CommandType.FLOW)] == [10, 10]

    run(main())


def test_backoff_doubles_up_to_the_maximum_with_jitter() -> None:
    backoff = Backoff(0.1, 2.0, rng=random.Random(7))
    delays = [backoff.next() for _ in range(8)]
    nominal = [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0, 2.0]
    for got, want in zip(delays, nominal, strict=True):
        assert max(0.1, want * 0.9) <= got <= want
    backoff.reset()
    assert backoff.next() == pytest.approx(0.1, abs=0.01)
