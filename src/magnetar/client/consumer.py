"""Consumers and readers on one topic (or one partition): receiver queue, flow, acks, redelivery.

Entries arrive as MESSAGE frames; a batch is opened once (decompressed, split) into Message
objects that wait in the receiver queue. Permits are re-granted with FLOW once half the queue
was consumed. Acknowledgements are grouped and sent every ``ack_group_time`` (100 ms), several
ids per ACK frame; batch messages are acknowledged by entry once all of them are, or by batch
index when ``batch_index_ack_enabled``. Negative acknowledgements are redelivered after their
delay through REDELIVER_UNACKNOWLEDGED_MESSAGES with ids.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from magnetar.protocol.batch import decode_batch
from magnetar.protocol.compression import decompress
from magnetar.protocol.enums import AckType, CommandType, CompressionType, InitialPosition, SubType
from magnetar.protocol.framing import ProtocolError, crc32c, split_entry
from magnetar.protocol.schema import BaseCommand, KeyValue, MessageIdData, MessageMetadata

from .errors import (
    AlreadyClosed,
    CumulativeAcknowledgementNotAllowedError,
    PulsarError,
    Timeout,
)
from .message import Message, MessageId

if TYPE_CHECKING:
    from .client import AsyncClient
    from .connection import ClientConnection

log = logging.getLogger("magnetar.client.consumer")

_consumer_ids = itertools.count()
_U64 = (1 << 64) - 1
MessageListener = Callable[[Any, Message], None]


@dataclass
class ConsumerConfig:
    """Consumer options, named and defaulted as in the official Python client."""

    consumer_type: SubType = SubType.Exclusive
    receiver_queue_size: int = 1000
    consumer_name: str | None = None
    unacked_messages_timeout_ms: int | None = None
    negative_ack_redelivery_delay_ms: int = 60000
    is_read_compacted: bool = False
    properties: dict[str, str] = field(default_factory=dict)
    initial_position: InitialPosition = InitialPosition.Latest
    start_message_id_inclusive: bool = False
    batch_index_ack_enabled: bool = False
    priority_level: int = 0
    message_listener: MessageListener | None = None
    schema: Any = None
    key_shared_policy: Any = None
    ack_group_time_ms: int = 100
    replicate_subscription_state_enabled: bool = False


class Consumer:
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
        self._queue: deque[Message] = deque()
        self._waiters: deque[asyncio.Future] = deque()
        self._permits_to_grant = 0
        self._closed = False
        self._reconnecting = False
        self._start_id = start_message_id
        self._last_dequeued: MessageId | None = None
        self._pending_individual: dict[tuple[int, int], MessageIdData] = {}
        self._pending_cumulative: MessageIdData | None = None
        self._batch_acks: dict[tuple[int, int], set[int]] = {}
        self._ack_timer: asyncio.TimerHandle | None = None
        self._nacks: dict[tuple[int, int], float] = {}
        self._nack_timer: asyncio.TimerHandle | None = None
        self._connected_event = asyncio.Event()
        self.active: bool | None = None
        self._listener_task: asyncio.Task | None = None
        self._listener_wakeup = asyncio.Event()
        #: set by a multi-topic consumer: messages go there instead of this queue
        self.sink: Callable[[Consumer, list[Message]], None] | None = None

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        """Subscribe and grant the first permits."""
        await self._connect()
        if self.config.message_listener is not None:
            self._listener_task = asyncio.create_task(self._run_listener())

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
        for k, v in self.config.properties.items():
            s.metadata.append(KeyValue(key=k, value=v))
        start = self._resubscribe_start()
        if start is not None and not self.durable:
            s.start_message_id.CopyFrom(start.to_proto())
        policy = self.config.key_shared_policy
        if policy is not None and self.config.consumer_type == SubType.Key_Shared:
            policy.fill(s.key_shared_meta)
        schema = self.config.schema
        if schema is not None and getattr(schema, "schema_info", None) is not None:
            s.schema.CopyFrom(schema.schema_info())
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
        self._send_flow(queue_size if queue_size > 0 else 1)
        self._connected_event.set()

    def _resubscribe_start(self) -> MessageId | None:
        """Where a (re)subscribing reader starts: after what the application has seen."""
        if self._queue:
            first = self._queue[0].message_id()
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
        if self._listener_task is not None:
            self._listener_task.cancel()
        for timer in (self._ack_timer, self._nack_timer):
            if timer is not None:
                timer.cancel()
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
        self._fail_waiters(AlreadyClosed(f"consumer {self.name} on {self.topic} was closed"))

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
        self._fail_waiters(AlreadyClosed(f"consumer {self.name} unsubscribed"))

    def is_connected(self) -> bool:
        """Whether the consumer is registered on a live connection."""
        return not self._closed and self.conn is not None and not self.conn.closed and not self._reconnecting

    def _require_conn(self) -> ClientConnection:
        if self._closed:
            raise AlreadyClosed(f"consumer {self.name} on {self.topic} is closed")
        if self.conn is None or self.conn.closed:
            raise AlreadyClosed(f"consumer {self.name} on {self.topic} is not connected")
        return self.conn

    # -- receiving -----------------------------------------------------------------------
    def on_message(self, command: Any, frame: Any) -> None:
        """A MESSAGE frame: open the entry into messages and queue them."""
        entry = frame.entry
        if entry is None:
            return
        mid = command.message_id
        if frame.checksum is not None and crc32c(entry) != frame.checksum:
            log.warning("consumer %s: checksum mismatch on %d:%d, asking for redelivery", self.name, mid.ledger_id, mid.entry_id)
            self._redeliver_ids([mid])
            return
        try:
            messages = self._open(command, entry)
        except (ProtocolError, ValueError) as exc:
            log.error("consumer %s: cannot open entry %d:%d: %s", self.name, mid.ledger_id, mid.entry_id, exc)
            self._ack_ids([MessageIdData(ledger_id=mid.ledger_id, entry_id=mid.entry_id)], AckType.Individual)
            return
        if not messages:
            self._consumed(1)
            return
        if self.sink is not None:
            self.sink(self, messages)
            return
        waiters = self._waiters
        queue = self._queue
        for msg in messages:
            while waiters:
                fut = waiters.popleft()
                if not fut.done():
                    self._dequeued(msg)
                    fut.set_result(msg)
                    break
            else:
                queue.append(msg)
        if self.config.message_listener is not None:
            self._listener_wakeup.set()

    def _open(self, command: Any, entry: bytes) -> list[Message]:
        meta_view, payload_view = split_entry(entry)
        meta = MessageMetadata.FromString(meta_view)
        mid = command.message_id
        ledger_id, entry_id = mid.ledger_id, mid.entry_id
        redelivery = command.redelivery_count
        payload = bytes(payload_view)
        if meta.compression != CompressionType.NONE:
            payload = decompress(meta.compression, payload, meta.uncompressed_size, max_size=64 * 1024 * 1024)
        topic = self.topic
        partition = self.partition
        schema = self.config.schema
        start = self._start_id
        inclusive = self.config.start_message_id_inclusive
        if not meta.HasField("num_messages_in_batch"):
            msg_id = MessageId(ledger_id, entry_id, -1, partition, 0, topic)
            if start is not None and not self.durable and _before_start(msg_id, start, inclusive):
                return []
            return [Message(payload, meta, None, msg_id, topic, redelivery, schema)]
        count = meta.num_messages_in_batch
        ack_set = command.ack_set
        mask = None
        if ack_set:
            mask = 0
            for i, word in enumerate(ack_set):
                mask |= (word & _U64) << (64 * i)
        out = []
        for index, (single, body) in enumerate(decode_batch(payload, count)):
            if mask is not None and not (mask >> index) & 1:
                continue
            if single.compacted_out:
                continue
            msg_id = MessageId(ledger_id, entry_id, index, partition, count, topic)
            if start is not None and not self.durable and _before_start(msg_id, start, inclusive):
                continue
            out.append(Message(body, meta, single, msg_id, topic, redelivery, schema))
        if out and not self.config.batch_index_ack_enabled:
            self._batch_acks.setdefault((ledger_id, entry_id), {m.message_id().batch_index for m in out})
        skipped = count - len(out)
        if skipped and out:
            self._consumed_count_only(skipped)
        return out

    async def receive(self, timeout_millis: int | None = None) -> Message:
        """The next message; raises Timeout after ``timeout_millis`` (waits forever when None)."""
        if self._closed:
            raise AlreadyClosed(f"consumer {self.name} on {self.topic} is closed")
        if self._queue:
            msg = self._queue.popleft()
            self._dequeued(msg)
            return msg
        fut: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        if self.config.receiver_queue_size == 0:
            self._send_flow(1)
        try:
            if timeout_millis is None:
                return await fut
            return await asyncio.wait_for(fut, timeout_millis / 1000.0)
        except TimeoutError:
            raise Timeout(f"no message within {timeout_millis} ms on {self.topic}") from None
        finally:
            if not fut.done():
                fut.cancel()

    def receive_nowait(self, max_messages: int) -> list[Message]:
        """Up to ``max_messages`` queued messages, without waiting."""
        out = []
        queue = self._queue
        while queue and len(out) < max_messages:
            msg = queue.popleft()
            out.append(msg)
        if out:
            self._last_dequeued = out[-1].message_id()
            self._consumed(len(out))
        return out

    def queued(self) -> int:
        """Messages waiting in the receiver queue."""
        return len(self._queue)

    def dequeued(self, msg: Message) -> None:
        """A message this consumer produced was handed to the application (multi-topic use)."""
        self._dequeued(msg)

    def _dequeued(self, msg: Message) -> None:
        self._last_dequeued = msg.message_id()
        self._consumed(1)

    def _consumed(self, n: int) -> None:
        size = self.config.receiver_queue_size
        if size <= 0:
            return
        self._permits_to_grant += n
        if self._permits_to_grant >= max(1, size // 2):
            self._send_flow(self._permits_to_grant)
            self._permits_to_grant = 0

    def _consumed_count_only(self, n: int) -> None:
        self._consumed(n)

    def _send_flow(self, permits: int) -> None:
        conn = self.conn
        if conn is None or conn.closed or permits <= 0:
            return
        cmd = BaseCommand(type=CommandType.FLOW)
        cmd.flow.consumer_id = self.consumer_id
        cmd.flow.message_permits = permits
        conn.send_command(cmd)

    async def _run_listener(self) -> None:
        listener = self.config.message_listener
        assert listener is not None
        while not self._closed:
            if not self._queue:
                self._listener_wakeup.clear()
                await self._listener_wakeup.wait()
                continue
            msg = self._queue.popleft()
            self._dequeued(msg)
            try:
                result = listener(self, msg)
                if asyncio.iscoroutine(result):
                    await result
            except Exception:
                log.exception("message listener failed on %s", msg.message_id())

    # -- acknowledgements ----------------------------------------------------------------
    def acknowledge(self, message: Message | MessageId) -> None:
        """Acknowledge one message (sent grouped within ack_group_time)."""
        mid = message.message_id() if isinstance(message, Message) else message
        key = (mid.ledger_id, mid.entry_id)
        self._nacks.pop(key, None)
        if mid.batch_index >= 0:
            if self.config.batch_index_ack_enabled:
                data = self._pending_individual.get(key)
                if data is None:
                    data = MessageIdData(ledger_id=mid.ledger_id & _U64, entry_id=mid.entry_id & _U64)
                    size = mid.batch_size or 64
                    full = (1 << size) - 1
                    data.ack_set.extend(_mask_to_words(full))
                    data.batch_size = size
                    self._pending_individual[key] = data
                mask = _words_to_mask(data.ack_set) & ~(1 << mid.batch_index)
                del data.ack_set[:]
                if mask == 0:
                    data.ClearField("batch_size")
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
        self._pending_individual[key] = MessageIdData(ledger_id=mid.ledger_id & _U64, entry_id=mid.entry_id & _U64)
        self._schedule_ack_flush()

    def acknowledge_cumulative(self, message: Message | MessageId) -> None:
        """Acknowledge every message up to and including this one (Exclusive / Failover)."""
        if self.config.consumer_type in (SubType.Shared, SubType.Key_Shared):
            raise CumulativeAcknowledgementNotAllowedError(
                "cumulative acknowledgement is not allowed on Shared and Key_Shared subscriptions"
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
        for key in [k for k in self._batch_acks if k <= (mid.ledger_id, entry_id)]:
            del self._batch_acks[key]
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

    def negative_acknowledge(self, message: Message | MessageId) -> None:
        """Ask for this message again after negative_ack_redelivery_delay_ms."""
        mid = message.message_id() if isinstance(message, Message) else message
        delay = self.config.negative_ack_redelivery_delay_ms / 1000.0
        self._nacks[(mid.ledger_id, mid.entry_id)] = time.monotonic() + delay
        self._batch_acks.pop((mid.ledger_id, mid.entry_id), None)
        if self._nack_timer is None:
            self._nack_timer = asyncio.get_running_loop().call_later(max(delay, 0.01), self._nack_due)

    def _nack_due(self) -> None:
        self._nack_timer = None
        now = time.monotonic()
        due = [k for k, t in self._nacks.items() if t <= now]
        for k in due:
            del self._nacks[k]
        if due:
            self._redeliver_ids([MessageIdData(ledger_id=lid & _U64, entry_id=eid & _U64) for lid, eid in due])
        if self._nacks:
            nxt = min(self._nacks.values())
            self._nack_timer = asyncio.get_running_loop().call_later(max(0.01, nxt - now), self._nack_due)

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
            cmd.seek.message_id.ledger_id = target.ledger_id & _U64
            cmd.seek.message_id.entry_id = target.entry_id & _U64
            self._start_id = target
        else:
            cmd.seek.message_publish_time = int(target)
            self._start_id = None
        self._last_dequeued = None
        self._pending_individual.clear()
        self._pending_cumulative = None
        self._batch_acks.clear()
        self._connected_event.clear()
        await conn.request(cmd, rid, self.client.operation_timeout)
        self._queue.clear()
        try:
            await asyncio.wait_for(self._connected_event.wait(), self.client.operation_timeout)
        except TimeoutError:
            raise Timeout(f"consumer {self.name} did not resubscribe after seek") from None

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
        asyncio.get_running_loop().create_task(self._reconnect())

    async def _reconnect(self) -> None:
        delay = 0.1
        try:
            while not self._closed:
                try:
                    if self.durable:
                        self._queue.clear()
                        self._batch_acks.clear()
                    await self._connect()
                    return
                except PulsarError as exc:
                    log.info("consumer %s: resubscribe to %s failed (%s), retrying in %.1f s", self.name, self.topic, exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)
        finally:
            self._reconnecting = False

    def _fail_waiters(self, exc: PulsarError) -> None:
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_exception(exc)


def _before_start(msg_id: MessageId, start: MessageId, inclusive: bool) -> bool:
    """Whether a message precedes a reader's start id (and must be skipped)."""
    if start.ledger_id < 0 or start == MessageId.latest:
        return False
    a = (msg_id.ledger_id, msg_id.entry_id)
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
