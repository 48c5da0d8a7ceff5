"""The durability of the metadata store's writes, made outside its write lock.

:class:`~magnetar.storage.metadata.MetadataStore` commits with ``synchronous=NORMAL`` and no
automatic checkpoint, so that nothing under its lock waits on the disk (a write on the broker's loop
would wait for it). :class:`WalSync` does what ``synchronous=FULL`` and the automatic checkpoint
did, on the thread that needs it, holding no lock a writer takes: an fdatasync of the write-ahead
log (every commit made before it is durable after it), then, once the log is large, a PASSIVE
checkpoint on a connection of its own (it waits for no reader or writer).

fdatasync, as SQLite's own unix VFS syncs its logs on Linux, not fsync: the log's frames and its
size are what a reader after a crash needs, its modification time is not. A log the checkpoints
restarted is overwritten in place, where fsync would also write the inode for the new mtime (on a
journaled ext4, a journal commit per admin write that a ledger's fdatasync then queues behind).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

from magnetar.storage.files import FileLayer, default_file_layer
from magnetar.storage.health import storage_health

#: a write-ahead log this large is checkpointed after a sync (SQLite's default autocheckpoint size,
#: 1,000 pages of 4 KiB)
CHECKPOINT_WAL_BYTES = 4 * 1024 * 1024


class WalSync:
    """fdatasync and checkpoint of one database's write-ahead log; thread-safe, holds no writer's lock."""

    def __init__(self, path: Path, files: FileLayer | None = None) -> None:
        """For the SQLite database at ``path`` (in WAL mode), its log synced through ``files`` (the
        default file layer when omitted: fault injection reaches it as it reaches the ledgers)."""
        self._path = path
        self._files = files if files is not None else default_file_layer()
        self._wal = f"{path}-wal"
        #: the connection that checkpoints (opened on first use), and who holds it
        self._checkpointer: sqlite3.Connection | None = None
        self._checkpoint_lock = threading.Lock()
        #: a log larger than this is checkpointed after a sync
        self.checkpoint_bytes = CHECKPOINT_WAL_BYTES

    def sync(self) -> None:
        """Make every commit made so far durable, then checkpoint the log once it is large; OSError
        (recorded in the storage health) when the sync fails."""
        try:
            size = self.fsync_wal()
        except OSError as exc:
            storage_health.write_failed(f"metadata sync of {self._wal}", exc, metadata=True)
            raise
        if size > self.checkpoint_bytes:
            self.checkpoint()

    def fsync_wal(self) -> int:
        """fdatasync the log file (a checkpoint that restarted it synced the database first, so what
        it held is durable either way); returns its size. Opened for each sync: SQLite removes and
        makes the file again when its last connection closes, which a descriptor kept open would miss."""
        fd = self._files.open(self._wal, os.O_RDONLY)
        try:
            self._files.datasync(fd)
            return self._files.size(fd)
        finally:
            self._files.close(fd)

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
