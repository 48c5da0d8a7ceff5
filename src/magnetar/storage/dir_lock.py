"""One process per data directory: an exclusive OS lock on ``DATA_DIR/LOCK``.

Two brokers appending to the same ledgers give two messages the same id, and one of them is lost
at the next restart. Whoever opens a data directory (the broker service, ``magnetar repair``) takes
this lock first, before it creates or opens anything else in the directory, and holds it until it
has closed everything. The lock is ``flock(LOCK_EX | LOCK_NB)``: the kernel drops it when the
process dies (kill -9 included), so a crashed broker never leaves a stale lock behind; the pid
written into the file after locking only names the holder in the refusal.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

__all__ = ["LOCK_FILE_NAME", "DataDirLock", "DataDirLockedError"]

LOCK_FILE_NAME = "LOCK"


class DataDirLockedError(Exception):
    """Another process (or another broker of this process) holds the data directory."""

    def __init__(self, data_dir: Path, pid: int | None) -> None:
        super().__init__(data_dir, pid)
        self.data_dir = data_dir
        self.pid = pid

    def __str__(self) -> str:
        holder = f"process {self.pid}" if self.pid is not None else "another process"
        return f"data directory {self.data_dir} is in use by {holder}"


def _read_pid(fd: int) -> int | None:
    """The pid the holder wrote into the lock file (None while it has not written it yet)."""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None


class DataDirLock:
    """The exclusive lock of one data directory, held from :meth:`acquire` until :meth:`release`."""

    def __init__(self, data_dir: Path, fd: int) -> None:
        self.data_dir = data_dir
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, data_dir: Path | str, *, create: bool = True) -> DataDirLock:
        """Lock ``data_dir`` (created first when ``create``) or raise :class:`DataDirLockedError`,
        having changed nothing in it when the lock file was already there."""
        data_dir = Path(data_dir)
        if create:
            data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(data_dir / LOCK_FILE_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise DataDirLockedError(data_dir, pid) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(data_dir, fd)

    @property
    def held(self) -> bool:
        """Whether this lock is still held."""
        return self._fd is not None

    def release(self) -> None:
        """Give the directory up (closing the file drops the lock); idempotent."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> DataDirLock:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()
