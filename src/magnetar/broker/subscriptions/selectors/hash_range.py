"""Auto-split hash range: each consumer owns one region of the slots 0 .. 65535.

As Pulsar's documents draw it: the first consumer owns everything; a new consumer takes the
lower half of the largest region (the lowest one among equally large regions), the region's
owner keeps the upper half; a leaving consumer's region merges into the region on its right,
or into the one on its left when it was the last region.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import TYPE_CHECKING

from magnetar.broker.subscriptions.selectors.base import HASH_RANGE_SIZE, assign_error

if TYPE_CHECKING:
    from magnetar.broker.subscriptions.consumer import Consumer


class HashRangeAutoSplitSelector:
    """Regions ``[start, end)`` kept as sorted exclusive ends with their owners."""

    def __init__(self, range_size: int = HASH_RANGE_SIZE) -> None:
        if range_size < 2 or range_size & (range_size - 1):
            raise ValueError("range size must be a power of two of at least 2")
        self.range_size = range_size
        #: exclusive end of each region, ascending; the last one is always ``range_size``
        self._ends: list[int] = []
        self._owners: list[Consumer] = []

    def add_consumer(self, consumer: Consumer) -> None:
        if any(o is consumer for o in self._owners):
            return
        if not self._owners:
            self._ends.append(self.range_size)
            self._owners.append(consumer)
            return
        best = -1
        best_size = 0
        start = 0
        for i, end in enumerate(self._ends):
            if end - start > best_size:
                best, best_size = i, end - start
            start = end
        if best_size < 2:
            raise assign_error(
                f"no hash range left to give consumer {getattr(consumer, 'name', consumer)!r}: "
                f"all {len(self._owners)} regions hold a single hash"
            )
        split = self._ends[best] - best_size // 2
        self._ends.insert(best, split)
        self._owners.insert(best, consumer)

    def remove_consumer(self, consumer: Consumer) -> None:
        index = next((i for i, o in enumerate(self._owners) if o is consumer), None)
        if index is None:
            return
        if index == len(self._owners) - 1 and index > 0:
            # the last region has no right neighbour: the left one grows to the end
            del self._ends[index - 1]
        else:
            del self._ends[index]
        del self._owners[index]

    def select(self, hash_: int) -> Consumer | None:
        if not self._owners:
            return None
        return self._owners[bisect_right(self._ends, hash_ % self.range_size)]

    def ranges(self) -> dict[Consumer, list[tuple[int, int]]]:
        out: dict[Consumer, list[tuple[int, int]]] = {}
        start = 0
        for end, owner in zip(self._ends, self._owners, strict=True):
            out.setdefault(owner, []).append((start, end - 1))
            start = end
        return out
