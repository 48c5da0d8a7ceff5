"""A subscription: one managed cursor over a topic's ledger plus one dispatcher for its consumers."""

from __future__ import annotations

import asyncio
import heapq
import logging
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar, Protocol

from magnetar.broker.errors import BrokerError
from magnetar.broker.subscriptions.base import BaseSubscribedTopic, SubscriptionBase
from magnetar.broker.subscriptions.consumer import count_unacked
from magnetar.broker.subscriptions.delayed import DelayedDeliveryTracker
from magnetar.protocol.enums import ServerError, SubType
from magnetar.storage import CompactedView, Entry, ManagedCursor

if TYPE_CHECKING:
    from magnetar.broker.subscriptions.consumer import Consumer
    from magnetar.broker.transactions.pending_ack import PendingAcks

log = logging.getLogger("magnetar.broker.subscriptions.subscription")

#: subscription types that honour deliver_at_time (Exclusive and Failover deliver at once)
_DELAYING_TYPES = frozenset({SubType.Shared, SubType.Key_Shared})

#: entry id -1 as a client writes it in the unsigned ``entry_id`` of an ACK
_BEFORE_FIRST = (1 << 64) - 1


class SubscribedTopic(BaseSubscribedTopic, Protocol):
    """What a persistent subscription (and its dispatcher) uses of its topic."""

    subscriptions: dict[str, Subscription]
    #: highest entry id consumers may read
    last_readable_id: int
    #: the latest message per key up to a horizon, when the topic was compacted
    compacted: CompactedView | None
    #: a terminated topic accepts no more messages
    terminated: bool

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

    def entry_publish_time(self, entry_id: int) -> int:
        """Publish time (ms) of an entry, from its metadata (0 when unknown)."""
        ...

    def cache_for_readers(self) -> None:
        """A subscription's consumers changed: keep recent entries in memory while any subscription reads."""
        ...


class EntryFilter(Protocol):
    """Tells which entries no consumer receives: a replicated topic's markers (replication/subscriptions.py)."""

    def is_marker(self, entry: Entry) -> bool:
        """Whether ``entry`` is a marker."""
        ...


class Subscription(SubscriptionBase):
    """A persistent topic's subscription: its cursor, acknowledgements, redelivery and dispatch.

    ``cursor`` (a :class:`~magnetar.storage.ManagedCursor`) owns what has been acknowledged, the
    read position (the next entry never dispatched), persistence (durable cursors) and the trim
    point; ``redelivery`` holds entries that were dispatched and must go out again (negative acks,
    consumers that left), each with a per-subscription ``redelivery_counts``.
    """

    persistent: ClassVar[bool] = True
    #: whether it reads the topic with no consumer attached (a replicator's cursor): the topic's
    #: recent entries are kept in memory for it (PersistentTopic.cache_for_readers)
    reads_without_consumers: ClassVar[bool] = False

    def __init__(self, topic: SubscribedTopic, name: str, cursor: ManagedCursor, *, sub_type: SubType | None = None) -> None:
        super().__init__(topic, name, sub_type=sub_type)
        self.topic: SubscribedTopic = topic
        self.cursor = cursor
        #: when the cursor was opened here, created or loaded (epoch ms): Pulsar's cursor takes this
        #: as its lastLedgerSwitchTimestamp (magnetar's cursors have no ledgers of their own to switch)
        self.cursor_opened_ms = int(time.time() * 1000)
        # entries no longer in memory are read off the loop; the dispatcher runs again once they are in
        cursor.read_off_loop(self.schedule_dispatch)
        self.redelivery: set[int] = set()
        self.redelivery_counts: dict[int, int] = {}
        #: entries waiting for their deliver_at_time (Shared and Key_Shared only)
        self.delayed: DelayedDeliveryTracker | None = None
        self.resetting = False
        self.batch_index_ack_enabled = topic.config.batch_index_ack_enabled
        #: messages message TTL or expire-messages acknowledged, and when that last happened
        self.msg_expired_counter = 0
        self.last_expire_time = 0.0
        #: acknowledgements held by open transactions (transactions/pending_ack.py), once there was one
        self.pending_acks: PendingAcks | None = None

    @property
    def durable(self) -> bool:
        """Whether the subscription survives its consumers and restarts (its cursor is persisted)."""
        return self.cursor.durable

    @property
    def read_position(self) -> int:
        """The next entry never dispatched (the cursor's read position)."""
        return self.cursor.read_position

    # -- consumers -----------------------------------------------------------------------
    def check_consumer(self, consumer: Consumer) -> None:
        """readCompacted is for Exclusive and Failover subscriptions only."""
        if consumer.read_compacted and consumer.sub_type not in (SubType.Exclusive, SubType.Failover):
            raise BrokerError(ServerError.NotAllowedError, "readCompacted only allowed on failover or exclusive subscriptions")

    def add_consumer(self, consumer: Consumer) -> None:
        """Attach a consumer (BrokerError when it may not join)."""
        super().add_consumer(consumer)
        self.resetting = False
        self.topic.cache_for_readers()
        if self.topic.terminated:
            # after the session has answered the SUBSCRIBE
            asyncio.get_running_loop().call_soon(self.check_end_of_topic)

    def dispatcher_created(self) -> None:
        """Hold delayed messages (Shared, Key_Shared) or deliver them at once (Exclusive, Failover)."""
        enabled = self.sub_type in _DELAYING_TYPES and self.topic.policies.delayed_delivery_active
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

    def consumer_removed(self) -> None:
        """A non-durable subscription goes with its last consumer (unless a seek disconnected it)."""
        if not self.consumers and not self.durable and not self.resetting:
            self.topic.remove_subscription(self.name)
        elif self.consumers:
            self.dispatcher.schedule()  # type: ignore[union-attr]
        else:
            self.topic.cache_for_readers()

    def take_back(self, consumer: Consumer) -> None:
        """Queue every entry in flight to ``consumer`` for redelivery, counting it as redelivered."""
        counts = self.redelivery_counts
        for entry_id in list(consumer.pending):
            consumer.forget(entry_id)
            if not self.cursor.is_acked(entry_id):
                self.redelivery.add(entry_id)
                counts[entry_id] = counts.get(entry_id, 0) + 1
        self.update_blocked()

    def check_end_of_topic(self) -> bool:
        """On a terminated topic whose every message this subscription acknowledged, tell the
        consumers (REACHED_END_OF_TOPIC, as Pulsar does); True when it did."""
        topic = self.topic
        if not topic.terminated or self.backlog() > 0:
            return False
        for consumer in self.consumers:
            consumer.reached_end_of_topic()
        return True

    # -- flow, dispatch and limits -------------------------------------------------------
    def flow(self, consumer: Consumer, permits: int) -> None:
        """A consumer granted ``permits`` more messages. A dispatch run is scheduled only when the
        consumer can take something now: a grant that leaves it at or below zero (its last batch
        cost more than the permits it had, as the official consumers' half-queue FLOWs do after
        every entry of ~1,000 messages) changes nothing a run could use."""
        consumer.add_permits(permits)
        if consumer.permits > 0:
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
        view = self._compacted_view()
        entries = self.cursor.read_entries(count, self.topic.last_readable_id, view)
        if self._delivers_all():
            return entries
        while entries:
            visible = self._txn_visible(entries)
            if visible:
                return visible
            entries = self.cursor.read_entries(count, self.topic.last_readable_id, view)
        return entries

    def read_entry_list(self, entry_ids: list[int]) -> list[Entry] | None:
        """The given entries (for redelivery), from the compacted view where it applies; None while
        some are read off the loop (the dispatch is scheduled again once they are in)."""
        entries = self.cursor.read_ids(entry_ids, self._compacted_view())
        if entries is None or self._delivers_all():
            return entries
        return self._txn_visible(entries)

    def _delivers_all(self) -> bool:
        """Whether every entry read goes to consumers (no transactions, no markers to hide)."""
        topic = self.topic
        return self.pending_acks is None and getattr(topic, "txn_buffer", None) is None \
            and getattr(topic, "marker_filter", None) is None

    def _txn_visible(self, entries: list[Entry]) -> list[Entry]:
        """What transactions let this subscription deliver of ``entries``: markers and aborted messages
        never (they count as acknowledged, as Pulsar's dispatcher acks them), messages a transaction's
        acknowledgement holds not until it ends."""
        buffer = getattr(self.topic, "txn_buffer", None)
        markers: EntryFilter | None = getattr(self.topic, "marker_filter", None)
        pending = self.pending_acks
        out = []
        for entry in entries:
            entry_id = entry.entry_id
            if (buffer is not None and buffer.hidden(entry_id)) or (markers is not None and markers.is_marker(entry)):
                self.cursor.ack(entry_id)
            elif pending is None or not pending.holds(entry_id):
                out.append(entry)
        return out

    def txn_acks_held(self, entry_ids: list[int]) -> None:
        """A transaction's acknowledgement holds these entries: they leave their consumers' in-flight
        sets and the redelivery queue until it ends."""
        for entry_id in entry_ids:
            for consumer in self.consumers:
                if consumer.forget(entry_id):
                    break
            self.redelivery.discard(entry_id)
        self.update_blocked()
        if self.dispatcher is not None:
            self.dispatcher.acknowledged()

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

    # -- acknowledgements ----------------------------------------------------------------
    def acknowledge(self, consumer: Consumer, cumulative: bool, message_ids: Iterable) -> None:
        """Apply an ACK command's message ids to the cursor and the consumers' in-flight sets.

        A batch-index acknowledgement lowers the unacked count of the consumer holding the entry
        by the messages it acknowledged, as Pulsar counts them; the entry leaves the consumer's
        in-flight set once all its messages are acknowledged.
        """
        topic = self.topic
        ledger_id = topic.ledger_id
        last = topic.last_entry_id
        mark_delete_before = self.cursor.mark_delete
        consumer.last_acked_ms = int(time.time() * 1000)
        whole: list[int] = []
        batch_index_acks = self.batch_index_ack_enabled
        for mid in message_ids:
            if mid.ledger_id != ledger_id:
                continue
            entry_id = mid.entry_id
            if entry_id == _BEFORE_FIRST:
                # entry -1 in the unsigned field: the position before the ledger's first entry, which the
                # C++ client acks cumulatively for the first message of a batch (the entry before it); as
                # in Pulsar it moves nothing (it used to be taken for "everything": a reader's backlog read 0)
                continue
            if entry_id > last:
                if not cumulative:
                    continue
                entry_id = last  # "latest" (2^63-1): everything there is
            if not cumulative and not (batch_index_acks and mid.ack_set):  # the usual id: a whole entry
                whole.append(entry_id)
                continue
            ack_set = list(mid.ack_set) if batch_index_acks else None
            batch_size = (mid.batch_size or 64 * len(ack_set)) if ack_set else 0
            if cumulative:
                self._ack_cumulative(entry_id, ack_set, batch_size)
            elif ack_set:
                self._ack_individual(consumer, entry_id, ack_set, batch_size)
            else:
                whole.append(entry_id)
        if whole:
            self._ack_entries(consumer, whole)
        if self.cursor.mark_delete != mark_delete_before:
            self.last_mark_delete_advanced_ms = consumer.last_acked_ms
        if cumulative and self.redelivery_counts:
            md = self.cursor.mark_delete
            self.redelivery_counts = {e: n for e, n in self.redelivery_counts.items() if e > md}
        self.update_blocked()
        if self.dispatcher is not None:
            self.dispatcher.acknowledged()
        if topic.terminated:
            self.check_end_of_topic()

    def _ack_cumulative(self, entry_id: int, ack_set: list[int] | None, batch_size: int) -> None:
        cursor = self.cursor
        if ack_set:
            cursor.ack_cumulative(entry_id - 1)
            cursor.ack_batch_indexes(entry_id, ack_set, batch_size)
        else:
            cursor.ack_cumulative(entry_id)
        for c in self.consumers:
            for eid in [e for e in c.pending if cursor.is_acked(e)]:
                c.forget(eid)
        self.redelivery = {e for e in self.redelivery if not cursor.is_acked(e)}
        if ack_set and not cursor.is_acked(entry_id):
            self._count_partial_ack(self.consumers[0] if self.consumers else None, entry_id)

    def _ack_entries(self, consumer: Consumer, entry_ids: list[int]) -> None:
        """Individual acks of whole entries: the cursor takes them as runs, in one step per run."""
        self.cursor.ack_many(entry_ids)
        redelivery, counts = self.redelivery, self.redelivery_counts
        forget = consumer.forget
        for entry_id in entry_ids:
            if not forget(entry_id):
                for c in self.consumers:
                    if c.forget(entry_id):
                        break
            if redelivery:
                redelivery.discard(entry_id)
            if counts:
                counts.pop(entry_id, None)

    def _ack_individual(self, consumer: Consumer, entry_id: int, ack_set: list[int] | None, batch_size: int) -> None:
        cursor = self.cursor
        if ack_set:
            if not cursor.ack_batch_indexes(entry_id, ack_set, batch_size):
                self._count_partial_ack(consumer, entry_id)
                return
        else:
            cursor.ack(entry_id)
        if not consumer.forget(entry_id):
            for c in self.consumers:
                if c.forget(entry_id):
                    break
        self.redelivery.discard(entry_id)
        self.redelivery_counts.pop(entry_id, None)

    def _count_partial_ack(self, consumer: Consumer | None, entry_id: int) -> None:
        """Some messages of a batch were acknowledged: lower its holder's unacked count to what is left."""
        remaining = count_unacked(self.cursor.unacked_batch_mask(entry_id))
        if consumer is not None and consumer.acked_partly(entry_id, remaining):
            return
        for c in self.consumers:
            if c.acked_partly(entry_id, remaining):
                return

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

    # -- admin operations (skip, clear backlog, expire) ---------------------------------
    def admin_ack_before(self, entry_id: int) -> int:
        """Acknowledge every entry below ``entry_id`` (clear-backlog, expiry); returns how many."""
        last = min(entry_id - 1, self.topic.last_entry_id)
        before = self.backlog()
        if self.cursor.ack_cumulative(last):
            self._admin_acked()
        return before - self.backlog()

    def expire_before(self, entry_id: int) -> int:
        """Message TTL or expire-messages: acknowledge every entry below ``entry_id`` and count
        them as expired (totalMsgExpired); returns how many."""
        expired = self.admin_ack_before(entry_id)
        if expired:
            self.msg_expired_counter += expired
            self.last_expire_time = time.time()
        return expired

    def earliest_publish_time_in_backlog(self) -> int:
        """Publish time (ms) of the oldest message not acknowledged, 0 when there is none."""
        first = self.cursor.first_unacked()
        if first > self.topic.last_entry_id:
            return 0
        return self.topic.entry_publish_time(max(first, self.topic.first_entry_id))

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
