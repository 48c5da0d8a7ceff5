"""The managed ledger: the append-only entry log of one topic, split into segment files."""

from __future__ import annotations

import logging
import os
import threading
import time
from bisect import bisect_right
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import TracebackType

from crc32c import crc32c

from magnetar.storage.closing import Reaper, close_off_thread, wait_for_pending_close
from magnetar.storage.entries import CacheBudget, Entry, SegmentInfo
from magnetar.storage.files import FileLayer, default_file_layer
from magnetar.storage.health import storage_health
from magnetar.storage.segment import (
    RECORD_OVERHEAD,
    CorruptEntryError,
    EntryNotFoundError,
    Segment,
    StorageError,
    delete_segment_files,
    parse_segment_file_name,
    remove_segment_directory,
    segment_file_name,
)

__all__ = [
    "CacheBudget",
    "Entry",
    "EntryNotFoundError",
    "LedgerFencedError",
    "ManagedLedger",
    "Reaper",
    "SegmentInfo",
    "StorageError",
]

log = logging.getLogger("magnetar.storage.ledger")


class LedgerFencedError(StorageError):
    """A sync of the ledger failed: it accepts no appends until :meth:`ManagedLedger.recover`."""

DEFAULT_SEGMENT_MAX_BYTES = 64 * 1024 * 1024
#: a file in a ledger directory naming what the ledger belongs to (rebuilds lost metadata)
LABEL_FILE = "LABEL"
DEFAULT_CACHE_MAX_BYTES = 32 * 1024 * 1024


def _run_at_once(job: Callable[[], None]) -> None:
    job()


class ManagedLedger:
    """Append-only log of entries with consecutive ids, stored as segment files in a directory.

    Threading: ``append``, the reads, ``trim_before``, ``close`` and ``delete`` must be called from a
    single thread (the event loop). ``sync`` may run concurrently in a worker thread, and the
    reaper's jobs (deleting the files ``trim_before`` and ``delete`` let go, the final sync and close
    of ``close``) in another.
    """

    def __init__(
        self,
        directory: Path,
        ledger_id: int,
        segments: list[Segment],
        segment_max_bytes: int,
        cache_max_bytes: int,
        cache_budget: CacheBudget | None = None,
        files: FileLayer | None = None,
        reaper: Reaper | None = None,
    ) -> None:
        """Wrap opened segments (the last one writable); use :meth:`ManagedLedger.open`."""
        self._files = files if files is not None else default_file_layer()
        self._reaper: Reaper = reaper if reaper is not None else _run_at_once
        #: the failed sync that fenced the ledger (None: appends are accepted)
        self._fenced: BaseException | None = None
        self._cache_budget = cache_budget
        self._directory = directory
        self._ledger_id = ledger_id
        self._segment_max_bytes = segment_max_bytes
        self._cache_max_bytes = cache_max_bytes
        self._segments = segments
        self._bases = [s.base_entry_id for s in segments]
        self._active = segments[-1]
        self._last_entry_id = self._active.next_entry_id - 1
        self._durable = self._last_entry_id
        # Guards the state shared with sync(): _segments/_bases, _unsynced, _dir_dirty,
        # _last_entry_id, _durable. Never held across I/O that can block for long.
        self._lock = threading.Lock()
        self._sync_mutex = threading.Lock()
        self._unsynced: dict[int, Segment] = {}
        self._dir_dirty = False
        # Tail cache of the most recent entries: contiguous ids [_cache_first, last].
        self._cache: dict[int, tuple[bytes, int]] = {}
        self._cache_first = self._last_entry_id + 1
        self._cache_bytes = 0
        self._closed = False

    @classmethod
    def open(
        cls,
        directory: Path | str,
        ledger_id: int,
        *,
        segment_max_bytes: int = DEFAULT_SEGMENT_MAX_BYTES,
        cache_max_bytes: int = DEFAULT_CACHE_MAX_BYTES,
        cache_budget: CacheBudget | None = None,
        files: FileLayer | None = None,
        label: str | None = None,
        reaper: Reaper | None = None,
    ) -> ManagedLedger:
        """Open (creating if needed) the ledger stored in ``directory``.

        The last segment is opened writable and recovered (torn tail truncated);
        older segments are opened read-only and indexed lazily. ``files`` is the file layer
        (default: :func:`~magnetar.storage.files.default_file_layer`). ``label`` (the topic name) is
        written next to the segments once, so that ``magnetar repair`` can rebuild lost metadata.
        ``reaper`` deletes the files of trimmed segments and of the deleted ledger, and runs the final
        sync and close of :meth:`close`, off this thread; an open waits for such a close of the same
        directory.
        """
        files = files if files is not None else default_file_layer()
        if segment_max_bytes <= 0:
            raise ValueError("segment_max_bytes must be positive")
        if cache_max_bytes < 0:
            raise ValueError("cache_max_bytes must not be negative")
        directory = Path(directory)
        wait_for_pending_close(directory)  # what a closing ledger appended counts as durable once synced
        directory.mkdir(parents=True, exist_ok=True)
        bases = sorted(
            base for name in os.listdir(directory) if (base := parse_segment_file_name(name)) is not None
        )
        created = not bases
        if created:
            bases = [0]
        segments: list[Segment] = []
        try:
            for base in bases[:-1]:
                segments.append(Segment.open(directory / segment_file_name(base), base, writable=False, files=files))
            last = bases[-1]
            segments.append(Segment.open(directory / segment_file_name(last), last, writable=True, files=files))
            if label is not None and not (directory / LABEL_FILE).exists():
                (directory / LABEL_FILE).write_text(label)
                created = True
            if created:
                files.sync_directory(directory)
        except BaseException:
            for segment in segments:
                segment.close()
            raise
        return cls(directory, ledger_id, segments, segment_max_bytes, cache_max_bytes, cache_budget, files, reaper)

    @property
    def ledger_id(self) -> int:
        """Identifier of this ledger (assigned by the metadata store)."""
        return self._ledger_id

    @property
    def directory(self) -> Path:
        """Directory holding the segment files."""
        return self._directory

    @property
    def first_entry_id(self) -> int:
        """Oldest entry id still stored; equals ``next_entry_id`` when the ledger is empty."""
        return self._bases[0]

    @property
    def last_entry_id(self) -> int:
        """Newest entry id, or ``first_entry_id - 1`` (-1 for a new ledger) when empty."""
        return self._last_entry_id

    @property
    def next_entry_id(self) -> int:
        """Entry id the next append will get."""
        return self._last_entry_id + 1

    @property
    def last_durable_entry_id(self) -> int:
        """Highest entry id covered by a completed sync (everything recovered at open counts)."""
        with self._lock:
            return self._durable

    @property
    def size_bytes(self) -> int:
        """Total size of the segment files."""
        return sum(s.size_bytes for s in self._segments)

    @property
    def entry_count(self) -> int:
        """Number of entries currently stored."""
        return self.next_entry_id - self.first_entry_id

    @property
    def segment_count(self) -> int:
        """Number of segment files."""
        return len(self._segments)

    @property
    def closed(self) -> bool:
        """Whether the ledger was closed."""
        return self._closed

    @property
    def fenced(self) -> bool:
        """Whether a failed sync fenced the ledger (appends refused until :meth:`recover`)."""
        return self._fenced is not None

    def append(self, data: bytes | bytearray | memoryview, crc: int | None = None) -> int:
        """Write one entry (not yet durable, see :meth:`sync`) and return its entry id.

        ``crc`` is the CRC32C of ``data`` when the caller already knows it (it is
        trusted, not verified); it is computed otherwise.
        """
        self._check_open()
        if self._fenced is not None:
            raise LedgerFencedError(f"ledger {self._ledger_id} is fenced after a failed sync: {self._fenced}")
        if crc is None:
            crc = crc32c(data)
        size = memoryview(data).nbytes
        try:
            active = self._active
            if active.entry_count > 0 and active.size_bytes + RECORD_OVERHEAD + size > self._segment_max_bytes:
                active = self._roll()
            entry_id = active.append(data, crc)
        except (OSError, StorageError) as exc:
            storage_health.write_failed(f"append to ledger {self._ledger_id}", exc)
            if isinstance(exc, StorageError):
                raise
            raise StorageError(f"append to ledger {self._ledger_id} failed: {exc}") from exc
        storage_health.write_succeeded()
        with self._lock:
            self._last_entry_id = entry_id
            self._unsynced[active.base_entry_id] = active
        if self._cache_max_bytes > 0:
            self._cache_put(entry_id, bytes(data), crc)
        else:
            self._cache_first = entry_id + 1
        return entry_id

    def sync(self) -> int:
        """Make every appended entry durable and return the last durable entry id.

        Safe to call from a worker thread while another thread appends: only the
        entries appended before the call started are reported durable.

        A failed sync is never retried (after a failed fsync the kernel may have dropped the dirty
        pages and a second fsync would succeed without writing them): the ledger is fenced and
        raises LedgerFencedError until :meth:`recover` cut it back to what is known durable.
        """
        with self._sync_mutex:
            with self._lock:
                if self._fenced is not None:
                    raise LedgerFencedError(f"ledger {self._ledger_id} is fenced after a failed sync: {self._fenced}")
                target = self._last_entry_id
                pending = list(self._unsynced.values())
                self._unsynced.clear()
                dir_dirty, self._dir_dirty = self._dir_dirty, False
                # Duplicated descriptors stay valid even if trim/close closes the originals.
                fds = [self._files.dup(s.fileno()) for s in pending if not s.closed]
            try:
                for fd in fds:
                    self._files.datasync(fd)
                if dir_dirty:
                    self._files.sync_directory(self._directory)
            except OSError as exc:
                with self._lock:
                    self._fenced = exc
                storage_health.write_failed(f"sync of ledger {self._ledger_id}", exc)
                storage_health.ledger_fenced()
                raise LedgerFencedError(f"sync of ledger {self._ledger_id} failed: {exc}") from exc
            finally:
                for fd in fds:
                    self._files.close(fd)
            with self._lock:
                if target > self._durable:
                    self._durable = target
                return self._durable

    def recover(self) -> int:
        """Reopen a fenced ledger from what is known durable; returns the last entry id kept.

        Every entry after the last durable one (none of them was ever confirmed) is cut off the
        segment files, and the cut is synced; then appends are accepted again. Raises StorageError
        (the ledger stays fenced) when that fails too. Call it on the loop thread, once the
        publishes waiting on the failed sync were failed.
        """
        self._check_open()
        with self._sync_mutex:
            if self._fenced is None:
                return self._last_entry_id
            keep = self._durable + 1
            try:
                self._cut_from(keep)
            except OSError as exc:
                storage_health.write_failed(f"recovery of ledger {self._ledger_id}", exc)
                raise StorageError(f"ledger {self._ledger_id} cannot be recovered: {exc}") from exc
            with self._lock:
                self._last_entry_id = keep - 1
                self._unsynced.clear()
                self._fenced = None
            log.warning("ledger %d recovered: entries from %d on were not durable and were dropped", self._ledger_id, keep)
            return keep - 1

    def _cut_from(self, keep: int) -> None:
        """Remove entries ``>= keep`` from the files (and the cache), syncing the result."""
        while self._cache and self._cache_first + len(self._cache) - 1 >= keep:
            last = self._cache_first + len(self._cache) - 1
            data, _ = self._cache.pop(last)
            self._cache_bytes -= len(data)
            if self._cache_budget is not None:
                self._cache_budget.used -= len(data)
        self._cache_first = min(self._cache_first, keep)
        removed = False
        while len(self._segments) > 1 and self._bases[-1] >= keep:
            with self._lock:
                segment = self._segments.pop()
                self._bases.pop()
            segment.delete()
            removed = True
        last = self._segments[-1]
        if not last.writable:
            last.close()
            last = Segment.open(last.path, last.base_entry_id, writable=True, files=self._files)
            with self._lock:
                self._segments[-1] = last
        last.truncate(keep)
        self._active = last
        if removed:
            self._files.sync_directory(self._directory)

    def read(self, entry_id: int) -> Entry:
        """Return one entry, from the tail cache when possible."""
        self._check_open()
        self._check_range(entry_id, entry_id)
        cached = self._cache.get(entry_id)
        if cached is not None:
            return Entry(entry_id, cached[0], cached[1])
        try:
            data, crc = self._segment_for(entry_id).read(entry_id)
        except EntryNotFoundError as exc:
            raise self._lost(entry_id, entry_id) from exc
        return Entry(entry_id, data, crc)

    def read_range(self, first: int, last: int, max_bytes: int | None = None) -> list[Entry]:
        """Return entries ``first..last`` inclusive (empty when ``last < first``).

        With ``max_bytes``, stops before the entry that would push the total data size
        over ``max_bytes``, but always returns at least one entry.
        """
        self._check_open()
        if last < first:
            return []
        self._check_range(first, last)
        out: list[Entry] = []
        budget = max_bytes
        entry_id = first
        while entry_id <= last:
            if entry_id >= self._cache_first:
                data, crc = self._cache[entry_id]
                if budget is not None:
                    if out and len(data) > budget:
                        break
                    budget -= len(data)
                out.append(Entry(entry_id, data, crc))
                entry_id += 1
                continue
            index = bisect_right(self._bases, entry_id) - 1
            segment = self._segments[index]
            chunk_last = min(last, self._cache_first - 1)
            if index + 1 < len(self._bases):
                chunk_last = min(chunk_last, self._bases[index + 1] - 1)
            try:
                chunk = segment.read_many(entry_id, chunk_last, budget, at_least_one=not out)
            except EntryNotFoundError as exc:
                raise self._lost(entry_id, chunk_last) from exc
            for data, crc in chunk:
                out.append(Entry(entry_id, data, crc))
                entry_id += 1
                if budget is not None:
                    budget -= len(data)
            if entry_id <= chunk_last:
                break
        return out

    def read_intact(self, first: int, last: int) -> list[Entry]:
        """Entries ``first..last`` like :meth:`read_range`, leaving out the ones damaged on disk (for
        rebuilding state from the log: one damaged entry must not stop a topic from loading)."""
        try:
            return self.read_range(first, last)
        except CorruptEntryError:
            out = []
            for entry_id in range(first, last + 1):
                try:
                    out.append(self.read(entry_id))
                except CorruptEntryError as exc:
                    log.error("ledger %d: entry %d left out, damaged on disk: %s", self._ledger_id, entry_id, exc)
            return out

    def sealed_segments(self) -> list[SegmentInfo]:
        """Every segment but the active one, oldest first (what trimming may delete)."""
        self._check_open()
        out = []
        bases = self._bases
        for i, segment in enumerate(self._segments[:-1]):
            try:
                modified = os.stat(segment.path).st_mtime
            except OSError:
                modified = time.time()
            out.append(SegmentInfo(segment.base_entry_id, bases[i + 1] - 1, segment.size_bytes, modified))
        return out

    def bytes_from(self, entry_id: int) -> int:
        """Approximate bytes stored for entries ``>= entry_id`` (whole segments, plus a pro-rata share
        of the segment holding ``entry_id``)."""
        self._check_open()
        total = 0
        bases = self._bases
        next_id = self.next_entry_id
        for i, segment in enumerate(self._segments):
            end = bases[i + 1] if i + 1 < len(bases) else next_id
            if end <= entry_id:
                continue
            start = bases[i]
            if start >= entry_id:
                total += segment.size_bytes
            elif end > start:
                total += segment.size_bytes * (end - entry_id) // (end - start)
        return total

    def trim_before(self, entry_id: int) -> int:
        """Delete whole segments whose entries are all ``< entry_id`` (never the active one).

        Returns the bytes freed. The segments leave the ledger now, the reaper unlinks their files
        later; a crash before that leaves the ledger as a crash just before the trim would (starting
        lower, below every cursor), and the next trim deletes them again.
        """
        self._check_open()
        count = 0
        while count + 1 < len(self._bases) and self._bases[count + 1] <= entry_id:
            count += 1
        if count == 0:
            return 0
        with self._lock:
            doomed = self._segments[:count]
            del self._segments[:count]
            del self._bases[:count]
            for segment in doomed:
                self._unsynced.pop(segment.base_entry_id, None)
        new_first = self._bases[0]
        while self._cache_first < new_first and self._cache_first in self._cache:
            self._cache_evict_oldest()
        self._cache_first = max(self._cache_first, new_first)
        freed = sum(segment.size_bytes for segment in doomed)
        self._reaper(partial(delete_segment_files, doomed))
        return freed

    def close(self) -> None:
        """Refuse every call from now on; make what was appended durable (unless the ledger is fenced)
        and close the segment files, through the reaper (off this thread); idempotent."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            segments = list(self._segments)
        self._cache_clear()
        close_off_thread(self._directory, partial(self._sync_and_close, segments), self._reaper)

    def _sync_and_close(self, segments: list[Segment]) -> None:
        """(reaper) The end of :meth:`close`: the final sync, then the files closed whatever its outcome."""
        try:
            if self._fenced is None:
                self.sync()
        finally:
            for segment in segments:
                segment.close()

    def delete(self) -> None:
        """Close the ledger and remove its directory with every segment (through the reaper)."""
        with self._lock:
            segments = list(self._segments)
            self._unsynced.clear()
        if not self._closed:
            self._closed = True
            self._cache_clear()
        self._reaper(partial(remove_segment_directory, self._directory, segments))

    def __enter__(self) -> ManagedLedger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"ManagedLedger(id={self._ledger_id}, entries={self.first_entry_id}..{self._last_entry_id}, "
            f"segments={len(self._segments)})"
        )

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError(f"ledger {self._ledger_id} is closed")

    def _check_range(self, first: int, last: int) -> None:
        if first < self.first_entry_id or last > self._last_entry_id:
            raise EntryNotFoundError(
                f"ledger {self._ledger_id}: entries {first}..{last} outside stored range "
                f"{self.first_entry_id}..{self._last_entry_id}"
            )

    def _lost(self, first: int, last: int) -> CorruptEntryError:
        """The error for entries in the stored range that their segment cannot index (damage)."""
        return CorruptEntryError(f"ledger {self._ledger_id}: entries {first}..{last} are lost to a damaged segment")

    def _segment_for(self, entry_id: int) -> Segment:
        return self._segments[bisect_right(self._bases, entry_id) - 1]

    def _roll(self) -> Segment:
        """Seal the active segment and start a new one at the next entry id."""
        base = self._last_entry_id + 1
        segment = Segment.open(self._directory / segment_file_name(base), base, writable=True, files=self._files)
        self._active.seal()
        with self._lock:
            self._segments.append(segment)
            self._bases.append(base)
            self._dir_dirty = True
        self._active = segment
        return segment

    def _cache_put(self, entry_id: int, data: bytes, crc: int) -> None:
        self._cache[entry_id] = (data, crc)
        self._cache_bytes += len(data)
        budget = self._cache_budget
        if budget is not None:
            budget.used += len(data)
            while (self._cache_bytes > self._cache_max_bytes or budget.used > budget.limit) and self._cache:
                self._cache_evict_oldest()
        else:
            while self._cache_bytes > self._cache_max_bytes and self._cache:
                self._cache_evict_oldest()

    def _cache_evict_oldest(self) -> None:
        data, _ = self._cache.pop(self._cache_first)
        self._cache_bytes -= len(data)
        if self._cache_budget is not None:
            self._cache_budget.used -= len(data)
        self._cache_first += 1

    def _cache_clear(self) -> None:
        if self._cache_budget is not None:
            self._cache_budget.used -= self._cache_bytes
        self._cache.clear()
        self._cache_bytes = 0


def read_ledger_label(directory: Path) -> str | None:
    """The label a ledger was opened with (its topic name), or None."""
    try:
        return (Path(directory) / LABEL_FILE).read_text().strip() or None
    except OSError:
        return None
