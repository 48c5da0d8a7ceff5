"""The dispatch loop shared by every subscription type.

A dispatcher moves entries from its subscription's ledger to its consumers: redeliveries
first (in entry order), then new entries from the read position up to the last readable
entry, each to the consumer its subclass selects, never beyond the permits a consumer granted.
It runs as one callback on the event loop, scheduled whenever something that could let it
make progress happens (permits, new entries, acks, redeliveries, consumers joining).

One run hands out at most one read batch (``dispatch_batch_entries`` entries, Pulsar's
``dispatcherMaxReadBatchSize``, and ``dispatch_max_read_bytes`` bytes, its
``dispatcherMaxReadSizeBytes``), then schedules itself again behind whatever else is ready on the
loop, as Pulsar's dispatcher reads its next batch only after sending the previous one: a
subscription catching up on a backlog holds the loop for one batch at a time, so other clients'
publishes are served between its batches. A run also ends once it has held the loop for
``TURN_SECONDS`` (after the entry that crossed it): an entry costs 13-40 us of the loop's CPU
(metadata, selection, framing), so a batch held it up to 2.7 ms (benchmarks/PROFILES.md §43), and a
publish that arrives meanwhile waits for the whole run twice (its SEND read, its receipt written).
It ends sooner when a commit round's outcome is waiting for the loop (the topic's ``loop_urgency``,
broker/loop_urgency.py): those receipts go out behind the entry being sent, not behind the run.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from magnetar.broker.loop_urgency import NEVER_URGENT, URGENT_MIN_RUN_SECONDS, LoopUrgency
from magnetar.protocol.framing import ProtocolError, parse_entry_metadata
from magnetar.protocol.schema import MessageMetadata

if TYPE_CHECKING:
    from magnetar.broker.config import BrokerConfig
    from magnetar.broker.policies.rate_limits import DispatchThrottle
    from magnetar.broker.subscriptions.consumer import Consumer
    from magnetar.broker.subscriptions.delayed import DelayedDeliveryTracker
    from magnetar.protocol.topic_name import TopicName
    from magnetar.storage import Entry, ManagedCursor

log = logging.getLogger("magnetar.broker.dispatch")

#: entries read by a dispatcher's first read, before it knows how many messages an entry holds
_FIRST_READ = 8

#: how long one run may hold the loop before it yields (checked after each entry sent): what a SEND
#: arriving meanwhile waits at most to be read (its receipt waits less: ``URGENT_MIN_RUN_SECONDS``); a
#: catch-up's runs are mostly bounded by the consumer's permits first (~55 entries, ~0.4 ms here), and
#: 0.5 ms changed no measured tail (benchmarks/README.md "Ninth session")
TURN_SECONDS = 0.001


def entry_metadata(entry: Entry) -> MessageMetadata | None:
    """The MessageMetadata of an entry, or None when it cannot be read."""
    try:
        return parse_entry_metadata(entry.data)
    except ProtocolError:
        return None


class DispatchedTopic(Protocol):
    """What a dispatcher uses of its subscription's topic."""

    name: str
    topic_name: TopicName
    config: BrokerConfig
    #: highest entry id consumers may read
    last_readable_id: int
    #: callbacks other threads handed the loop for the topic: a run yields to them
    loop_urgency: LoopUrgency


class DispatchedSubscription(Protocol):
    """What a dispatcher uses of its subscription: the cursor, the redelivery set, the limits."""

    name: str
    topic: DispatchedTopic
    #: whether entries come from storage (False: live delivery, only selection is used)
    persistent: bool
    cursor: ManagedCursor
    #: entries waiting for their deliver_at_time (None: delivered at once)
    delayed: DelayedDeliveryTracker | None
    #: entries dispatched before that must go out again
    redelivery: set[int]
    redelivery_counts: dict[int, int]
    batch_index_ack_enabled: bool
    #: the dispatch rates in force (None: no limit)
    dispatch_throttle: DispatchThrottle | None

    @property
    def read_position(self) -> int:
        """The next entry never dispatched."""
        ...

    @property
    def msg_out_counter(self) -> int:
        """Messages sent to consumers so far."""
        ...

    @property
    def bytes_out_counter(self) -> int:
        """Bytes sent to consumers so far."""
        ...

    def blocked_on_unacked(self) -> bool:
        """Whether the subscription as a whole has too many unacknowledged messages."""
        ...

    def after_delivery(self) -> None:
        """Check the limits after a dispatch run."""
        ...

    def take_redeliveries(self, limit: int) -> list[int]:
        """Remove and return up to ``limit`` of the lowest entry ids awaiting redelivery."""
        ...

    def return_redeliveries(self, entry_ids: Iterable[int]) -> None:
        """Put back entries taken for redelivery but not sent."""
        ...

    def read_new_entries(self, count: int) -> list[Entry]:
        """Up to ``count`` entries from the read position on."""
        ...

    def read_entry_list(self, entry_ids: list[int]) -> list[Entry] | None:
        """The given entries (for redelivery); None while they are read off the loop."""
        ...

    def delivery_ack_set(self, entry: Entry) -> list[int] | None:
        """The ack set sent with an entry."""
        ...

    def notify_active(self, consumers: list[Consumer], active: Consumer, only: Consumer | None = None) -> None:
        """Tell Failover consumers which of them is active."""
        ...

    def take_back(self, consumer: Consumer) -> None:
        """Queue every entry in flight to ``consumer`` for redelivery."""
        ...


class Dispatcher:
    """Base dispatcher: owns the consumer list and the dispatch loop; subclasses select."""

    #: the clock a run's ``TURN_SECONDS`` is measured on
    clock = staticmethod(time.perf_counter)

    def __init__(self, subscription: DispatchedSubscription) -> None:
        self.subscription = subscription
        self.consumers: list[Consumer] = []
        self._scheduled = False
        #: (clock) when the current run must yield the loop (a run the loop makes, :meth:`_run`)
        self._turn_deadline = math.inf
        #: (clock) from when the current run yields to a callback waiting for the loop, and the
        #: topic's count of such callbacks it asks
        self._urgent_after = math.inf
        self._urgency = NEVER_URGENT
        #: messages per entry of recent dispatches (as Pulsar's avgMessagesPerEntry): sizes reads;
        #: None until the first entries went out
        self.avg_messages_per_entry: float | None = None

    # -- consumer membership -------------------------------------------------------------
    def add_consumer(self, consumer: Consumer) -> None:
        """Attach a consumer (the subscription has already checked it may join)."""
        self.consumers.append(consumer)
        self.consumers_changed()

    def remove_consumer(self, consumer: Consumer) -> None:
        """Detach a consumer."""
        if consumer in self.consumers:
            self.consumers.remove(consumer)
            self.consumers_changed()

    def consumers_changed(self) -> None:
        """Hook run after the consumer list changed."""

    def acknowledged(self) -> None:
        """Hook run after acknowledgements moved the subscription's cursor."""

    # -- selection (subclasses) ----------------------------------------------------------
    def select(self, entry: Entry, messages: int, meta: MessageMetadata | None = None) -> Consumer | None:
        """The consumer that gets ``entry`` (whose metadata is ``meta``, when read) now, or None to
        stop dispatching for now."""
        raise NotImplementedError

    def has_capacity(self) -> bool:
        """Whether any consumer could take a message now."""
        return any(c.permits > 0 and not c.blocked and c.connection.writable for c in self.consumers)

    def available_permits(self) -> int:
        """Messages the consumers that can take some would take now."""
        return sum(c.permits for c in self.consumers if c.permits > 0 and not c.blocked)

    def read_limit(self, batch: int) -> int:
        """How many entries are worth reading now: at most ``batch``, and no more than the permits
        consumers could use at the recent messages per entry (an entry goes out while a consumer has
        any permit left, hence rounded up), so that a consumer granting a few permits at a time, or
        batches of many messages, do not make every dispatch read, and drop, a whole batch of
        entries."""
        average = self.avg_messages_per_entry
        if average is None:
            # nothing known of the entries yet: a short first read (the next one is sized)
            return max(1, min(batch, _FIRST_READ, self.available_permits()))
        # the average only approaches a steady batch size: a hair below it must not add an entry
        wanted = math.ceil(self.available_permits() / average - 0.01)
        return max(1, min(batch, wanted))

    def turn_budget(self) -> tuple[int, int]:
        """(entries, bytes) one run may hand out before it yields the loop to other work: one read
        batch (a run sends at least one entry, whatever its size)."""
        config = self.subscription.topic.config
        return config.dispatch_batch_entries, config.dispatch_max_read_bytes

    def turn_spent(self) -> bool:
        """Whether the current run has held the loop for its ``TURN_SECONDS``, or long enough while a
        callback another thread handed the loop (a commit round's receipts) waits for it."""
        now = self.clock()
        return now >= self._turn_deadline or (now >= self._urgent_after and self._urgency.waiting())

    def _sampled(self, entries: int, messages: int) -> None:
        """Record that ``entries`` entries of ``messages`` messages went out."""
        if entries:
            sample = messages / entries
            average = self.avg_messages_per_entry
            self.avg_messages_per_entry = sample if average is None else max(1.0, (average + sample) / 2)

    # -- the loop ------------------------------------------------------------------------
    def schedule(self) -> None:
        """Run the dispatch loop soon (once, however often this is called)."""
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._run)

    def _run(self) -> None:
        self._scheduled = False
        started = self.clock()
        self._turn_deadline = started + TURN_SECONDS
        self._urgent_after = started + URGENT_MIN_RUN_SECONDS
        self._urgency = self.subscription.topic.loop_urgency
        try:
            self._dispatch()
        except Exception:  # a dispatch bug must not kill the loop; log it loudly
            log.exception("dispatch failed on %s/%s", self.subscription.topic.name, self.subscription.name)
        finally:
            self._turn_deadline = self._urgent_after = math.inf
            self._urgency = NEVER_URGENT

    def _dispatch(self) -> None:
        try:
            self._dispatch_entries()
        finally:
            self.subscription.after_delivery()

    def _dispatch_entries(self) -> None:
        sub = self.subscription
        cursor = sub.cursor
        batch = sub.topic.config.dispatch_batch_entries
        delayed = sub.delayed
        now_ms = int(time.time() * 1000)
        budget, turn_bytes = self.turn_budget()
        bytes_left = turn_bytes
        while budget > 0:
            if not self.consumers or sub.blocked_on_unacked() or not self.has_capacity():
                return
            redelivering = bool(sub.redelivery)
            count = min(budget, self.read_limit(batch))
            throttle = sub.dispatch_throttle
            if throttle is not None and not (count := throttle.allowed(count, self.schedule)):
                return  # the dispatch rate is used up: dispatched again once it refills
            if redelivering:
                ids = sub.take_redeliveries(count)
                listed = sub.read_entry_list(ids)
                if listed is None:  # read off the loop: dispatched again once they are in
                    sub.return_redeliveries(ids)
                    return
                entries = listed
            else:
                entries = sub.read_new_entries(count)
                if not entries:
                    return
            sent_upto = -1
            sent_entries = sent_messages = 0
            bytes_before = bytes_left
            for i, entry in enumerate(entries):
                eid = entry.entry_id
                if cursor.is_acked(eid):
                    sent_upto = i
                    continue
                size = len(entry.data)
                if size > bytes_left and bytes_left < turn_bytes:
                    budget = 0  # this turn's bytes are used: the rest goes next turn
                    break
                meta = entry_metadata(entry)
                messages = max(1, meta.num_messages_in_batch) if meta is not None else 1
                if delayed is not None and meta is not None and meta.deliver_at_time > now_ms:
                    delayed.add(eid, meta.deliver_at_time)
                    sent_upto = i
                    continue
                consumer = self.select(entry, messages, meta)
                if consumer is None:
                    break
                ack_set = sub.delivery_ack_set(entry)
                consumer.deliver(entry, messages, sub.redelivery_counts.get(eid, 0), ack_set)
                sent_upto = i
                sent_entries += 1
                sent_messages += messages
                bytes_left -= size
                if self.turn_spent():
                    budget = 0  # this turn's time is used: the rest goes next turn
                    break
            self._sampled(sent_entries, sent_messages)
            if throttle is not None:
                throttle.consume(sent_messages, bytes_before - bytes_left)
            rest = entries[sent_upto + 1 :]
            if redelivering:
                sub.return_redeliveries(e.entry_id for e in rest)
            elif rest:
                cursor.rewind_to(rest[0].entry_id)
            if rest and budget > 0:
                return  # no consumer can take the next entry now
            budget -= sent_upto + 1
        self.schedule()
