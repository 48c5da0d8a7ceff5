"""The managed ledger: the append-only entry log of one topic, split into segment files."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import TracebackType

from magnetar.checksum import crc32c
from magnetar.storage.closing import Reaper, close_off_thread, wait_for_pending_close
from magnetar.storage.entries import CacheBudget, Entry, SegmentInfo, owned_entry
from magnetar.storage.entry_reader import EntryReader, decoding, decoding_each
from magnetar.storage.files import FileLayer, default_file_layer
from magnetar.storage.health import storage_health
from magnetar.storage.ledger_recovery import Recovery
from magnetar.storage.ledger_sync import LedgerFencedError, LedgerSync, SyncOrder, SyncSupersededError
from magnetar.storage.read_thread import ReadThread
from magnetar.storage.segment import (
    MAX_RECORD_BYTES,
    RECORD_OVERHEAD,
    EntryNotFoundError,
    Segment,
    StorageError,
    delete_segment_files,
    open_ledger_segments,
    remove_segment_directory,
)
from magnetar.storage.segment_chain import DEFAULT_SEGMENT_MAX_BYTES, RolloverPolicy, SegmentChain
from magnetar.storage.tail_cache import TailCache
from magnetar.storage.write_queue import WriteQueue

__all__ = [
    "CacheBudget", "Entry", "EntryNotFoundError", "LedgerFencedError", "LedgerSync", "ManagedLedger", "Reaper",
    "RolloverPolicy", "SegmentInfo", "StorageError", "SyncSupersededError",
]

log = logging.getLogger("magnetar.storage.ledger")


DEFAULT_CACHE_MAX_BYTES = 32 * 1024 * 1024
_SYNC_OF = "sync of"


def _run_at_once(job: Callable[[], None]) -> None:
    job()


class ManagedLedger:
    """Append-only log of entries with consecutive ids, stored as segment files in a directory.

    Threading: ``append``, the reads, ``trim_before``, ``close`` and ``delete`` must be called from a
    single thread (the event loop). ``sync`` and ``flush`` may run concurrently in a worker thread
    (they write what ``append`` queued, see :mod:`magnetar.storage.write_queue`), and the reaper's
    jobs (deleting the files ``trim_before`` and ``delete`` let go, the final sync and close of
    ``close``) in another.
    """

    def __init__(
        self,
        directory: Path,
        ledger_id: int,
        segments: list[Segment],
        rollover: RolloverPolicy,
        cache_max_bytes: int,
        cache_budget: CacheBudget | None = None,
        files: FileLayer | None = None,
        reaper: Reaper | None = None,
        write_behind: bool = True,
        reads: ReadThread | None = None,
    ) -> None:
        """Wrap opened segments (the last one writable); use :meth:`ManagedLedger.open`."""
        self._files = files if files is not None else default_file_layer()
        self._reaper: Reaper = reaper if reaper is not None else _run_at_once
        self._reads = reads
        #: the failed sync that fenced the ledger (None: appends are accepted)
        self._fenced: BaseException | None = None
        self._directory = directory
        self._ledger_id = ledger_id
        # Guards the state shared with sync(): the chain's segments, bases and written, _unsynced, the
        # queue, _last_entry_id, _durable. Never held across I/O that can block for long.
        self._lock = threading.Lock()
        self._chain = SegmentChain(directory, segments, rollover, self._files, self._lock)
        self._last_entry_id = segments[-1].next_entry_id - 1
        self._durable = self._last_entry_id
        self._queue = WriteQueue()
        self._write_behind = write_behind
        # Held while a sync or flush writes and takes what to fdatasync (not during the fdatasync).
        self._sync_mutex = threading.Lock()
        self._syncs = SyncOrder(self._lock)
        #: the last entry id a begun sync took (what :attr:`sync_needed` compares with)
        self._taken = self._last_entry_id
        self._unsynced: dict[int, Segment] = {}
        self.cache = TailCache(cache_max_bytes, cache_budget, self._last_entry_id + 1)
        self._reader = EntryReader(ledger_id, self._chain, self.cache, self._queue)
        self._closed = False
        self._recovery = Recovery(self._cut_to_durable, self._reopened, reads)

    @classmethod
    def open(
        cls,
        directory: Path | str,
        ledger_id: int,
        *,
        segment_max_bytes: int = DEFAULT_SEGMENT_MAX_BYTES,
        min_rollover_seconds: float = 0.0,
        max_rollover_seconds: float = 0.0,
        cache_max_bytes: int = DEFAULT_CACHE_MAX_BYTES,
        cache_budget: CacheBudget | None = None,
        files: FileLayer | None = None,
        label: str | None = None,
        reaper: Reaper | None = None,
        write_behind: bool = True,
        reads: ReadThread | None = None,
    ) -> ManagedLedger:
        """Open (creating if needed) the ledger stored in ``directory``: the last segment writable and
        recovered (torn tail truncated), the older ones read-only, indexed lazily. ``files``: the file
        layer (default: :func:`~magnetar.storage.files.default_file_layer`); ``label`` (the topic name)
        is written next to the segments once, for ``magnetar repair``. ``reaper`` deletes the files of
        trimmed segments and of the deleted ledger, and runs the final sync and close of :meth:`close`,
        off this thread (an open waits for such a close of the same directory). ``write_behind=False``:
        :meth:`append` writes at once. ``reads`` runs :meth:`read_later`'s file reads and
        :meth:`recover_later`'s cut off this thread (None: on this thread, or declined). Roll-over as
        Pulsar's ledgers (:mod:`magnetar.storage.segment_chain`): past ``segment_max_bytes`` at the next
        entry, or at a :meth:`roll_if_due` once full or ``max_rollover_seconds`` old (0: no age
        limit), never sooner than ``min_rollover_seconds`` after the segment started (or the open).
        """
        files = files if files is not None else default_file_layer()
        rollover = RolloverPolicy(segment_max_bytes, max_rollover_seconds, min_rollover_seconds)
        if cache_max_bytes < 0:
            raise ValueError("cache_max_bytes must not be negative")
        directory = Path(directory)
        wait_for_pending_close(directory)  # what a closing ledger appended counts as durable once synced
        # a new directory is synced by the first sync (the commit thread's), as after a roll-over
        segments, unsynced = open_ledger_segments(directory, files, label, sync_directory=False)
        ledger = cls(
            directory, ledger_id, segments, rollover, cache_max_bytes, cache_budget, files, reaper, write_behind, reads
        )
        ledger._chain.dir_dirty = unsynced
        return ledger

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
        return self._chain.bases[0]

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
        """Total size of the segment files, records not written yet included."""
        with self._lock:
            return sum(s.size_bytes for s in self._chain.segments) + self._queue.bytes

    def _size_of(self, segment: Segment) -> int:
        """(holding _lock) The size of a segment's file once its queued records are written."""
        return segment.size_bytes + self._queue.segment_bytes.get(segment.base_entry_id, 0)

    @property
    def entry_count(self) -> int:
        """Number of entries currently stored."""
        return self.next_entry_id - self.first_entry_id

    @property
    def segment_count(self) -> int:
        """Number of segment files."""
        return len(self._chain.segments)

    @property
    def closed(self) -> bool:
        """Whether the ledger was closed."""
        return self._closed

    @property
    def fenced(self) -> bool:
        """Whether a failed sync fenced the ledger (appends refused until :meth:`recover`)."""
        return self._fenced is not None

    def append(self, data: bytes | bytearray | memoryview, crc: int | None = None) -> int:
        """Queue one entry and return its entry id: the next :meth:`sync` (or :meth:`flush`) writes
        it (a failure fences the ledger), the next :meth:`sync` makes it durable. ``crc``: the CRC32C
        of ``data`` when the caller knows it (trusted), else computed. ``data`` is kept as
        :func:`~magnetar.storage.entries.owned_entry` says (a large read-only view is not copied).
        """
        self._check_open()
        self._check_not_fenced()
        if crc is None:
            crc = crc32c(data)
        elif not 0 <= crc <= 0xFFFFFFFF:
            raise ValueError(f"crc {crc} is not an unsigned 32-bit value")
        record = owned_entry(data)
        size = len(record)
        if size > MAX_RECORD_BYTES:
            raise ValueError(f"entry of {size} bytes exceeds the {MAX_RECORD_BYTES} byte maximum")
        chain = self._chain
        if chain.active_bytes + RECORD_OVERHEAD + size > chain.max_bytes and chain.roll_due(RECORD_OVERHEAD + size):
            self._roll()
        entry_id = self._last_entry_id + 1
        with self._lock:
            self._queue.add(chain.active, entry_id, record, crc)
            self._last_entry_id = entry_id
        chain.active_bytes += RECORD_OVERHEAD + size
        chain.active_count += 1
        self.cache.put(entry_id, record, crc)
        if not self._write_behind:
            self.flush()
        return entry_id

    def roll_if_due(self) -> bool:
        """Roll the active segment over if it holds entries, is full or past its maximum age, and is
        past its minimum age (Pulsar's periodic roll-over check); returns whether it rolled. A fenced
        ledger does not roll (it takes no appends either)."""
        self._check_open()
        if self._fenced is not None or not self._chain.roll_due(0):
            return False
        self._roll()
        return True

    def _roll(self) -> None:
        """Seal the active segment and start a new one at the next entry id."""
        try:
            self._chain.roll(self._last_entry_id + 1)
        except (OSError, StorageError) as exc:
            storage_health.write_failed(f"roll-over of ledger {self._ledger_id}", exc)
            if isinstance(exc, StorageError):
                raise
            raise StorageError(f"roll-over of ledger {self._ledger_id} failed: {exc}") from exc

    def flush(self) -> int:
        """Write every entry appended so far to its segment file, without fdatasync (fsync "never");
        returns the last entry id written. A failed write fences the ledger, as a failed sync does;
        on a fenced ledger it raises :class:`SyncSupersededError`."""
        with self._sync_mutex:
            self._check_syncable()
            return self._write_queued()

    def _write_queued(self, keep: dict[int, int] | None = None) -> int:
        """(holding _sync_mutex) Write the queued records, one writev per segment; the last entry id
        written. A failure fences the ledger (LedgerFencedError) and cuts the file back. ``keep``
        takes the duplicated descriptors written through, by id of their segment, to fdatasync."""
        fds: list[int | None] = []
        batches: list = []
        chain = self._chain
        try:
            with self._lock:
                batches = self._queue.take()
                # Duplicated descriptors stay valid even if delete/close closes the originals.
                for segment, _, _ in batches:
                    fds.append(None if segment.closed else self._files.dup(segment.fileno()))
            for (segment, first, records), fd in zip(batches, fds, strict=True):
                if fd is None:  # the ledger was deleted meanwhile
                    continue
                positions, end = segment.write_records(fd, records)
                with self._lock:  # readers look at the index, then chain.written, then the queue
                    segment.index_written(positions, end)
                    chain.written = max(chain.written, first + len(records) - 1)
                    self._queue.written(segment, first, records)
                    if segment.base_entry_id >= chain.bases[0]:  # not trimmed meanwhile
                        self._unsynced[segment.base_entry_id] = segment
        except (OSError, StorageError) as exc:
            raise self._fence("write to", exc) from exc
        finally:
            for (segment, _, _), fd in zip(batches, fds, strict=False):
                if fd is not None and keep is not None and id(segment) not in keep:
                    keep[id(segment)] = fd
                elif fd is not None:
                    self._files.close(fd)
        if fds:
            storage_health.write_succeeded()
        with self._lock:
            return self._chain.written

    def _fence(self, what: str, exc: BaseException) -> LedgerFencedError:
        """Fence the ledger after a failed write or sync (``what``: "write to", "sync of"), report it,
        and return the error to raise. A failed sync starts a new epoch (see ledger_sync.py) in the
        same step, so that a sync begins either before the fence (and ends superseded) or after it."""
        with self._lock:
            self._fenced = exc
            if what == _SYNC_OF:
                self._syncs.epoch += 1
            period = self._syncs.fence_period()
        storage_health.write_failed(f"{what} ledger {self._ledger_id}", exc)
        storage_health.ledger_fenced()
        return LedgerFencedError(f"{what} ledger {self._ledger_id} failed: {exc}", period)

    @property
    def sync_needed(self) -> bool:
        """Whether entries were appended after the last begun sync took its target (any thread)."""
        return self._last_entry_id > self._taken

    def sync(self) -> int:
        """Make every appended entry durable and return the last durable entry id.

        Safe to call from a worker thread while another thread appends: only the
        entries appended before the call started are reported durable.

        A failed sync is never retried (after a failed fsync the kernel may have dropped the dirty
        pages and a second fsync would succeed without writing them): the ledger is fenced and
        raises LedgerFencedError until :meth:`recover` cut it back to what is known durable.
        """
        pending = self.begin_sync()
        pending.run()
        return self.end_sync(pending)

    def begin_sync(self) -> LedgerSync:
        """The first part of :meth:`sync`: write the queued records and take the files to fdatasync.

        The caller runs the returned :meth:`LedgerSync.run` (on any thread) and must then pass it to
        :meth:`end_sync`. The next sync may begin (write) before this one ended: syncs end in the
        order they began (ledger_sync.py says why that keeps every confirmed entry durable). A
        failed write fences the ledger and raises LedgerFencedError, a fenced ledger
        :class:`SyncSupersededError` (nothing to end then).
        """
        written: dict[int, int] = {}
        with self._sync_mutex:
            try:
                epoch = self._syncs.epoch  # read before the fence check: a fence after it supersedes this sync
                self._check_syncable()
                target = self._write_queued(written)
                with self._lock:
                    pending = list(self._unsynced.values())
                    self._unsynced.clear()
                    dir_dirty, self._chain.dir_dirty = self._chain.dir_dirty, False
                    # Duplicates stay valid even if trim/close closes the originals (the writes' serve again).
                    fds = [written.pop(id(s)) if id(s) in written else self._files.dup(s.fileno())
                           for s in pending if not s.closed]
                    sync = LedgerSync(self._files, target, fds, self._directory if dir_dirty else None, epoch)
                    self._syncs.began(sync)
                    self._taken = target
            finally:
                for fd in written.values():
                    self._files.close(fd)
        return sync

    def end_sync(self, pending: LedgerSync) -> int:
        """The end of :meth:`sync` once ``pending`` (from :meth:`begin_sync`) ran, after every sync of
        the ledger begun before it ended (it waits for them): the last durable entry id, or
        LedgerFencedError when its fdatasync failed (the ledger is fenced), SyncSupersededError when
        an earlier one failed since it began."""
        for fd in pending.fds:
            self._files.close(fd)
        error = pending.error
        with self._lock:
            self._syncs.wait_turn(pending)
            if error is None and pending.epoch == self._syncs.epoch:
                if pending.target > self._durable:
                    self._durable = pending.target
                self._syncs.ended(pending)
                return self._durable
        try:
            if pending.epoch != self._syncs.epoch:
                raise SyncSupersededError(f"ledger {self._ledger_id}: an earlier sync failed, nothing confirmed")
            # any failure fences, not only an OSError: the publishes waiting are failed, so no later
            # sync may confirm their entries
            raise self._fence(_SYNC_OF, error) from error  # type: ignore[arg-type]
        finally:
            with self._lock:
                self._syncs.ended(pending)

    def recover(self) -> int:
        """Reopen a fenced ledger from what is durable, once the publishes waiting on the failed sync
        failed: what is after it (never confirmed) cut off the files, the cut synced; the last entry id
        kept, or StorageError (still fenced). It waits for the syncs begun and the disk, on this thread:
        the event loop calls :meth:`recover_later`."""
        self._check_open()
        return self._last_entry_id if self._fenced is None else self._recovery.now()

    def recover_later(self, done: Callable[[int | BaseException], None]) -> None:
        """:meth:`recover` with its waits on the read thread (ledger_recovery.py): ``done`` gets the last
        entry id kept, or the StorageError (the ledger stays fenced; closed meanwhile), on this thread;
        at once when the ledger is not fenced or has no read thread. Until then the ledger stays fenced
        and :meth:`trim_before` releases nothing."""
        self._check_open()
        if self._fenced is None:
            done(self._last_entry_id)
        else:
            self._recovery.start(done)

    def _cut_to_durable(self) -> int:
        """(any thread) After every sync begun (one begun before a failed write may end well), cut what
        is not durable off the files; the first entry id cut. A reaper's close or delete waits for it."""
        with self._sync_mutex:
            if self._closed:
                raise StorageError(f"ledger {self._ledger_id} was closed before its recovery")
            with self._lock:
                self._syncs.wait_all()
                keep = self._durable + 1
                self._queue.clear()
            self._chain.cut_back(keep, self._ledger_id)
            with self._lock:
                self._taken = min(self._taken, keep - 1)
                self._chain.written = min(self._chain.written, keep - 1)
                self._unsynced.clear()
            return keep

    def _reopened(self, keep: int) -> int | BaseException:
        """(owner's thread) The files were cut from ``keep``: take appends again from there."""
        if self._closed:
            return StorageError(f"ledger {self._ledger_id} was closed before its recovery")
        self.cache.cut_from(keep)
        with self._lock:
            self._last_entry_id = keep - 1
            self._fenced = None
            self._syncs.recovered()  # a report of the fencing still on its way is passed over
        log.warning("ledger %d recovered: entries from %d on were not durable and were dropped", self._ledger_id, keep)
        return keep - 1

    def read(self, entry_id: int) -> Entry:
        """Return one entry, from the tail cache when possible."""
        self._check_open()
        self._check_range(entry_id, entry_id)
        return self._reader.read(entry_id)

    def read_range(self, first: int, last: int, max_bytes: int | None = None) -> list[Entry]:
        """Return entries ``first..last`` inclusive (empty when ``last < first``).

        With ``max_bytes``, stops before the entry that would push the total data size
        over ``max_bytes``, but always returns at least one entry.
        """
        self._check_open()
        if last < first:
            return []
        self._check_range(first, last)
        return self._reader.read_range(first, last, max_bytes)

    def in_memory(self, first: int) -> bool:
        """Whether a read from ``first`` on is served from memory (the tail cache or the write queue),
        without a file read; also True when the ledger has no read thread (nothing else to do)."""
        return first >= self.cache.first or first > self._chain.written or self._reads is None

    def read_later(
        self, first: int, last: int, max_bytes: int | None, done: Callable[[list[Entry] | BaseException], None]
    ) -> bool:
        """Read entries ``first..last`` from the files on the read thread (as :meth:`read_range`, only
        those written to the files: maybe fewer); ``done`` gets the list or the error (EntryNotFoundError:
        trimmed meanwhile; CorruptEntryError; StorageError: closed) on this thread, which decodes them.
        False (nothing started) when the ledger has no read thread or is closed."""
        if self._reads is None or self._closed:
            return False
        return self._reads.submit(partial(self._reader.read_files, first, last, max_bytes), decoding(done))

    def read_ids_later(
        self, entry_ids: list[int], done: Callable[[tuple[list[Entry], list[int]] | BaseException], None]
    ) -> bool:
        """Read the given entries from the segment files on the read thread; ``done`` gets (the entries
        read, the ids that could not be: trimmed or damaged), or an error, on this thread. False
        (nothing started) when the ledger has no read thread or is closed."""
        if self._reads is None or self._closed:
            return False
        return self._reads.submit(partial(self._reader.read_ids_from_files, entry_ids), decoding_each(done))

    def read_intact(self, first: int, last: int) -> list[Entry]:
        """Entries ``first..last`` like :meth:`read_range`, leaving out the ones damaged on disk (for
        rebuilding state from the log: one damaged entry must not stop a topic from loading)."""
        self._check_open()
        if last < first:
            return []
        self._check_range(first, last)
        return self._reader.read_intact(first, last)

    def sealed_segments(self) -> list[SegmentInfo]:
        """Every segment but the active one, oldest first (what trimming may delete)."""
        self._check_open()
        return self._chain.sealed_infos(self._size_of)

    def bytes_from(self, entry_id: int) -> int:
        """Approximate bytes stored for entries ``>= entry_id`` (whole segments, plus a pro-rata share
        of the segment holding ``entry_id``)."""
        self._check_open()
        return self._chain.bytes_from(entry_id, self.next_entry_id, self._size_of)

    def trim_before(self, entry_id: int) -> int:
        """Delete whole segments whose entries are all ``< entry_id`` (never the active one).

        Returns the bytes freed. The segments leave the ledger now, the reaper unlinks their files
        later; a crash before that leaves the ledger as a crash just before the trim would (starting
        lower, below every cursor), and the next trim deletes them again.
        """
        self._check_open()
        count = 0 if self._recovery.under_way else self._chain.sealed_before(entry_id)  # the read thread cuts
        if count == 0:
            return 0
        with self._lock:
            doomed = self._chain.drop_oldest(count)
            for segment in doomed:
                self._unsynced.pop(segment.base_entry_id, None)
            # records still queued for them go with them (a batch the commit thread took already is
            # written through its own descriptor into the unlinked file)
            dropped = dict(self._queue.segment_bytes)
            self._queue.drop(doomed)
            self._chain.written = max(self._chain.written, self._chain.bases[0] - 1)
        new_first = self._chain.bases[0]
        self.cache.trim_before(new_first)
        freed = sum(segment.size_bytes + dropped.get(segment.base_entry_id, 0) for segment in doomed)
        self._reaper(partial(delete_segment_files, doomed))
        return freed

    def close(self) -> None:
        """Refuse every call from now on; make what was appended durable (unless the ledger is fenced)
        and close the segment files, through the reaper (off this thread); idempotent."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            segments = list(self._chain.segments)
        self.cache.clear()
        close_off_thread(self._directory, partial(self._sync_and_close, segments), self._reaper)

    def _sync_and_close(self, segments: list[Segment]) -> None:
        """(reaper) The end of :meth:`close`: the final sync, then the files closed whatever its outcome
        (a fenced ledger's after a recovery under way)."""
        with self._sync_mutex:  # after a recovery under way (one begun later finds the ledger closed)
            fenced = self._fenced is not None
        try:
            if not fenced:
                self.sync()
        finally:
            for segment in segments:
                segment.close()

    def delete(self) -> None:
        """Close the ledger and remove its directory with every segment (through the reaper)."""
        with self._lock:
            segments = list(self._chain.segments)
            self._unsynced.clear()
            self._queue.clear()
            self._chain.dir_dirty = False  # the directory goes: a later round must not sync it
        if not self._closed:
            self._closed = True
            self.cache.clear()
        self._reaper(partial(self._remove_files, segments))

    def _remove_files(self, segments: list[Segment]) -> None:
        """(reaper) The end of :meth:`delete`, after a recovery under way."""
        with self._sync_mutex:
            remove_segment_directory(self._directory, segments)

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
        return f"ManagedLedger(id={self._ledger_id}, entries={self.first_entry_id}..{self._last_entry_id})"

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError(f"ledger {self._ledger_id} is closed")

    def _check_range(self, first: int, last: int) -> None:
        if first < self.first_entry_id or last > self._last_entry_id:
            raise EntryNotFoundError(
                f"ledger {self._ledger_id}: entries {first}..{last} outside stored range "
                f"{self.first_entry_id}..{self._last_entry_id}"
            )

    def _check_not_fenced(self) -> None:
        if self._fenced is not None:
            raise LedgerFencedError(f"ledger {self._ledger_id} is fenced after a failed sync: {self._fenced}")

    def _check_syncable(self) -> None:
        if self._fenced is not None:
            raise SyncSupersededError(f"ledger {self._ledger_id} is fenced after a failed sync: {self._fenced}")


