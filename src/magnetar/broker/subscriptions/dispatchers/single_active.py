"""Exclusive and Failover subscriptions: every entry goes to the one active consumer.

The active consumer is chosen as Pulsar's ``AbstractDispatcherSingleActiveConsumer`` chooses it.
Consumers are ordered by (priority level, consumer name) and only those of the best priority
level are candidates. On a partition of a partitioned topic the candidates take turns by
partition index, so that the partitions spread over the consumers. On a non-partitioned topic
each candidate is placed 100 times on a hash ring (Murmur3 of its name followed by 0..99) and the
topic's name hash picks the candidate after it on the ring: a consumer of several topics gets a
stable share of them, whatever order the consumers subscribed in.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

from magnetar.broker.subscriptions.dispatchers.base import DispatchedSubscription, Dispatcher
from magnetar.protocol.hashing import murmur3_32

if TYPE_CHECKING:
    from magnetar.broker.subscriptions.consumer import Consumer
    from magnetar.protocol.schema import MessageMetadata
    from magnetar.storage import Entry

#: places of each consumer on the ring of a non-partitioned topic (Pulsar's CONSUMER_CONSISTENT_HASH_REPLICAS)
RING_REPLICAS = 100


def java_murmur_hash(text: str) -> int:
    """Pulsar's ``Murmur3_32Hash.makeHash`` of a string's UTF-8 bytes: Murmur3 32-bit, sign bit cleared."""
    return murmur3_32(text.encode()) & 0x7FFFFFFF


def ring_index(topic_name: str, consumer_names: list[str]) -> int:
    """Index of the consumer a non-partitioned topic's name hash lands on in the consumers' hash ring."""
    ring: dict[int, int] = {}
    for index, name in enumerate(consumer_names):
        for replica in range(RING_REPLICAS):
            ring[java_murmur_hash(f"{name}{replica}")] = index
    points = sorted(ring)
    at = bisect.bisect_left(points, java_murmur_hash(topic_name))
    return ring[points[at] if at < len(points) else points[0]]


class SingleActiveDispatcher(Dispatcher):
    """Dispatches to the active consumer only, telling consumers when the active one changes."""

    def __init__(self, subscription: DispatchedSubscription) -> None:
        super().__init__(subscription)
        self.active: Consumer | None = None

    def pick_active(self) -> Consumer | None:
        """The consumer that should be active now."""
        if not self.consumers:
            return None
        ordered = sorted(self.consumers, key=lambda c: (c.priority_level, c.name))
        best = ordered[0].priority_level
        candidates = [c for c in ordered if c.priority_level == best]
        topic_name = self.subscription.topic.topic_name
        index = topic_name.partition_index
        if index >= 0:
            return candidates[index % len(candidates)]
        if len(candidates) == 1:
            return candidates[0]
        return candidates[ring_index(str(topic_name), [c.name for c in candidates])]

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

    def available_permits(self) -> int:
        active = self.active
        return active.permits if active is not None and active.permits > 0 and not active.blocked else 0

    def select(self, entry: Entry, messages: int, meta: MessageMetadata | None = None) -> Consumer | None:
        active = self.active
        if active is not None and active.can_take(messages) and active.connection.writable:
            return active
        return None
