"""The dispatch loop shared by every subscription type.

A dispatcher moves entries from its subscription's ledger to its consumers: redeliveries
first (in entry order), then new entries from the read position up to the last readable
entry, each to the consumer its subclass selects, never beyond the permits a consumer granted.
It runs as one callback on the event loop, scheduled whenever something that could let it
make progress happens (permits, new entries, acks, redeliveries, consumers joining).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from magnetar.protocol.framing import ProtocolError, parse_entry_metadata
from magnetar.protocol.schema import MessageMetadata

if TYPE_CHECKING:
    from magnetar.broker.subscriptions.consumer import Consumer
    from magnetar.broker.subscriptions.subscription import Subscription
    from magnetar.storage import Entry

log = logging.getLogger("magnetar.broker.dispatch")

#: entries dispatched in one run before yielding to other work on the loop
_RUN_BUDGET = 2000


def entry_metadata(entry: Entry) -> MessageMetadata | None:
    """The MessageMetadata of an entry, or None when it cannot be read."""
    try:
        return parse_entry_metadata(entry.data)
    except ProtocolError:
        return None


class Dispatcher:
    """Base dispatcher: owns the consumer list and the dispatch loop; subclasses select."""

    def __init__(self, subscription: Subscription) -> None:
        self.subscription = subscription
        self.consumers: list[Consumer] = []
        self._scheduled = False

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
    def select(self, entry: Entry, messages: int) -> Consumer | None:
        """The consumer that gets ``entry`` now, or None to stop dispatching for now."""
        raise NotImplementedError

    def has_capacity(self) -> bool:
        """Whether any consumer could take a message now."""
        return any(c.permits > 0 and not c.blocked and c.connection.writable for c in self.consumers)

    def read_limit(self, batch: int) -> int:
        """How many entries are worth reading now: at most ``batch``, and no more than the permits
        consumers could use (an entry is at least one message), so a consumer granting a few
        permits at a time does not make every dispatch read, and drop, a whole batch of entries."""
        permits = sum(c.permits for c in self.consumers if c.permits > 0 and not c.blocked)
        return max(1, min(batch, permits))

    # -- the loop ------------------------------------------------------------------------
    def schedule(self) -> None:
        """Run the dispatch loop soon (once, however often this is called)."""
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._run)

    def _run(self) -> None:
        self._scheduled = False
        try:
            self._dispatch()
        except Exception:  # a dispatch bug must not kill the loop; log it loudly
            log.exception("dispatch failed on %s/%s", self.subscription.topic.name, self.subscription.name)

    def _dispatch(self) -> None:
        try:
            self._dispatch_entries()
        finally:
            self.subscription.after_delivery()

    def _dispatch_entries(self) -> None:
        sub = self.subscription
        topic = sub.topic
        cursor = sub.cursor
        batch = topic.service.config.dispatch_batch_entries
        delayed = sub.delayed
        now_ms = int(time.time() * 1000)
        budget = _RUN_BUDGET
        while budget > 0:
            if not self.consumers or sub.blocked_on_unacked() or not self.has_capacity():
                return
            redelivering = bool(sub.redelivery)
            count = self.read_limit(batch)
            if redelivering:
                ids = sub.take_redeliveries(count)
                entries = sub.read_entry_list(ids)
            else:
                entries = sub.read_new_entries(count)
                if not entries:
                    return
            sent_upto = -1
            for i, entry in enumerate(entries):
                eid = entry.entry_id
                if cursor.is_acked(eid):
                    sent_upto = i
                    continue
                meta = entry_metadata(entry)
                messages = max(1, meta.num_messages_in_batch) if meta is not None else 1
                if delayed is not None and meta is not None and meta.deliver_at_time > now_ms:
                    delayed.add(eid, meta.deliver_at_time)
                    sent_upto = i
                    continue
                consumer = self.select(entry, messages)
                if consumer is None:
                    break
                ack_set = sub.delivery_ack_set(entry)
                consumer.deliver(entry, messages, sub.redelivery_counts.get(eid, 0), ack_set)
                sent_upto = i
                budget -= 1
            rest = entries[sent_upto + 1 :]
            if redelivering:
                sub.return_redeliveries(e.entry_id for e in rest)
            else:
                sub.read_position = entries[sent_upto].entry_id + 1 if sent_upto >= 0 else entries[0].entry_id
            if rest:
                return
        self.schedule()
