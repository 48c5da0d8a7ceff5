"""The registration round trips every producer and consumer shares: a handle is in its connection's
table while it registers and after, not after a failed registration; closing on the broker writes
what was queued first and ignores an error answer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from magnetar.client.core.registration import close_on_broker, consumers_of, producers_of, register
from magnetar.client.exceptions import PulsarError, TopicNotFound
from magnetar.protocol import commands
from magnetar.protocol.enums import CommandType
from magnetar.protocol.schema import BaseCommand


class _Connection:
    """A connection that answers requests with ``answer`` (or raises it) and records what was sent."""

    def __init__(self, answer: BaseCommand | PulsarError) -> None:
        self.answer = answer
        self.closed = False
        self.producers: dict[int, Any] = {}
        self.consumers: dict[int, Any] = {}
        self.sent: list[BaseCommand] = []
        self.flushed_before: list[int] = []
        self._request_ids = iter(range(100))
        #: what the table held while the request was in flight
        self.registered_during_request: dict[int, Any] = {}

    def new_request_id(self) -> int:
        return next(self._request_ids)

    def flush(self) -> None:
        self.flushed_before.append(len(self.sent))

    async def request(self, command: BaseCommand, request_id: int, timeout: float) -> BaseCommand:
        self.sent.append(command)
        self.registered_during_request = {**self.producers, **self.consumers}
        await asyncio.sleep(0)
        if isinstance(self.answer, PulsarError):
            raise self.answer
        return self.answer


class _Lookup:
    def __init__(self, conn: _Connection) -> None:
        self.conn = conn

    async def connection_for(self, topic: str) -> _Connection:
        return self.conn


class _Client:
    def __init__(self, conn: _Connection) -> None:
        self.lookup = _Lookup(conn)
        self.operation_timeout = 5.0


class _Handle:
    def __init__(self, conn: _Connection) -> None:
        self.client = _Client(conn)
        self.topic = "persistent://public/default/t"
        self.conn: _Connection | None = None


def _subscribe(request_id: int) -> BaseCommand:
    cmd = BaseCommand(type=CommandType.SUBSCRIBE)
    cmd.subscribe.request_id = request_id
    return cmd


def test_a_registered_handle_is_in_its_table_during_and_after_the_request() -> None:
    conn = _Connection(BaseCommand(type=CommandType.SUCCESS))
    handle = _Handle(conn)

    registered, answer = asyncio.run(register(handle, 7, consumers_of, _subscribe, 5.0))  # type: ignore[arg-type]

    assert registered is conn and handle.conn is conn
    assert answer.type == CommandType.SUCCESS
    assert conn.registered_during_request == {7: handle}
    assert conn.consumers == {7: handle} and conn.producers == {}
    assert conn.sent[0].subscribe.request_id == 0, "the command is built with the connection's request id"


def test_a_failed_registration_leaves_no_handle_behind() -> None:
    conn = _Connection(TopicNotFound("no such topic"))
    handle = _Handle(conn)

    with pytest.raises(TopicNotFound):
        asyncio.run(register(handle, 3, producers_of, _subscribe, 5.0))  # type: ignore[arg-type]

    assert conn.registered_during_request == {3: handle}
    assert conn.producers == {} and handle.conn is None


def test_closing_on_the_broker_flushes_first_and_ignores_an_error_answer() -> None:
    conn = _Connection(PulsarError("already closed"))
    handle = _Handle(conn)
    handle.conn = conn
    conn.consumers[5] = handle

    asyncio.run(close_on_broker(handle, 5, consumers_of, commands.close_consumer))  # type: ignore[arg-type]

    assert conn.consumers == {}
    assert conn.flushed_before == [0], "what was queued is written before the CLOSE_CONSUMER"
    assert [c.type for c in conn.sent] == [CommandType.CLOSE_CONSUMER]
    assert conn.sent[0].close_consumer.consumer_id == 5


def test_closing_on_a_lost_connection_sends_nothing() -> None:
    conn = _Connection(BaseCommand(type=CommandType.SUCCESS))
    conn.closed = True
    handle = _Handle(conn)
    handle.conn = conn
    conn.producers[2] = handle

    asyncio.run(close_on_broker(handle, 2, producers_of, commands.close_producer))  # type: ignore[arg-type]

    assert conn.sent == [] and conn.flushed_before == []
