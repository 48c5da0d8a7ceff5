"""Auto-split consistent hashing: 100 points per consumer on a ring of 2^31 positions.

As Pulsar's documents describe it: for i in 1 .. 100 the consumer marks the ring at
``murmur3(name + str(i))`` (sign bit cleared, like every sticky-key hash); a key hash is
served by the first point at or after it, wrapping around to the first point. A point marked
by several consumers (equal names, or a collision) serves ``hash % len(list)`` of its list,
kept sorted by consumer name. Adding or removing a consumer only moves the keys of the ring
segments its own points end.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import TYPE_CHECKING

from magnetar.broker.subscriptions.selectors.base import sticky_key_hash

if TYPE_CHECKING:
    from magnetar.broker.subscriptions.consumer import Consumer

#: points each consumer marks on the ring (Pulsar's subscriptionKeySharedConsistentHashingReplicaPoints)
DEFAULT_POINTS = 100

#: highest position on the ring
RING_MAX = 0x7FFFFFFF


def _name(consumer: Consumer) -> str:
    return consumer.name


class ConsistentHashingSelector:
    """A hash ring: sorted point positions, each with the consumers that marked it."""

    def __init__(self, points: int = DEFAULT_POINTS) -> None:
        self.points = points
        self._positions: list[int] = []
        self._ring: dict[int, list[Consumer]] = {}
        self._members: list[Consumer] = []

    def _points_of(self, consumer: Consumer) -> list[int]:
        name = consumer.name
        return [sticky_key_hash(f"{name}{i}".encode()) for i in range(1, self.points + 1)]

    def add_consumer(self, consumer: Consumer) -> None:
        if any(c is consumer for c in self._members):
            return
        self._members.append(consumer)
        for pos in self._points_of(consumer):
            owners = self._ring.get(pos)
            if owners is None:
                self._ring[pos] = [consumer]
                insort(self._positions, pos)
            elif not any(c is consumer for c in owners):
                owners.append(consumer)
                owners.sort(key=_name)  # stable: equal names keep their arrival order

    def remove_consumer(self, consumer: Consumer) -> None:
        if not any(c is consumer for c in self._members):
            return
        self._members = [c for c in self._members if c is not consumer]
        for pos in self._points_of(consumer):
            owners = self._ring.get(pos)
            if owners is None:
                continue
            owners[:] = [c for c in owners if c is not consumer]
            if not owners:
                del self._ring[pos]
                i = bisect_left(self._positions, pos)
                del self._positions[i]

    def select(self, hash_: int) -> Consumer | None:
        positions = self._positions
        if not positions:
            return None
        i = bisect_left(positions, hash_)
        owners = self._ring[positions[i] if i < len(positions) else positions[0]]
        return owners[hash_ % len(owners)]

    def ranges(self) -> dict[Consumer, list[tuple[int, int]]]:
        """Ring segments (inclusive, over 0 .. 2^31 - 1) per consumer; adjacent ones merged."""
        out: dict[Consumer, list[tuple[int, int]]] = {}
        if not self._positions:
            return out

        def add(owner: Consumer, start: int, end: int) -> None:
            spans = out.setdefault(owner, [])
            if spans and spans[-1][1] == start - 1:
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((start, end))

        start = 0
        for pos in self._positions:
            for owner in self._ring[pos]:
                add(owner, start, pos)
            start = pos + 1
        if start <= RING_MAX:  # wrap-around: above the last point belongs to the first point
            for owner in self._ring[self._positions[0]]:
                add(owner, start, RING_MAX)
        for spans in out.values():
            spans.sort()
        return out
