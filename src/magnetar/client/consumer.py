"""Consumers and readers on one topic (or one partition): receiver queue, flow, acks, redelivery.

Entries arrive as MESSAGE frames; a batch is opened once (decompressed, split) into Message
objects that wait in the receiver queue, and chunks are put back together into one message.
Permits are re-granted with FLOW once half the queue was consumed (one permit per receive with
a zero-size queue). Acknowledgements are grouped and sent every ``ack_group_time_ms`` (100 ms),
several ids per ACK frame; batch messages are acknowledged by entry once all of them are, or by
batch index when ``batch_index_ack_enabled``. Negative acks and ack timeouts redeliver entries
after their delay (fixed, or a redelivery backoff) with REDELIVER_UNACKNOWLEDGED_MESSAGES; a
dead letter policy publishes messages redelivered too often to a dead letter topic, and
``reconsume_later`` sends a message to the retry letter topic.

``ReceiverBase`` holds what single-topic and multi-topic consumers share: the queue, waiting
receivers, batch receives and the message listener.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import struct
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from google.protobuf.message import DecodeError

from magnetar.client.chunks import ChunkAssembler
from magnetar.client.errors import (
    AlreadyClosed,
    CumulativeAcknowledgementNotAllowedError,
    InvalidConfiguration,
    OperationNotSupported,
    PulsarError,
    Timeout,
)
from magnetar.client.message import _UNSET, Message, MessageId, _signed
from magnetar.client.policies import (
    ConsumerBatchReceivePolicy,
    ConsumerDeadLetterPolicy,
    ConsumerKeySharedPolicy,
    RedeliveryBackoff,
)
from magnetar.client.trackers import Backoff, NegativeAckTracker, UnackedMessageTracker
from magnetar.protocol.compression import decompress
from magnetar.protocol.enums import AckType, CommandType, CompressionType, InitialPosition, SubType
from magnetar.protocol.framing import ProtocolError, crc32c, split_entry
from magnetar.protocol.schema import (
    BaseCommand,
    KeyValue,
    MessageIdData,
    MessageMetadata,
    SingleMessageMetadata,
)

if TYPE_CHECKING:
    from magnetar.client.client import AsyncClient
    from magnetar.client.connection import ClientConnection
    from magnetar.client.producer import Producer

log = logging.getLogger("magnetar.client.consumer")

_consumer_ids = itertools.count()
_U64 = (1 << 64) - 1
_U32 = struct.Struct(">I")
#: the metadata of a batched message that has nothing but a payload size (shared, never modified)
_NO_SINGLE_FIELDS = SingleMessageMetadata()
_new_message_id = object.__new__
_new_message = object.__new__
MessageListener = Callable[[Any, Message], Any]
EntryKey = tuple[int, int]

#: property names of dead letter and retry messages (as the Java client)
REAL_TOPIC = "REAL_TOPIC"
ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
RECONSUMETIMES = "RECONSUMETIMES"
DELAY_TIME = "DELAY_TIME"

_DEFAULT_BATCH_RECEIVE = ConsumerBatchReceivePolicy()


@dataclass
class ConsumerConfig:
    """Consumer options, named and defaulted as in the official Python client."""

    consumer_type: SubType = SubType.Exclusive
    receiver_queue_size: int = 1000
    max_total_receiver_queue_size_across_partitions: int = 50000
    consumer_name: str | None = None
    #: ack timeout (None or 0: off; at least 1000 ms otherwise)
    unacked_messages_timeout_ms: int | None = None
    #: how often the ack timeout is checked
    tick_duration_ms: int = 1000
    ack_timeout_redelivery_backoff: RedeliveryBackoff | None = None
    broker_consumer_stats_cache_time_ms: int = 30000
    negative_ack_redelivery_delay_ms: int = 60000
    negative_ack_redelivery_backoff: RedeliveryBackoff | None = None
    is_read_compacted: bool = False
    properties: dict[str, str] = field(default_factory=dict)
    initial_position: InitialPosition = InitialPosition.Latest
    crypto_key_reader: Any = None
    replicate_subscription_state_enabled: bool = False
    max_pending_chunked_message: int = 10
    auto_ack_oldest_chunked_message_on_queue_full: bool = False
    expire_time_of_incomplete_chunked_message_ms: int = 60000
    start_message_id_inclusive: bool = False
    batch_receive_policy: ConsumerBatchReceivePolicy | None = None
    key_shared_policy: ConsumerKeySharedPolicy | None = None
    batch_index_ack_enabled: bool = False
    dead_letter_policy: ConsumerDeadLetterPolicy | None = None
    retry_enable: bool = False
    crypto_failure_action: Any = None
    priority_level: int = 0
    message_listener: MessageListener | None = None
    schema: Any = None
    ack_group_time_ms: int = 100
    #: time source of the nack / ack-timeout / chunk-expiry bookkeeping (tests inject a fake)
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        timeout = self.unacked_messages_timeout_ms
        if timeout and timeout < 1000:
            raise InvalidConfiguration(f"unacked_messages_timeout_ms must be 0 (off) or at least 1000, not {timeout}")
        if self.receiver_queue_size < 0:
            raise InvalidConfiguration(f"receiver_queue_size must be >= 0, not {self.receiver_queue_size}")
        if self.crypto_key_reader is not None:
            raise OperationNotSupported("end-to-end encryption (crypto_key_reader) is not supported by magnetar's client")
        if self.key_shared_policy is not None and not isinstance(self.key_shared_policy, ConsumerKeySharedPolicy):
            raise InvalidConfiguration("key_shared_policy must be a ConsumerKeySharedPolicy")
        # plain ints and the official client's enums are accepted too
        self.consumer_type = SubType(int(self.consumer_type))
        self.initial_position = InitialPosition(int(self.initial_position))


class ReceiverBase:
    """Receiver queue, pending receives, batch receives and the listener of a consumer."""

    config: ConsumerConfig
    topic: str
    _closed: bool

    def _init_receiver(self) -> None:
        self._queue: deque[Message] = deque()
        self._waiters: deque[asyncio.Future] = deque()
        self._arrived = asyncio.Event()
        self._listener: MessageListener | None = self.config.message_listener
        self._listener_task: asyncio.Task | None = None
        self._listener_wakeup = asyncio.Event()
        self._paused = False

    # what subclasses provide
    def _dequeued_many(self, messages: Iterable[Message]) -> None:  # pragma: no cover - abstract
        """Messages handed to the application: consumption accounting."""
        raise NotImplementedError

    def _dequeued_one(self, msg: Message) -> None:
        self._dequeued_many((msg,))

    def _want_one(self) -> None:
        """A receive is about to wait on an empty queue (zero-queue consumers ask for a message)."""

    def _deliver(self, messages: list[Message]) -> None:
        """New messages: to waiting receives first, then the queue."""
        waiters = self._waiters
        i = 0
        n = len(messages)
        while waiters and i < n:
            fut = waiters.popleft()
            if fut.done():
                continue
            msg = messages[i]
            i += 1
            self._dequeued_many((msg,))
            fut.set_result(msg)
        if i < n:
            self._queue.extend(messages if i == 0 else messages[i:])
            self._arrived.set()
            if self._listener is not None:
                self._listener_wakeup.set()

    def _check_receive(self) -> None:
        if self._closed:
            raise AlreadyClosed(f"consumer on {self.topic} is closed")
        if self._listener is not None:
            raise InvalidConfiguration("cannot receive when a message listener is set")

    async def receive(self, timeout_millis: int | None = None) -> Message:
        """The next message; raises Timeout after ``timeout_millis`` (waits forever when None)."""
        if self._closed or self._listener is not None:
            self._check_receive()
        if self._queue:
            msg = self._queue.popleft()
            self._dequeued_one(msg)
            return msg
        fut: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        self._want_one()
        try:
            if timeout_millis is None:
                return await fut
            return await asyncio.wait_for(fut, timeout_millis / 1000.0)
        except TimeoutError:
            raise Timeout(f"no message received from {self.topic} within {timeout_millis} ms") from None
        finally:
            if not fut.done():
                fut.cancel()

    def receive_nowait(self, max_messages: int) -> list[Message]:
        """Up to ``max_messages`` queued messages, without waiting."""
        out = self.take(max_messages)
        if out:
            self._dequeued_many(out)
        return out

    def take(self, max_messages: int) -> list[Message]:
        """Remove up to ``max_messages`` queued messages *without* accounting for them: the caller
        reports them with :meth:`report_consumed` once the application has them."""
        queue = self._queue
        n = min(max_messages, len(queue))
        out = [queue.popleft() for _ in range(n)]
        if out:
            self._taken(out)
        return out

    def _taken(self, messages: list[Message]) -> None:
        """Messages left the queue for the application (their position counts as seen)."""

    def report_consumed(self, messages: list[Message]) -> None:
        """Account for messages obtained with :meth:`take`."""
        if messages:
            self._dequeued_many(messages)

    def queued(self) -> int:
        """Messages waiting in the receiver queue."""
        return len(self._queue)

    async def batch_receive(self, policy: ConsumerBatchReceivePolicy | None = None) -> list[Message]:
        """Messages as the batch receive policy allows: returns when the count or bytes limit is
        reached, or when its timeout passes (with what arrived by then, possibly nothing)."""
        self._check_receive()
        policy = policy or self.config.batch_receive_policy or _DEFAULT_BATCH_RECEIVE
        loop = asyncio.get_running_loop()
        deadline = loop.time() + policy.timeout_ms / 1000.0 if policy.timeout_ms > 0 else None
        while not self._closed:
            count, size = len(self._queue), 0
            if policy.max_num_bytes > 0:
                size = sum(len(m._payload) for m in self._queue)
            if policy.enough(count, size):
                break
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                break
            if not self._queue:
                self._want_one()
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), remaining)
            except TimeoutError:
                break
        out: list[Message] = []
        size = 0
        queue = self._queue
        while queue and policy.can_add(len(out), size, len(queue[0]._payload)):
            msg = queue.popleft()
            out.append(msg)
            size += len(msg._payload)
        if out:
            self._dequeued_many(out)
        return out

    # -- listener ------------------------------------------------------------------------
    def _start_listener(self) -> None:
        if self._listener is not None and self._listener_task is None:
            self._listener_task = asyncio.get_running_loop().create_task(self._run_listener())

    async def _run_listener(self) -> None:
        listener = self._listener
        assert listener is not None
        while not self._closed:
            if self._paused or not self._queue:
                if not self._queue:
                    self._want_one()
                self._listener_wakeup.clear()
                await self._listener_wakeup.wait()
                continue
            msg = self._queue.popleft()
            self._dequeued_many((msg,))
            try:
                result = listener(self, msg)
                if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                    await result
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("message listener of %s failed on %s", self.topic, msg.message_id())

    def pause_message_listener(self) -> None:
        """Stop calling the listener (messages stay queued) until resumed."""
        self._paused = True

    def resume_message_listener(self) -> None:
        """Call the listener again."""
        self._paused = False
        self._listener_wakeup.set()

    def _stop_receiver(self, exc: PulsarError) -> None:
        if self._listener_task is not None:
            self._listener_task.cancel()
        self._arrived.set()
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_exception(exc)


class DeadLetterHandler:
    """The dead letter and retry letter producers of a consumer (created on first use)."""

    def __init__(self, client: AsyncClient, policy: ConsumerDeadLetterPolicy, topic: str, subscription: str, consumer_name: str) -> None:
        from magnetar.protocol.topic_name import TopicName

        base = str(TopicName.parse(topic).partitioned_parent)
        self.client = client
        self.policy = policy
        self.max_redeliver_count = policy.max_redeliver_count
        self.dead_letter_topic = policy.dead_letter_topic or f"{base}-{subscription}-DLQ"
        self.retry_letter_topic = policy.retry_letter_topic or f"{base}-{subscription}-RETRY"
        self.producer_name = f"{base}-{subscription}-{consumer_name}-DLQ"
        self._dlq: asyncio.Task | None = None
        self._retry: asyncio.Task | None = None
        self.schema: Any = None

    async def _make(self, topic: str, name: str | None, initial_subscription: str | None) -> Producer:
        from magnetar.client.producer import ProducerConfig

        config = ProducerConfig(
            producer_name=name, batching_enabled=False, chunking_enabled=True, block_if_queue_full=False,
            initial_subscription_name=initial_subscription, schema=self.schema,
        )
        return await self.client._new_producer(topic, config)

    async def dlq_producer(self) -> Producer:
        """The dead letter topic's producer."""
        if self._dlq is None or (self._dlq.done() and self._dlq.exception() is not None):
            self._dlq = asyncio.get_running_loop().create_task(
                self._make(self.dead_letter_topic, self.producer_name, self.policy.initial_subscription_name)
            )
        return await asyncio.shield(self._dlq)

    async def retry_producer(self) -> Producer:
        """The retry letter topic's producer."""
        if self._retry is None or (self._retry.done() and self._retry.exception() is not None):
            self._retry = asyncio.get_running_loop().create_task(self._make(self.retry_letter_topic, None, None))
        return await asyncio.shield(self._retry)

    async def send(self, producer: Producer, msg: Message, properties: dict[str, str], deliver_after: float | None = None) -> MessageId:
        """Publish ``msg`` (payload, key, ordering key, event time) with ``properties``."""
        return await producer.send(
            msg.data(),
            properties=properties,
            partition_key=msg.partition_key() if msg.has_key() else None,
            ordering_key=msg.ordering_key() or None,
            event_timestamp=msg.event_timestamp() or None,
            deliver_after=deliver_after if deliver_after else None,
            raw=True,
        )

    async def send_to_dlq(self, msg: Message, properties: dict[str, str] | None = None) -> MessageId:
        """Publish a message to the dead letter topic with REAL_TOPIC and ORIGIN_MESSAGE_ID."""
        props = dict(msg.properties()) if properties is None else properties
        props.setdefault(REAL_TOPIC, msg.topic_name())
        props.setdefault(ORIGIN_MESSAGE_ID, msg.message_id().java_str())
        return await self.send(await self.dlq_producer(), msg, props)

    async def close(self) -> None:
        """Close the producers that were created."""
        for task in (self._dlq, self._retry):
            if task is not None and task.done() and task.exception() is None:
                await task.result().close()
            elif task is not None:
                task.cancel()


class Consumer(ReceiverBase):
    """A consumer (or reader, when not durable) on one topic: the asyncio core."""

    def __init__(
        self,
        client: AsyncClient,
        topic: str,
        subscription: str,
        config: ConsumerConfig,
        *,
        partition: int = -1,
        durable: bool = True,
        start_message_id: MessageId | None = None,
        dead_letter: DeadLetterHandler | None = None,
    ) -> None:
        self.client = client
        self.topic = topic
        self.subscription = subscription
        self.config = config
        self.partition = partition
        self.durable = durable
        self.consumer_id = next(_consumer_ids)
        self.name = config.consumer_name or f"magnetar-{self.consumer_id}"
        self.conn: ClientConnection | None = None
        self._init_receiver()
        self._permits_to_grant = 0
        #: permits are granted again once this many messages were consumed (0: zero-size queue)
        self._flow_at = max(1, config.receiver_queue_size // 2) if config.receiver_queue_size > 0 else 0
        self._batch_index_acks = config.batch_index_ack_enabled
        self._closed = False
        self._reconnecting = False
        self._start_id = start_message_id
        self._last_dequeued: MessageId | None = None
        self._pending_individual: dict[EntryKey, MessageIdData] = {}
        self._pending_cumulative: MessageIdData | None = None
        self._batch_acks: dict[EntryKey, set[int]] = {}
        self._ack_timer: asyncio.TimerHandle | None = None
        clock = config.clock
        self._nacks = NegativeAckTracker(config.negative_ack_redelivery_delay_ms, config.negative_ack_redelivery_backoff, clock)
        self._nack_timer: asyncio.TimerHandle | None = None
        self._unacked: UnackedMessageTracker | None = None
        if config.unacked_messages_timeout_ms:
            self._unacked = UnackedMessageTracker(
                config.unacked_messages_timeout_ms, config.tick_duration_ms, config.ack_timeout_redelivery_backoff, clock
            )
        self._tick_timer: asyncio.TimerHandle | None = None
        self._chunks = ChunkAssembler(
            self._discard_chunks,
            config.max_pending_chunked_message,
            config.auto_ack_oldest_chunked_message_on_queue_full,
            config.expire_time_of_incomplete_chunked_message_ms,
            clock,
        )
        self.dead_letter = dead_letter
        if dead_letter is None and config.dead_letter_policy is not None:
            self.dead_letter = DeadLetterHandler(client, config.dead_letter_policy, topic, subscription, self.name)
        self._possible_dlq: dict[EntryKey, list[Message]] = {}
        self._connected_event = asyncio.Event()
        self.active: bool | None = None
        #: set by a multi-topic consumer: messages go there instead of this queue
        self.sink: Callable[[Consumer, list[Message]], None] | None = None
        self._tasks: set[asyncio.Task] = set()

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        """Subscribe and grant the first permits."""
        await self._connect()
        if not self.durable and self._start_id == MessageId.latest and self.config.start_message_id_inclusive:
            # "latest, inclusive" means the last message there is now: go back to it
            last, _ = await self.get_last_message_id()
            if last.entry_id >= 0:
                await self.seek(last)
        if self.sink is None:
            self._start_listener()
        if self._unacked is not None or self.config.expire_time_of_incomplete_chunked_message_ms > 0:
            self._arm_tick()

    async def _connect(self) -> None:
        conn = await self.client.lookup.connection_for(self.topic)
        rid = conn.new_request_id()
        cmd = BaseCommand(type=CommandType.SUBSCRIBE)
        s = cmd.subscribe
        s.topic = self.topic
        s.subscription = self.subscription
        s.sub_type = self.config.consumer_type
        s.consumer_id = self.consumer_id
        s.request_id = rid
        s.consumer_name = self.name
        s.priority_level = self.config.priority_level
        s.durable = self.durable
        s.read_compacted = self.config.is_read_compacted
        s.initial_position = self.config.initial_position
        s.replicate_subscription_state = self.config.replicate_subscription_state_enabled
        for k, v in self.config.properties.items():
            s.metadata.append(KeyValue(key=k, value=v))
        start = self._resubscribe_start()
        if start is not None and not self.durable:
            s.start_message_id.CopyFrom(start.to_proto())
        policy = self.config.key_shared_policy
        if self.config.consumer_type == SubType.Key_Shared:
            (policy or ConsumerKeySharedPolicy()).fill(s.key_shared_meta)
        schema = self.config.schema
        info = schema.schema_info() if schema is not None and hasattr(schema, "schema_info") else None
        if info is not None:
            s.schema.CopyFrom(info)
        conn.consumers[self.consumer_id] = self
        try:
            await conn.request(cmd, rid, self.client.operation_timeout)
        except BaseException:
            conn.consumers.pop(self.consumer_id, None)
            raise
        self.conn = conn
        self._queue.clear()
        self._permits_to_grant = 0
        queue_size = self.config.receiver_queue_size
        if queue_size > 0:
            self._send_flow(queue_size)
        elif self._waiters or (self._listener is not None and not self._paused):
            self._send_flow(1)
        self._connected_event.set()
        if self._pending_individual or self._pending_cumulative is not None:
            self._schedule_ack_flush()

    def _resubscribe_start(self) -> MessageId | None:
        """Where a (re)subscribing reader starts: after what the application has seen.

        (``_start_id`` of a durable consumer is only set by a seek to a message id: messages
        before it are dropped, as the official clients do.)"""
        if self._queue:
            first = self._queue[0].message_id().first_chunk_message_id()
            return MessageId(first.ledger_id, first.entry_id - 1 if first.batch_index < 0 else first.entry_id,
                             first.batch_index - 1 if first.batch_index >= 0 else -1)
        if self._last_dequeued is not None:
            return self._last_dequeued
        return self._start_id

    async def close(self) -> None:
        """Flush acknowledgements and close on the broker."""
        if self._closed:
            return
        self._flush_acks()
        self._closed = True
        for timer in (self._ack_timer, self._nack_timer, self._tick_timer):
            if timer is not None:
                timer.cancel()
        for task in list(self._tasks):
            task.cancel()
        conn = self.conn
        if conn is not None and not conn.closed:
            conn._flush()
            conn.consumers.pop(self.consumer_id, None)
            rid = conn.new_request_id()
            cmd = BaseCommand(type=CommandType.CLOSE_CONSUMER)
            cmd.close_consumer.consumer_id = self.consumer_id
            cmd.close_consumer.request_id = rid
            try:
                await conn.request(cmd, rid, self.client.operation_timeout)
            except PulsarError:
                pass
        if self.dead_letter is not None and self.sink is None:
            await self.dead_letter.close()
        self._stop_receiver(AlreadyClosed(f"consumer {self.name} on {self.topic} was closed"))

    async def unsubscribe(self) -> None:
        """Delete the subscription on the broker and close."""
        conn = self._require_conn()
        rid = conn.new_request_id()
        cmd = BaseCommand(type=CommandType.UNSUBSCRIBE)
        cmd.unsubscribe.consumer_id = self.consumer_id
        cmd.unsubscribe.request_id = rid
        await conn.request(cmd, rid, self.client.operation_timeout)
        conn.consumers.pop(self.consumer_id, None)
        self._closed = True
        for timer in (self._ack_timer, self._nack_timer, self._tick_timer):
            if timer is not None:
                timer.cancel()
        if self.dead_letter is not None and self.sink is None:
            await self.dead_letter.close()
        self._stop_receiver(AlreadyClosed(f"consumer {self.name} unsubscribed from {self.topic}"))

    def is_connected(self) -> bool:
        """Whether the consumer is registered on a live connection."""
        return not self._closed and self.conn is not None and not self.conn.closed and not self._reconnecting

    def _require_conn(self) -> ClientConnection:
        if self._closed:
            raise AlreadyClosed(f"consumer {self.name} on {self.topic} is closed")
        if self.conn is None or self.conn.closed:
            raise AlreadyClosed(f"consumer {self.name} on {self.topic} is not connected")
        return self.conn

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- receiving -----------------------------------------------------------------------
    def on_message(self, command: Any, frame: Any) -> None:
        """A MESSAGE frame: open the entry into messages and queue them."""
        entry = frame.entry
        if entry is None:
            return
        mid = command.message_id
        if frame.checksum is not None and crc32c(entry) != frame.checksum:
            log.warning("consumer %s: checksum mismatch on %d:%d, asking for redelivery", self.name, mid.ledger_id, mid.entry_id)
            self._consumed(1)
            self._redeliver_ids([MessageIdData(ledger_id=mid.ledger_id, entry_id=mid.entry_id)])
            return
        try:
            messages = self._open(command, entry)
        except (ProtocolError, ValueError) as exc:
            log.error("consumer %s: cannot open entry %d:%d of %s: %s", self.name, mid.ledger_id, mid.entry_id, self.topic, exc)
            self._consumed(1)
            self._ack_ids([MessageIdData(ledger_id=mid.ledger_id, entry_id=mid.entry_id)], AckType.Individual)
            return
        if not messages:
            self._consumed(1)
            return
        dlq = self.dead_letter
        if dlq is not None and command.redelivery_count >= dlq.max_redeliver_count:
            keys = messages[0]._id.chunk_entries()
            for key in keys:
                self._possible_dlq[key] = messages
            if command.redelivery_count > dlq.max_redeliver_count:
                # already past its last chance (e.g. a consumer died holding it): straight to the DLQ
                self._consumed(len(messages))
                self._redeliver_entries(keys)
                return
        if self.sink is not None:
            self.sink(self, messages)
        else:
            self._deliver(messages)

    def _open(self, command: Any, entry: bytes) -> list[Message]:
        meta_view, payload_view = split_entry(entry)
        meta = MessageMetadata.FromString(meta_view)
        mid = command.message_id
        ledger_id, entry_id = mid.ledger_id, mid.entry_id
        redelivery = command.redelivery_count
        payload = bytes(payload_view)
        topic = self.topic
        partition = self.partition
        chunk_ids = None
        if meta.num_chunks_from_msg > 1:
            key = (_signed(ledger_id), _signed(entry_id))
            whole = self._chunks.add(meta, payload, key, meta.publish_time)
            self._chunks.expire_incomplete()
            if whole is None:
                return []
            payload, chunk_ids = whole
        if meta.compression != CompressionType.NONE:
            payload = decompress(meta.compression, payload, meta.uncompressed_size, max_size=1 << 31)
        schema = self.config.schema
        start = self._start_id
        inclusive = self.config.start_message_id_inclusive
        if not meta.HasField("num_messages_in_batch"):
            msg_id = MessageId(ledger_id, entry_id, -1, partition, 0, topic)
            if chunk_ids is not None:
                msg_id._chunk_ids = chunk_ids
            if start is not None and _before_start(msg_id, start, inclusive):
                return []
            msg = Message(payload, meta, None, msg_id, topic, redelivery, schema)
            msg._consumer = self
            return [msg]
        count = meta.num_messages_in_batch
        ack_set = command.ack_set
        mask = None
        if ack_set:
            mask = 0
            for i, word in enumerate(ack_set):
                mask |= (word & _U64) << (64 * i)
        out = []
        ledger_id, entry_id = _signed(ledger_id), _signed(entry_id)
        # only messages of the start entry itself (or before it) can precede the start position
        check_start = start is not None and (ledger_id, entry_id) <= (start.ledger_id, start.entry_id)
        # the batch is split here rather than with protocol.decode_batch: this is the consumer's
        # hot loop, so it is kept to the bare minimum (sizes are still checked)
        parse = SingleMessageMetadata.FromString
        unpack = _U32.unpack_from
        new_id = _new_message_id
        new_message = _new_message
        end = len(payload)
        pos = 0
        try:
            for index in range(count):
                (n,) = unpack(payload, pos)
                pos += 4
                # a metadata holding nothing but payload_size (field 3, a one or two byte varint),
                # the usual case, is read here; anything else goes through the protobuf parser
                b0 = payload[pos]
                if n == 2 and b0 == 0x18 and payload[pos + 1] < 0x80:
                    single = _NO_SINGLE_FIELDS
                    size = payload[pos + 1]
                elif n == 3 and b0 == 0x18 and payload[pos + 2] < 0x80:
                    single = _NO_SINGLE_FIELDS
                    size = (payload[pos + 1] & 0x7F) | (payload[pos + 2] << 7)
                else:
                    single = parse(payload[pos : pos + n])
                    size = single.payload_size
                pos += n
                body = payload[pos : pos + size]
                pos += size
                if pos > end or size < 0:
                    raise ProtocolError(f"message {index} of a batch of {count} overruns its {end} bytes")
                if mask is not None and not (mask >> index) & 1:
                    continue
                if single.compacted_out:
                    continue
                msg_id = new_id(MessageId)
                msg_id.ledger_id = ledger_id
                msg_id.entry_id = entry_id
                msg_id.batch_index = index
                msg_id.partition = partition
                msg_id.batch_size = count
                msg_id.topic = topic
                msg_id._chunk_ids = None
                if check_start and _before_start(msg_id, start, inclusive):  # type: ignore[arg-type]
                    continue
                msg = new_message(Message)
                msg._payload = body
                msg._meta = meta
                msg._single = single
                msg._id = msg_id
                msg._topic = topic
                msg._redelivery_count = redelivery
                msg._schema = schema
                msg._value = _UNSET
                msg._props = None
                msg._consumer = self
                out.append(msg)
        except (struct.error, DecodeError, IndexError) as exc:
            raise ProtocolError(f"malformed batch of {count} messages: {exc}") from None
        if pos != end:
            raise ProtocolError(f"{end - pos} bytes left over after the {count} messages of a batch")
        if out and not self.config.batch_index_ack_enabled:
            self._batch_acks.setdefault((ledger_id, entry_id), {m._id.batch_index for m in out})
        skipped = count - len(out)
        if skipped and out:
            self._consumed(skipped)
        return out

    def _want_one(self) -> None:
        if self.config.receiver_queue_size == 0:
            self._send_flow(1)

    def _taken(self, messages: list[Message]) -> None:
        self._last_dequeued = messages[-1]._id

    def dequeued(self, msg: Message) -> None:
        """A message this consumer produced was handed to the application (multi-topic use)."""
        self._dequeued_many((msg,))

    def _dequeued_many(self, messages: Iterable[Message]) -> None:
        n = 0
        last = None
        unacked = self._unacked
        for msg in messages:
            n += 1
            last = msg
            if unacked is not None:
                for key in msg._id.chunk_entries():
                    unacked.add(key, msg._redelivery_count)
        if last is not None:
            self._last_dequeued = last._id
            self._consumed(n)

    def _dequeued_one(self, msg: Message) -> None:
        self._last_dequeued = msg._id
        if self._unacked is not None:
            for key in msg._id.chunk_entries():
                self._unacked.add(key, msg._redelivery_count)
        if self._flow_at:
            self._permits_to_grant += 1
            if self._permits_to_grant >= self._flow_at:
                self._send_flow(self._permits_to_grant)
                self._permits_to_grant = 0

    def _consumed(self, n: int) -> None:
        if not self._flow_at:
            return
        self._permits_to_grant += n
        if self._permits_to_grant >= self._flow_at:
            self._send_flow(self._permits_to_grant)
            self._permits_to_grant = 0

    def _send_flow(self, permits: int) -> None:
        conn = self.conn
        if conn is None or conn.closed or permits <= 0:
            return
        cmd = BaseCommand(type=CommandType.FLOW)
        cmd.flow.consumer_id = self.consumer_id
        cmd.flow.message_permits = permits
        conn.send_command(cmd)

    # -- acknowledgements ----------------------------------------------------------------
    def acknowledge(self, message: Message | MessageId) -> None:
        """Acknowledge one message (sent grouped within ack_group_time_ms)."""
        mid = message._id if message.__class__ is Message else message.message_id() if isinstance(message, Message) else message
        if mid.batch_index >= 0 and not self._batch_index_acks and mid._chunk_ids is None:
            # the common case of a batched message, kept short
            remaining = self._batch_acks.get((mid.ledger_id, mid.entry_id))
            if remaining is not None:
                remaining.discard(mid.batch_index)
                if remaining:
                    return
        if mid._chunk_ids:
            for key in mid._chunk_ids:
                self._ack_entry(key)
            self._schedule_ack_flush()
            return
        key = (mid.ledger_id, mid.entry_id)
        if mid.batch_index >= 0:
            if self.config.batch_index_ack_enabled:
                data = self._pending_individual.get(key)
                if data is None:
                    data = MessageIdData(ledger_id=mid.ledger_id & _U64, entry_id=mid.entry_id & _U64)
                    size = mid.batch_size or 64
                    data.ack_set.extend(_mask_to_words((1 << size) - 1))
                    data.batch_size = size
                    self._pending_individual[key] = data
                elif not data.ack_set:
                    return  # the whole entry is already acknowledged
                mask = _words_to_mask(data.ack_set) & ~(1 << mid.batch_index)
                del data.ack_set[:]
                if mask == 0:
                    data.ClearField("batch_size")
                    self._untrack(key)
                else:
                    data.ack_set.extend(_mask_to_words(mask))
                self._schedule_ack_flush()
                return
            remaining = self._batch_acks.get(key)
            if remaining is not None:
                remaining.discard(mid.batch_index)
                if remaining:
                    return
                del self._batch_acks[key]
        self._ack_entry(key)
        self._schedule_ack_flush()

    def acknowledge_many(self, messages: Iterable[Message | MessageId]) -> None:
        """Acknowledge several messages."""
        ack = self.acknowledge
        for message in messages:
            ack(message)

    def _ack_entry(self, key: EntryKey) -> None:
        self._untrack(key)
        self._pending_individual[key] = MessageIdData(ledger_id=key[0] & _U64, entry_id=key[1] & _U64)

    def _untrack(self, key: EntryKey) -> None:
        self._nacks.remove(key)
        if self._unacked is not None:
            self._unacked.remove(key)
        if self._possible_dlq:
            self._possible_dlq.pop(key, None)

    def acknowledge_cumulative(self, message: Message | MessageId) -> None:
        """Acknowledge every message up to and including this one (Exclusive / Failover)."""
        if self.config.consumer_type in (SubType.Shared, SubType.Key_Shared):
            raise CumulativeAcknowledgementNotAllowedError(
                f"cumulative acknowledgement is not allowed on {self.config.consumer_type.name} subscriptions"
            )
        mid = message.message_id() if isinstance(message, Message) else message
        entry_id = mid.entry_id
        if mid.batch_index >= 0 and mid.batch_size and mid.batch_index < mid.batch_size - 1:
            remaining = self._batch_acks.get((mid.ledger_id, mid.entry_id))
            if remaining is not None:
                remaining.difference_update(range(mid.batch_index + 1))
            entry_id -= 1
            if entry_id < 0:
                return
        else:
            self._batch_acks.pop((mid.ledger_id, mid.entry_id), None)
        data = MessageIdData(ledger_id=mid.ledger_id & _U64, entry_id=entry_id & _U64)
        current = self._pending_cumulative
        if current is None or (current.ledger_id, current.entry_id) < (data.ledger_id, data.entry_id):
            self._pending_cumulative = data
        upto = (mid.ledger_id, entry_id)
        for key in [k for k in self._batch_acks if k <= upto]:
            del self._batch_acks[key]
        self._nacks.remove_through(upto)
        if self._unacked is not None:
            self._unacked.remove_through(upto)
        self._schedule_ack_flush()

    def _schedule_ack_flush(self) -> None:
        if self._ack_timer is None:
            delay = self.config.ack_group_time_ms / 1000.0
            if delay <= 0:
                self._flush_acks()
            else:
                self._ack_timer = asyncio.get_running_loop().call_later(delay, self._flush_acks)

    def _flush_acks(self) -> None:
        self._ack_timer = None
        conn = self.conn
        if conn is None or conn.closed:
            return  # kept until the consumer is connected again
        if self._pending_cumulative is not None:
            self._ack_ids([self._pending_cumulative], AckType.Cumulative)
            self._pending_cumulative = None
        if self._pending_individual:
            ids = list(self._pending_individual.values())
            self._pending_individual.clear()
            for i in range(0, len(ids), 1000):
                self._ack_ids(ids[i : i + 1000], AckType.Individual)

    def _ack_ids(self, ids: list[MessageIdData], ack_type: AckType) -> None:
        conn = self.conn
        if conn is None or conn.closed:
            return
        cmd = BaseCommand(type=CommandType.ACK)
        cmd.ack.consumer_id = self.consumer_id
        cmd.ack.ack_type = ack_type
        cmd.ack.message_id.extend(ids)
        conn.send_command(cmd)

    # -- negative acks, ack timeout, dead letters ----------------------------------------
    def negative_acknowledge(self, message: Message | MessageId) -> None:
        """Have this message redelivered after the negative ack delay (or backoff)."""
        if isinstance(message, Message):
            mid, count = message.message_id(), message.redelivery_count()
        else:
            mid, count = message, 0
        deadline = None
        for key in mid.chunk_entries():
            if self._unacked is not None:
                self._unacked.remove(key)
            # (the entry's pending batch acks stay: this message is not acknowledged, so acking
            # the others of its batch does not acknowledge the entry before it comes back)
            deadline = self._nacks.add(key, count)
        if deadline is not None:
            self._arm_nack_timer()

    def _arm_nack_timer(self) -> None:
        deadline = self._nacks.next_deadline()
        if deadline is None or self._closed:
            return
        delay = max(0.0, deadline - self._nacks.clock())
        loop = asyncio.get_running_loop()
        if self._nack_timer is not None:
            if self._nack_timer.when() <= loop.time() + delay:
                return
            self._nack_timer.cancel()
        self._nack_timer = loop.call_later(delay, self._nack_due)

    def _nack_due(self) -> None:
        self._nack_timer = None
        due = self._nacks.pop_due()
        if due:
            self._redeliver_entries(due)
        self._arm_nack_timer()

    def _arm_tick(self) -> None:
        if self._closed:
            return
        tick = self._unacked.tick if self._unacked is not None else 1.0
        self._tick_timer = asyncio.get_running_loop().call_later(tick, self._on_tick)

    def _on_tick(self) -> None:
        """Ack timeout check (and expiry of incomplete chunked messages)."""
        self._tick_timer = None
        if self._unacked is not None:
            due = self._unacked.pop_due()
            if due:
                log.info("consumer %s on %s: %d messages not acknowledged in time, redelivering", self.name, self.topic, len(due))
                self._redeliver_entries(due)
        self._chunks.expire_incomplete()
        self._arm_tick()

    def _redeliver_entries(self, keys: list[EntryKey]) -> None:
        """Ask for entries again; those past the dead letter limit go to the dead letter topic."""
        if self._possible_dlq and self.dead_letter is not None:
            to_dlq = [k for k in keys if k in self._possible_dlq]
            if to_dlq:
                keys = [k for k in keys if k not in self._possible_dlq]
                self._spawn(self._dead_letter(to_dlq))
        if not keys:
            return
        wanted = set(keys)
        if self._queue:
            kept = deque(m for m in self._queue if m._id.ledger_entry() not in wanted)
            dropped = len(self._queue) - len(kept)
            if dropped:
                self._queue = kept
                self._consumed(dropped)
        self._redeliver_ids([MessageIdData(ledger_id=lid & _U64, entry_id=eid & _U64) for lid, eid in keys])

    async def _dead_letter(self, keys: list[EntryKey]) -> None:
        handler = self.dead_letter
        assert handler is not None
        done: set[int] = set()
        for key in keys:
            messages = self._possible_dlq.get(key)
            if not messages or id(messages) in done:
                continue
            done.add(id(messages))
            entries = messages[0]._id.chunk_entries()
            try:
                for msg in messages:
                    await handler.send_to_dlq(msg)
            except PulsarError as exc:
                log.warning("consumer %s: could not publish %s to the dead letter topic %s (%s): redelivering",
                            self.name, key, handler.dead_letter_topic, exc)
                self._redeliver_ids([MessageIdData(ledger_id=k[0] & _U64, entry_id=k[1] & _U64) for k in entries])
                continue
            for k in entries:
                self._possible_dlq.pop(k, None)
            for msg in messages:
                self.acknowledge(msg)

    async def reconsume_later(self, message: Message, delay: float = 0, properties: dict[str, str] | None = None) -> None:
        """Send ``message`` to the retry letter topic, to be received again after ``delay`` seconds
        (or to the dead letter topic once it was retried max_redeliver_count times), and
        acknowledge it here."""
        handler = self.dead_letter
        if not self.config.retry_enable or handler is None:
            raise OperationNotSupported("reconsume_later needs a consumer subscribed with retry_enable=True")
        seconds = delay.total_seconds() if hasattr(delay, "total_seconds") else float(delay)
        props = dict(message.properties())
        if properties:
            props.update(properties)
        times = int(props.get(RECONSUMETIMES, "0") or 0) + 1
        props[RECONSUMETIMES] = str(times)
        props[DELAY_TIME] = str(int(seconds * 1000))
        props.setdefault(REAL_TOPIC, message.topic_name())
        props.setdefault(ORIGIN_MESSAGE_ID, message.message_id().java_str())
        if times > handler.max_redeliver_count:
            await handler.send_to_dlq(message, props)
        else:
            await handler.send(await handler.retry_producer(), message, props, deliver_after=seconds)
        self.acknowledge(message)

    def _discard_chunks(self, keys: list[EntryKey], ack: bool) -> None:
        if ack:
            for key in keys:
                self._ack_entry(key)
            self._schedule_ack_flush()
        elif self._unacked is not None:
            for key in keys:
                self._unacked.add(key)

    def _redeliver_ids(self, ids: list) -> None:
        conn = self.conn
        if conn is None or conn.closed:
            return
        cmd = BaseCommand(type=CommandType.REDELIVER_UNACKNOWLEDGED_MESSAGES)
        cmd.redeliver_unacknowledged_messages.consumer_id = self.consumer_id
        cmd.redeliver_unacknowledged_messages.message_ids.extend(ids)
        conn.send_command(cmd)

    def redeliver_unacknowledged_messages(self) -> None:
        """Ask the broker to send again every message delivered and not yet acknowledged."""
        conn = self.conn
        if conn is None or conn.closed:
            return
        dropped = len(self._queue)
        self._queue.clear()
        self._batch_acks.clear()
        self._nacks.clear()
        if self._unacked is not None:
            self._unacked.clear()
        self._chunks.clear()
        cmd = BaseCommand(type=CommandType.REDELIVER_UNACKNOWLEDGED_MESSAGES)
        cmd.redeliver_unacknowledged_messages.consumer_id = self.consumer_id
        conn.send_command(cmd)
        if dropped:
            self._consumed(dropped)

    # -- positions -----------------------------------------------------------------------
    async def seek(self, target: MessageId | int) -> None:
        """Move the subscription to a message id or a publish time (ms since the epoch)."""
        conn = self._require_conn()
        rid = conn.new_request_id()
        cmd = BaseCommand(type=CommandType.SEEK)
        cmd.seek.consumer_id = self.consumer_id
        cmd.seek.request_id = rid
        if isinstance(target, MessageId):
            first = target.first_chunk_message_id()
            cmd.seek.message_id.ledger_id = first.ledger_id & _U64
            cmd.seek.message_id.entry_id = first.entry_id & _U64
            self._start_id = target
        else:
            cmd.seek.message_publish_time = int(target)
            self._start_id = None
        self._last_dequeued = None
        self._pending_individual.clear()
        self._pending_cumulative = None
        self._batch_acks.clear()
        self._nacks.clear()
        if self._unacked is not None:
            self._unacked.clear()
        self._chunks.clear()
        self._possible_dlq.clear()
        self._connected_event.clear()
        await conn.request(cmd, rid, self.client.operation_timeout)
        self._queue.clear()
        try:
            await asyncio.wait_for(self._connected_event.wait(), self.client.operation_timeout)
        except TimeoutError:
            raise Timeout(f"consumer {self.name} on {self.topic} did not resubscribe after a seek") from None

    async def get_last_message_id(self) -> tuple[MessageId, MessageId | None]:
        """(last message id on the topic, this subscription's mark-delete position)."""
        conn = self._require_conn()
        rid = conn.new_request_id()
        cmd = BaseCommand(type=CommandType.GET_LAST_MESSAGE_ID)
        cmd.get_last_message_id.consumer_id = self.consumer_id
        cmd.get_last_message_id.request_id = rid
        resp = (await conn.request(cmd, rid, self.client.operation_timeout)).get_last_message_id_response
        last = MessageId.from_proto(resp.last_message_id, self.topic)
        md = MessageId.from_proto(resp.consumer_mark_delete_position) if resp.HasField("consumer_mark_delete_position") else None
        return last, md

    async def has_message_available(self) -> bool:
        """Whether a message is queued or the topic holds one after the last one received."""
        if self._queue:
            return True
        last, _ = await self.get_last_message_id()
        if last.entry_id < 0:
            return False
        seen = self._last_dequeued
        if seen is None:
            start = self._start_id
            if start is None or start == MessageId.earliest:
                return True
            if start == MessageId.latest:
                return False
            if self.config.start_message_id_inclusive:
                return (last.ledger_id, last.entry_id, max(last.batch_index, -1)) >= (start.ledger_id, start.entry_id, start.batch_index)
            return (last.ledger_id, last.entry_id, last.batch_index) > (start.ledger_id, start.entry_id, start.batch_index)
        return (last.ledger_id, last.entry_id, last.batch_index) > (seen.ledger_id, seen.entry_id, seen.batch_index)

    # -- broker events -------------------------------------------------------------------
    def on_active_change(self, active: bool) -> None:
        """ACTIVE_CONSUMER_CHANGE (Failover)."""
        self.active = active

    def on_reached_end_of_topic(self) -> None:
        """REACHED_END_OF_TOPIC: nothing more will come."""

    def on_closed_by_broker(self) -> None:
        """CLOSE_CONSUMER (e.g. after a seek): resubscribe."""
        self._schedule_reconnect()

    def on_connection_lost(self, conn: ClientConnection) -> None:
        """The connection went away: resubscribe on a new one."""
        if conn is self.conn:
            self._schedule_reconnect()

    def _schedule_reconnect(self) -> None:
        if self._closed or self._reconnecting:
            return
        self._reconnecting = True
        self._connected_event.clear()
        self._spawn(self._reconnect())

    async def _reconnect(self) -> None:
        backoff = Backoff(0.1, 30.0)
        try:
            while not self._closed:
                try:
                    if self.durable:
                        # the broker redelivers everything unacknowledged to the new subscription
                        self._queue.clear()
                        self._batch_acks.clear()
                        self._nacks.clear()
                        if self._unacked is not None:
                            self._unacked.clear()
                        self._possible_dlq.clear()
                    self._chunks.clear()
                    await self._connect()
                    return
                except PulsarError as exc:
                    delay = backoff.next()
                    log.info("consumer %s: resubscribing to %s failed (%s), retrying in %.1f s", self.name, self.topic, exc, delay)
                await asyncio.sleep(delay)
        finally:
            self._reconnecting = False


def _before_start(msg_id: MessageId, start: MessageId, inclusive: bool) -> bool:
    """Whether a message precedes a reader's start id (and must be skipped)."""
    if start.ledger_id < 0 or start == MessageId.latest:
        return False
    a = (msg_id.ledger_id, msg_id.entry_id)
    if start._chunk_ids and msg_id._chunk_ids:
        a = msg_id._chunk_ids[0]
        b = start._chunk_ids[0]
    else:
        b = (start.ledger_id, start.entry_id)
    if a != b:
        return a < b
    if start.batch_index < 0 or msg_id.batch_index < 0:
        return not inclusive
    return msg_id.batch_index < start.batch_index if inclusive else msg_id.batch_index <= start.batch_index


def _mask_to_words(mask: int) -> list[int]:
    words = []
    while mask:
        w = mask & _U64
        words.append(w - (1 << 64) if w >= 1 << 63 else w)
        mask >>= 64
    return words


def _words_to_mask(words: Any) -> int:
    mask = 0
    for i, w in enumerate(words):
        mask |= (w & _U64) << (64 * i)
    return mask
