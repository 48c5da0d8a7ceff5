"""Sticky: every consumer declares the hash ranges it serves; ranges may not overlap.

A consumer declaring no ranges, an invalid range (outside 0 .. 65535, or start > end), ranges
overlapping each other, or ranges overlapping another consumer's is refused with
ConsumerAssignError and nothing changes. Slots nobody declared have no consumer: their
messages wait until a consumer covering them joins.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Iterable
from typing import TYPE_CHECKING

from magnetar.broker.subscriptions.selectors.base import HASH_RANGE_SIZE, MAX_SLOT, assign_error

if TYPE_CHECKING:
    from magnetar.broker.subscriptions.consumer import Consumer


def declared_ranges(consumer: Consumer) -> list[tuple[int, int]]:
    """The (start, end) ranges in a consumer's KeySharedMeta, as sent."""
    meta = getattr(consumer, "key_shared_meta", None)
    if meta is None:
        return []
    return [(r.start, r.end) for r in meta.hash_ranges]


def validate_ranges(ranges: Iterable[tuple[int, int]], who: str = "consumer") -> list[tuple[int, int]]:
    """Check one consumer's ranges on their own; return them sorted. Raises ConsumerAssignError."""
    spans = sorted(ranges)
    if not spans:
        raise assign_error(f"{who} uses Key_Shared STICKY mode but declared no hash ranges")
    for start, end in spans:
        if not 0 <= start <= end <= MAX_SLOT:
            raise assign_error(
                f"{who} declared an invalid hash range [{start}, {end}]: "
                f"ranges need 0 <= start <= end <= {MAX_SLOT}"
            )
    for (s1, e1), (s2, e2) in zip(spans, spans[1:], strict=False):
        if s2 <= e1:
            raise assign_error(f"{who} declared overlapping hash ranges [{s1}, {e1}] and [{s2}, {e2}]")
    return spans


class StickyRangeSelector:
    """Declared ranges kept sorted by start: (start, end, consumer)."""

    def __init__(self, range_size: int = HASH_RANGE_SIZE) -> None:
        self.range_size = range_size
        self._starts: list[int] = []
        self._spans: dict[int, tuple[int, Consumer]] = {}

    def add_consumer(self, consumer: Consumer) -> None:
        if any(c is consumer for _, c in self._spans.values()):
            return
        who = f"consumer {getattr(consumer, 'name', consumer)!r}"
        spans = validate_ranges(declared_ranges(consumer), who)
        for start, end in spans:
            # the nearest range starting at or before ``end`` is the only one that can overlap
            i = bisect_right(self._starts, end) - 1
            if i >= 0:
                other_start = self._starts[i]
                other_end, other = self._spans[other_start]
                if other_end >= start:
                    raise assign_error(
                        f"{who} declared hash range [{start}, {end}], which overlaps "
                        f"[{other_start}, {other_end}] of consumer {getattr(other, 'name', other)!r}"
                    )
        for start, end in spans:
            insort(self._starts, start)
            self._spans[start] = (end, consumer)

    def remove_consumer(self, consumer: Consumer) -> None:
        mine = [s for s, (_, c) in self._spans.items() if c is consumer]
        for start in mine:
            del self._spans[start]
        if mine:
            self._starts = sorted(self._spans)

    def select(self, hash_: int) -> Consumer | None:
        slot = hash_ % self.range_size
        i = bisect_right(self._starts, slot) - 1
        if i < 0:
            return None
        end, consumer = self._spans[self._starts[i]]
        return consumer if slot <= end else None

    def ranges(self) -> dict[Consumer, list[tuple[int, int]]]:
        out: dict[Consumer, list[tuple[int, int]]] = {}
        for start in self._starts:
            end, consumer = self._spans[start]
            out.setdefault(consumer, []).append((start, end))
        return out
