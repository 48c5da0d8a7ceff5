"""Where a managed ledger's reads find an entry: its tail cache, its write queue or its segment files.

An appended entry is in the write queue until the commit thread has written it (see
:mod:`magnetar.storage.write_queue`), in the tail cache while it is recent, and in its segment file
once written. The commit thread writes concurrently with reads, so a read that misses the queue
looks again at what was written meanwhile.
"""

from __future__ import annotations

import logging
from bisect import bisect_right
from collections.abc import Callable

from magnetar.storage.entries import Entry
from magnetar.storage.segment import RECORD_OVERHEAD, CorruptEntryError, EntryNotFoundError, Segment
from magnetar.storage.segment_chain import SegmentChain
from magnetar.storage.tail_cache import TailCache
from magnetar.storage.write_queue import WriteQueue

log = logging.getLogger("magnetar.storage.ledger")

#: records read from one segment file and not decoded yet: (the segment, the first entry id, the
#: bytes, how many records they hold)
Span = tuple[Segment, int, bytes, int]


class EntryReader:
    """Reads the stored entries of one ledger from whichever of its cache, write queue and segment
    files holds them. The ledger checks that the ids asked for are in its stored range."""

    def __init__(
        self,
        ledger_id: int,
        chain: SegmentChain,
        cache: TailCache,
        queue: WriteQueue,
    ) -> None:
        """Read the entries of ledger ``ledger_id``: up to ``chain.written`` from its segment files, the
        ones above in ``queue`` (and the recent ones in ``cache``)."""
        self._ledger_id = ledger_id
        self._chain = chain
        self._cache = cache
        self._queue = queue

    def read(self, entry_id: int) -> Entry:
        """One entry, from the tail cache when possible."""
        cached = self._cache.entries.get(entry_id)
        if cached is None and entry_id > self._chain.written:
            cached = self._queue.entries.get(entry_id)  # else written meanwhile
        if cached is not None:
            return Entry(entry_id, cached[0], cached[1])
        try:
            data, crc = self._chain.segment_for(entry_id).read(entry_id)
        except EntryNotFoundError as exc:
            raise self.lost(entry_id, entry_id) from exc
        return Entry(entry_id, data, crc)

    def read_range(self, first: int, last: int, max_bytes: int | None) -> list[Entry]:
        """Entries ``first..last`` inclusive; with ``max_bytes``, stops before the entry that would take
        the total data size over it, but returns at least one."""
        out: list[Entry] = []
        budget = max_bytes
        entry_id = first
        cache, queue, chain = self._cache, self._queue, self._chain
        written = chain.written
        bases = chain.bases
        while entry_id <= last:
            if entry_id >= cache.first or entry_id > written:
                record = cache.entries.get(entry_id) or queue.entries.get(entry_id)
                if record is None:  # written meanwhile (it leaves the queue once indexed)
                    if chain.written < entry_id:
                        raise self.lost(entry_id, entry_id)
                    written = chain.written
                    continue
                data, crc = record
                if budget is not None:
                    if out and len(data) > budget:
                        break
                    budget -= len(data)
                out.append(Entry(entry_id, data, crc))
                entry_id += 1
                continue
            index = chain.index_of(entry_id)
            segment = chain.segments[index]
            chunk_last = min(last, cache.first - 1, written)
            if index + 1 < len(bases):
                chunk_last = min(chunk_last, bases[index + 1] - 1)
            try:
                chunk = segment.read_many(entry_id, chunk_last, budget, at_least_one=not out)
            except EntryNotFoundError as exc:
                raise self.lost(entry_id, chunk_last) from exc
            for data, crc in chunk:
                out.append(Entry(entry_id, data, crc))
                entry_id += 1
                if budget is not None:
                    budget -= len(data)
            if entry_id <= chunk_last:
                break
        return out

    def read_files(self, first: int, last: int, max_bytes: int | None) -> list[Span]:
        """(any thread) The records of entries ``first..last``, as far as they are written, from their
        segment files, undecoded (:meth:`decode`; with ``max_bytes``, at least one, as
        :meth:`read_range`). The chain is read holding its lock; each file through a duplicate of its
        descriptor, so that a trim or close meanwhile cannot hand the number to another file.
        EntryNotFoundError when ``first`` was trimmed."""
        chain = self._chain
        with chain.lock:
            last = min(last, chain.written)
            bases = chain.bases
            if first < bases[0]:
                raise EntryNotFoundError(f"ledger {self._ledger_id}: entry {first} was trimmed")
            plan: list[tuple[Segment, int, int]] = []
            index = bisect_right(bases, first) - 1
            entry_id = first
            while entry_id <= last:
                chunk_last = last if index + 1 >= len(bases) else min(last, bases[index + 1] - 1)
                plan.append((chain.segments[index], entry_id, chunk_last))
                entry_id = chunk_last + 1
                index += 1
        spans: list[Span] = []
        budget = max_bytes
        for segment, lo, hi in plan:
            fd = segment.dup_for_read()
            try:
                buf, count = segment.read_span(lo, hi, budget, at_least_one=not spans, fd=fd)
            except EntryNotFoundError as exc:
                raise self.lost(lo, hi) from exc
            finally:
                segment.close_dup(fd)
            spans.append((segment, lo, buf, count))
            if budget is not None:
                budget -= len(buf) - count * RECORD_OVERHEAD
            if lo + count <= hi:
                break
        return spans

    @staticmethod
    def decode(spans: list[Span]) -> list[Entry]:
        """The entries of what :meth:`read_files` read (on the owner's thread: the CPU part of a read);
        CorruptEntryError for a damaged one."""
        out: list[Entry] = []
        for segment, first, buf, count in spans:
            entry_id = first
            for data, crc in segment.decode_span(buf, first, count):
                out.append(Entry(entry_id, data, crc))
                entry_id += 1
        return out

    def read_ids_from_files(self, entry_ids: list[int]) -> tuple[list[Span], list[int]]:
        """(any thread) The records of the given entries, one :meth:`read_files` each: (what was read,
        the ids that could not be: trimmed)."""
        spans: list[Span] = []
        failed: list[int] = []
        for entry_id in entry_ids:
            try:
                spans += self.read_files(entry_id, entry_id, None)
            except (EntryNotFoundError, CorruptEntryError):
                failed.append(entry_id)
        return spans, failed

    @classmethod
    def decode_each(cls, read: tuple[list[Span], list[int]]) -> tuple[list[Entry], list[int]]:
        """:meth:`read_ids_from_files`'s result decoded: (the entries, the ids trimmed or damaged)."""
        spans, failed = read
        entries: list[Entry] = []
        for span in spans:
            try:
                entries += cls.decode([span])
            except CorruptEntryError:
                failed.append(span[1])
        return entries, failed

    def read_intact(self, first: int, last: int) -> list[Entry]:
        """Entries ``first..last``, leaving out the ones damaged on disk (for rebuilding state from the
        log: one damaged entry must not stop a topic from loading)."""
        try:
            return self.read_range(first, last, None)
        except CorruptEntryError:
            out = []
            for entry_id in range(first, last + 1):
                try:
                    out.append(self.read(entry_id))
                except CorruptEntryError as exc:
                    log.error("ledger %d: entry %d left out, damaged on disk: %s", self._ledger_id, entry_id, exc)
            return out

    def lost(self, first: int, last: int) -> CorruptEntryError:
        """The error for entries in the stored range that their segment cannot index (damage)."""
        return CorruptEntryError(f"ledger {self._ledger_id}: entries {first}..{last} are lost to a damaged segment")


def decoding(done: Callable[[list[Entry] | BaseException], None]) -> Callable[[list[Span] | BaseException], None]:
    """``done`` for :meth:`EntryReader.read_files` run on another thread: the result decoded first (on
    the thread it is handed to)."""

    def decoded(result: list[Span] | BaseException) -> None:
        if isinstance(result, BaseException):
            done(result)
            return
        try:
            entries = EntryReader.decode(result)
        except CorruptEntryError as exc:
            done(exc)
            return
        done(entries)

    return decoded


def decoding_each(
    done: Callable[[tuple[list[Entry], list[int]] | BaseException], None],
) -> Callable[[tuple[list[Span], list[int]] | BaseException], None]:
    """``done`` for :meth:`EntryReader.read_ids_from_files` run on another thread, decoded first."""

    def decoded(result: tuple[list[Span], list[int]] | BaseException) -> None:
        done(result if isinstance(result, BaseException) else EntryReader.decode_each(result))

    return decoded
