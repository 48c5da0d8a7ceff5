"""The durability of the metadata store's writes, made outside its write lock.

:class:`~magnetar.storage.metadata.MetadataStore` commits with ``synchronous=NORMAL`` and no
automatic checkpoint, so that nothing under its lock waits on the disk (a write on the broker's loop
would wait for it). :class:`WalSync` does what ``synchronous=FULL`` and the automatic checkpoint
did, on the thread that needs it, holding no lock a writer takes: an fsync of the write-ahead log
(every commit made before it is durable after it), then, once the log is large, a PASSIVE checkpoint
on a connection of its own (it waits for no reader or writer).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

from magnetar.storage.health import storage_health

#: a write-ahead log this large is checkpointed after a sync (SQLite's default autocheckpoint size,
#: 1,000 pages of 4 KiB)
CHECKPOINT_WAL_BYTES = 4 * 1024 * 1024


class WalSync:
    """fsync and checkpoint of one database's write-ahead log; thread-safe, holds no writer's lock."""

    def __init__(self, path: Path) -> None:
        """For the SQLite database at ``path`` (in WAL mode)."""
        self._path = path
        self._wal = f"{path}-wal"
        #: the connection that checkpoints (opened on first use), and who holds it
        self._checkpointer: sqlite3.Connection | None = None
        self._checkpoint_lock = threading.Lock()
        #: a log larger than this is checkpointed after a sync
        self.checkpoint_bytes = CHECKPOINT_WAL_BYTES

    def sync(self) -> None:
        """Make every commit made so far durable, then checkpoint the log once it is large; OSError
        (recorded in the storage health) when the fsync fails."""
        try:
            size = self.fsync_wal()
        except OSError as exc:
            storage_health.write_failed(f"metadata sync of {self._wal}", exc, metadata=True)
            raise
        if size > self.checkpoint_bytes:
            self.checkpoint()

    def fsync_wal(self) -> int:
        """fsync the log file (a checkpoint that restarted it synced the database first, so what it
        held is durable either way); returns its size."""
        fd = os.open(self._wal, os.O_RDONLY)
        try:
            os.fsync(fd)
            return os.fstat(fd).st_size
        finally:
            os.close(fd)

    def checkpoint(self) -> None:
        """Copy the log into the database (PASSIVE) on the checkpointer's own connection; skipped
        when another thread is checkpointing."""
        if not self._checkpoint_lock.acquire(blocking=False):
            return
        try:
            if self._checkpointer is None:
                self._checkpointer = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
            self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        finally:
            self._checkpoint_lock.release()

    def close(self) -> None:
        """Close the checkpointer's connection (waits for a checkpoint under way)."""
        with self._checkpoint_lock:
            if self._checkpointer is not None:
                self._checkpointer.close()
                self._checkpointer = None
