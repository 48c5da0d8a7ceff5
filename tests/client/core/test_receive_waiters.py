"""Receives that time out or are cancelled leave nothing behind: a consumer polled with a short
timeout on an idle topic (as ``magnetar perf consume`` and most applications poll) must not keep a
future per poll until the next message arrives."""

from __future__ import annotations

import asyncio
import gc

import pytest

from magnetar.client import AsyncClient, Timeout
from magnetar.protocol.batch import build_entry
from magnetar.protocol.schema import MessageMetadata

from ..conftest import run
from ..fakebroker import FakeBroker

POLLS = 200


def _live_futures() -> int:
    gc.collect()
    return sum(1 for obj in gc.get_objects() if isinstance(obj, asyncio.Future))


def test_timed_out_and_cancelled_receives_leave_no_futures() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub")
            with pytest.raises(Timeout):
                await consumer.receive(1)
            before = _live_futures()
            for _ in range(POLLS):
                with pytest.raises(Timeout):
                    await consumer.receive(1)
            for _ in range(POLLS):
                pending = asyncio.ensure_future(consumer.receive())
                await asyncio.sleep(0)
                pending.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await pending
            assert _live_futures() - before < POLLS // 10
            # the next message still goes to the next receive
            entry = build_entry(MessageMetadata(producer_name="p", sequence_id=0, publish_time=1), b"after")
            fake.push_message(fake.connections[0], consumer.consumer_id, entry, 1, 0)
            assert (await consumer.receive(5000)).data() == b"after"

    run(main())
