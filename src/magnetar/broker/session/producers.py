"""Producer commands of a session: PRODUCER, SEND, CLOSE_PRODUCER, and how a publish completes.

A SEND is one call into the topic, ``topic.publish(producer, entry, crc, context)``, and one
completion out: the topic completes the :class:`SendContext` (stored, duplicate or failed)
and the context answers the client with a SEND_RECEIPT or a SEND_ERROR. Bytes appended and not
yet durable count against the connection's publish backpressure until the context completes.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from magnetar.broker.errors import BrokerError
from magnetar.broker.schemas import declared_schema_from_wire, version_to_bytes
from magnetar.broker.session.base import SessionBase
from magnetar.broker.session.deferred import DeferredCommands, PendingRequest
from magnetar.broker.topics.producer import Producer
from magnetar.protocol.enums import CommandType, InitialPosition, ProducerAccessMode, ServerError
from magnetar.protocol.framing import ProtocolError, crc32c, parse_entry_metadata
from magnetar.protocol.schema import BaseCommand
from magnetar.storage import StorageError
from magnetar.storage.entries import EntryData, owned_entry

if TYPE_CHECKING:
    from magnetar.broker.topics.base import Topic
    from magnetar.protocol.framing import Frame
    from magnetar.protocol.schema import CommandProducer
    from magnetar.protocol.send_frame import SendFrame
    from magnetar.protocol.topic_name import TopicName

log = logging.getLogger("magnetar.broker.session")


class SendContext:
    """One SEND on its way through a topic (a :class:`~magnetar.broker.transport.PublishContext`)."""

    __slots__ = ("session", "producer", "sequence_id", "highest_sequence_id", "num_messages", "pending_bytes")

    def __init__(
        self, session: SessionBase, producer: Producer, sequence_id: int, highest_sequence_id: int, num_messages: int
    ) -> None:
        self.session = session
        self.producer = producer
        self.sequence_id = sequence_id
        self.highest_sequence_id = highest_sequence_id
        self.num_messages = num_messages
        #: bytes counted against the connection's backpressure until the entry is durable
        self.pending_bytes = 0

    def completed(self, ledger_id: int, entry_id: int) -> None:
        """Stored: SEND_RECEIPT with the message id (unless the producer was closed meanwhile)."""
        session = self.session
        if self.pending_bytes:
            session.publish_done(self.pending_bytes)
        producer = self.producer
        if not producer.closed:
            session.send_receipt(producer.producer_id, self.sequence_id, self.highest_sequence_id, ledger_id, entry_id)

    def duplicate(self) -> None:
        """Already stored (deduplication): SEND_RECEIPT with message id -1:-1."""
        self.completed(-1, -1)

    def failed(self, code: ServerError, message: str) -> None:
        """Not stored: SEND_ERROR naming the send's highest sequence id, as Pulsar's (unless the
        producer was closed meanwhile)."""
        session = self.session
        if self.pending_bytes:
            session.publish_done(self.pending_bytes)
        producer = self.producer
        if not producer.closed:
            session.send_send_error(producer.producer_id, max(self.sequence_id, self.highest_sequence_id), code, message)


class ProducerCommands(DeferredCommands):
    """The producer commands of a session and the producer side of its transport."""

    def _on_producer(self, command: BaseCommand, frame: Frame) -> None:
        req = command.producer
        service = self.service
        existing = self.producers.get(req.producer_id)
        if existing is not None:
            if existing.topic.name == str(service.parse_topic(req.topic)) and not existing.closed:
                self._producer_success(req.request_id, existing)
                return
            raise BrokerError(ServerError.ProducerBusy, f"producer id {req.producer_id} is already in use on this connection")
        self.refuse_if_pending(self.pending_producers, req.producer_id, "Producer")
        name = service.parse_topic(req.topic)
        self.require_authorized("PRODUCER", lambda authz: authz.check_producer(name, self.role), name)
        topic = service.topics.get(str(name))
        if topic is not None:
            self._open_producer(command, req, name, topic)
            return
        request = self.pending_producers[req.producer_id] = PendingRequest()
        self.answer_later(command, self._open_producer_after_load(command, req, name, request))

    async def _open_producer_after_load(
        self, command: BaseCommand, req: CommandProducer, name: TopicName, request: PendingRequest
    ) -> None:
        """PRODUCER of a topic not loaded: load it off the loop, then open the producer."""
        try:
            topic = await self.service.load_topic(name)
        finally:
            wanted = self.pending_done(self.pending_producers, req.producer_id, request)
        if wanted:
            self._open_producer(command, req, name, topic)

    def _open_producer(self, command: BaseCommand, req: CommandProducer, name: TopicName, topic: Topic) -> None:
        """Find or register the producer's schema, then add the producer; a new schema version is
        registered without an fsync on the loop and the producer added once it is durable (its id
        held as pending meanwhile)."""
        if topic.policies.encryption_required and not req.encrypted:
            raise BrokerError(ServerError.MetadataError, f"Encryption is required in {name}")
        schema = declared_schema_from_wire(req.schema) if req.HasField("schema") else None
        request = PendingRequest()

        def add(schema_version: int | None) -> None:
            if self.pending_producers.get(req.producer_id) is request or request.cancelled:
                if not self.pending_done(self.pending_producers, req.producer_id, request):
                    return
            self._add_producer(req, name, topic, schema_version)

        if not self.after_metadata_write(command, lambda: self.service.schemas.producer_schema(name, schema), add):
            self.pending_producers[req.producer_id] = request

    def _add_producer(self, req: CommandProducer, name: TopicName, topic: Topic, schema_version: int | None) -> None:
        """Add the producer a PRODUCER asks for to its loaded topic and answer."""
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
        self.closed_by_broker.discard(req.producer_id)
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

    def producer_ready(self, producer_id: int) -> None:
        """A queued WaitForExclusive producer got the topic: complete its PRODUCER request."""
        producer = self.producers.get(producer_id)
        if not self.closed and producer is not None:
            self._producer_success(producer.request_id, producer, True)

    def producer_refused(self, producer_id: int, reason: str) -> None:
        """A queued WaitForExclusive producer lost its turn: fail its PRODUCER request."""
        producer = self.producers.pop(producer_id, None)
        if producer is not None:
            self.send_error(producer.request_id, ServerError.ProducerFenced, reason)

    def _on_send(self, command: BaseCommand, frame: Frame) -> None:
        send = command.send
        txn = (send.txnid_most_bits, send.txnid_least_bits) if send.HasField("txnid_most_bits") else None
        self._publish(send.producer_id, send.sequence_id, send.highest_sequence_id, send.num_messages, txn, frame)

    def send_frame_received(self, frame: SendFrame) -> None:
        """A SEND of the usual shape, its fields read by hand (protocol/send_frame.py): the same
        publish as :meth:`_on_send`, without protobuf's command objects."""
        self._publish(frame.producer_id, frame.sequence_id, frame.highest_sequence_id, frame.num_messages, None, frame)

    def _publish(self, producer_id: int, sequence_id: int, highest_sequence_id: int, num_messages: int,
                 txn: tuple[int, int] | None, frame: Frame) -> None:
        producer = self.producers.get(producer_id)
        if producer is None or producer.closed:
            if producer_id in self.closed_by_broker:
                # sent before the client read our CLOSE_PRODUCER: dropped, as Pulsar's ServerCnx.handleSend drops
                # a recently closed producer's SEND (the client resends it once registered again; a SEND_ERROR
                # makes the C++ client close the connection, losing its other producers' receipts on the way)
                return
            self.send_send_error(producer_id, sequence_id, ServerError.NotAllowedError, "producer is not open on this connection")
            return
        view = frame.entry_view
        if view is None:
            raise ProtocolError("SEND without a payload")
        entry = owned_entry(view)  # a large SEND joined from several reads is kept as it came, not copied
        crc = crc32c(entry)
        if frame.checksum is not None and crc != frame.checksum:
            self.send_send_error(producer_id, sequence_id, ServerError.ChecksumError, "checksum mismatch")
            return
        topic = producer.topic
        if topic.policies.encryption_required and not _encrypted(entry):
            self.send_send_error(producer_id, sequence_id, ServerError.MetadataError, "Messages must be encrypted")
            return
        # no size check here: as Pulsar, only the frame limit (max_message_size + FRAME_HEADROOM,
        # the decoder's) bounds an entry, since max_message_size does not count the metadata
        context = SendContext(self, producer, sequence_id, highest_sequence_id, num_messages)
        limiter = topic.rate_limits.publish  # the publish rate policy: one check per SEND
        if limiter is not None:
            self.throttle_publish(limiter.consume_and_delay(num_messages, len(entry)))
        if txn is not None:
            self._send_in_txn(producer, txn, entry, crc, context)
            return
        try:
            if topic.publish(producer, entry, crc, context):
                size = len(entry)
                context.pending_bytes = size
                self.publish_started(size)
        except StorageError as exc:
            log.error("append to %s failed: %s", topic.name, exc)
            self.send_send_error(producer_id, sequence_id, ServerError.PersistenceError, f"storage failure: {exc}")

    def _send_in_txn(self, producer: Producer, txn: tuple[int, int], entry: EntryData, crc: int, context: SendContext) -> None:
        """A SEND inside a transaction (session/transactions.py); a refusal is its SEND_ERROR."""
        try:
            if self.publish_in_txn(producer, txn, entry, crc, context):  # type: ignore[attr-defined]
                context.pending_bytes = len(entry)
                self.publish_started(len(entry))
        except BrokerError as exc:
            context.failed(exc.code, exc.message)
        except StorageError as exc:
            context.failed(ServerError.PersistenceError, f"storage failure: {exc}")

    def _on_close_producer(self, command: BaseCommand, frame: Frame) -> None:
        req = command.close_producer
        self.cancel_pending(self.pending_producers, req.producer_id)
        producer = self.producers.get(req.producer_id)
        if producer is None:
            self.send_success(req.request_id)
            return

        def closed() -> None:
            if self.producers.get(req.producer_id) is producer:
                del self.producers[req.producer_id]
            producer.topic.remove_producer(producer)
            self.send_success(req.request_id)

        # as Pulsar's Producer.close: once the receipts of its publishes went out (a receipt of a closed
        # producer is not sent, and the Java client fails what is pending when the close is answered)
        producer.topic.after_publishes(closed)


def _encrypted(entry: EntryData) -> bool:
    """Whether an entry carries encryption keys (what an encryption-required topic insists on)."""
    try:
        return len(parse_entry_metadata(entry).encryption_keys) > 0
    except Exception:  # noqa: BLE001 - undecodable metadata is not encrypted metadata
        return False
