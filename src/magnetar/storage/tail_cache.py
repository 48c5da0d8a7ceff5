"""The tail cache of a managed ledger: its most recent entries, kept in memory for the readers."""

from __future__ import annotations

from collections import deque

from magnetar.storage.entries import CacheBudget, EntryData


class TailCache:
    """The entries with contiguous ids ``[first, last appended]``, bounded by a byte size of its own
    and by a budget shared with other ledgers (oldest evicted first). Used on one thread."""

    def __init__(self, max_bytes: int, budget: CacheBudget | None, first: int) -> None:
        """An empty cache whose next entry will be ``first``."""
        self.max_bytes = max_bytes
        self.budget = budget
        #: entry id -> (data, crc)
        self.entries: dict[int, tuple[EntryData, int]] = {}
        #: the oldest entry id cached (the next one appended when empty)
        self.first = first
        #: data bytes cached
        self.bytes = 0
        #: (time, last entry id cached then), oldest first: what :meth:`age_out` evicts by age
        self.marks: deque[tuple[float, int]] = deque()
        #: nothing is cached while set (a topic without subscriptions: nobody would read it from memory)
        self.paused = False
        if budget is not None:
            budget.caches.add(self)

    def put(self, entry_id: int, data: EntryData, crc: int) -> None:
        """Add the entry appended after the last one cached (or skip it with a zero size, or paused)."""
        if self.max_bytes <= 0 or self.paused:
            if self.entries:
                self.clear()
            self.first = entry_id + 1
            return
        self.entries[entry_id] = (data, crc)
        self.bytes += len(data)
        budget = self.budget
        if budget is not None:
            if not budget.used and budget.on_filled is not None:
                budget.on_filled()
            budget.used += len(data)
            while (self.bytes > self.max_bytes or budget.used > budget.limit) and self.entries:
                self.evict_oldest()
        else:
            while self.bytes > self.max_bytes and self.entries:
                self.evict_oldest()

    def age_out(self, now: float, max_age: float) -> None:
        """Note the last entry cached at ``now``; drop the entries that were already cached
        ``max_age`` seconds before ``now`` (so an entry stays between ``max_age`` and ``max_age``
        plus the interval between calls)."""
        entries = self.entries
        marks = self.marks
        if entries:
            last = self.first + len(entries) - 1
            if not marks or marks[-1][1] != last:
                marks.append((now, last))
        cutoff = now - max_age
        while marks and marks[0][0] <= cutoff:
            upto = marks.popleft()[1]
            while self.first <= upto and self.first in entries:
                self.evict_oldest()

    def evict_oldest(self) -> None:
        """Drop the oldest entry cached."""
        data, _ = self.entries.pop(self.first)
        self._release(len(data))
        self.first += 1

    def cut_from(self, keep: int) -> None:
        """Drop the entries ``>= keep`` (the ledger was cut back)."""
        entries = self.entries
        while entries and self.first + len(entries) - 1 >= keep:
            data, _ = entries.pop(self.first + len(entries) - 1)
            self._release(len(data))
        self.first = min(self.first, keep)

    def trim_before(self, new_first: int) -> None:
        """Drop the entries ``< new_first`` (their segments were trimmed)."""
        while self.first < new_first and self.first in self.entries:
            self.evict_oldest()
        self.first = max(self.first, new_first)

    def clear(self) -> None:
        """Drop everything (the ledger is closed)."""
        self._release(self.bytes)
        self.entries.clear()
        self.marks.clear()

    def _release(self, size: int) -> None:
        self.bytes -= size
        if self.budget is not None:
            self.budget.used -= size
