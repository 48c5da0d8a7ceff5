"""One client connection: the seam between the socket and the broker.

:class:`ServerConnection` is an ``asyncio.Protocol``: it feeds received bytes to the sans-IO
:class:`~magnetar.protocol.framing.FrameDecoder`, hands each command to its handler, and
gathers outgoing frames into one ``writelines`` per loop iteration. A refused request gets an
ERROR (or SEND_ERROR) and affects nothing else; only malformed frames close the connection.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from google.protobuf import unknown_fields

from magnetar.broker.errors import BrokerError
from magnetar.broker.schemas import schema_from_wire, version_from_bytes, version_to_bytes
from magnetar.broker.schemas.registry import type_to_wire
from magnetar.broker.schemas.topics import topic_is_active
from magnetar.broker.service import SERVER_VERSION
from magnetar.broker.subscriptions.consumer import Consumer
from magnetar.broker.subscriptions.dispatchers.key_shared import check_key_shared_meta
from magnetar.broker.topics.producer import Producer
from magnetar.protocol.enums import (
    MIN_PROTOCOL_VERSION,
    PROTOCOL_VERSION,
    AckType,
    CommandType,
    InitialPosition,
    LookupType,
    PartitionedMetadataResult,
    ProducerAccessMode,
    ServerError,
    SubType,
    TopicsMode,
)
from magnetar.protocol.framing import (
    Frame,
    FrameDecoder,
    ProtocolError,
    crc32c,
    encode_command,
    encode_entry_header,
    sub_command,
)
from magnetar.protocol.schema import BaseCommand, KeySharedMeta
from magnetar.storage import StorageError

if TYPE_CHECKING:
    from magnetar.broker.service import BrokerService
    from magnetar.storage import Entry

log = logging.getLogger("magnetar.broker.session.connection")

_U64 = (1 << 64) - 1


def _u64(value: int) -> int:
    return value & _U64


class ServerConnection(asyncio.Protocol):
    """Broker side of one client connection."""

    def __init__(self, service: BrokerService) -> None:
        self.service = service
        self.decoder = FrameDecoder(service.config.max_frame_size)
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.connected = False
        self.client_version = ""
        self.protocol_version = 0
        self.producers: dict[int, Producer] = {}
        self.consumers: dict[int, Consumer] = {}
        self.writable = True
        self.closed = False
        self.pending_publish_bytes = 0
        self.reading_paused = False
        self.last_received = time.monotonic()
        self._out: list[bytes] = []
        self._flush_scheduled = False
        self._handlers: dict[int, Callable[[BaseCommand, Frame], None]] = {
            CommandType.CONNECT: self._on_connect,
            CommandType.PING: self._on_ping,
            CommandType.PONG: self._on_pong,
            CommandType.PARTITIONED_METADATA: self._on_partitioned_metadata,
            CommandType.LOOKUP: self._on_lookup,
            CommandType.PRODUCER: self._on_producer,
            CommandType.SEND: self._on_send,
            CommandType.CLOSE_PRODUCER: self._on_close_producer,
            CommandType.SUBSCRIBE: self._on_subscribe,
            CommandType.FLOW: self._on_flow,
            CommandType.ACK: self._on_ack,
            CommandType.REDELIVER_UNACKNOWLEDGED_MESSAGES: self._on_redeliver,
            CommandType.CLOSE_CONSUMER: self._on_close_consumer,
            CommandType.UNSUBSCRIBE: self._on_unsubscribe,
            CommandType.GET_LAST_MESSAGE_ID: self._on_get_last_message_id,
            CommandType.SEEK: self._on_seek,
            CommandType.CONSUMER_STATS: self._on_consumer_stats,
            CommandType.GET_SCHEMA: self._on_get_schema,
            CommandType.GET_OR_CREATE_SCHEMA: self._on_get_or_create_schema,
            CommandType.GET_TOPICS_OF_NAMESPACE: self._on_get_topics_of_namespace,
        }

    # -- asyncio.Protocol ----------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.peer_host = peer[0] if isinstance(peer, tuple) else str(peer)
        refusal = self.service.connection_opened(self)
        if refusal is not None:
            log.warning("refusing connection from %s: %s", self.peer, refusal)
            self.abort()

    def data_received(self, data: bytes) -> None:
        self.last_received = time.monotonic()
        try:
            frames = self.decoder.feed(data)
        except ProtocolError as exc:
            log.warning("closing connection from %s: %s", self.peer, exc)
            self.abort()
            return
        for frame in frames:
            if self.closed:
                return
            self._handle(frame)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.service.paused_connections.discard(self)
        self.service.connection_closed(self)
        for producer in list(self.producers.values()):
            producer.topic.remove_producer(producer)
        self.producers.clear()
        for consumer in list(self.consumers.values()):
            consumer.subscription.remove_consumer(consumer)
        self.consumers.clear()

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

    def resume_reading(self) -> None:
        """Read from the socket again."""
        if self.reading_paused:
            self.reading_paused = False
            self.service.paused_connections.discard(self)
            if self.transport is not None and not self.closed:
                self.transport.resume_reading()

    def pause_writing(self) -> None:
        self.writable = False

    def resume_writing(self) -> None:
        self.writable = True
        for consumer in self.consumers.values():
            consumer.subscription.schedule_dispatch()

    # -- output --------------------------------------------------------------------------
    def write(self, data: bytes) -> None:
        """Queue bytes; everything queued in one loop iteration goes out in one call."""
        self._out.append(data)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        out, self._out = self._out, []
        if out and self.transport is not None and not self.closed:
            self.transport.writelines(out)

    def send_command(self, command: BaseCommand) -> None:
        """Queue a simple command."""
        self.write(encode_command(command))

    def abort(self) -> None:
        """Close the connection at once (malformed input, or keep-alive expired)."""
        if self.transport is not None and not self.closed:
            self.closed = True
            self.transport.abort()

    def close(self) -> None:
        """Close the connection after flushing what is queued."""
        if self.transport is not None and not self.closed:
            self._flush()
            self.closed = True
            self.transport.close()

    # -- helpers used by topics and subscriptions ----------------------------------------
    def send_receipt(self, producer_id: int, sequence_id: int, highest_sequence_id: int, ledger_id: int, entry_id: int) -> None:
        """SEND_RECEIPT for a stored entry."""
        cmd = BaseCommand(type=CommandType.SEND_RECEIPT)
        r = cmd.send_receipt
        r.producer_id = producer_id
        r.sequence_id = sequence_id
        if highest_sequence_id:
            r.highest_sequence_id = highest_sequence_id
        r.message_id.ledger_id = _u64(ledger_id)
        r.message_id.entry_id = _u64(entry_id)
        self.write(encode_command(cmd))

    def send_send_error(self, producer_id: int, sequence_id: int, code: ServerError, message: str) -> None:
        """SEND_ERROR for one SEND."""
        cmd = BaseCommand(type=CommandType.SEND_ERROR)
        e = cmd.send_error
        e.producer_id = producer_id
        e.sequence_id = sequence_id
        e.error = code
        e.message = message
        self.write(encode_command(cmd))

    def send_message(
        self, consumer_id: int, ledger_id: int, entry: Entry, redelivery_count: int, ack_set: list[int] | None
    ) -> None:
        """MESSAGE frame carrying a stored entry verbatim."""
        cmd = BaseCommand(type=CommandType.MESSAGE)
        m = cmd.message
        m.consumer_id = consumer_id
        m.message_id.ledger_id = ledger_id
        m.message_id.entry_id = entry.entry_id
        consumer = self.consumers.get(consumer_id)
        if consumer is not None:
            # as Pulsar does: a partition's messages carry its index (clients expose it in ids)
            partition = consumer.subscription.topic.partition_index
            if partition >= 0:
                m.message_id.partition = partition
        if redelivery_count:
            m.redelivery_count = redelivery_count
        if ack_set:
            m.ack_set.extend(ack_set)
        data = entry.data
        self._out.append(encode_entry_header(cmd, len(data), entry.crc))
        self.write(data)

    def send_active_consumer_change(self, consumer_id: int, active: bool) -> None:
        """ACTIVE_CONSUMER_CHANGE for a Failover consumer."""
        cmd = BaseCommand(type=CommandType.ACTIVE_CONSUMER_CHANGE)
        cmd.active_consumer_change.consumer_id = consumer_id
        cmd.active_consumer_change.is_active = active
        self.send_command(cmd)

    def close_consumer_by_broker(self, consumer: Consumer) -> None:
        """Detach a consumer and tell its client (which then resubscribes)."""
        if self.consumers.get(consumer.consumer_id) is consumer:
            del self.consumers[consumer.consumer_id]
        consumer.subscription.remove_consumer(consumer)
        self._send_broker_close(CommandType.CLOSE_CONSUMER, consumer.consumer_id)

    def check_keepalive(self, now: float, interval: float) -> None:
        """Ping a quiet client; close one silent for two intervals."""
        idle = now - self.last_received
        if idle >= 2 * interval:
            log.info("closing connection from %s: no traffic for %.0f s", self.peer, idle)
            self.abort()
        elif idle >= interval:
            cmd = BaseCommand(type=CommandType.PING)
            cmd.ping.SetInParent()
            self.send_command(cmd)

    # -- responses -----------------------------------------------------------------------
    def _success(self, request_id: int) -> None:
        cmd = BaseCommand(type=CommandType.SUCCESS)
        cmd.success.request_id = request_id
        self.send_command(cmd)

    def _error(self, request_id: int, code: ServerError, message: str) -> None:
        cmd = BaseCommand(type=CommandType.ERROR)
        cmd.error.request_id = request_id
        cmd.error.error = code
        cmd.error.message = message
        self.send_command(cmd)

    # -- dispatch ------------------------------------------------------------------------
    def _handle(self, frame: Frame) -> None:
        command = frame.command
        ctype = command.type
        if not self.connected and ctype != CommandType.CONNECT:
            log.warning("closing connection from %s: command %s before CONNECT", self.peer, ctype)
            self.abort()
            return
        handler = self._handlers.get(ctype)
        if handler is None:
            self._refuse_unsupported(command)
            return
        try:
            handler(command, frame)
        except BrokerError as exc:
            request_id = _request_id_of(command)
            if request_id is not None:
                self._error(request_id, exc.code, exc.message)
            else:
                log.info("refused %s from %s: %s", ctype, self.peer, exc.message)
        except ProtocolError as exc:
            log.warning("closing connection from %s: %s", self.peer, exc)
            self.abort()
        except Exception as exc:  # a broker bug: answer the request, keep the connection
            log.exception("error handling %s from %s", CommandType(ctype).name, self.peer)
            request_id = _request_id_of(command)
            if request_id is not None:
                self._error(request_id, ServerError.UnknownError, f"internal broker error: {type(exc).__name__}")

    def _refuse_unsupported(self, command: BaseCommand) -> None:
        request_id = _request_id_of(command)
        name = CommandType(command.type).name if command.type in CommandType._value2member_map_ else str(command.type)
        if request_id is None:
            log.info("ignoring unsupported command %s from %s", name, self.peer)
            return
        self._error(request_id, ServerError.NotAllowedError, f"command {name} is not supported by this broker")

    # -- connection-level commands -------------------------------------------------------
    def _on_connect(self, command: BaseCommand, frame: Frame) -> None:
        if self.connected:
            raise ProtocolError("second CONNECT on a connection")
        c = command.connect
        self.client_version = c.client_version
        self.protocol_version = c.protocol_version
        self.connected = True
        cmd = BaseCommand(type=CommandType.CONNECTED)
        cmd.connected.server_version = SERVER_VERSION
        cmd.connected.protocol_version = max(MIN_PROTOCOL_VERSION, min(PROTOCOL_VERSION, c.protocol_version or PROTOCOL_VERSION))
        cmd.connected.max_message_size = self.service.config.max_message_size
        cmd.connected.feature_flags.supports_auth_refresh = False
        self.send_command(cmd)

    def _on_ping(self, command: BaseCommand, frame: Frame) -> None:
        cmd = BaseCommand(type=CommandType.PONG)
        cmd.pong.SetInParent()
        self.send_command(cmd)

    def _on_pong(self, command: BaseCommand, frame: Frame) -> None:
        pass

    def _on_partitioned_metadata(self, command: BaseCommand, frame: Frame) -> None:
        req = command.partition_metadata
        cmd = BaseCommand(type=CommandType.PARTITIONED_METADATA_RESPONSE)
        resp = cmd.partition_metadata_response
        resp.request_id = req.request_id
        try:
            name = self.service.parse_topic(req.topic)
            self.service.check_namespace(name)
            resp.partitions = self.service.partitions_for_client(name, req.metadata_auto_creation_enabled)
            resp.response = PartitionedMetadataResult.Success
        except BrokerError as exc:
            resp.response = PartitionedMetadataResult.Failed
            resp.error = exc.code
            resp.message = exc.message
        self.send_command(cmd)

    def _on_lookup(self, command: BaseCommand, frame: Frame) -> None:
        req = command.lookup_topic
        cmd = BaseCommand(type=CommandType.LOOKUP_RESPONSE)
        resp = cmd.lookup_topic_response
        resp.request_id = req.request_id
        try:
            if req.advertised_listener_name and req.advertised_listener_name != "internal":
                raise BrokerError(
                    ServerError.ServiceNotReady,
                    f"the broker do not have {req.advertised_listener_name} listener",
                )
            name = self.service.parse_topic(req.topic)
            self.service.check_namespace(name)
            resp.response = LookupType.Connect
            resp.broker_service_url = self.service.config.broker_service_url
            resp.broker_service_url_tls = self.service.config.broker_service_url
            resp.authoritative = True
        except BrokerError as exc:
            resp.response = LookupType.Failed
            resp.error = exc.code
            resp.message = exc.message
        self.send_command(cmd)

    def _on_get_topics_of_namespace(self, command: BaseCommand, frame: Frame) -> None:
        req = command.get_topics_of_namespace
        if self.service.metadata.get_namespace(req.namespace) is None:
            raise BrokerError(ServerError.MetadataError, f"namespace {req.namespace} does not exist")
        cmd = BaseCommand(type=CommandType.GET_TOPICS_OF_NAMESPACE_RESPONSE)
        resp = cmd.get_topics_of_namespace_response
        resp.request_id = req.request_id
        resp.topics.extend(self.service.topics_of_namespace(req.namespace, TopicsMode(req.mode)))
        resp.filtered = False
        resp.changed = True
        self.send_command(cmd)

    def _on_get_schema(self, command: BaseCommand, frame: Frame) -> None:
        req = command.get_schema
        cmd = BaseCommand(type=CommandType.GET_SCHEMA_RESPONSE)
        resp = cmd.get_schema_response
        resp.request_id = req.request_id
        try:
            name = self.service.parse_topic(req.topic)
            version = None
            if req.HasField("schema_version") and req.schema_version:
                version = version_from_bytes(req.schema_version)
                if version is None:
                    raise BrokerError(
                        ServerError.TopicNotFound,
                        f"Topic not found or no-schema: {req.topic} (schema version must be 8 bytes)",
                    )
            stored = self.service.schemas.get_for_client(name, version)
        except BrokerError as exc:
            resp.error_code = ServerError.TopicNotFound
            resp.error_message = exc.message
        else:
            resp.schema.name = stored.schema_id
            resp.schema.type = type_to_wire(stored.type)
            resp.schema.schema_data = stored.data
            for key, value in sorted(stored.properties.items()):
                kv = resp.schema.properties.add()
                kv.key = key
                kv.value = value
            resp.schema_version = stored.version_bytes
        self.send_command(cmd)

    def _on_get_or_create_schema(self, command: BaseCommand, frame: Frame) -> None:
        req = command.get_or_create_schema
        cmd = BaseCommand(type=CommandType.GET_OR_CREATE_SCHEMA_RESPONSE)
        resp = cmd.get_or_create_schema_response
        resp.request_id = req.request_id
        try:
            name = self.service.parse_topic(req.topic)
            self.service.get_topic(name, create=False)
            schema = schema_from_wire(req.schema) if req.HasField("schema") else None
            version = self.service.schemas.producer_schema(name, schema)
        except BrokerError as exc:
            resp.error_code = exc.code
            resp.error_message = exc.message
        else:
            resp.schema_version = version_to_bytes(version) if version is not None else b""
        self.send_command(cmd)

    # -- producers -----------------------------------------------------------------------
    def _on_producer(self, command: BaseCommand, frame: Frame) -> None:
        req = command.producer
        existing = self.producers.get(req.producer_id)
        if existing is not None:
            if existing.topic.name == str(self.service.parse_topic(req.topic)) and not existing.closed:
                self._producer_success(req.request_id, existing)
                return
            raise BrokerError(ServerError.ProducerBusy, f"producer id {req.producer_id} is already in use on this connection")
        name = self.service.parse_topic(req.topic)
        topic = self.service.get_topic(name)
        schema_version = self.service.schemas.producer_schema(
            name, schema_from_wire(req.schema) if req.HasField("schema") else None
        )
        user_named = bool(req.producer_name) and req.user_provided_producer_name
        producer_name = req.producer_name if req.producer_name else topic.generate_producer_name()
        try:
            mode = ProducerAccessMode(req.producer_access_mode)
        except ValueError:
            raise BrokerError(ServerError.NotAllowedError, f"unknown producer access mode {req.producer_access_mode}") from None
        producer = Producer(
            self, req.producer_id, producer_name, topic, mode, user_named, {kv.key: kv.value for kv in req.metadata},
            request_id=req.request_id, topic_epoch=req.topic_epoch if req.HasField("topic_epoch") else None,
        )
        producer.schema_version = schema_version
        ready = topic.add_producer(producer)
        self.producers[req.producer_id] = producer
        if req.initial_subscription_name and name.persistent:
            # created with the producer (dead letter producers use it) so nothing is lost before a consumer comes
            topic.subscribe(req.initial_subscription_name, durable=True, initial_position=InitialPosition.Latest, start_message_id=None)
        self._producer_success(req.request_id, producer, ready)

    def _producer_success(self, request_id: int, producer: Producer, ready: bool = True) -> None:
        cmd = BaseCommand(type=CommandType.PRODUCER_SUCCESS)
        ok = cmd.producer_success
        ok.request_id = request_id
        ok.producer_name = producer.name
        ok.last_sequence_id = producer.topic.last_sequence_id(producer.name)
        ok.producer_ready = ready
        if producer.schema_version is not None:
            ok.schema_version = version_to_bytes(producer.schema_version)
        if ready and producer.access_mode != ProducerAccessMode.Shared:
            ok.topic_epoch = producer.topic.topic_epoch
        self.send_command(cmd)

    def producer_ready(self, producer: Producer) -> None:
        """A queued WaitForExclusive producer got the topic: complete its PRODUCER request."""
        if not self.closed and self.producers.get(producer.producer_id) is producer:
            self._producer_success(producer.request_id, producer, True)

    def refuse_waiting_producer(self, producer: Producer, reason: str) -> None:
        """A queued WaitForExclusive producer lost its turn: fail its PRODUCER request."""
        producer.closed = True
        if self.producers.get(producer.producer_id) is producer:
            del self.producers[producer.producer_id]
            self._error(producer.request_id, ServerError.ProducerFenced, reason)

    def close_producer_by_broker(self, producer: Producer) -> None:
        """Detach a producer and tell its client (fencing, forced topic deletion)."""
        if self.producers.get(producer.producer_id) is producer:
            del self.producers[producer.producer_id]
        producer.topic.remove_producer(producer)
        self._send_broker_close(CommandType.CLOSE_PRODUCER, producer.producer_id)

    def _send_broker_close(self, ctype: CommandType, handle_id: int) -> None:
        """CLOSE_PRODUCER / CLOSE_CONSUMER initiated by the broker (request id -1: no answer expected)."""
        if self.closed:
            return
        cmd = BaseCommand(type=ctype)
        if ctype == CommandType.CLOSE_PRODUCER:
            cmd.close_producer.producer_id = handle_id
            cmd.close_producer.request_id = _u64(-1)
        else:
            cmd.close_consumer.consumer_id = handle_id
            cmd.close_consumer.request_id = _u64(-1)
        self.send_command(cmd)

    def _on_send(self, command: BaseCommand, frame: Frame) -> None:
        send = command.send
        producer = self.producers.get(send.producer_id)
        if producer is None or producer.closed:
            self.send_send_error(send.producer_id, send.sequence_id, ServerError.NotAllowedError, "producer is not open on this connection")
            return
        entry = frame.entry
        if entry is None:
            raise ProtocolError("SEND without a payload")
        crc = crc32c(entry)
        if frame.checksum is not None and crc != frame.checksum:
            self.send_send_error(send.producer_id, send.sequence_id, ServerError.ChecksumError, "checksum mismatch")
            return
        max_size = self.service.config.max_message_size
        if len(entry) > max_size and not send.is_chunk:
            self.send_send_error(
                send.producer_id, send.sequence_id, ServerError.NotAllowedError,
                f"message of {len(entry)} bytes exceeds the maximum of {max_size}",
            )
            return
        try:
            producer.topic.publish(producer, send.sequence_id, send.highest_sequence_id, send.num_messages, entry, crc)
        except StorageError as exc:
            log.error("append to %s failed: %s", producer.topic.name, exc)
            self.send_send_error(send.producer_id, send.sequence_id, ServerError.PersistenceError, f"storage failure: {exc}")

    def _on_close_producer(self, command: BaseCommand, frame: Frame) -> None:
        req = command.close_producer
        producer = self.producers.pop(req.producer_id, None)
        if producer is not None:
            producer.topic.remove_producer(producer)
        self._success(req.request_id)

    # -- consumers -----------------------------------------------------------------------
    def _on_subscribe(self, command: BaseCommand, frame: Frame) -> None:
        req = command.subscribe
        existing = self.consumers.get(req.consumer_id)
        if existing is not None:
            if existing.subscription.name == req.subscription and not existing.closed:
                self._success(req.request_id)
                return
            raise BrokerError(ServerError.ConsumerBusy, f"consumer id {req.consumer_id} is already in use on this connection")
        if not req.subscription:
            raise BrokerError(ServerError.InvalidTopicName, "subscription name is empty")
        try:
            sub_type = SubType(req.sub_type)
        except ValueError:
            raise BrokerError(ServerError.NotAllowedError, f"unknown subscription type {req.sub_type}") from None
        key_shared_meta = None
        if sub_type == SubType.Key_Shared:
            if req.HasField("key_shared_meta"):
                key_shared_meta = KeySharedMeta()
                key_shared_meta.CopyFrom(req.key_shared_meta)
            check_key_shared_meta(key_shared_meta, req.consumer_name or f"consumer-{req.consumer_id}")
        name = self.service.parse_topic(req.topic)
        topic = self.service.get_topic(name, create=req.force_topic_creation)
        existing_sub = topic.subscriptions.get(req.subscription)
        if existing_sub is not None:
            existing_sub.check_can_add(sub_type)
        if req.HasField("schema"):
            self.service.schemas.consumer_schema(name, schema_from_wire(req.schema), topic_is_active(topic))
        start = None
        if req.HasField("start_message_id") and not req.durable:
            start = (req.start_message_id.ledger_id, req.start_message_id.entry_id)
        try:
            position = InitialPosition(req.initial_position)
        except ValueError:
            position = InitialPosition.Latest
        sub = topic.subscribe(
            req.subscription, durable=req.durable, initial_position=position, start_message_id=start,
            read_compacted=req.read_compacted,
        )
        consumer_name = req.consumer_name or f"consumer-{req.consumer_id}"
        consumer = Consumer(
            self, req.consumer_id, consumer_name, sub, sub_type, req.priority_level,
            req.read_compacted, {kv.key: kv.value for kv in req.metadata},
        )
        consumer.key_shared_meta = key_shared_meta
        try:
            sub.add_consumer(consumer)
        except BrokerError:
            if not sub.consumers and not sub.durable:
                topic.remove_subscription(sub.name)
            raise
        self.consumers[req.consumer_id] = consumer
        self._success(req.request_id)

    def _on_flow(self, command: BaseCommand, frame: Frame) -> None:
        flow = command.flow
        consumer = self.consumers.get(flow.consumer_id)
        if consumer is not None:
            consumer.subscription.flow(consumer, flow.message_permits)

    def _on_ack(self, command: BaseCommand, frame: Frame) -> None:
        ack = command.ack
        consumer = self.consumers.get(ack.consumer_id)
        if consumer is not None:
            consumer.subscription.acknowledge(consumer, ack.ack_type == AckType.Cumulative, ack.message_id)
        if ack.HasField("request_id"):
            cmd = BaseCommand(type=CommandType.ACK_RESPONSE)
            cmd.ack_response.consumer_id = ack.consumer_id
            cmd.ack_response.request_id = ack.request_id
            if consumer is None:
                cmd.ack_response.error = ServerError.ConsumerNotFound
                cmd.ack_response.message = f"consumer {ack.consumer_id} not found"
            self.send_command(cmd)

    def _on_redeliver(self, command: BaseCommand, frame: Frame) -> None:
        req = command.redeliver_unacknowledged_messages
        consumer = self.consumers.get(req.consumer_id)
        if consumer is not None:
            ids = list(req.message_ids) if len(req.message_ids) else None
            consumer.subscription.redeliver_unacknowledged(consumer, ids)

    def _on_close_consumer(self, command: BaseCommand, frame: Frame) -> None:
        req = command.close_consumer
        consumer = self.consumers.pop(req.consumer_id, None)
        if consumer is not None:
            consumer.subscription.remove_consumer(consumer)
        self._success(req.request_id)

    def _on_unsubscribe(self, command: BaseCommand, frame: Frame) -> None:
        req = command.unsubscribe
        consumer = self._consumer(req.consumer_id)
        sub = consumer.subscription
        sub.topic.unsubscribe(sub, req.force, consumer)
        self.consumers.pop(req.consumer_id, None)
        self._success(req.request_id)

    def _consumer(self, consumer_id: int) -> Consumer:
        consumer = self.consumers.get(consumer_id)
        if consumer is None:
            raise BrokerError(ServerError.ConsumerNotFound, f"consumer {consumer_id} is not open on this connection")
        return consumer

    def _on_get_last_message_id(self, command: BaseCommand, frame: Frame) -> None:
        req = command.get_last_message_id
        consumer = self._consumer(req.consumer_id)
        sub = consumer.subscription
        ledger_id, entry_id, batch_index = sub.last_message_id(consumer.read_compacted)
        cmd = BaseCommand(type=CommandType.GET_LAST_MESSAGE_ID_RESPONSE)
        resp = cmd.get_last_message_id_response
        resp.request_id = req.request_id
        resp.last_message_id.ledger_id = ledger_id
        resp.last_message_id.entry_id = _u64(entry_id)
        if batch_index >= 0:
            resp.last_message_id.batch_index = batch_index
        resp.consumer_mark_delete_position.ledger_id = ledger_id
        resp.consumer_mark_delete_position.entry_id = _u64(sub.cursor.mark_delete)
        self.send_command(cmd)

    def _on_seek(self, command: BaseCommand, frame: Frame) -> None:
        req = command.seek
        consumer = self._consumer(req.consumer_id)
        sub = consumer.subscription
        topic = sub.topic
        if req.HasField("message_publish_time"):
            target = topic.find_entry_by_time(req.message_publish_time)
        elif req.HasField("message_id"):
            mid = req.message_id
            target = topic._start_position(mid.ledger_id, mid.entry_id)
        else:
            raise BrokerError(ServerError.NotAllowedError, "SEEK needs a message id or a publish time")
        sub.reset_cursor(target)
        self._success(req.request_id)

    def _on_consumer_stats(self, command: BaseCommand, frame: Frame) -> None:
        req = command.consumer_stats
        cmd = BaseCommand(type=CommandType.CONSUMER_STATS_RESPONSE)
        resp = cmd.consumer_stats_response
        resp.request_id = req.request_id
        consumer = self.consumers.get(req.consumer_id)
        if consumer is None:
            resp.error_code = ServerError.ConsumerNotFound
            resp.error_message = f"consumer {req.consumer_id} is not open on this connection"
        else:
            sub = consumer.subscription
            resp.consumer_name = consumer.name
            resp.available_permits = max(0, consumer.permits)
            resp.unacked_messages = consumer.unacked_messages
            resp.blocked_consumer_on_unacked_msgs = consumer.blocked
            resp.address = self.peer
            resp.connected_since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(consumer.connected_since))
            resp.type = sub.sub_type.name if sub.sub_type is not None else ""
            resp.msg_backlog = sub.backlog()
            resp.msg_rate_out = 0.0
            resp.msg_throughput_out = 0.0
            resp.msg_rate_redeliver = 0.0
            resp.msg_rate_expired = 0.0
        self.send_command(cmd)


def _request_id_of(command: BaseCommand) -> int | None:
    """The request id of any request command, known to the schema or not.

    Every Pulsar request command but a few keeps its request id in field 1; the known ones
    that do not are read by name.
    """
    sub = sub_command(command)
    if sub is not None:
        if "request_id" in sub.DESCRIPTOR.fields_by_name:
            return sub.request_id if sub.HasField("request_id") else None
        return None
    for field in unknown_fields.UnknownFieldSet(command):
        if field.field_number == command.type and isinstance(field.data, bytes):
            return _varint_field_1(field.data)
    return None


def _varint_field_1(data: bytes) -> int | None:
    """Value of field 1 when it is a varint at the start of a serialized message."""
    if not data or data[0] != 0x08:
        return None
    value = shift = 0
    for byte in data[1:11]:
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value
        shift += 7
    return None
