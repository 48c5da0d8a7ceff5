"""The segment files of one managed ledger, oldest first, and when the newest one rolls over.

A segment is to a :class:`~magnetar.storage.ledger.ManagedLedger` what a BookKeeper ledger is to
Pulsar's managed ledger: the unit that is closed (sealed) and, once no cursor or retention needs it,
deleted whole. Pulsar rolls a ledger over once it is full (``managedLedgerMaxSizePerLedgerMbytes``)
or old (``managedLedgerMaxLedgerRolloverTimeMinutes``), but never sooner than
``managedLedgerMinLedgerRolloverTimeMinutes`` after it was created, so that what a topic without
subscriptions received in the last minutes is not deleted at the next trim. :class:`RolloverPolicy`
holds the same three limits.
"""

from __future__ import annotations

import math
import threading
import time
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from magnetar.storage.entries import SegmentInfo
from magnetar.storage.files import FileLayer
from magnetar.storage.health import storage_health
from magnetar.storage.segment import Segment, StorageError, segment_file_name

DEFAULT_SEGMENT_MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class RolloverPolicy:
    """When the active segment of a ledger is sealed and a new one started (Pulsar's ledger roll-over)."""

    #: the active segment rolls over when the next record would take it past this size ...
    max_bytes: int = DEFAULT_SEGMENT_MAX_BYTES
    #: ... or once it is this many seconds old (0: no age limit) ...
    max_seconds: float = 0.0
    #: ... but never sooner than this many seconds after it was started (0: as soon as it is full)
    min_seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.max_bytes <= 0:
            raise ValueError("segment_max_bytes must be positive")
        if self.min_seconds < 0 or self.max_seconds < 0:
            raise ValueError("roll-over times must not be negative")


class SegmentChain:
    """The segment files of one ledger, oldest first: which one holds an entry, the active (last,
    writable) one and its roll-over, and the sealed ones that trimming drops.

    Used from the ledger's owning thread. The ledger's commit thread reads ``segments`` and ``bases``
    and moves ``written`` on holding ``lock`` (the ledger's), so every change of them is made holding
    it: the methods say whether they take it or expect the caller to hold it.
    """

    def __init__(
        self,
        directory: Path,
        segments: list[Segment],
        policy: RolloverPolicy,
        files: FileLayer,
        lock: threading.Lock,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Chain opened ``segments`` (at least one, the last writable) of the ledger in ``directory``."""
        self.directory = directory
        self.segments = segments
        #: the base entry id of each segment, for bisecting
        self.bases = [s.base_entry_id for s in segments]
        self.policy = policy
        #: the policy's size limit (read on every append)
        self.max_bytes = policy.max_bytes
        self.lock = lock
        self._files = files
        self._clock = clock
        self.active = segments[-1]
        #: size and entry count of the active segment, records queued but not yet written included
        self.active_bytes, self.active_count = self.active.size_bytes, self.active.entry_count
        #: a segment file was created or removed since the directory was last synced
        self.dir_dirty = False
        #: the highest entry id written to its segment file (the ledger's write queue holds the rest)
        self.written = self.active.next_entry_id - 1
        self._active_since = clock()
        if self.active_bytes >= policy.max_bytes:
            # Pulsar closes the ledger at every open: a segment reopened full is already old enough.
            self._active_since = -math.inf

    def index_of(self, entry_id: int) -> int:
        """Index in ``segments`` of the segment holding ``entry_id`` (of a stored entry)."""
        return bisect_right(self.bases, entry_id) - 1

    def segment_for(self, entry_id: int) -> Segment:
        """The segment holding ``entry_id`` (of a stored entry)."""
        return self.segments[bisect_right(self.bases, entry_id) - 1]

    def roll_due(self, record_bytes: int) -> bool:
        """Whether a record of ``record_bytes`` (header included) must go into a new segment: the
        active one holds entries, is full or too old, and is past its minimum age."""
        if self.active_count == 0:
            return False
        policy = self.policy
        over_size = self.active_bytes + record_bytes > policy.max_bytes
        if not over_size and policy.max_seconds == 0:
            return False
        age = self._clock() - self._active_since
        if not over_size and age < policy.max_seconds:
            return False
        return age >= policy.min_seconds

    def roll(self, base: int) -> Segment:
        """Seal the active segment and start a new one at entry ``base`` (takes the lock)."""
        segment = Segment.open(self.directory / segment_file_name(base), base, writable=True, files=self._files)
        self.active.seal()
        with self.lock:
            self.segments.append(segment)
            self.bases.append(base)
            self.dir_dirty = True
        self.active = segment
        self.active_bytes = self.active_count = 0
        self._active_since = self._clock()
        return segment

    def sealed_before(self, entry_id: int) -> int:
        """How many of the oldest segments hold only entries ``< entry_id`` (never the active one)."""
        count = 0
        while count + 1 < len(self.bases) and self.bases[count + 1] <= entry_id:
            count += 1
        return count

    def drop_oldest(self, count: int) -> list[Segment]:
        """(holding the lock) Remove the ``count`` oldest segments from the chain; returns them."""
        doomed = self.segments[:count]
        del self.segments[:count]
        del self.bases[:count]
        return doomed

    def cut_from(self, keep: int) -> None:
        """Remove entries ``>= keep`` from the files, syncing the directory if a file went; the last
        segment left becomes the active one (takes the lock)."""
        removed = False
        while len(self.segments) > 1 and self.bases[-1] >= keep:
            with self.lock:
                segment = self.segments.pop()
                self.bases.pop()
            segment.delete()
            removed = True
        last = self.segments[-1]
        if not last.writable:
            last.close()
            last = Segment.open(last.path, last.base_entry_id, writable=True, files=self._files)
            with self.lock:
                self.segments[-1] = last
            self._active_since = self._clock()
        last.truncate(keep)
        self.active = last
        self.active_bytes, self.active_count = last.size_bytes, last.entry_count
        if removed:
            self._files.sync_directory(self.directory)

    def cut_back(self, keep: int, ledger_id: int) -> None:
        """:meth:`cut_from` for a recovery: a failure is reported and raised as StorageError."""
        try:
            self.cut_from(keep)
        except OSError as exc:
            storage_health.write_failed(f"recovery of ledger {ledger_id}", exc)
            raise StorageError(f"ledger {ledger_id} cannot be recovered: {exc}") from exc

    def sealed_infos(self, size_of: Callable[[Segment], int]) -> list[SegmentInfo]:
        """Every segment but the active one, oldest first; ``size_of`` gives a segment's size (called
        holding the lock)."""
        out = []
        bases = self.bases
        for i, segment in enumerate(self.segments[:-1]):
            modified = segment.modified if segment.modified is not None else time.time()
            with self.lock:
                size = size_of(segment)
            out.append(SegmentInfo(segment.base_entry_id, bases[i + 1] - 1, size, modified))
        return out

    def bytes_from(self, entry_id: int, next_entry_id: int, size_of: Callable[[Segment], int]) -> int:
        """Approximate bytes stored for entries ``entry_id..next_entry_id - 1``: whole segments, plus a
        pro-rata share of the segment holding ``entry_id`` (``size_of`` is called holding the lock)."""
        total = 0
        bases = self.bases
        for i, segment in enumerate(self.segments):
            end = bases[i + 1] if i + 1 < len(bases) else next_entry_id
            if end <= entry_id:
                continue
            start = bases[i]
            with self.lock:
                size = size_of(segment)
            if start >= entry_id:
                total += size
            elif end > start:
                total += size * (end - entry_id) // (end - start)
        return total
