"""The file system calls of the storage layer, behind one seam that tests replace to inject faults.

Segments and ledgers make every open, write, sync and truncate through a :class:`FileLayer`. The
default layer calls :mod:`os`; :class:`FaultyFileLayer` fails chosen calls with chosen errors
(ENOSPC, EIO, short writes), so the error paths run in unit tests. :func:`use_file_layer` swaps the
layer new ledgers get (for a broker started in-process).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

Buffer = bytes | bytearray | memoryview


class FileLayer:
    """The calls storage makes on files (plain :mod:`os` calls)."""

    def open(self, path: Path | str, flags: int, mode: int = 0o644) -> int:
        """Open a file; returns its descriptor."""
        return os.open(path, flags, mode)

    def close(self, fd: int) -> None:
        """Close a descriptor."""
        os.close(fd)

    def dup(self, fd: int) -> int:
        """Duplicate a descriptor."""
        return os.dup(fd)

    def writev(self, fd: int, buffers: Sequence[Buffer]) -> int:
        """Write buffers at the current position; returns the bytes written (maybe fewer)."""
        return os.writev(fd, buffers)

    def write(self, fd: int, data: Buffer) -> int:
        """Write at the current position; returns the bytes written (maybe fewer)."""
        return os.write(fd, data)

    def pread(self, fd: int, length: int, offset: int) -> bytes:
        """Read ``length`` bytes at ``offset``."""
        return os.pread(fd, length, offset)

    def datasync(self, fd: int) -> None:
        """Flush a file's data to stable storage (fdatasync where available)."""
        if hasattr(os, "fdatasync"):
            os.fdatasync(fd)
        else:
            os.fsync(fd)

    def fsync(self, fd: int) -> None:
        """Flush a file's data and metadata to stable storage."""
        os.fsync(fd)

    def truncate(self, fd: int, length: int) -> None:
        """Cut a file to ``length`` bytes."""
        os.ftruncate(fd, length)

    def seek(self, fd: int, offset: int) -> None:
        """Move a descriptor's position to ``offset`` from the start."""
        os.lseek(fd, offset, os.SEEK_SET)

    def size(self, fd: int) -> int:
        """Size of an open file."""
        return os.fstat(fd).st_size

    def sync_directory(self, directory: Path | str) -> None:
        """Persist the entries (creations, deletions) of a directory."""
        fd = self.open(directory, os.O_RDONLY)
        try:
            self.fsync(fd)
        finally:
            self.close(fd)


def fsync_path(path: Path | str) -> None:
    """fsync a file or a directory by its path: for whole-file writers outside the :class:`FileLayer` seam
    (the metadata database's making, the data directory's format stamp, backups, compacted ledgers)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class Fault:
    """One injected failure: calls of ``op`` (on paths containing ``path_part``) fail with ``error``
    after ``after`` matching calls succeeded, ``times`` times (-1: for ever). With ``short``, a write
    writes that many bytes instead of failing."""

    op: str
    error: int = errno.EIO
    after: int = 0
    times: int = 1
    path_part: str = ""
    short: int | None = None
    seen: int = 0
    fired: int = 0

    def fires(self) -> bool:
        """Count one matching call; whether it fails."""
        self.seen += 1
        if self.seen <= self.after or (0 <= self.times <= self.fired):
            return False
        self.fired += 1
        return True


class FaultyFileLayer(FileLayer):
    """A file layer that fails the calls its faults name (for tests of the error paths).

    Operations: ``open``, ``write`` (writev and write), ``datasync``, ``fsync``, ``truncate``,
    ``sync_directory``. Faults on descriptors match the path the descriptor was opened with.
    """

    def __init__(self) -> None:
        """No faults until :meth:`inject` adds some."""
        self.faults: list[Fault] = []
        self._paths: dict[int, str] = {}
        self.calls: dict[str, int] = {}

    def inject(self, op: str, error: int = errno.EIO, **kwargs: object) -> Fault:
        """Add a fault (see :class:`Fault`) and return it."""
        fault = Fault(op, error, **kwargs)  # type: ignore[arg-type]
        self.faults.append(fault)
        return fault

    def clear(self) -> None:
        """Remove every fault."""
        self.faults.clear()

    def _check(self, op: str, path: str) -> Fault | None:
        self.calls[op] = self.calls.get(op, 0) + 1
        firing = [f for f in self.faults if f.op == op and f.path_part in path and f.fires()]
        if not firing:
            return None
        fault = firing[0]
        if fault.short is None:
            raise OSError(fault.error, f"{os.strerror(fault.error)} (injected)", path)
        return fault

    def open(self, path: Path | str, flags: int, mode: int = 0o644) -> int:
        """Open, unless an ``open`` fault fires."""
        self._check("open", str(path))
        fd = super().open(path, flags, mode)
        self._paths[fd] = str(path)
        return fd

    def close(self, fd: int) -> None:
        """Close and forget the descriptor's path."""
        self._paths.pop(fd, None)
        super().close(fd)

    def dup(self, fd: int) -> int:
        """Duplicate, keeping the path for fault matching."""
        new = super().dup(fd)
        self._paths[new] = self._paths.get(fd, "")
        return new

    def writev(self, fd: int, buffers: Sequence[Buffer]) -> int:
        """Write, unless a ``write`` fault fires (a short fault writes a prefix only)."""
        fault = self._check("write", self._paths.get(fd, ""))
        if fault is not None and fault.short is not None:
            return super().write(fd, b"".join(bytes(b) for b in buffers)[: fault.short])
        return super().writev(fd, buffers)

    def write(self, fd: int, data: Buffer) -> int:
        """Write, unless a ``write`` fault fires."""
        fault = self._check("write", self._paths.get(fd, ""))
        if fault is not None and fault.short is not None:
            return super().write(fd, bytes(data)[: fault.short])
        return super().write(fd, data)

    def datasync(self, fd: int) -> None:
        """Sync, unless a ``datasync`` fault fires."""
        self._check("datasync", self._paths.get(fd, ""))
        super().datasync(fd)

    def fsync(self, fd: int) -> None:
        """Sync, unless an ``fsync`` fault fires."""
        self._check("fsync", self._paths.get(fd, ""))
        super().fsync(fd)

    def truncate(self, fd: int, length: int) -> None:
        """Truncate, unless a ``truncate`` fault fires."""
        self._check("truncate", self._paths.get(fd, ""))
        super().truncate(fd, length)

    def sync_directory(self, directory: Path | str) -> None:
        """Sync a directory, unless a ``sync_directory`` fault fires."""
        self._check("sync_directory", str(directory))
        super().sync_directory(directory)


_default_layer: FileLayer = FileLayer()


def default_file_layer() -> FileLayer:
    """The layer ledgers opened without one get."""
    return _default_layer


@contextmanager
def use_file_layer(layer: FileLayer) -> Iterator[FileLayer]:
    """Make ``layer`` the default for ledgers opened inside the block."""
    global _default_layer
    previous, _default_layer = _default_layer, layer
    try:
        yield layer
    finally:
        _default_layer = previous
