"""A subscription: one managed cursor over a topic's ledger plus one dispatcher for its consumers."""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from magnetar.broker.errors import BrokerError
from magnetar.broker.subscriptions.delayed import DelayedDeliveryTracker
from magnetar.broker.subscriptions.dispatchers import (
    Dispatcher,
    KeySharedDispatcher,
    RoundRobinDispatcher,
    SingleActiveDispatcher,
)
from magnetar.protocol.enums import ServerError, SubType
from magnetar.storage import CompactedView, Entry, ManagedCursor

if TYPE_CHECKING:
    from magnetar.broker.config import BrokerConfig
    from magnetar.broker.policies import TopicPolicies
    from magnetar.broker.subscriptions.consumer import Consumer
    from magnetar.protocol.topic_name import TopicName

log = logging.getLogger("magnetar.broker.subscriptions.subscription")

_DISPATCHERS: dict[SubType, type[Dispatcher]] = {
    SubType.Exclusive: SingleActiveDispatcher,
    SubType.Failover: SingleActiveDispatcher,
    SubType.Shared: RoundRobinDispatcher,
    SubType.Key_Shared: KeySharedDispatcher,
}

#: subscription types whose consumers and subscription are bound by the unacked-message limits
_LIMITED_TYPES = frozenset({SubType.Shared, SubType.Key_Shared})

#: subscription types that honour deliver_at_time (Exclusive and Failover deliver at once)
_DELAYING_TYPES = frozenset({SubType.Shared, SubType.Key_Shared})


class SubscribedTopic(Protocol):
    """What a subscription (and its dispatcher) uses of its topic."""

    name: str
    topic_name: TopicName
    #: the id message ids of the topic carry
    ledger_id: int
    config: BrokerConfig
    policies: TopicPolicies
    subscriptions: dict[str, Subscription]
    #: highest entry id consumers may read
    last_readable_id: int
    #: the latest message per key up to a horizon, when the topic was compacted
    compacted: CompactedView | None

    @property
    def first_entry_id(self) -> int:
        """Oldest entry still stored."""
        ...

    @property
    def last_entry_id(self) -> int:
        """Newest entry readable by consumers (-1 when none)."""
        ...

    def last_message_id(self) -> tuple[int, int, int]:
        """(ledger id, entry id, batch index) of the last readable message."""
        ...

    def remove_subscription(self, name: str) -> None:
        """Forget a subscription."""
        ...


class Subscription:
    """Consumers, dispatcher and redelivery bookkeeping of one named subscription.

    ``cursor`` (a :class:`~magnetar.storage.ManagedCursor`) owns what has been acknowledged, the
    read position (the next entry never dispatched), persistence (durable cursors) and the trim
    point; ``redelivery`` holds entries that were dispatched and must go out again (negative acks,
    consumers that left), each with a per-subscription ``redelivery_counts``.
    """

    def __init__(self, topic: SubscribedTopic, name: str, cursor: ManagedCursor, *, sub_type: SubType | None = None) -> None:
        self.topic = topic
        self.name = name
        self.cursor = cursor
        self.sub_type = sub_type
        self.redelivery: set[int] = set()
        self.redelivery_counts: dict[int, int] = {}
        self.dispatcher: Dispatcher | None = None
        #: when a consumer last joined or left (subscription expiration)
        self.last_active = time.time()
        #: entries waiting for their deliver_at_time (Shared and Key_Shared only)
        self.delayed: DelayedDeliveryTracker | None = None
        self.resetting = False
        self.msg_out_counter = 0
        config = topic.config
        self.batch_index_ack_enabled = config.batch_index_ack_enabled
        override = topic.policies.max_unacked_per_consumer
        self.max_unacked_per_consumer = override if override is not None else config.max_unacked_messages_per_consumer
        self._max_unacked = config.max_unacked_messages_per_subscription
        self._blocked = False

    @property
    def durable(self) -> bool:
        """Whether the subscription survives its consumers and restarts (its cursor is persisted)."""
        return self.cursor.durable

    @property
    def read_position(self) -> int:
        """The next entry never dispatched (the cursor's read position)."""
        return self.cursor.read_position

    # -- consumers -----------------------------------------------------------------------
    @property
    def consumers(self) -> list[Consumer]:
        """The consumers attached now."""
        return self.dispatcher.consumers if self.dispatcher else []

    def policies_changed(self) -> None:
        """Pick up the topic's policies (unacked limit per consumer)."""
        override = self.topic.policies.max_unacked_per_consumer
        config = self.topic.config
        self.max_unacked_per_consumer = override if override is not None else config.max_unacked_messages_per_consumer
        self.update_blocked()

    def check_can_add(self, sub_type: SubType) -> None:
        """Raise BrokerError when a consumer of ``sub_type`` may not join now."""
        limit = self.topic.policies.max_consumers_per_subscription
        if limit > 0 and len(self.consumers) >= limit:
            raise BrokerError(ServerError.ConsumerBusy, f"subscription {self.name} reached its maximum of {limit} consumers")
        topic_limit = self.topic.config.max_consumers_per_topic
        if topic_limit > 0 and sum(len(s.consumers) for s in self.topic.subscriptions.values()) >= topic_limit:
            raise BrokerError(ServerError.ConsumerBusy, f"topic {self.topic.name} reached its maximum of {topic_limit} consumers")
        if sub_type not in _DISPATCHERS:
            raise BrokerError(ServerError.NotAllowedError, f"subscription type {sub_type.name} is not supported yet")
        if self.consumers:
            if sub_type != self.sub_type:
                raise BrokerError(
                    ServerError.ConsumerBusy,
                    f"subscription {self.name} is of type {self.sub_type.name}, not {sub_type.name}",
                )
            if sub_type == SubType.Exclusive:
                raise BrokerError(ServerError.ConsumerBusy, f"exclusive consumer is already connected to {self.name}")

    def add_consumer(self, consumer: Consumer) -> None:
        """Attach a consumer; call check_can_add first."""
        self.check_can_add(consumer.sub_type)
        if consumer.read_compacted and consumer.sub_type not in (SubType.Exclusive, SubType.Failover):
            raise BrokerError(ServerError.NotAllowedError, "readCompacted only allowed on failover or exclusive subscriptions")
        if self.dispatcher is None or self.sub_type != consumer.sub_type:
            self.sub_type = consumer.sub_type
            self.dispatcher = _DISPATCHERS[consumer.sub_type](self)
            self._set_delayed_tracker(consumer.sub_type in _DELAYING_TYPES)
        self.resetting = False
        self.last_active = time.time()
        self.dispatcher.add_consumer(consumer)

    def _set_delayed_tracker(self, enabled: bool) -> None:
        """Hold delayed messages (Shared, Key_Shared) or deliver them at once (Exclusive, Failover)."""
        enabled = enabled and self.topic.policies.delayed_delivery_active
        if enabled and self.delayed is None:
            config = self.topic.config
            self.delayed = DelayedDeliveryTracker(
                self._delayed_due, config.delayed_delivery_tick_seconds, config.delayed_delivery_strict
            )
        elif not enabled and self.delayed is not None:
            self.redelivery.update(self.delayed.clear())
            self.delayed = None

    def _delayed_due(self, entry_ids: list[int]) -> None:
        self.redelivery.update(e for e in entry_ids if not self.cursor.is_acked(e))
        self.schedule_dispatch()

    def remove_consumer(self, consumer: Consumer) -> None:
        """Detach a consumer; what it had not acknowledged is redelivered to the others."""
        if self.dispatcher is None or consumer not in self.dispatcher.consumers:
            return
        consumer.closed = True
        self.last_active = time.time()
        self.take_back(consumer)
        self.dispatcher.remove_consumer(consumer)
        if not self.consumers and not self.durable and not self.resetting:
            self.topic.remove_subscription(self.name)
        elif self.consumers:
            self.dispatcher.schedule()

    def take_back(self, consumer: Consumer) -> None:
        """Queue every entry in flight to ``consumer`` for redelivery, counting it as redelivered."""
        counts = self.redelivery_counts
        for entry_id in list(consumer.pending):
            consumer.forget(entry_id)
            if not self.cursor.is_acked(entry_id):
                self.redelivery.add(entry_id)
                counts[entry_id] = counts.get(entry_id, 0) + 1
        self.update_blocked()

    def notify_active(self, consumers: list[Consumer], active: Consumer, only: Consumer | None = None) -> None:
        """Tell Failover consumers which of them is active (all of them, or just ``only``)."""
        if self.sub_type != SubType.Failover:
            return
        for consumer in [only] if only is not None else consumers:
            consumer.connection.send_active_consumer_change(consumer.consumer_id, consumer is active)

    # -- flow, dispatch and limits -------------------------------------------------------
    def flow(self, consumer: Consumer, permits: int) -> None:
        """A consumer granted ``permits`` more messages."""
        consumer.add_permits(permits)
        self.schedule_dispatch()

    def schedule_dispatch(self) -> None:
        """Let the dispatcher try to make progress."""
        if self.dispatcher is not None and self.dispatcher.consumers:
            self.dispatcher.schedule()

    # -- reading (the compacted view for read_compacted consumers) -------------------------
    @property
    def read_compacted(self) -> bool:
        """Whether the consumers asked for the compacted view (Exclusive and Failover only)."""
        return any(c.read_compacted for c in self.consumers)

    def _compacted_view(self) -> CompactedView | None:
        """The topic's compacted view when this subscription reads it, else None."""
        view = self.topic.compacted
        return view if view is not None and self.read_compacted else None

    def read_new_entries(self, count: int) -> list[Entry]:
        """Up to ``count`` entries from the read position on, never beyond the last readable one;
        the cursor's read position moves past them.

        A read_compacted subscription reads the topic's compacted view while its read position is
        at or below the compaction horizon (the ids there have gaps), then the topic itself.
        """
        return self.cursor.read_entries(count, self.topic.last_readable_id, self._compacted_view())

    def read_entry_list(self, entry_ids: list[int]) -> list[Entry]:
        """The given entries (for redelivery), from the compacted view where it applies."""
        return self.cursor.read_ids(entry_ids, self._compacted_view())

    def delivery_ack_set(self, entry: Entry) -> list[int] | None:
        """The ack set sent with an entry: the messages of a batch still to deliver.

        A compacted batch whose superseded messages are marked compacted_out goes out with only
        its survivors set (clients skip the others); the cursor counts the others as acknowledged.
        """
        eid = entry.entry_id
        survivors = None if type(entry) is Entry else getattr(entry, "ack_set", None)
        if survivors is not None:
            if self.cursor.batch_size(eid) is None:
                self.cursor.ack_batch_indexes(eid, survivors, entry.batch_size)  # type: ignore[attr-defined]
            return self.cursor.unacked_batch_mask(eid) or survivors
        return self.cursor.unacked_batch_mask(eid) if self.batch_index_ack_enabled else None

    def last_message_id(self, read_compacted: bool) -> tuple[int, int, int]:
        """GET_LAST_MESSAGE_ID: the topic's last message, or for a compacted reader with nothing
        after the horizon, the last message of the compacted view (entry -1 when it is empty)."""
        topic = self.topic
        view = topic.compacted
        if read_compacted and view is not None and topic.last_readable_id <= view.horizon:
            last = view.last_message()
            if last is None:
                return topic.ledger_id, -1, -1
            return topic.ledger_id, last[0], last[1]
        return topic.last_message_id()

    def take_redeliveries(self, limit: int) -> list[int]:
        """Remove and return up to ``limit`` of the lowest entry ids awaiting redelivery."""
        ids = heapq.nsmallest(limit, self.redelivery)
        self.redelivery.difference_update(ids)
        return ids

    def return_redeliveries(self, entry_ids: Iterable[int]) -> None:
        """Put back entries taken for redelivery but not sent."""
        self.redelivery.update(entry_ids)

    def blocked_on_unacked(self) -> bool:
        """Whether the subscription as a whole has too many unacknowledged messages."""
        return self._blocked

    @property
    def consumer_unacked_limit(self) -> int:
        """Unacked messages at which a consumer is blocked; as in Pulsar, the limits apply only to
        Shared and Key_Shared subscriptions (0 = no limit)."""
        return self.max_unacked_per_consumer if self.sub_type in _LIMITED_TYPES else 0

    def update_blocked(self) -> None:
        """Recompute the unacked-message limits of the subscription and its consumers."""
        limited = self.sub_type in _LIMITED_TYPES
        per_consumer = self.max_unacked_per_consumer if limited else 0
        if not limited:
            unblocked = self._blocked or any(c.blocked for c in self.consumers)
            self._blocked = False
            for consumer in self.consumers:
                consumer.blocked = False
            if unblocked:
                self.schedule_dispatch()
            return
        total = 0
        unblocked = False
        for consumer in self.consumers:
            total += consumer.unacked_messages
            if per_consumer > 0:
                if consumer.blocked:
                    if consumer.unacked_messages <= per_consumer // 2:
                        consumer.blocked = False
                        unblocked = True
                elif consumer.unacked_messages >= per_consumer:
                    consumer.blocked = True
        if self._max_unacked > 0:
            if self._blocked and total <= self._max_unacked // 2:
                self._blocked = False
                unblocked = True
            elif total >= self._max_unacked:
                self._blocked = True
        if unblocked:
            self.schedule_dispatch()

    def after_delivery(self) -> None:
        """Check the limits after a dispatch run."""
        if self.max_unacked_per_consumer > 0 or self._max_unacked > 0:
            self.update_blocked()

    # -- acknowledgements ----------------------------------------------------------------
    def acknowledge(self, consumer: Consumer, cumulative: bool, message_ids: Iterable) -> None:
        """Apply an ACK command's message ids to the cursor and the consumers' in-flight sets."""
        topic = self.topic
        cursor = self.cursor
        ledger_id = topic.ledger_id
        last = topic.last_entry_id
        for mid in message_ids:
            if mid.ledger_id != ledger_id:
                continue
            entry_id = mid.entry_id
            if entry_id > last:
                if not cumulative:
                    continue
                entry_id = last  # a reader's close acks "everything" with entry id 2^64-1
            ack_set = list(mid.ack_set) if self.batch_index_ack_enabled else None
            if cumulative:
                if ack_set:
                    cursor.ack_cumulative(entry_id - 1)
                    batch_size = mid.batch_size or 64 * len(ack_set)
                    cursor.ack_batch_indexes(entry_id, ack_set, batch_size)
                else:
                    cursor.ack_cumulative(entry_id)
                for c in self.consumers:
                    for eid in [e for e in c.pending if cursor.is_acked(e)]:
                        c.forget(eid)
                self.redelivery = {e for e in self.redelivery if not cursor.is_acked(e)}
            else:
                if ack_set:
                    batch_size = mid.batch_size or 64 * len(ack_set)
                    if not cursor.ack_batch_indexes(entry_id, ack_set, batch_size):
                        continue
                else:
                    cursor.ack(entry_id)
                if not consumer.forget(entry_id):
                    for c in self.consumers:
                        if c.forget(entry_id):
                            break
                self.redelivery.discard(entry_id)
                self.redelivery_counts.pop(entry_id, None)
        if cumulative and self.redelivery_counts:
            md = cursor.mark_delete
            self.redelivery_counts = {e: n for e, n in self.redelivery_counts.items() if e > md}
        self.update_blocked()
        if self.dispatcher is not None:
            self.dispatcher.acknowledged()

    def redeliver_unacknowledged(self, consumer: Consumer, message_ids: Iterable | None) -> None:
        """Send again the given entries (or all in flight to ``consumer``) that are unacked."""
        counts = self.redelivery_counts
        if message_ids is None:
            self.take_back(consumer)
        else:
            ledger_id = self.topic.ledger_id
            for mid in message_ids:
                if mid.ledger_id != ledger_id:
                    continue
                entry_id = mid.entry_id
                owner = consumer if entry_id in consumer.pending else None
                if owner is None:
                    owner = next((c for c in self.consumers if entry_id in c.pending), None)
                if owner is None or self.cursor.is_acked(entry_id):
                    continue
                owner.forget(entry_id)
                self.redelivery.add(entry_id)
                counts[entry_id] = counts.get(entry_id, 0) + 1
            self.update_blocked()
        self.schedule_dispatch()

    # -- positions -----------------------------------------------------------------------
    def reset_cursor(self, entry_id: int) -> None:
        """Seek: the next entry delivered is ``entry_id``; acknowledgements after it are forgotten.

        Consumers are disconnected (as Pulsar does) and resubscribe at the new position.
        """
        entry_id = max(entry_id, self.topic.first_entry_id)
        self.cursor.seek(entry_id)
        self.redelivery.clear()
        self.redelivery_counts.clear()
        if self.delayed is not None:
            self.delayed.clear()
        self.resetting = True
        for consumer in list(self.consumers):
            consumer.pending.clear()
            consumer.unacked_messages = 0
            consumer.close_by_broker()

    def backlog(self) -> int:
        """Messages (entries) not yet acknowledged by this subscription."""
        return self.cursor.backlog(self.topic.last_entry_id)

    def unacked_messages(self) -> int:
        """Messages delivered to consumers and not yet acknowledged."""
        return sum(c.unacked_messages for c in self.consumers)

    # -- admin operations (skip, clear backlog, expire) ---------------------------------
    def admin_ack_before(self, entry_id: int) -> int:
        """Acknowledge every entry below ``entry_id`` (clear-backlog, expiry); returns how many."""
        last = min(entry_id - 1, self.topic.last_entry_id)
        before = self.backlog()
        if self.cursor.ack_cumulative(last):
            self._admin_acked()
        return before - self.backlog()

    def admin_skip(self, count: int) -> int:
        """Acknowledge the first ``count`` unacknowledged entries; returns how many were skipped."""
        cursor = self.cursor
        last = self.topic.last_entry_id
        skipped = 0
        entry_id = cursor.first_unacked()
        while skipped < count and entry_id <= last:
            cursor.ack(entry_id)
            skipped += 1
            entry_id = cursor.next_unacked(entry_id + 1)
        if skipped:
            self._admin_acked()
        return skipped

    def _admin_acked(self) -> None:
        """After an administrative acknowledgement: drop acked entries in flight, persist, dispatch."""
        cursor = self.cursor
        for consumer in self.consumers:
            for entry_id in [e for e in consumer.pending if cursor.is_acked(e)]:
                consumer.forget(entry_id)
        self.redelivery = {e for e in self.redelivery if not cursor.is_acked(e)}
        md = cursor.mark_delete
        self.redelivery_counts = {e: n for e, n in self.redelivery_counts.items() if e > md}
        cursor.skip_acknowledged()
        self.update_blocked()
        self.schedule_dispatch()

    def __repr__(self) -> str:
        return f"Subscription({self.topic.name}/{self.name})"
