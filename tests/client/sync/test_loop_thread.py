"""CallBatcher: calls and acknowledgements handed to the loop thread in order, acknowledgements in runs."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from magnetar.client.core.consumer import AsyncConsumer
from magnetar.client.sync.client import _acknowledge_many
from magnetar.client.sync.loop_thread import CallBatcher


def _batcher() -> tuple[CallBatcher, list[Any], asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    seen: list[Any] = []
    return CallBatcher(loop, lambda messages: seen.append(("acks", list(messages)))), seen, loop


def test_acks_between_calls_go_together_and_in_order() -> None:
    batcher, seen, loop = _batcher()
    try:
        for m in ("m1", "m2", "m3"):
            batcher.ack(m)
        batcher.call(seen.append, "call-1")
        batcher.ack("m4")
        batcher.call(seen.append, "call-2")
        batcher.call(seen.append, "call-3")
        batcher.ack("m5")
        batcher.ack("m6")
        batcher.drain()
    finally:
        loop.close()
    assert seen == [("acks", ["m1", "m2", "m3"]), "call-1", ("acks", ["m4"]), "call-2", "call-3", ("acks", ["m5", "m6"])]


def test_a_failing_call_or_ack_run_is_logged_and_the_rest_runs(caplog: pytest.LogCaptureFixture) -> None:
    loop = asyncio.new_event_loop()
    seen: list[Any] = []

    def ack_many(messages: list[str]) -> None:
        if "bad" in messages:
            raise ValueError("bad message")
        seen.append(list(messages))

    batcher = CallBatcher(loop, ack_many)
    try:
        batcher.ack("bad")
        batcher.call(lambda: 1 / 0)
        batcher.ack("good")
        with caplog.at_level(logging.ERROR, logger="magnetar.client"):
            batcher.drain()
    finally:
        loop.close()
    assert seen == [["good"]]
    assert [r.getMessage() for r in caplog.records] == [
        "deferred acknowledgement on the client loop failed", "deferred call on the client loop failed",
    ]


def test_one_wake_per_burst() -> None:
    batcher, seen, loop = _batcher()
    try:
        for i in range(100):
            batcher.ack(i)
        assert len(loop._ready) == 1  # type: ignore[attr-defined]  # one drain scheduled for the burst
        loop.run_until_complete(asyncio.sleep(0))
    finally:
        loop.close()
    assert seen == [("acks", list(range(100)))]


def test_a_run_that_fails_part_way_is_acknowledged_one_by_one(caplog: pytest.LogCaptureFixture) -> None:
    acked: list[str] = []

    class Core(AsyncConsumer):
        def __init__(self) -> None:  # no connection: only the two acknowledge methods are used
            pass

        def acknowledge_many(self, messages: Any) -> None:
            for m in messages:
                self.acknowledge(m)

        def acknowledge(self, message: Any, txn: Any = None) -> Any:
            if message == "bad":
                raise ValueError("bad message")
            acked.append(message)

    with caplog.at_level(logging.ERROR, logger="magnetar.client"):
        _acknowledge_many(Core())(["a", "bad", "b"])
    assert acked == ["a", "a", "b"]  # "a" again (harmless), "b" not lost behind the bad one
    assert len(caplog.records) == 1
