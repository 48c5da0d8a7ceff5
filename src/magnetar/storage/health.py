"""What storage has met that an operator must know: write failures, a full disk, damaged entries.

One :data:`storage_health` object per process is updated by the storage layer (ledgers, cursors,
the metadata store) and read by the broker's health endpoint and ``/metrics``.
"""

from __future__ import annotations

import errno
import threading
import time
from dataclasses import dataclass, field


@dataclass
class StorageHealth:
    """Counters and the current condition of the storage of this process."""

    #: append or sync failures of ledgers (each failed sync fences its ledger)
    write_errors: int = 0
    #: ledgers fenced after a failed sync (recovered or not)
    ledgers_fenced: int = 0
    #: metadata (SQLite) writes that failed
    metadata_write_errors: int = 0
    #: entries a cursor skipped because they were damaged on disk (never served)
    damaged_entries_skipped: int = 0
    #: the last write failed because the disk is full (cleared by the next successful write, unless
    #: topics still wait for space)
    disk_full: bool = False
    #: topics that refuse producers until space is freed (the broker's no-space state)
    topics_without_space: int = 0
    #: description of the last storage failure, with its time (seconds since the epoch)
    last_error: str | None = None
    last_error_time: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def write_failed(self, what: str, exc: BaseException, *, metadata: bool = False) -> None:
        """Record a failed write (ledger append or sync, or a metadata transaction)."""
        with self._lock:
            if metadata:
                self.metadata_write_errors += 1
            else:
                self.write_errors += 1
            if is_disk_full(exc):
                self.disk_full = True
            self.last_error = f"{what}: {exc}"
            self.last_error_time = time.time()

    def write_succeeded(self) -> None:
        """A write reached the disk: the disk is not (or no longer) full, unless topics still wait
        for space (a small write may fit where an entry does not)."""
        if self.disk_full:
            with self._lock:
                self.disk_full = self.topics_without_space > 0

    def space_wanted(self, waiting: bool) -> None:
        """A topic starts (``waiting``) or stops waiting for free space; the disk counts as full while
        one waits, and no longer once the last one found space."""
        with self._lock:
            self.topics_without_space = max(0, self.topics_without_space + (1 if waiting else -1))
            self.disk_full = self.topics_without_space > 0

    def ledger_fenced(self) -> None:
        """A ledger was fenced after a failed sync."""
        with self._lock:
            self.ledgers_fenced += 1

    def entry_skipped(self, count: int = 1) -> None:
        """``count`` damaged entries were skipped by a cursor."""
        with self._lock:
            self.damaged_entries_skipped += count

    def problems(self) -> list[str]:
        """What is wrong now, for a health check (empty when storage is healthy)."""
        out = []
        if self.disk_full:
            out.append(f"disk full: {self.last_error}")
        return out

    def reset(self) -> None:
        """Forget everything (tests)."""
        with self._lock:
            self.write_errors = self.ledgers_fenced = self.metadata_write_errors = 0
            self.damaged_entries_skipped = self.topics_without_space = 0
            self.disk_full = False
            self.last_error = None
            self.last_error_time = 0.0


def is_disk_full(exc: BaseException | None) -> bool:
    """Whether an error (or one it was raised from) means no space is left on the device."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        text = str(exc).lower()
        if "database or disk is full" in text or "no space left" in text:
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


#: the storage health of this process
storage_health = StorageHealth()
