"""A ledger's syncs in parts, and the order they end in.

A sync of a :class:`~magnetar.storage.ledger.ManagedLedger` is begun (its queued records written,
the files to fdatasync taken), run (the fdatasyncs, on any thread) and ended (the ledger learns how
far it is durable). A begun sync no longer holds the ledger's other writes: the next sync may write
while this one's fdatasync runs (the committer's pipelined rounds). What keeps that durable:

- an entry is confirmed only by the end of a sync that took it, whose fdatasync began after the
  entry's write returned (the same sync wrote it, before it was handed out to run);
- syncs end in the order they began (:class:`SyncOrder`: an end waits for every earlier one), so
  ``last_durable_entry_id`` never passes an entry whose own sync has not ended well;
- a failed fdatasync fences the ledger and starts a new epoch: every sync begun before it (written,
  maybe already fdatasynced) ends with :class:`SyncSupersededError` and confirms nothing, as does a
  sync begun while the ledger is fenced. Their entries were appended before the failure was
  reported, so the report of the failed sync (its LedgerFencedError) already covers them;
- a failed write fences the ledger without a new epoch (the syncs begun before it wrote whole
  records and may end well), and ``recover`` waits for every begun sync to end before it cuts the
  ledger back to what is durable;
- two failures can fence the ledger before either is reported (round k's fdatasync and round k+1's
  write, both in flight): each raises a :class:`LedgerFencedError` of the same :class:`FencePeriod`,
  which ``recover`` ends. The first report fails every publish waiting and recovers; the second is
  then :attr:`LedgerFencedError.recovered` and must be passed over, or it would fail publishes made
  after the recovery, whose entries a later sync makes durable.
"""

from __future__ import annotations

import threading
from collections import deque
from pathlib import Path

from magnetar.storage.files import FileLayer
from magnetar.storage.segment import StorageError

__all__ = ["FencePeriod", "LedgerFencedError", "LedgerSync", "SyncOrder", "SyncSupersededError"]


class FencePeriod:
    """The time a ledger stays fenced, from its first failure to the :meth:`ManagedLedger.recover` that
    ends it; every failure in it raises a LedgerFencedError naming it."""

    __slots__ = ("recovered",)

    def __init__(self) -> None:
        #: set by the recovery that ended the period
        self.recovered = False


class LedgerFencedError(StorageError):
    """A sync of the ledger failed: it accepts no appends until :meth:`ManagedLedger.recover`."""

    def __init__(self, message: str, period: FencePeriod | None = None) -> None:
        super().__init__(message)
        self._period = period

    @property
    def recovered(self) -> bool:
        """Whether the ledger was recovered since this failure fenced it: an earlier report of the same
        fencing failed every publish it concerns, and this one must not fail later ones."""
        return self._period is not None and self._period.recovered


class SyncSupersededError(LedgerFencedError):
    """A sync that began before the ledger was fenced (or while it was): it confirms nothing, and the
    failure that fenced the ledger was reported by the sync that failed (a committer passes it over)."""


class LedgerSync:
    """One sync of a ledger between :meth:`ManagedLedger.begin_sync` and :meth:`ManagedLedger.end_sync`:
    its records are written; the fdatasyncs that make them durable are still to :meth:`run`."""

    __slots__ = ("_files", "target", "fds", "directory", "error", "epoch")

    def __init__(self, files: FileLayer, target: int, fds: list[int], directory: Path | None, epoch: int) -> None:
        """What :meth:`ManagedLedger.begin_sync` took: the last entry id written, duplicated
        descriptors of the segments to fdatasync, the directory to sync (None: none), and the
        ledger's epoch when it began (:class:`SyncOrder`)."""
        self._files = files
        #: the last entry id durable once the sync ran without error
        self.target = target
        self.fds = fds
        self.directory = directory
        #: what the fdatasync raised (None: it succeeded or did not run yet)
        self.error: BaseException | None = None
        self.epoch = epoch

    @property
    def needed(self) -> bool:
        """Whether :meth:`run` has anything to sync."""
        return bool(self.fds) or self.directory is not None

    def run(self) -> None:
        """fdatasync the written segments (and the directory when it changed); any thread. Never
        raises: an error is kept for :meth:`ManagedLedger.end_sync`."""
        try:
            for fd in self.fds:
                self._files.datasync(fd)
            if self.directory is not None:
                self._files.sync_directory(self.directory)
        except BaseException as exc:  # reported by end_sync, on the thread that ends the sync
            self.error = exc


class SyncOrder:
    """The syncs of one ledger begun and not ended yet, oldest first, and the ledger's epoch.

    Every method is called holding the ledger's lock (``lock``, which :meth:`wait_turn` releases
    while it waits).
    """

    def __init__(self, lock: threading.Lock) -> None:
        self._turn = threading.Condition(lock)
        self._begun: deque[LedgerSync] = deque()
        #: threads in wait_turn() or wait_all()
        self._waiting = 0
        #: bumped by each failed fdatasync: a sync of an older epoch confirms nothing
        self.epoch = 0
        #: the fencing under way (None: the ledger is not fenced)
        self._period: FencePeriod | None = None

    def fence_period(self) -> FencePeriod:
        """(holding the lock) The ledger is fenced by a failure: the fencing under way, begun now if none is."""
        if self._period is None:
            self._period = FencePeriod()
        return self._period

    def recovered(self) -> None:
        """(holding the lock) The ledger was recovered: the fencing under way ended."""
        if self._period is not None:
            self._period.recovered = True
            self._period = None

    def began(self, sync: LedgerSync) -> None:
        """(holding the lock) ``sync`` was begun, after every sync already in."""
        self._begun.append(sync)

    def wait_turn(self, sync: LedgerSync) -> None:
        """(holding the lock) Wait until every sync begun before ``sync`` ended."""
        while self._begun[0] is not sync:
            self._wait()

    def ended(self, sync: LedgerSync) -> None:
        """(holding the lock, after :meth:`wait_turn`) ``sync``, the oldest, ended: let the next one end."""
        self._begun.popleft()
        if self._waiting:
            self._turn.notify_all()

    def wait_all(self) -> None:
        """(holding the lock) Wait until every sync begun ended."""
        while self._begun:
            self._wait()

    def _wait(self) -> None:
        self._waiting += 1
        try:
            self._turn.wait()
        finally:
            self._waiting -= 1
