"""A scriptable broker for client tests: an asyncio server on 127.0.0.1 speaking magnetar.protocol.

It answers the commands a client needs (CONNECT, lookups, PRODUCER, SEND, SUBSCRIBE, FLOW ...)
and records everything it receives, so tests can check what the client sent and make the broker
misbehave: refuse credentials, challenge them, never answer sends or pings, drop connections.
It runs on the test's own event loop.
"""

from __future__ import annotations

import asyncio
import itertools
import ssl
import struct
from collections.abc import Callable
from typing import Any

from magnetar.protocol.enums import (
    PROTOCOL_VERSION,
    CommandType,
    LookupType,
    PartitionedMetadataResult,
    ServerError,
)
from magnetar.protocol.framing import Frame, FrameDecoder, encode_command, encode_payload_command, split_entry
from magnetar.protocol.schema import BaseCommand, MessageMetadata

_U32 = struct.Struct(">I")


class FakeConnection(asyncio.Protocol):
    """One client connection to the fake broker."""

    def __init__(self, broker: FakeBroker) -> None:
        self.broker = broker
        self.decoder = FrameDecoder(64 * 1024 * 1024)
        self.transport: asyncio.Transport | None = None
        self.connected = False
        self.closed = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.broker.connections.append(self)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    def data_received(self, data: bytes) -> None:
        for frame in self.decoder.feed(data):
            self.broker.received.append((self, frame))
            self.broker._handle(self, frame)
            self.broker._notify()

    def send(self, cmd: BaseCommand) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(encode_command(cmd))

    def send_raw(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()


class FakeBroker:
    """The fake broker. Attributes control its behaviour; ``received`` records every frame."""

    def __init__(self, *, ssl_context: ssl.SSLContext | None = None) -> None:
        self.ssl_context = ssl_context
        self.server: asyncio.Server | None = None
        self.port = 0
        self.connections: list[FakeConnection] = []
        self.received: list[tuple[FakeConnection, Frame]] = []
        self._changed = asyncio.Event()
        # behaviour
        self.answer_connect = True
        self.required_token: bytes | None = None  # refuse CONNECTs without this auth_data
        self.challenge: bytes | None = None  # send AUTH_CHALLENGE with this data after CONNECT
        self.answer_sends = True
        self.answer_pings = True
        self.answer_producers = True
        self.partitions: dict[str, int] = {}
        self.max_message_size = 5 * 1024 * 1024
        self.producer_names = itertools.count()
        self.entry_ids = itertools.count()
        #: custom handlers by command type: f(conn, frame) -> True when handled
        self.handlers: dict[int, Callable[[FakeConnection, Frame], bool]] = {}

    @property
    def url(self) -> str:
        """Service URL of the fake broker."""
        return f"{'pulsar+ssl' if self.ssl_context else 'pulsar'}://127.0.0.1:{self.port}"

    async def start(self) -> FakeBroker:
        loop = asyncio.get_running_loop()
        self.server = await loop.create_server(lambda: FakeConnection(self), "127.0.0.1", 0, ssl=self.ssl_context)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        for conn in self.connections:
            conn.abort()
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def __aenter__(self) -> FakeBroker:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- inspection -------------------------------------------------------------------------
    def _notify(self) -> None:
        self._changed.set()

    def commands(self, ctype: int) -> list[Any]:
        """Sub-commands of every received frame of one type, in order."""
        from magnetar.protocol.framing import sub_command

        return [sub_command(f.command) for _, f in self.received if f.command.type == ctype]

    def frames(self, ctype: int) -> list[Frame]:
        """Received frames of one type."""
        return [f for _, f in self.received if f.command.type == ctype]

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
        """Wait until ``predicate()`` is truthy; returns its value."""
        async with asyncio.timeout(timeout):
            while True:
                value = predicate()
                if value:
                    return value
                self._changed.clear()
                await self._changed.wait()

    # -- behaviour --------------------------------------------------------------------------
    def _handle(self, conn: FakeConnection, frame: Frame) -> None:
        cmd = frame.command
        t = cmd.type
        custom = self.handlers.get(t)
        if custom is not None and custom(conn, frame):
            return
        if t == CommandType.CONNECT:
            if not self.answer_connect:
                return
            if self.required_token is not None and cmd.connect.auth_data != self.required_token:
                err = BaseCommand(type=CommandType.ERROR)
                err.error.request_id = (1 << 64) - 1
                err.error.error = ServerError.AuthenticationError
                err.error.message = "Unable to authenticate: bad token"
                conn.send(err)
                conn.close()
                return
            if self.challenge is not None:
                ch = BaseCommand(type=CommandType.AUTH_CHALLENGE)
                ch.auth_challenge.server_version = "fake"
                ch.auth_challenge.protocol_version = PROTOCOL_VERSION
                ch.auth_challenge.challenge.auth_method_name = cmd.connect.auth_method_name
                ch.auth_challenge.challenge.auth_data = self.challenge
                conn.send(ch)
                return
            self._connected(conn)
        elif t == CommandType.AUTH_RESPONSE:
            if not conn.connected:
                self._connected(conn)
        elif t == CommandType.PING:
            if self.answer_pings:
                pong = BaseCommand(type=CommandType.PONG)
                pong.pong.SetInParent()
                conn.send(pong)
        elif t == CommandType.PARTITIONED_METADATA:
            resp = BaseCommand(type=CommandType.PARTITIONED_METADATA_RESPONSE)
            resp.partition_metadata_response.request_id = cmd.partition_metadata.request_id
            resp.partition_metadata_response.partitions = self.partitions.get(cmd.partition_metadata.topic, 0)
            resp.partition_metadata_response.response = PartitionedMetadataResult.Success
            conn.send(resp)
        elif t == CommandType.LOOKUP:
            resp = BaseCommand(type=CommandType.LOOKUP_RESPONSE)
            r = resp.lookup_topic_response
            r.request_id = cmd.lookup_topic.request_id
            r.response = LookupType.Connect
            r.broker_service_url = f"pulsar://127.0.0.1:{self.port}"
            r.broker_service_url_tls = f"pulsar+ssl://127.0.0.1:{self.port}"
            r.authoritative = True
            conn.send(resp)
        elif t == CommandType.PRODUCER:
            if not self.answer_producers:
                return
            resp = BaseCommand(type=CommandType.PRODUCER_SUCCESS)
            resp.producer_success.request_id = cmd.producer.request_id
            resp.producer_success.producer_name = cmd.producer.producer_name or f"fake-{next(self.producer_names)}"
            resp.producer_success.last_sequence_id = -1
            conn.send(resp)
        elif t == CommandType.SEND:
            if self.answer_sends:
                self.receipt(conn, cmd.send.producer_id, cmd.send.sequence_id, cmd.send.highest_sequence_id)
        elif t in (CommandType.SUBSCRIBE, CommandType.CLOSE_PRODUCER, CommandType.CLOSE_CONSUMER, CommandType.UNSUBSCRIBE):
            from magnetar.protocol.framing import sub_command

            resp = BaseCommand(type=CommandType.SUCCESS)
            resp.success.request_id = sub_command(cmd).request_id
            conn.send(resp)

    def _connected(self, conn: FakeConnection) -> None:
        conn.connected = True
        resp = BaseCommand(type=CommandType.CONNECTED)
        resp.connected.server_version = "fake-broker"
        resp.connected.protocol_version = PROTOCOL_VERSION
        resp.connected.max_message_size = self.max_message_size
        conn.send(resp)

    def receipt(self, conn: FakeConnection, producer_id: int, sequence_id: int, highest: int = 0) -> None:
        """Send a SEND_RECEIPT."""
        resp = BaseCommand(type=CommandType.SEND_RECEIPT)
        r = resp.send_receipt
        r.producer_id = producer_id
        r.sequence_id = sequence_id
        if highest:
            r.highest_sequence_id = highest
        r.message_id.ledger_id = 1
        r.message_id.entry_id = next(self.entry_ids)
        conn.send(resp)

    def push_message(
        self, conn: FakeConnection, consumer_id: int, entry: bytes, ledger_id: int, entry_id: int, redelivery_count: int = 0
    ) -> None:
        """Deliver an entry to a consumer with a MESSAGE frame."""
        cmd = BaseCommand(type=CommandType.MESSAGE)
        cmd.message.consumer_id = consumer_id
        cmd.message.message_id.ledger_id = ledger_id
        cmd.message.message_id.entry_id = entry_id
        if redelivery_count:
            cmd.message.redelivery_count = redelivery_count
        conn.send_raw(encode_payload_command(cmd, entry))


def entry_metadata(frame: Frame) -> MessageMetadata:
    """The MessageMetadata of a SEND frame's entry."""
    assert frame.entry is not None
    meta, _ = split_entry(frame.entry)
    return MessageMetadata.FromString(meta)


def entry_payload(frame: Frame) -> bytes:
    """The payload of a SEND frame's entry."""
    assert frame.entry is not None
    _, payload = split_entry(frame.entry)
    return bytes(payload)
