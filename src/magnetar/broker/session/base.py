"""The state of one client session and what it sends on the domain's behalf.

:class:`SessionBase` is a :class:`~magnetar.net.transport.FramedProtocol` (frames in, batched
writes out) that keeps the per-connection state (the client's identity, its producers and
consumers, publish backpressure) and implements the broker's transport interfaces
(:mod:`magnetar.broker.transport`): receipts and send errors, MESSAGE frames, active-consumer
changes and broker-initiated closes. The command handlers build on it (producers.py,
consumers.py, lookup.py) and :class:`~magnetar.broker.session.connection.ServerConnection`
puts them together.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from magnetar.broker.errors import BrokerError
from magnetar.broker.security import (
    AuthenticationState,
    AuthorizationError,
    AuthorizationService,
    peer_certificate,
)
from magnetar.net.transport import FramedProtocol
from magnetar.protocol import commands
from magnetar.protocol.enums import CommandType, ServerError
from magnetar.protocol.framing import Frame, ProtocolError, encode_entry_header
from magnetar.protocol.hot_frames import message_frame_head, send_receipt_frame
from magnetar.protocol.schema import BaseCommand

if TYPE_CHECKING:
    from magnetar.broker.service import BrokerService
    from magnetar.broker.subscriptions.consumer import Consumer
    from magnetar.broker.subscriptions.subscription import Subscription
    from magnetar.broker.topics.producer import Producer
    from magnetar.protocol.topic_name import TopicName
    from magnetar.storage import Entry

log = logging.getLogger("magnetar.broker.session")


class SessionBase(FramedProtocol):
    """Broker side of one client connection: its state, its output, the transport interfaces."""

    def __init__(self, service: BrokerService) -> None:
        super().__init__(service.config.max_frame_size)
        self.service = service
        self.peer = "?"
        self.peer_host = "?"
        self.connected = False
        self.client_version = ""
        self.protocol_version = 0
        self.producers: dict[int, Producer] = {}
        #: ids of producers the broker closed (CLOSE_PRODUCER) that the client did not register again yet
        self.closed_by_broker: set[int] = set()
        self.consumers: dict[int, Consumer[Subscription]] = {}
        #: bytes this connection appended that are not durable yet
        self.pending_publish_bytes = 0
        self.reading_paused = False
        #: a topic's publish rate paused reading from this connection (policies/rate_limits.py), and
        #: the frames already read that wait, in order, for the pause to end (None: not throttled)
        self.publish_throttled = False
        self.held_frames: list[Frame] | None = None
        #: whether the client came over TLS, and the certificate it presented (DER), if any
        self.tls = False
        self.peer_certificate: bytes | None = None
        #: the role CONNECT proved (None when authentication is off) and its credentials' state
        self.role: str | None = None
        self.auth_state: AuthenticationState | None = None
        self._refresh_timer: asyncio.TimerHandle | None = None

    # -- asyncio.Protocol ----------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Register with the service, which may refuse the connection (limits)."""
        super().connection_made(transport)
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.peer_host = peer[0] if isinstance(peer, tuple) else str(peer)
        ssl_object = transport.get_extra_info("ssl_object")
        self.tls = ssl_object is not None
        self.peer_certificate = peer_certificate(ssl_object)
        refusal = self.service.connection_opened(self)
        if refusal is not None:
            log.warning("refusing connection from %s: %s", self.peer, refusal)
            self.abort()

    def protocol_error(self, exc: ProtocolError) -> None:
        """Malformed bytes: close the connection."""
        log.warning("closing connection from %s: %s", self.peer, exc)
        self.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        """Detach every producer and consumer of the connection."""
        super().connection_lost(exc)
        self.service.paused_connections.discard(self)
        self.service.connection_closed(self)
        for producer in list(self.producers.values()):
            producer.topic.remove_producer(producer)
        self.producers.clear()
        for consumer in list(self.consumers.values()):
            consumer.subscription.remove_consumer(consumer)
        self.consumers.clear()

    def resume_writing(self) -> None:
        """The socket drained: let the subscriptions of this connection's consumers dispatch again."""
        super().resume_writing()
        for consumer in self.consumers.values():
            consumer.subscription.schedule_dispatch()

    # -- authorization -------------------------------------------------------------------
    def authorization_refusal(self, command: str, check: Callable[[AuthorizationService], None]) -> str | None:
        """Run one authorization check of this session's role: None when allowed, else Pulsar's refusal.

        Allowed when authorization is off. Refusals are logged with the role (never credentials).
        """
        authorization = self.service.authorization
        if authorization is None:
            return None
        try:
            check(authorization)
        except AuthorizationError as exc:
            authorization.refusals[command] += 1
            log.warning("refused %s from %s with role %r: %s", command, self.peer, self.role, exc.message)
            return exc.message
        return None

    def require_authorized(
        self, command: str, check: Callable[[AuthorizationService], None], topic: TopicName | None = None
    ) -> None:
        """Run one authorization check; BrokerError AuthorizationError (answered as ERROR) when refused.

        A refusal about a ``topic`` whose tenant does not exist is TopicNotFound instead, as in Pulsar.
        """
        refusal = self.authorization_refusal(command, check)
        if refusal is None:
            return
        if topic is not None and self.service.tenant_info(topic.tenant) is None:
            raise BrokerError(ServerError.TopicNotFound, f"Tenant or namespace or topic does not exist: {topic.namespace}")
        raise BrokerError(ServerError.AuthorizationError, refusal)

    # -- publish backpressure ------------------------------------------------------------
    def publish_started(self, size: int) -> None:
        """An entry of ``size`` bytes from this connection awaits durability: apply backpressure."""
        self.pending_publish_bytes += size
        service = self.service
        service.pending_publish_bytes += size
        config = service.config
        if not self.reading_paused and (
            self.pending_publish_bytes > config.max_pending_publish_bytes_per_connection
            or service.pending_publish_bytes > config.max_pending_publish_bytes
        ):
            self.pause_reading()

    def publish_done(self, size: int) -> None:
        """An entry from this connection is durable (or failed): release its bytes."""
        self.pending_publish_bytes -= size
        service = self.service
        service.pending_publish_bytes -= size
        config = service.config
        if self.reading_paused and self.pending_publish_bytes <= config.max_pending_publish_bytes_per_connection // 2:
            service.maybe_resume_reading()

    def pause_reading(self) -> None:
        """Stop reading from the socket until storage catches up."""
        if self.transport is not None and not self.closed and not self.reading_paused:
            self.reading_paused = True
            self.service.paused_connections.add(self)
            self.transport.pause_reading()

    def throttle_publish(self, seconds: float) -> None:
        """A topic's publish rate is used up: read nothing from this connection for ``seconds``, as
        Pulsar turns auto-read off on the producer's channel (what was read is still published)."""
        if seconds > 0 and not self.publish_throttled and self.transport is not None and not self.closed:
            self.pause_reading()
            self.publish_throttled = True
            self.held_frames = []  # the rest of what was read waits too, or a burst would overdraw the rate
            asyncio.get_running_loop().call_later(seconds, self._end_publish_throttle)

    def _end_publish_throttle(self) -> None:
        self.publish_throttled = False
        held, self.held_frames = self.held_frames, None
        for frame in held or ():
            if self.closed:
                return
            self.frame_received(frame)  # a SEND that throttles again holds the rest again, in order
        if not self.publish_throttled and (
            self.pending_publish_bytes <= self.service.config.max_pending_publish_bytes_per_connection // 2
        ):
            self.resume_reading()

    def resume_reading(self) -> None:
        """Read from the socket again (not while a publish rate throttles the connection)."""
        if self.reading_paused and not self.publish_throttled:
            self.reading_paused = False
            self.service.paused_connections.discard(self)
            if self.transport is not None and not self.closed:
                self.transport.resume_reading()

    def check_keepalive(self, now: float, interval: float) -> None:
        """Ping a quiet client; close one silent for two intervals."""
        idle = now - self.last_received
        if idle >= 2 * interval and not self.publish_throttled:  # a throttled one is not read, not silent
            log.info("closing connection from %s: no traffic for %.0f s", self.peer, idle)
            self.abort()
        elif idle >= interval:
            self.write(commands.PING_FRAME)

    # -- producers' side of the transport ------------------------------------------------
    def send_receipt(self, producer_id: int, sequence_id: int, highest_sequence_id: int, ledger_id: int, entry_id: int) -> None:
        """SEND_RECEIPT for a stored entry."""
        self.write(send_receipt_frame(producer_id, sequence_id, highest_sequence_id, ledger_id, entry_id))

    def send_send_error(self, producer_id: int, sequence_id: int, code: ServerError, message: str) -> None:
        """SEND_ERROR for one SEND."""
        self.send_command(commands.send_error(producer_id, sequence_id, code, message))

    def producer_closed_by_broker(self, producer_id: int) -> None:
        """The broker detached a producer: forget it and tell the client."""
        self.producers.pop(producer_id, None)
        self.closed_by_broker.add(producer_id)
        if not self.closed:
            self.send_command(commands.close_producer(producer_id, commands.BROKER_REQUEST_ID))

    # -- consumers' side of the transport ------------------------------------------------
    def send_message(
        self,
        consumer_id: int,
        ledger_id: int,
        partition: int,
        entry: Entry,
        redelivery_count: int,
        ack_set: list[int] | None,
    ) -> None:
        """MESSAGE frame carrying a stored entry verbatim."""
        data = entry.data
        if not ack_set:
            head = message_frame_head(
                consumer_id, ledger_id, entry.entry_id, partition, redelivery_count, len(data), entry.crc
            )
            self.write_entry_frame(head, data)
            return
        cmd = BaseCommand(type=CommandType.MESSAGE)
        m = cmd.message
        m.consumer_id = consumer_id
        m.message_id.ledger_id = ledger_id
        m.message_id.entry_id = entry.entry_id
        if partition >= 0:
            m.message_id.partition = partition
        if redelivery_count:
            m.redelivery_count = redelivery_count
        m.ack_set.extend(ack_set)
        self.write_entry_frame(encode_entry_header(cmd, len(data), entry.crc), data)

    def send_active_consumer_change(self, consumer_id: int, active: bool) -> None:
        """ACTIVE_CONSUMER_CHANGE for a Failover consumer."""
        cmd = BaseCommand(type=CommandType.ACTIVE_CONSUMER_CHANGE)
        cmd.active_consumer_change.consumer_id = consumer_id
        cmd.active_consumer_change.is_active = active
        self.send_command(cmd)

    def consumer_closed_by_broker(self, consumer_id: int) -> None:
        """The broker detached a consumer: forget it and tell the client (which resubscribes)."""
        self.consumers.pop(consumer_id, None)
        if not self.closed:
            self.send_command(commands.close_consumer(consumer_id, commands.BROKER_REQUEST_ID))

    def reached_end_of_topic(self, consumer_id: int) -> None:
        """REACHED_END_OF_TOPIC: the consumer's topic is terminated and it acknowledged everything."""
        if not self.closed:
            cmd = BaseCommand(type=CommandType.REACHED_END_OF_TOPIC)
            cmd.reached_end_of_topic.consumer_id = consumer_id
            self.send_command(cmd)

    # -- responses -----------------------------------------------------------------------
    def send_success(self, request_id: int) -> None:
        """SUCCESS for a request."""
        self.send_command(commands.success(request_id))

    def send_error(self, request_id: int, code: ServerError, message: str) -> None:
        """ERROR for a refused request."""
        self.send_command(commands.error(request_id, code, message))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.peer})"
