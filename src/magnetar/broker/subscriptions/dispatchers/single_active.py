"""Exclusive and Failover subscriptions: every entry goes to the one active consumer.

The active consumer is the first by (priority level, name); on a partition of a partitioned
topic, consumers of the best priority level take turns by partition index, as in Pulsar, so
that several partitions spread over several failover consumers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magnetar.broker.subscriptions.dispatchers.base import DispatchedSubscription, Dispatcher

if TYPE_CHECKING:
    from magnetar.broker.subscriptions.consumer import Consumer
    from magnetar.storage import Entry


class SingleActiveDispatcher(Dispatcher):
    """Dispatches to the active consumer only, telling consumers when the active one changes."""

    def __init__(self, subscription: DispatchedSubscription) -> None:
        super().__init__(subscription)
        self.active: Consumer | None = None

    def pick_active(self) -> Consumer | None:
        """The consumer that should be active now."""
        if not self.consumers:
            return None
        best = min(c.priority_level for c in self.consumers)
        candidates = sorted((c for c in self.consumers if c.priority_level == best), key=lambda c: c.name)
        index = self.subscription.topic.topic_name.partition_index
        return candidates[index % len(candidates)] if index >= 0 else candidates[0]

    def consumers_changed(self) -> None:
        new = self.pick_active()
        old = self.active
        if new is old:
            if new is not None:
                self.subscription.notify_active(self.consumers, new, only=self.consumers[-1])
            return
        self.active = new
        if old is not None and new is not None:
            # everything the old active consumer did not acknowledge goes to the new one, in order
            self.subscription.take_back(old)
        if new is not None:
            self.subscription.notify_active(self.consumers, new)

    def has_capacity(self) -> bool:
        active = self.active
        return active is not None and active.permits > 0 and not active.blocked and active.connection.writable

    def select(self, entry: Entry, messages: int) -> Consumer | None:
        active = self.active
        if active is not None and active.can_take(messages) and active.connection.writable:
            return active
        return None
