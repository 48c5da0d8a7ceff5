"""A compact set of integers stored as sorted, disjoint, non-adjacent closed intervals."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator

#: runs from which :meth:`RangeSet.add_runs` merges in one pass rather than inserting each
_MERGE_AT_RUNS = 16


class RangeSet:
    """Set of integers kept as sorted closed intervals ``[lo, hi]``.

    Adjacent and overlapping intervals are always merged, so the representation is
    canonical: two sets holding the same integers have identical interval lists.
    Lookups are O(log n) in the number of intervals; no per-integer storage is used.
    """

    __slots__ = ("_starts", "_ends", "_count")

    def __init__(self, ranges: Iterable[tuple[int, int]] = ()) -> None:
        """Create a set, optionally pre-filled with the given closed intervals."""
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._count = 0
        for lo, hi in ranges:
            self.add(lo, hi)

    def add(self, lo: int, hi: int) -> None:
        """Add every integer of the closed interval ``[lo, hi]``."""
        if lo > hi:
            raise ValueError(f"empty interval [{lo}, {hi}]")
        starts, ends = self._starts, self._ends
        # Intervals i..j-1 touch or overlap [lo, hi] (touching means adjacent).
        i = bisect_left(ends, lo - 1)
        j = bisect_right(starts, hi + 1)
        if i < j:
            lo = min(lo, starts[i])
            hi = max(hi, ends[j - 1])
            self._count -= sum(ends[k] - starts[k] + 1 for k in range(i, j))
        starts[i:j] = [lo]
        ends[i:j] = [hi]
        self._count += hi - lo + 1

    def add_runs(self, runs: list[tuple[int, int]]) -> None:
        """Add sorted, disjoint closed intervals (ascending ``lo``): many at once are merged with
        the set in one pass instead of one insertion each."""
        if len(runs) < _MERGE_AT_RUNS or len(runs) * 8 < len(self._starts):
            for lo, hi in runs:
                self.add(lo, hi)
            return
        starts, ends = self._starts, self._ends
        out_starts: list[int] = []
        out_ends: list[int] = []
        i = j = 0
        n, m = len(starts), len(runs)
        while i < n or j < m:
            if j >= m or (i < n and starts[i] <= runs[j][0]):
                lo, hi = starts[i], ends[i]
                i += 1
            else:
                lo, hi = runs[j]
                j += 1
            if out_ends and lo <= out_ends[-1] + 1:
                if hi > out_ends[-1]:
                    out_ends[-1] = hi
            else:
                out_starts.append(lo)
                out_ends.append(hi)
        self._starts, self._ends = out_starts, out_ends
        self._count = sum(out_ends) - sum(out_starts) + len(out_starts)

    def add_one(self, x: int) -> None:
        """Add the single integer ``x``."""
        self.add(x, x)

    def remove_range(self, lo: int, hi: int) -> None:
        """Remove every integer of the closed interval ``[lo, hi]`` (no-op when empty)."""
        if lo > hi:
            return
        starts, ends = self._starts, self._ends
        i = bisect_left(ends, lo)
        j = bisect_right(starts, hi)
        if i >= j:
            return
        new_starts: list[int] = []
        new_ends: list[int] = []
        if starts[i] < lo:
            new_starts.append(starts[i])
            new_ends.append(lo - 1)
        if ends[j - 1] > hi:
            new_starts.append(hi + 1)
            new_ends.append(ends[j - 1])
        removed = sum(ends[k] - starts[k] + 1 for k in range(i, j))
        kept = sum(e - s + 1 for s, e in zip(new_starts, new_ends, strict=True))
        starts[i:j] = new_starts
        ends[i:j] = new_ends
        self._count -= removed - kept

    def remove_below(self, x: int) -> None:
        """Drop every value strictly lower than ``x``."""
        if self._starts and self._starts[0] < x:
            self.remove_range(self._starts[0], x - 1)

    def clear(self) -> None:
        """Remove everything."""
        self._starts.clear()
        self._ends.clear()
        self._count = 0

    def __contains__(self, x: object) -> bool:
        if not isinstance(x, int):
            return False
        i = bisect_right(self._starts, x) - 1
        return i >= 0 and self._ends[i] >= x

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return bool(self._starts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RangeSet):
            return NotImplemented
        return self._starts == other._starts and self._ends == other._ends

    def __iter__(self) -> Iterator[tuple[int, int]]:
        """Iterate over the intervals (not the integers), in ascending order."""
        return zip(self._starts, self._ends, strict=True)

    def __repr__(self) -> str:
        return f"RangeSet({self.ranges()!r})"

    def ranges(self) -> list[tuple[int, int]]:
        """Return the intervals as a list of ``(lo, hi)`` tuples, ascending."""
        return list(zip(self._starts, self._ends, strict=True))

    def range_count(self) -> int:
        """Return the number of disjoint intervals."""
        return len(self._starts)

    def first(self) -> int | None:
        """Return the smallest value, or None when empty."""
        return self._starts[0] if self._starts else None

    def last(self) -> int | None:
        """Return the largest value, or None when empty."""
        return self._ends[-1] if self._ends else None

    def first_range(self) -> tuple[int, int] | None:
        """Return the lowest interval, or None when empty."""
        return (self._starts[0], self._ends[0]) if self._starts else None

    def next_missing(self, x: int) -> int:
        """Return the smallest integer ``>= x`` that is not in the set."""
        i = bisect_right(self._starts, x) - 1
        if i >= 0 and self._ends[i] >= x:
            # Intervals are never adjacent, so the value right after one is absent.
            return self._ends[i] + 1
        return x

    def count_between(self, lo: int, hi: int) -> int:
        """Return how many members lie in the closed interval ``[lo, hi]``."""
        if lo > hi:
            return 0
        starts, ends = self._starts, self._ends
        i = bisect_left(ends, lo)
        j = bisect_right(starts, hi)
        return sum(min(ends[k], hi) - max(starts[k], lo) + 1 for k in range(i, j))

    def copy(self) -> RangeSet:
        """Return an independent copy."""
        other = RangeSet()
        other._starts = self._starts.copy()
        other._ends = self._ends.copy()
        other._count = self._count
        return other

    def to_list(self) -> list[int]:
        """Serialize as a flat list ``[lo0, hi0, lo1, hi1, ...]``."""
        flat: list[int] = []
        for lo, hi in zip(self._starts, self._ends, strict=True):
            flat.append(lo)
            flat.append(hi)
        return flat

    @classmethod
    def from_list(cls, flat: Iterable[int]) -> RangeSet:
        """Rebuild a set from the output of :meth:`to_list` (any interval order is accepted)."""
        values = list(flat)
        if len(values) % 2:
            raise ValueError("flat range list must have an even length")
        return cls(zip(values[0::2], values[1::2], strict=True))
