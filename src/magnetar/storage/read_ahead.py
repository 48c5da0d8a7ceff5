"""A cursor's reads of entries that are no longer in memory, done off the event loop.

Pulsar's dispatcher reads through ``ManagedCursor.asyncReadEntries``: entries in the cache come at
once, the others from BookKeeper later, and the dispatcher runs again when they arrive. Here a
:class:`ReadAhead` does the same for one :class:`~magnetar.storage.managed_cursor.ManagedCursor`:
a read at the tail of the ledger never comes here (the cursor reads it from memory on the spot); a
read behind it starts a read of up to ``READ_AHEAD_ENTRIES`` entries on the ledger's read thread,
answers "nothing yet" (an empty list, as when nothing is readable), and calls ``on_read`` on the
loop when the entries are in. They are kept here, and the reads that follow take them from here, on
the spot; the next read is started when half of them were taken, so a subscription catching up
finds its entries waiting.

Stored entries never change, so what is kept stays right whatever the cursor does meanwhile (a
seek, a rewind, acknowledgements: the dispatcher checks acknowledgements per entry; a trim: the
cursor never asks below the first stored entry). A read that fails (a segment trimmed or closed
meanwhile, damage) is done once more on the loop, the way it was before (skipping damage).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from magnetar.storage.entries import Entry

log = logging.getLogger("magnetar.storage.cursor")

#: entries one read on the read thread fetches at most (their records are decoded on the loop when
#: they are in, ~1-2 us each: 200 keep that under a dispatch turn of 100 entries) ...
READ_AHEAD_ENTRIES = 200
#: ... and bytes (at least one entry); what is kept (read ahead, and left behind for a rewind) stays
#: under about three reads of this many bytes: 1 MiB batch entries would otherwise keep 200 MB
READ_AHEAD_BYTES = 4 * 1024 * 1024


class DetachedSource(Protocol):
    """What a read-ahead reads: a :class:`~magnetar.storage.ledger.ManagedLedger`."""

    @property
    def first_entry_id(self) -> int:
        """Oldest entry still stored."""
        ...

    def in_memory(self, first: int) -> bool:
        """Whether a read from ``first`` on is served from memory (no file read)."""
        ...

    def read_later(
        self, first: int, last: int, max_bytes: int | None, done: Callable[[list[Entry] | BaseException], None]
    ) -> bool:
        """Read ``first..last`` on the read thread, ``done`` on this one; False when it cannot."""
        ...

    def read_ids_later(
        self, entry_ids: list[int], done: Callable[[tuple[list[Entry], list[int]] | BaseException], None]
    ) -> bool:
        """Read the given entries on the read thread, ``done`` on this one; False when it cannot."""
        ...


class _Read:
    """One read under way (its identity tells a current read from a stale one)."""

    __slots__ = ("first", "ids")

    def __init__(self, first: int, ids: list[int] | None = None) -> None:
        self.first = first
        #: a read by id: the ids asked for
        self.ids = ids or []


class ReadAhead:
    """The entries a cursor read off the loop and has not consumed yet, and the read under way."""

    __slots__ = ("_source", "on_read", "_kept", "_kept_bytes", "_reading", "_sync_at", "_kept_ids", "_fetching",
                 "_sync_ids")

    def __init__(self, source: DetachedSource, on_read: Callable[[], None]) -> None:
        """Read ``source`` off the loop; ``on_read`` runs on the loop when a read is in (the cursor's
        owner reads again then)."""
        self._source = source
        self.on_read = on_read
        #: entries with consecutive ids, read and not yet left behind by the cursor
        self._kept: list[Entry] = []
        #: the bytes of ``_kept``'s entries
        self._kept_bytes = 0
        self._reading: _Read | None = None
        #: a read from here failed off the loop: the cursor reads it on the loop once
        self._sync_at = -1
        #: entries read by id (redeliveries), at most 4 x READ_AHEAD_ENTRIES
        self._kept_ids: dict[int, Entry] = {}
        self._fetching: _Read | None = None
        #: ids whose read off the loop failed (trimmed, damaged): read on the loop, as before
        self._sync_ids: set[int] = set()

    @property
    def kept_bytes(self) -> int:
        """Bytes of the entries kept from reads off the loop (at most about three reads' worth)."""
        return self._kept_bytes

    @property
    def reading(self) -> bool:
        """Whether a read is under way."""
        return self._reading is not None

    def read(self, first: int, last: int, last_readable: int) -> list[Entry] | None:
        """Entries ``first..last`` if kept (maybe fewer); [] when they are being read (``on_read``
        follows); None when the caller must read them itself: in memory, or after a failed read."""
        kept = self._kept
        if kept:
            base, end = kept[0].entry_id, kept[-1].entry_id
            if base <= first <= end:
                start = first - base
                # what the cursor left behind (kept for a rewind) goes after READ_AHEAD_ENTRIES of them,
                # or sooner when large entries make what is kept weigh more than two reads
                if start >= READ_AHEAD_ENTRIES or (start and self._kept_bytes > 2 * READ_AHEAD_BYTES):
                    # the bytes of what is dropped, not a new sum of what stays: large entries make
                    # this a drop of one entry per read, and a sum walked every kept entry each time
                    self._kept_bytes -= sum(len(entry.data) for entry in kept[:start])
                    kept = self._kept = kept[start:]
                    start = 0
                out = kept[start : start + last - first + 1]
                if out[-1].entry_id == end:  # all handed out: a cursor caught up holds nothing
                    self._kept, self._kept_bytes = [], 0
                if end - out[-1].entry_id < READ_AHEAD_ENTRIES // 2 and self._kept_bytes <= 2 * READ_AHEAD_BYTES:
                    self._prefetch(end + 1, last_readable)
                return out
            self._kept, self._kept_bytes = [], 0
        if self._sync_at == first:
            self._sync_at = -1
            return None
        if self._source.in_memory(first):
            return None
        reading = self._reading
        if reading is not None and reading.first == first:
            return []
        if not self._start(first, last_readable):
            return None
        return []

    def _prefetch(self, first: int, last_readable: int) -> None:
        """Read on from ``first`` (the entry after the kept ones) unless a read is under way or it is
        in memory by now."""
        if self._reading is None and first <= last_readable and not self._source.in_memory(first):
            self._start(first, last_readable)

    def _start(self, first: int, last_readable: int) -> bool:
        read = _Read(first)
        last = min(last_readable, first + READ_AHEAD_ENTRIES - 1)
        if not self._source.read_later(first, last, READ_AHEAD_BYTES, lambda result: self._done(read, result)):
            return False
        self._reading = read
        return True

    def _done(self, read: _Read, result: list[Entry] | BaseException) -> None:
        """(loop) A read is in: keep its entries (after the kept ones they follow), wake the owner."""
        if self._reading is not read:
            return  # dropped meanwhile (a seek)
        self._reading = None
        if isinstance(result, BaseException) or not result:
            log.debug("read from %d off the loop gave %r; reading it on the loop", read.first, result)
            self._sync_at = read.first
        else:
            kept = self._kept
            size = sum(len(entry.data) for entry in result)
            if kept and kept[-1].entry_id + 1 == result[0].entry_id:
                self._kept = kept + result
                self._kept_bytes += size
            else:
                self._kept, self._kept_bytes = result, size
        self.on_read()

    # -- reads by id (redeliveries) ----------------------------------------------------------
    def fetch(self, entry_ids: list[int]) -> bool:
        """Whether some of ``entry_ids`` are being read off the loop (``on_read`` follows; the caller
        waits): those neither in memory nor kept start being read now (up to READ_AHEAD_ENTRIES of
        them) unless a read by id is under way already."""
        if len(entry_ids) > 2 * READ_AHEAD_ENTRIES:  # more than is kept at once: read on the spot
            return False
        kept, sync_ids, in_memory = self._kept_ids, self._sync_ids, self._source.in_memory
        missing = [e for e in entry_ids if e not in kept and e not in sync_ids and not in_memory(e)]
        if not missing:
            return False
        if self._fetching is not None:
            return True
        read = _Read(missing[0], missing[:READ_AHEAD_ENTRIES])
        if not self._source.read_ids_later(read.ids, lambda result: self._fetched(read, result)):
            return False
        self._fetching = read
        return True

    def take(self, entry_id: int) -> Entry | None:
        """The entry of ``entry_id`` if a read by id brought it (once), else None (read it on the spot)."""
        self._sync_ids.discard(entry_id)
        entry = self._kept_ids.pop(entry_id, None)  # handed out once: what is kept is what is still wanted
        if entry_id < self._source.first_entry_id:  # trimmed since: left out, as a read on the spot does
            return None
        return entry

    def _fetched(self, read: _Read, result: tuple[list[Entry], list[int]] | BaseException) -> None:
        """(loop) A read by id is in: keep its entries, read the others on the loop, wake the owner."""
        if self._fetching is not read:
            return
        self._fetching = None
        if isinstance(result, BaseException):
            log.debug("read by id off the loop gave %r; reading on the loop", result)
            self._sync_ids.update(read.ids)  # all of them: on the spot, once
        else:
            entries, failed = result
            if len(self._kept_ids) + len(entries) > 4 * READ_AHEAD_ENTRIES:
                self._kept_ids = {}  # what earlier requests needed goes (a request never needs more)
            self._kept_ids.update((entry.entry_id, entry) for entry in entries)
            self._sync_ids.update(failed)
        self.on_read()

    def clear(self) -> None:
        """Drop what is kept and the reads under way (their results will be ignored)."""
        self._kept, self._kept_bytes = [], 0
        self._reading = None
        self._sync_at = -1
        self._kept_ids = {}
        self._fetching = None
        self._sync_ids = set()
