"""Consumers and readers on one topic (or one partition): subscription, flow, acks, redelivery.

Entries arrive as MESSAGE frames and are opened into Message objects (:mod:`.opening`; batches split by
:mod:`.batch_messages`, chunks joined by :mod:`.chunks`) that wait in the receiver queue
(:mod:`.receiver`). FLOW re-grants permits once half the queue was consumed (one per receive
with a zero-size queue). Acknowledgements are grouped (:mod:`.acks`); negative acks and ack
timeouts redeliver entries after their delay; messages redelivered too often go to the dead
letter topic (:mod:`.dead_letter`). Reconnection is the :class:`~.handler.ConnectionHandler`'s.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from itertools import groupby
from operator import attrgetter
from typing import Any

from magnetar.client.api.config import ConsumerConfig
from magnetar.client.api.message import (
    Message,
    MessageId,
    PlainMessage,
    UniformEntry,
    UniformMessage,
    id_part,
)
from magnetar.client.api.policies import ConsumerKeySharedPolicy
from magnetar.client.core.acks import AckGroupingTracker, EntryKey
from magnetar.client.core.batch_messages import has_message_after
from magnetar.client.core.chunks import ChunkAssembler
from magnetar.client.core.dead_letter import DeadLetterHandler
from magnetar.client.core.handler import ClientContext, HandlerState
from magnetar.client.core.opening import EntryOpening
from magnetar.client.core.receiver import DONE, Completed, ReceiverBase
from magnetar.client.core.redelivery import RedeliveryTimers
from magnetar.client.core.registration import close_on_broker, consumers_of, register
from magnetar.client.exceptions import (
    AlreadyClosed,
    CumulativeAcknowledgementNotAllowedError,
    OperationNotSupported,
    Timeout,
)
from magnetar.protocol import commands
from magnetar.protocol.enums import CommandType, SubType
from magnetar.protocol.schema import BaseCommand, KeyValue, MessageIdData

log = logging.getLogger("magnetar.client.core.consumer")

_consumer_ids = itertools.count()
_CTX = attrgetter("_ctx")
_INDEX = attrgetter("_index")
_U64 = (1 << 64) - 1


def _ids(keys: Iterable[EntryKey]) -> list[MessageIdData]:
    return [MessageIdData(ledger_id=lid & _U64, entry_id=eid & _U64) for lid, eid in keys]


class AsyncConsumer(HandlerState, ReceiverBase, EntryOpening):
    """A consumer (or reader, when not durable) on one topic: the asyncio core."""

    kind = "consumer"

    def __init__(
        self,
        client: ClientContext,
        topic: str,
        subscription: str,
        config: ConsumerConfig,
        *,
        partition: int = -1,
        durable: bool = True,
        start_message_id: MessageId | None = None,
        dead_letter: DeadLetterHandler | None = None,
    ) -> None:
        super().__init__(client, topic)
        self.subscription = subscription
        self.config = config
        self.partition = partition
        self.durable = durable
        self.consumer_id = next(_consumer_ids)
        self.name = config.consumer_name or f"magnetar-{self.consumer_id}"
        self._init_receiver()
        self._permits_to_grant = 0
        #: permits are granted again once this many messages were consumed (0: zero-size queue)
        self._flow_at = max(1, config.receiver_queue_size // 2) if config.receiver_queue_size > 0 else 0
        self._batch_index_acks = config.batch_index_ack_enabled
        self._start_id = start_message_id
        #: the last message handed out (its id made only when asked for: :meth:`_last_dequeued_id`)
        self._last_dequeued: Message | MessageId | None = None
        self._timers = RedeliveryTimers(
            config, f"consumer {self.name} on {topic}", self._redeliver_entries, self._chunks_expire
        )
        self._unacked = self._timers.unacked
        self._acks = AckGroupingTracker(
            config.ack_group_time_ms, config.batch_index_ack_enabled, self._send_command, self._can_send, self._untrack,
            self._timers.forget_through, consumer_id=self.consumer_id, send_frame=self._write_frame,
        )
        self._partition_part = id_part(partition)
        #: the last ledger id a message came from, and it as a signed IdPart (made once per ledger)
        self._ledger_seen: tuple[int, Any] = (-1, None)
        #: the batch indexes not acknowledged yet of each batch entry (the tracker's, read here on hot paths)
        self._batch_acks = self._acks.batch_remaining
        self._chunks = ChunkAssembler(
            self._discard_chunks,
            config.max_pending_chunked_message,
            config.auto_ack_oldest_chunked_message_on_queue_full,
            config.expire_time_of_incomplete_chunked_message_ms,
            config.clock,
        )
        self.dead_letter = dead_letter
        if dead_letter is None and config.dead_letter_policy is not None:
            self.dead_letter = DeadLetterHandler(client, config.dead_letter_policy, topic, subscription, self.name)
        self._possible_dlq: dict[EntryKey, list[Message]] = {}
        self._connected_event = asyncio.Event()
        self.active: bool | None = None
        #: the broker said the topic is terminated and everything in it was acknowledged
        self.reached_end_of_topic = False
        #: set by a multi-topic consumer: messages go there instead of this queue
        self.sink: Callable[[AsyncConsumer, list[Message]], None] | None = None
        #: told when what this consumer delivered before is void (a seek, a durable one registering again)
        self.sink_reset: Callable[[AsyncConsumer], None] | None = None

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
            self._timers.arm_tick()

    def _subscribe_command(self, request_id: int) -> BaseCommand:
        cmd = BaseCommand(type=CommandType.SUBSCRIBE)
        s = cmd.subscribe
        s.topic = self.topic
        s.subscription = self.subscription
        s.sub_type = self.config.consumer_type
        s.consumer_id = self.consumer_id
        s.request_id = request_id
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
        if self.config.consumer_type == SubType.Key_Shared:
            (self.config.key_shared_policy or ConsumerKeySharedPolicy()).fill(s.key_shared_meta)
        schema = self.config.schema
        info = schema.wire_schema() if schema is not None and hasattr(schema, "wire_schema") else None
        if info is not None:
            s.schema.CopyFrom(info)
        return cmd

    async def _connect(self) -> None:
        await register(self, self.consumer_id, consumers_of, self._subscribe_command, self.client.operation_timeout)
        self._queue.clear()
        self._permits_to_grant = 0
        # acknowledgements kept across a reconnection go before the first FLOW: the broker must
        # not send again what the application acknowledged while the consumer was away
        self._acks.flush()
        queue_size = self.config.receiver_queue_size
        if queue_size > 0:
            self._send_flow(queue_size)
        elif self._waiters or (self._listener is not None and not self._paused):
            self._send_flow(1)
        self._connected_event.set()

    def _resubscribe_start(self) -> MessageId | None:
        """Where a (re)subscribing reader starts: after what the application has seen.

        (``_start_id`` of a durable consumer is only set by a seek to a message id: messages
        before it are dropped, as the official clients do.)"""
        if self._queue:
            first = self._queue[0].message_id().first_chunk_message_id()
            return MessageId(first.ledger_id, first.entry_id - 1 if first.batch_index < 0 else first.entry_id,
                             first.batch_index - 1 if first.batch_index >= 0 else -1)
        if self._last_dequeued is not None:
            return self._last_dequeued_id()
        return self._start_id

    def _reconnect_scheduled(self) -> None:
        self._connected_event.clear()
        self._acks.connection_lost()

    def _before_reconnect_attempt(self) -> None:
        if self.durable:
            # the broker redelivers everything unacknowledged to the new subscription (the
            # batches' acknowledged messages stay known: they are not handed out again)
            self._queue.clear()
            if self.sink_reset is not None:
                self.sink_reset(self)
            self._timers.clear()
            self._possible_dlq.clear()
        self._chunks.clear()

    def _stop_timers(self) -> None:
        self._acks.cancel()
        self._timers.stop()

    async def close(self) -> None:
        """Flush acknowledgements and close on the broker."""
        if self._closed:
            return
        self._acks.flush()
        self._closed = True
        self._stop_timers()
        for task in list(self._tasks):
            task.cancel()
        await self._close_on_broker()
        if self.dead_letter is not None and self.sink is None:
            await self.dead_letter.close()
        self._stop_receiver(AlreadyClosed(f"consumer {self.name} on {self.topic} was closed"))

    async def _close_on_broker(self) -> None:
        await close_on_broker(self, self.consumer_id, consumers_of, commands.close_consumer)

    async def unsubscribe(self) -> None:
        """Delete the subscription on the broker and close."""
        conn = self._require_conn()
        rid = conn.new_request_id()
        await conn.request(commands.unsubscribe(self.consumer_id, rid), rid, self.client.operation_timeout)
        conn.consumers.pop(self.consumer_id, None)
        self._closed = True
        self._stop_timers()
        if self.dead_letter is not None and self.sink is None:
            await self.dead_letter.close()
        self._stop_receiver(AlreadyClosed(f"consumer {self.name} unsubscribed from {self.topic}"))

    # -- receiving (opening entries: .opening) ------------------------------------------------
    def _want_one(self) -> None:
        if self.config.receiver_queue_size == 0:
            self._send_flow(1)

    def _taken(self, messages: list[Message]) -> None:
        self._last_dequeued = messages[-1]

    def dequeued(self, msg: Message) -> None:
        """A message this consumer produced was handed to the application (multi-topic use)."""
        self._dequeued_many((msg,))

    def _dequeued_many(self, messages: Sequence[Message]) -> None:
        if not messages:
            return
        unacked = self._unacked
        if unacked is not None:
            for msg in messages:
                for key in msg._id.chunk_entries():
                    unacked.add(key, msg._ctx.redelivery_count)
        self._last_dequeued = messages[-1]
        self._consumed(len(messages))

    def _dequeued_one(self, msg: Message) -> None:
        self._last_dequeued = msg
        if self._unacked is not None:
            for key in msg._id.chunk_entries():
                self._unacked.add(key, msg._ctx.redelivery_count)
        if self._flow_at:
            self._permits_to_grant += 1
            if self._permits_to_grant >= self._flow_at:
                self._send_flow(self._permits_to_grant)
                self._permits_to_grant = 0

    def _last_dequeued_id(self) -> MessageId | None:
        """The id of the last message handed out (None before the first)."""
        last = self._last_dequeued
        return last._id if isinstance(last, Message) else last

    def _consumed(self, n: int) -> None:
        if not self._flow_at:
            return
        self._permits_to_grant += n
        if self._permits_to_grant >= self._flow_at:
            self._send_flow(self._permits_to_grant)
            self._permits_to_grant = 0

    def _can_send(self) -> bool:
        conn = self.conn
        return conn is not None and not conn.closed

    def messages_until_flow(self) -> int:
        """How many more messages counted as consumed send the next FLOW (0: zero-size queue)."""
        return self._flow_at - self._permits_to_grant if self._flow_at else 0

    def _send_flow(self, permits: int) -> None:
        conn = self.conn
        if conn is None or conn.closed or permits <= 0:
            return
        conn.send_command(commands.flow(self.consumer_id, permits))

    # -- acknowledgements ----------------------------------------------------------------
    def acknowledge(self, message: Message | MessageId, txn: Any = None) -> Completed | asyncio.Future[None]:
        """Acknowledge one message (sent grouped within ack_group_time_ms); awaiting the result
        is optional. In a transaction (``txn``) the ACK goes at once and the future returned
        completes with its ACK_RESPONSE (see :mod:`.transactions`)."""
        if txn is not None:
            return txn.acknowledge(self, message, False)
        cls = message.__class__
        if cls is UniformMessage or cls is Message or cls is PlainMessage:
            mid = message._mid
            if mid is None:
                index = message._index
                if index is None:
                    # the hot path: a message of its own entry whose id was never made (see Message._id);
                    # plain ints (IdPart + 0 is an int): a tuple of them leaves the GC's watch
                    ctx = message._ctx
                    key = (ctx.ledger + 0, ctx.entry)
                    if self._timers.tracking or self._possible_dlq:
                        self._untrack(key)
                    self._acks.ack_plain(key)
                    return DONE
                if not self._batch_index_acks:
                    # a batched message whose id was never made, not the last of its batch acknowledged
                    ctx = message._ctx
                    remaining = self._batch_acks.get((ctx.ledger, ctx.entry))
                    if remaining is not None:
                        remaining.discard(index)
                        if remaining:
                            return DONE
                mid = message._id
        else:
            mid = message.message_id() if isinstance(message, Message) else message
        if mid._chunk_ids is None and mid.batch_index < 0:
            # a message of its own entry
            key = (mid.ledger_id + 0, mid.entry_id + 0)
            if self._timers.tracking or self._possible_dlq:
                self._untrack(key)
            self._acks.ack_plain(key)
            return DONE
        if mid.batch_index >= 0 and not self._batch_index_acks and mid._chunk_ids is None:
            # the common case of a batched message, kept short
            remaining = self._batch_acks.get((mid.ledger_id, mid.entry_id))
            if remaining is not None:
                remaining.discard(mid.batch_index)
                if remaining:
                    return DONE
        self._acks.acknowledge(mid)
        return DONE

    def acknowledge_many(self, messages: Iterable[Message | MessageId]) -> None:
        """Acknowledge several messages: as one acknowledge() each, but the batched messages of one
        entry that follow each other (as received) are taken off its pending indexes at once (those
        of a uniform batch without a Python step per message)."""
        if self._batch_index_acks:
            ack = self.acknowledge
            for message in messages:
                ack(message)
            return
        ack_batch_run = self._acks.ack_batch_run
        for ctx, run in groupby(messages, _CTX):  # (a MessageId's _ctx is None)
            if ctx.__class__ is UniformEntry:  # (only UniformMessages have one)
                ack_batch_run((ctx.ledger, ctx.entry), map(_INDEX, run))
            else:
                self._acknowledge_each(run)

    def _acknowledge_each(self, messages: Iterable[Message | MessageId]) -> None:
        """:meth:`acknowledge_many` message by message (the batched messages of one entry that
        follow each other still taken off its pending indexes at once)."""
        ack = self.acknowledge
        entry = last = None
        indexes: list[int] = []
        for message in messages:
            if message.__class__ is Message and message._mid is None and message._index is not None:
                if message._ctx is entry:
                    indexes.append(last._index)  # type: ignore[union-attr]
                    last = message
                    continue
                if last is not None:
                    self._ack_batch_run(indexes, last)
                    indexes = []
                entry, last = message._ctx, message
            else:
                if last is not None:
                    self._ack_batch_run(indexes, last)
                    entry = last = None
                    indexes = []
                ack(message)
        if last is not None:
            self._ack_batch_run(indexes, last)

    def _ack_batch_run(self, indexes: list[int], last: Message) -> None:
        """Acknowledge messages of one batch entry: ``indexes`` of those before ``last``, then
        ``last`` itself through acknowledge() (which acknowledges the entry once none is left)."""
        if indexes:
            ctx = last._ctx
            remaining = self._batch_acks.get((ctx.ledger, ctx.entry))
            if remaining is not None:
                remaining.difference_update(indexes)
        self.acknowledge(last)

    def acknowledge_cumulative(self, message: Message | MessageId, txn: Any = None) -> Completed | asyncio.Future[None]:
        """Acknowledge every message up to and including this one (Exclusive / Failover), in the
        transaction ``txn`` when given (as :meth:`acknowledge`)."""
        if self.config.consumer_type in (SubType.Shared, SubType.Key_Shared):
            raise CumulativeAcknowledgementNotAllowedError(
                f"cumulative acknowledgement is not allowed on {self.config.consumer_type.name} subscriptions"
            )
        if txn is not None:
            return txn.acknowledge(self, message, True)
        self._acks.acknowledge_cumulative(message.message_id() if isinstance(message, Message) else message)
        return DONE

    def _untrack(self, key: EntryKey) -> None:
        """An entry was acknowledged: no redelivery for it."""
        if self._timers.tracking:
            self._timers.forget(key)
        if self._possible_dlq:
            self._possible_dlq.pop(key, None)

    def _send_command(self, command: BaseCommand) -> None:
        conn = self.conn
        if conn is not None and not conn.closed:
            conn.send_command(command)

    def _write_frame(self, frame: bytes) -> None:
        """Queue an encoded frame on the connection (when there is one)."""
        conn = self.conn
        if conn is not None and not conn.closed:
            conn.write(frame)

    # -- negative acks, ack timeout, dead letters ----------------------------------------
    def negative_acknowledge(self, message: Message | MessageId) -> Completed:
        """Have this message redelivered after the negative ack delay (or backoff)."""
        if isinstance(message, Message):
            mid, count = message.message_id(), message.redelivery_count()
        else:
            mid, count = message, 0
        # (the entry's pending batch acks stay: this message is not acknowledged, so acking the
        # others of its batch does not acknowledge the entry before it comes back)
        self._timers.nack(mid.chunk_entries(), count)
        return DONE

    def _nack_due(self) -> None:
        """What the negative-ack timer does when it fires."""
        self._timers.nack_due()

    def _on_tick(self) -> None:
        """What the periodic tick does: ack timeout check, expiry of incomplete chunked messages."""
        self._timers.on_tick()

    def _chunks_expire(self) -> None:
        self._chunks.expire_incomplete()

    def _redeliver_entries(self, keys: list[EntryKey]) -> None:
        """Ask for entries again; those past the dead letter limit go to the dead letter topic."""
        handler = self.dead_letter
        if self._possible_dlq and handler is not None:
            to_dlq = [k for k in keys if k in self._possible_dlq]
            if to_dlq:
                keys = [k for k in keys if k not in self._possible_dlq]
                self._spawn(handler.dead_letter(
                    to_dlq, self._possible_dlq, self.name, lambda entries: self._redeliver_ids(_ids(entries)), self.acknowledge
                ))
        if not keys:
            return
        wanted = set(keys)
        if self._queue:
            kept = deque(m for m in self._queue if m._id.ledger_entry() not in wanted)
            dropped = len(self._queue) - len(kept)
            if dropped:
                self._queue = kept
                self._consumed(dropped)
        self._redeliver_ids(_ids(keys))

    async def reconsume_later(self, message: Message, delay: float = 0, properties: dict[str, str] | None = None) -> None:
        """Send ``message`` to the retry letter topic, to be received again after ``delay`` seconds
        (or to the dead letter topic once it was retried max_redeliver_count times), and
        acknowledge it here."""
        handler = self.dead_letter
        if not self.config.retry_enable or handler is None:
            raise OperationNotSupported("reconsume_later needs a consumer subscribed with retry_enable=True")
        await handler.reconsume_later(message, delay, properties)
        self.acknowledge(message)

    def _discard_chunks(self, keys: list[EntryKey], ack: bool) -> None:
        if ack:
            for key in keys:
                self._acks.ack_entry(key)
            self._acks.schedule_flush()
        elif self._unacked is not None:
            for key in keys:
                self._unacked.add(key)

    def _redeliver_ids(self, ids: list) -> None:
        conn = self.conn
        if conn is None or conn.closed:
            return
        conn.send_command(commands.redeliver_unacknowledged(self.consumer_id, ids))

    def redeliver_unacknowledged_messages(self) -> None:
        """Ask the broker to send again every message delivered and not yet acknowledged."""
        conn = self.conn
        if conn is None or conn.closed:
            return
        # acknowledgements still grouped go first: what was acknowledged must not come back
        self._acks.flush()
        dropped = len(self._queue)
        self._queue.clear()
        self._acks.clear_batches()
        self._timers.clear()
        self._chunks.clear()
        conn.send_command(commands.redeliver_unacknowledged(self.consumer_id))
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
        self._acks.clear()
        self._timers.clear()
        self._chunks.clear()
        self._possible_dlq.clear()
        self._connected_event.clear()
        await conn.request(cmd, rid, self.client.operation_timeout)
        # (every message sent before the seek has arrived: the broker answered after them)
        self._queue.clear()
        if self.sink_reset is not None:
            self.sink_reset(self)
        try:
            await asyncio.wait_for(self._connected_event.wait(), self.client.operation_timeout)
        except TimeoutError:
            raise Timeout(f"consumer {self.name} on {self.topic} did not resubscribe after a seek") from None

    async def get_last_message_id(self) -> tuple[MessageId, MessageId | None]:
        """(last message id on the topic, this subscription's mark-delete position)."""
        conn = self._require_conn()
        rid = conn.new_request_id()
        request = commands.get_last_message_id(self.consumer_id, rid)
        resp = (await conn.request(request, rid, self.client.operation_timeout)).get_last_message_id_response
        last = MessageId.from_proto(resp.last_message_id, self.topic)
        md = MessageId.from_proto(resp.consumer_mark_delete_position) if resp.HasField("consumer_mark_delete_position") else None
        return last, md

    async def has_message_available(self) -> bool:
        """Whether a message is queued or the topic holds one after the last one received."""
        if self._queue:
            return True
        last, mark_delete = await self.get_last_message_id()
        if last.entry_id < 0:
            return False
        return has_message_after(last, mark_delete, self._last_dequeued_id(), self._start_id, self.config.start_message_id_inclusive)

    # -- broker events -------------------------------------------------------------------
    def on_active_change(self, active: bool) -> None:
        """ACTIVE_CONSUMER_CHANGE (Failover)."""
        self.active = active

    def on_reached_end_of_topic(self) -> None:
        """REACHED_END_OF_TOPIC: nothing more will come."""
        self.reached_end_of_topic = True

    def has_reached_end_of_topic(self) -> bool:
        """Whether the topic was terminated and every message of it acknowledged (Java's name)."""
        return self.reached_end_of_topic
