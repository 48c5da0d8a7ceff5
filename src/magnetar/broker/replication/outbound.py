"""A minimal client of another cluster, for replicators: connect (with the broker client's or the
cluster's credentials, plain or TLS), look a topic up, register a schema, open a producer and send
stored entries whose metadata was rewritten, with receipts in order.

Built on :mod:`magnetar.net` and :mod:`magnetar.protocol` rather than ``magnetar.client``: a
replicator sends whole stored entries (batches included) as they are, with the original producer
name and sequence ids in the SEND, which the client's producer (it batches and numbers messages
itself) is not made for; and the broker and the client stay independent packages.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections import deque
from collections.abc import Callable
from urllib.parse import urlparse

from magnetar import __version__
from magnetar.broker.replication.credentials import ClientCredentials
from magnetar.net import FramedProtocol
from magnetar.protocol.commands import pong
from magnetar.protocol.enums import PROTOCOL_VERSION, CommandType, LookupType, ServerError
from magnetar.protocol.framing import FRAME_HEADROOM, Frame, crc32c, encode_entry_header
from magnetar.protocol.schema import BaseCommand, Schema

log = logging.getLogger("magnetar.broker.replication")

CLIENT_VERSION = f"magnetar-replicator-{__version__}"
#: the largest frame a remote may send us (its answers are small; entries go the other way)
_MAX_FRAME = 5 * 1024 * 1024 + FRAME_HEADROOM
#: commands answered by request id, and the field of the answer
_ANSWERS = {
    CommandType.SUCCESS: "success",
    CommandType.PRODUCER_SUCCESS: "producer_success",
    CommandType.LOOKUP_RESPONSE: "lookup_topic_response",
    CommandType.PARTITIONED_METADATA_RESPONSE: "partition_metadata_response",
    CommandType.GET_OR_CREATE_SCHEMA_RESPONSE: "get_or_create_schema_response",
}


class RemoteError(Exception):
    """The remote cluster refused a request, or the connection to it is gone."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


def parse_service_url(url: str) -> tuple[str, int, bool]:
    """(host, port, TLS?) of a ``pulsar://`` or ``pulsar+ssl://`` URL (the first host of a list)."""
    parsed = urlparse(url.split(",")[0].strip())
    if parsed.scheme not in ("pulsar", "pulsar+ssl") or not parsed.hostname:
        raise RemoteError(f"not a broker service URL: {url!r}")
    tls = parsed.scheme == "pulsar+ssl"
    return parsed.hostname, parsed.port or (6651 if tls else 6650), tls


class RemoteConnection(FramedProtocol):
    """One connection to a broker of the remote cluster."""

    def __init__(self, credentials: ClientCredentials) -> None:
        super().__init__(_MAX_FRAME)
        self.credentials = credentials
        loop = asyncio.get_running_loop()
        self.connected: asyncio.Future[int] = loop.create_future()
        #: set once the connection is gone (with the reason)
        self.lost: asyncio.Future[str] = loop.create_future()
        self._requests: dict[int, asyncio.Future[BaseCommand]] = {}
        self.producers: dict[int, OutboundProducer] = {}
        self._next_id = 0

    def next_id(self) -> int:
        """A fresh request or producer id on this connection."""
        self._next_id += 1
        return self._next_id

    # -- asyncio ---------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Send CONNECT with the credentials."""
        super().connection_made(transport)
        cmd = BaseCommand(type=CommandType.CONNECT)
        cmd.connect.client_version = CLIENT_VERSION
        cmd.connect.protocol_version = PROTOCOL_VERSION
        if self.credentials.method:
            cmd.connect.auth_method_name = self.credentials.method
            cmd.connect.auth_data = self.credentials.data
        self.send_command(cmd)

    def connection_lost(self, exc: Exception | None) -> None:
        """Fail what waits and tell the producers."""
        super().connection_lost(exc)
        self._gone(f"connection lost: {exc}" if exc else "connection closed")

    def _gone(self, reason: str) -> None:
        if not self.connected.done():
            self.connected.set_exception(RemoteError(reason))
        if not self.lost.done():
            self.lost.set_result(reason)
        requests, self._requests = self._requests, {}
        for future in requests.values():
            if not future.done():
                future.set_exception(RemoteError(reason))
        producers, self.producers = self.producers, {}
        for producer in producers.values():
            producer.disconnected(reason)

    # -- frames ----------------------------------------------------------------------------
    def frame_received(self, frame: Frame) -> None:
        """Dispatch one frame from the remote."""
        command = frame.command
        t = command.type
        if t == CommandType.CONNECTED:
            if not self.connected.done():
                self.connected.set_result(command.connected.max_message_size or 5 * 1024 * 1024)
        elif t == CommandType.SEND_RECEIPT:
            producer = self.producers.get(command.send_receipt.producer_id)
            if producer is not None:
                producer.receipt(command.send_receipt.message_id.entry_id)
        elif t == CommandType.SEND_ERROR:
            producer = self.producers.get(command.send_error.producer_id)
            if producer is not None:
                self.producers.pop(producer.producer_id, None)
                producer.disconnected(f"send error {command.send_error.error}: {command.send_error.message}")
        elif t == CommandType.PING:
            self.send_command(pong())  # with its (empty) pong field: Apache Pulsar drops a bare PONG
        elif t == CommandType.AUTH_CHALLENGE:
            self._answer_challenge()
        elif t == CommandType.CLOSE_PRODUCER:
            producer = self.producers.pop(command.close_producer.producer_id, None)
            if producer is not None:
                producer.disconnected("closed by the remote broker")
        elif t == CommandType.ERROR:
            self._error(command)
        elif t in _ANSWERS:
            answer = getattr(command, _ANSWERS[t])
            future = self._requests.pop(answer.request_id, None)
            if future is not None and not future.done():
                future.set_result(command)

    def _error(self, command: BaseCommand) -> None:
        error = command.error
        if not self.connected.done():
            self.connected.set_exception(RemoteError(f"refused: {error.message}", error.error))
            return
        future = self._requests.pop(error.request_id, None)
        if future is not None and not future.done():
            future.set_exception(RemoteError(error.message, error.error))

    def _answer_challenge(self) -> None:
        cmd = BaseCommand(type=CommandType.AUTH_RESPONSE)
        r = cmd.auth_response
        r.client_version = CLIENT_VERSION
        r.protocol_version = PROTOCOL_VERSION
        r.response.auth_method_name = self.credentials.method
        r.response.auth_data = self.credentials.data
        self.send_command(cmd)

    # -- requests --------------------------------------------------------------------------
    async def request(self, command: BaseCommand, request_id: int, timeout: float = 30.0) -> BaseCommand:
        """Send a command and wait for the answer carrying ``request_id``."""
        if self.closed:
            raise RemoteError("connection closed")
        future: asyncio.Future[BaseCommand] = asyncio.get_running_loop().create_future()
        self._requests[request_id] = future
        self.send_command(command)
        try:
            return await asyncio.wait_for(future, timeout)
        finally:
            self._requests.pop(request_id, None)

    async def lookup(self, topic: str, tls: bool = False) -> tuple[LookupType, str, bool]:
        """(answer type, broker URL, authoritative) of a LOOKUP; with ``tls``, the broker's TLS URL
        when it has one (as Pulsar's clients choose: a TLS client never follows a plain URL)."""
        request_id = self.next_id()
        cmd = BaseCommand(type=CommandType.LOOKUP)
        cmd.lookup_topic.topic = topic
        cmd.lookup_topic.request_id = request_id
        answer = (await self.request(cmd, request_id)).lookup_topic_response
        if answer.response == LookupType.Failed:
            raise RemoteError(f"lookup of {topic} failed: {answer.message}", answer.error)
        if tls or not answer.broker_service_url:
            url = answer.broker_service_url_tls or answer.broker_service_url
        else:
            url = answer.broker_service_url
        return LookupType(answer.response), url, answer.authoritative

    async def get_or_create_schema(self, topic: str, schema: Schema) -> bytes:
        """The remote's version of ``schema`` on ``topic`` (registered there when new)."""
        request_id = self.next_id()
        cmd = BaseCommand(type=CommandType.GET_OR_CREATE_SCHEMA)
        cmd.get_or_create_schema.request_id = request_id
        cmd.get_or_create_schema.topic = topic
        cmd.get_or_create_schema.schema.CopyFrom(schema)
        answer = (await self.request(cmd, request_id)).get_or_create_schema_response
        if answer.error_code:
            raise RemoteError(f"schema refused on {topic}: {answer.error_message}", answer.error_code)
        return answer.schema_version


async def connect(url: str, credentials: ClientCredentials, tls: ssl.SSLContext | None,
                  timeout: float = 10.0) -> RemoteConnection:
    """A CONNECTED connection to the broker at ``url``."""
    host, port, use_tls = parse_service_url(url)
    loop = asyncio.get_running_loop()
    context = tls if use_tls else None
    if use_tls and context is None:
        context = ssl.create_default_context()
    _, conn = await asyncio.wait_for(loop.create_connection(
        lambda: RemoteConnection(credentials), host, port, ssl=context,
        server_hostname=host if context is not None else None), timeout)
    try:
        await asyncio.wait_for(asyncio.shield(conn.connected), timeout)
    except BaseException:
        conn.abort()
        raise
    return conn


async def connect_for_topic(url: str, topic: str, credentials: ClientCredentials,
                            tls: ssl.SSLContext | None) -> RemoteConnection:
    """A connection to the broker of the remote cluster that serves ``topic`` (lookup redirects followed)."""
    conn = await connect(url, credentials, tls)
    for _ in range(5):
        try:
            kind, broker_url, _ = await conn.lookup(topic, url.startswith("pulsar+ssl://"))
        except BaseException:
            conn.abort()
            raise
        if not broker_url or broker_url == url:
            return conn
        conn.close()
        url = broker_url
        conn = await connect(url, credentials, tls)
        if kind == LookupType.Connect:
            return conn
    return conn


class OutboundProducer:
    """A producer on the remote topic: SEND of stored entries, receipts in order."""

    def __init__(self, conn: RemoteConnection, topic: str, name: str,
                 on_receipt: Callable[[object, bool], None], on_lost: Callable[[str], None]) -> None:
        self.conn = conn
        self.topic = topic
        self.name = name
        self.producer_id = conn.next_id()
        #: what each SEND in flight stands for, oldest first (receipts come in order)
        self._in_flight: deque[object] = deque()
        self._on_receipt = on_receipt
        self._on_lost = on_lost
        self.closed = False

    async def open(self) -> None:
        """PRODUCER on the remote (the remote keeps its deduplication state per original producer)."""
        request_id = self.conn.next_id()
        cmd = BaseCommand(type=CommandType.PRODUCER)
        p = cmd.producer
        p.topic = self.topic
        p.producer_id = self.producer_id
        p.request_id = request_id
        p.producer_name = self.name
        p.user_provided_producer_name = True
        self.conn.producers[self.producer_id] = self
        try:
            await self.conn.request(cmd, request_id)
        except BaseException:
            self.conn.producers.pop(self.producer_id, None)
            raise

    @property
    def in_flight(self) -> int:
        """SENDs not yet receipted."""
        return len(self._in_flight)

    def send(self, entry: bytes, sequence_id: int, highest_sequence_id: int, num_messages: int, token: object) -> None:
        """SEND ``entry`` as it is; ``token`` comes back to ``on_receipt`` once the remote stored it."""
        cmd = BaseCommand(type=CommandType.SEND)
        s = cmd.send
        s.producer_id = self.producer_id
        s.sequence_id = sequence_id
        s.highest_sequence_id = highest_sequence_id
        s.num_messages = num_messages
        self._in_flight.append(token)
        self.conn.write_entry_frame(encode_entry_header(cmd, len(entry), crc32c(entry)), entry)

    def receipt(self, entry_id: int) -> None:
        """SEND_RECEIPT (entry -1 for a duplicate the remote dropped): the oldest SEND is done."""
        if self._in_flight:
            self._on_receipt(self._in_flight.popleft(), entry_id == (1 << 64) - 1)

    def disconnected(self, reason: str) -> None:
        """The producer or its connection is gone: what is in flight is sent again by the replicator."""
        if not self.closed:
            self.closed = True
            self._in_flight.clear()
            self._on_lost(reason)

    def close(self) -> None:
        """Close the producer and its connection."""
        self.closed = True
        self._in_flight.clear()
        self.conn.producers.pop(self.producer_id, None)
        self.conn.close()


__all__ = ["OutboundProducer", "RemoteConnection", "RemoteError", "ServerError", "connect", "connect_for_topic",
           "parse_service_url"]
