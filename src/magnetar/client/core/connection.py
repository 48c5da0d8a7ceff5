"""Client side of one broker connection, and the pool that shares connections.

:class:`ClientConnection` is an ``asyncio.Protocol`` over the shared sans-IO codec. It
completes request futures by request id, routes SEND_RECEIPT / MESSAGE / broker-initiated
closes to the producers and consumers registered on it, answers PINGs and sends its own.
When it is lost every pending request fails with ConnectError and every registered handler
is told, so that it can reconnect.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import ssl as ssl_module
import time
from collections.abc import Callable
from typing import Any, Protocol

from magnetar import __version__
from magnetar.client.api.auth import Authentication
from magnetar.client.core.futures import settle
from magnetar.client.exceptions import AuthenticationError, ConnectError, PulsarError, Timeout, error_for
from magnetar.net.transport import FramedProtocol
from magnetar.protocol import commands
from magnetar.protocol.enums import PROTOCOL_VERSION, CommandType, LookupType, PartitionedMetadataResult
from magnetar.protocol.framing import FRAME_HEADROOM, Frame, ProtocolError, sub_command
from magnetar.protocol.message_frame import MessageFrame
from magnetar.protocol.schema import BaseCommand

log = logging.getLogger("magnetar.client")

CLIENT_VERSION = f"magnetar-python-{__version__}"
#: most MESSAGE frames handed to a consumer at once
MESSAGE_RUN = 64
_DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024


class BrokerUnreachable(ConnectError):
    """No connection could be made to a broker (refused, unreachable): a lookup retries it."""


class ProducerHandler(Protocol):
    """What a connection needs from a producer registered on it."""

    def on_receipt(self, receipt: Any) -> None: ...  # noqa: D102
    def on_send_error(self, error: Any) -> None: ...  # noqa: D102
    def on_closed_by_broker(self) -> None: ...  # noqa: D102
    def on_connection_lost(self, conn: ClientConnection) -> None: ...  # noqa: D102


class ConsumerHandler(Protocol):
    """What a connection needs from a consumer registered on it (one that also has
    ``on_message_frames(frames)`` gets the MESSAGE frames read by hand in runs; see data_received)."""

    def on_message(self, command: Any, frame: Frame) -> None: ...  # noqa: D102
    def on_active_change(self, active: bool) -> None: ...  # noqa: D102
    def on_reached_end_of_topic(self) -> None: ...  # noqa: D102
    def on_closed_by_broker(self) -> None: ...  # noqa: D102
    def on_connection_lost(self, conn: ClientConnection) -> None: ...  # noqa: D102


#: the transaction coordinator's answers (an ``error`` field when refused)
_TXN_RESPONSES = {
    CommandType.TC_CLIENT_CONNECT_RESPONSE,
    CommandType.NEW_TXN_RESPONSE,
    CommandType.ADD_PARTITION_TO_TXN_RESPONSE,
    CommandType.ADD_SUBSCRIPTION_TO_TXN_RESPONSE,
    CommandType.END_TXN_RESPONSE,
}
#: response types and the sub-command carrying their request id
_RESPONSES = {
    CommandType.SUCCESS,
    CommandType.ERROR,
    CommandType.PRODUCER_SUCCESS,
    CommandType.PARTITIONED_METADATA_RESPONSE,
    CommandType.LOOKUP_RESPONSE,
    CommandType.GET_LAST_MESSAGE_ID_RESPONSE,
    CommandType.CONSUMER_STATS_RESPONSE,
    CommandType.GET_TOPICS_OF_NAMESPACE_RESPONSE,
    CommandType.GET_SCHEMA_RESPONSE,
    CommandType.GET_OR_CREATE_SCHEMA_RESPONSE,
    CommandType.ACK_RESPONSE,
    *_TXN_RESPONSES,
}


class ClientConnection(FramedProtocol):
    """One TCP connection to a broker, shared by the producers and consumers on it."""

    def __init__(
        self, address: tuple[str, int], keepalive_seconds: float = 30.0, authentication: Authentication | None = None
    ) -> None:
        super().__init__(_DEFAULT_MAX_MESSAGE_SIZE + FRAME_HEADROOM)
        self.address = address
        self.keepalive_seconds = keepalive_seconds
        self.authentication = authentication
        self.max_message_size = _DEFAULT_MAX_MESSAGE_SIZE
        self.server_version = ""
        self.protocol_version = 0
        self.connected: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._released = False
        self._requests: dict[int, asyncio.Future] = {}
        self._request_ids = itertools.count()
        self.producers: dict[int, ProducerHandler] = {}
        self.consumers: dict[int, ConsumerHandler] = {}
        self._keepalive: asyncio.TimerHandle | None = None
        self.on_lost: Callable[[ClientConnection], None] | None = None
        #: the AUTH_RESPONSE being prepared (held so the task is not collected)
        self._challenge_answer: asyncio.Future[None] | None = None

    # -- asyncio.Protocol ----------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Send CONNECT (with credentials when configured) and start the keep-alive."""
        super().connection_made(transport)
        cmd = BaseCommand(type=CommandType.CONNECT)
        cmd.connect.client_version = CLIENT_VERSION
        cmd.connect.protocol_version = PROTOCOL_VERSION
        cmd.connect.feature_flags.supports_auth_refresh = self.authentication is not None
        cmd.connect.feature_flags.supports_partial_producer = True
        auth = self.authentication
        if auth is not None and auth.auth_method_name:
            try:
                data = auth.auth_data()
            except PulsarError as exc:
                self.close(exc)
                return
            cmd.connect.auth_method_name = auth.auth_method_name
            cmd.connect.auth_data = data
        self.send_command(cmd)
        self._arm_keepalive()

    def protocol_error(self, exc: ProtocolError) -> None:
        """The broker sent malformed bytes: close, failing what is pending."""
        log.warning("closing connection to %s:%d: %s", *self.address, exc)
        self.close(ConnectError(f"protocol error from broker: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        """Fail pending requests and tell every registered handler."""
        super().connection_lost(exc)
        self._lost(ConnectError(f"connection to {self.address[0]}:{self.address[1]} lost" + (f": {exc}" if exc else "")))

    def new_request_id(self) -> int:
        """A request id unique on this connection."""
        return next(self._request_ids)

    async def request(self, command: BaseCommand, request_id: int, timeout: float) -> BaseCommand:
        """Send a request and wait for its response; broker errors raise their exception."""
        if self.closed:
            raise ConnectError(f"connection to {self.address[0]}:{self.address[1]} is closed")
        fut = asyncio.get_running_loop().create_future()
        self._requests[request_id] = fut
        self.send_command(command)
        try:
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            raise Timeout(f"no answer to {CommandType(command.type).name} within {timeout:g} s") from None
        finally:
            self._requests.pop(request_id, None)

    def close(self, reason: PulsarError | None = None) -> None:
        """Close the connection; pending requests fail with ``reason``."""
        super().close()
        self._lost(reason or ConnectError("connection closed"))

    # -- incoming ------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        """Decode what ``data`` completes; runs of MESSAGE frames decoded by hand
        (:class:`MessageFrame`) for one consumer go to it together (up to ``MESSAGE_RUN``: the
        frames of a run stay alive until it is handled), the rest one by one, in order."""
        self.last_received = time.monotonic()
        run: list[MessageFrame] = []
        try:
            for frame in self.decoder.frames(data):
                if frame.__class__ is MessageFrame:
                    if run and (run[0].consumer_id != frame.consumer_id or len(run) >= MESSAGE_RUN):  # type: ignore[attr-defined]
                        self._messages_received(run)
                        run = []
                    run.append(frame)  # type: ignore[arg-type]
                    continue
                if run:
                    self._messages_received(run)
                    run = []
                if self.closed:
                    return
                self.frame_received(frame)
        except ProtocolError as exc:
            self.protocol_error(exc)
            return
        if run:
            self._messages_received(run)

    def _messages_received(self, frames: list[MessageFrame]) -> None:
        """MESSAGE frames for one consumer, in order."""
        if self.closed:
            return
        handler = self.consumers.get(frames[0].consumer_id)
        if handler is None:
            return
        try:
            on_frames = getattr(handler, "on_message_frames", None)
            if on_frames is not None:
                on_frames(frames)
            else:
                for frame in frames:
                    handler.on_message(frame.command.message, frame)
        except Exception:  # a handler bug must not kill the connection silently
            log.exception("error handling %d MESSAGE frames from %s:%d", len(frames), *self.address)

    def frame_received(self, frame: Frame) -> None:
        """Route one frame: MESSAGE and SEND_RECEIPT first (the hot path), then the rest."""
        command = frame.command
        t = command.type
        try:
            if t == CommandType.MESSAGE:
                handler = self.consumers.get(command.message.consumer_id)
                if handler is not None:
                    handler.on_message(command.message, frame)
            elif t == CommandType.SEND_RECEIPT:
                producer = self.producers.get(command.send_receipt.producer_id)
                if producer is not None:
                    producer.on_receipt(command.send_receipt)
            else:
                self._handle_control(command, t)
        except Exception:  # a handler bug must not kill the connection silently
            log.exception("error handling %s from %s:%d", frame, *self.address)

    def _handle_control(self, command: BaseCommand, t: int) -> None:
        if t == CommandType.ERROR and not self.connected.done():
            # the broker refused CONNECT (e.g. bad credentials) and will close the connection
            err = command.error
            self.close(error_for(err.error, f"broker {self.address[0]}:{self.address[1]} refused the connection: {err.message}"))
            return
        if t in _RESPONSES:
            self._complete(t, command)
            return
        if t == CommandType.SEND_ERROR:
            producer = self.producers.get(command.send_error.producer_id)
            if producer is not None:
                producer.on_send_error(command.send_error)
        elif t == CommandType.PING:
            self.write(commands.PONG_FRAME)
        elif t == CommandType.PONG:
            pass
        elif t == CommandType.CONNECTED:
            c = command.connected
            self.server_version = c.server_version
            self.protocol_version = c.protocol_version
            if c.HasField("max_message_size"):
                self.max_message_size = c.max_message_size
                self.decoder.max_frame_size = c.max_message_size + FRAME_HEADROOM
            if not self.connected.done():
                self.connected.set_result(None)
        elif t == CommandType.AUTH_CHALLENGE:
            self._answer_challenge(command.auth_challenge)
        elif t == CommandType.CLOSE_PRODUCER:
            producer = self.producers.pop(command.close_producer.producer_id, None)
            if producer is not None:
                producer.on_closed_by_broker()
        elif t == CommandType.CLOSE_CONSUMER:
            consumer = self.consumers.pop(command.close_consumer.consumer_id, None)
            if consumer is not None:
                consumer.on_closed_by_broker()
        elif t == CommandType.ACTIVE_CONSUMER_CHANGE:
            consumer = self.consumers.get(command.active_consumer_change.consumer_id)
            if consumer is not None:
                consumer.on_active_change(command.active_consumer_change.is_active)
        elif t == CommandType.REACHED_END_OF_TOPIC:
            consumer = self.consumers.get(command.reached_end_of_topic.consumer_id)
            if consumer is not None:
                consumer.on_reached_end_of_topic()
        else:
            log.debug("ignoring %s from %s:%d", t, *self.address)

    def _complete(self, t: int, command: BaseCommand) -> None:
        sub = sub_command(command)
        if sub is None:
            return
        fut = self._requests.get(sub.request_id)
        if fut is None or fut.done():
            return
        if t == CommandType.ERROR:
            fut.set_exception(error_for(sub.error, sub.message))
        elif t == CommandType.PRODUCER_SUCCESS and not sub.producer_ready:
            return  # queued behind an exclusive producer: the real answer comes later
        elif t == CommandType.LOOKUP_RESPONSE and sub.response == LookupType.Failed:
            fut.set_exception(error_for(sub.error, sub.message or "lookup failed"))
        elif t == CommandType.PARTITIONED_METADATA_RESPONSE and sub.response == PartitionedMetadataResult.Failed:
            fut.set_exception(error_for(sub.error, sub.message or "partitioned metadata lookup failed"))
        elif t in (CommandType.GET_SCHEMA_RESPONSE, CommandType.GET_OR_CREATE_SCHEMA_RESPONSE) and sub.HasField(
            "error_code"
        ):
            fut.set_exception(error_for(sub.error_code, sub.error_message))
        elif (t == CommandType.ACK_RESPONSE or t in _TXN_RESPONSES) and sub.HasField("error"):
            fut.set_exception(error_for(sub.error, sub.message))
        else:
            fut.set_result(command)

    def _answer_challenge(self, challenge: Any) -> None:
        auth = self.authentication
        if auth is None or not auth.auth_method_name:
            self.close(AuthenticationError(
                f"broker {self.address[0]}:{self.address[1]} sent an authentication challenge but no authentication is configured"
            ))
            return
        self._challenge_answer = asyncio.ensure_future(self._respond_to_challenge(auth, challenge.challenge.auth_data))

    async def _respond_to_challenge(self, auth: Authentication, challenge_data: bytes) -> None:
        """AUTH_RESPONSE with fresh credentials (a plugin fetching them does so in a thread first)."""
        try:
            await auth.prepare()
            data = auth.respond(challenge_data)
        except PulsarError as exc:
            self.close(exc)
            return
        if self.closed:
            return
        cmd = BaseCommand(type=CommandType.AUTH_RESPONSE)
        r = cmd.auth_response
        r.client_version = CLIENT_VERSION
        r.protocol_version = PROTOCOL_VERSION
        r.response.auth_method_name = auth.auth_method_name
        r.response.auth_data = data
        self.send_command(cmd)

    def _lost(self, reason: PulsarError) -> None:
        if self._released:
            return
        self._released = True
        self.closed = True
        if self._keepalive is not None:
            self._keepalive.cancel()
        if not self.connected.done():
            self.connected.set_exception(reason)
            self.connected.exception()  # mark retrieved
        for fut in self._requests.values():
            settle(fut, reason)
        self._requests.clear()
        producers, self.producers = list(self.producers.values()), {}
        consumers, self.consumers = list(self.consumers.values()), {}
        if self.on_lost is not None:
            self.on_lost(self)
        for handler in [*producers, *consumers]:
            handler.on_connection_lost(self)

    def _arm_keepalive(self) -> None:
        loop = asyncio.get_running_loop()
        self._keepalive = loop.call_later(self.keepalive_seconds, self._check_keepalive)

    def _check_keepalive(self) -> None:
        if self.closed:
            return
        idle = time.monotonic() - self.last_received
        if idle >= 2 * self.keepalive_seconds:
            self.close(ConnectError(f"broker {self.address[0]}:{self.address[1]} silent for {idle:.0f} s"))
            return
        self.write(commands.PING_FRAME)
        self._arm_keepalive()


class ConnectionPool:
    """One live connection per broker address, opened on demand."""

    def __init__(
        self,
        connection_timeout: float = 10.0,
        keepalive_seconds: float = 30.0,
        ssl_context: ssl_module.SSLContext | None = None,
        authentication: Authentication | None = None,
    ) -> None:
        self.connection_timeout = connection_timeout
        self.keepalive_seconds = keepalive_seconds
        self.ssl_context = ssl_context
        self.authentication = authentication
        self._connections: dict[tuple[str, int], ClientConnection] = {}
        self._connecting: dict[tuple[str, int], asyncio.Future[ClientConnection]] = {}

    async def get(self, host: str, port: int, use_tls: bool = False) -> ClientConnection:
        """A connected (CONNECTED received) connection to host:port."""
        key = (host, port)
        conn = self._connections.get(key)
        if conn is not None and not conn.closed:
            return conn
        pending = self._connecting.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        fut: asyncio.Future[ClientConnection] = asyncio.get_running_loop().create_future()
        self._connecting[key] = fut
        try:
            conn = await self._open(host, port, use_tls)
            self._connections[key] = conn
            fut.set_result(conn)
            return conn
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()
            raise
        finally:
            del self._connecting[key]

    async def _open(self, host: str, port: int, use_tls: bool) -> ClientConnection:
        loop = asyncio.get_running_loop()
        conn: ClientConnection | None = None

        def factory() -> ClientConnection:
            nonlocal conn
            conn = ClientConnection((host, port), self.keepalive_seconds, self.authentication)
            return conn

        ssl_context = None
        if use_tls:
            ssl_context = self.ssl_context or ssl_module.create_default_context()
        try:
            async with asyncio.timeout(self.connection_timeout):
                if self.authentication is not None:
                    await self.authentication.prepare()  # e.g. an OAuth2 token, fetched in a thread
                await loop.create_connection(factory, host, port, ssl=ssl_context)
                assert conn is not None
                await asyncio.shield(conn.connected)
        except TimeoutError:
            if conn is not None:
                conn.close()
            raise ConnectError(f"could not connect to {host}:{port} within {self.connection_timeout:g} s") from None
        except OSError as exc:
            raise BrokerUnreachable(f"could not connect to {host}:{port}: {exc.strerror or exc}") from None
        conn.on_lost = self._forget
        return conn

    def _forget(self, conn: ClientConnection) -> None:
        if self._connections.get(conn.address) is conn:
            del self._connections[conn.address]

    async def close(self) -> None:
        """Close every connection."""
        for conn in list(self._connections.values()):
            with contextlib.suppress(Exception):
                conn.close()
        self._connections.clear()
