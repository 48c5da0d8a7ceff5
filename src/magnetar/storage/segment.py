"""One append-only segment file of a managed ledger.

A segment file ``<base_entry_id:020d>.log`` holds consecutive entries starting at
``base_entry_id``. Each record is ``[u32 BE length][u32 BE crc32c(data)][data]``.
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
import threading
import time
from array import array
from collections.abc import Sequence
from pathlib import Path

from magnetar.checksum import crc32c
from magnetar.storage.files import FileLayer, default_file_layer

logger = logging.getLogger("magnetar.storage")

RECORD_HEADER = struct.Struct(">II")
RECORD_OVERHEAD = RECORD_HEADER.size
MAX_RECORD_BYTES = 64 * 1024 * 1024
SEGMENT_SUFFIX = ".log"
_NAME_DIGITS = 20


class StorageError(Exception):
    """Base class of every error raised by the storage layer."""


class EntryNotFoundError(StorageError):
    """The requested entry id is not (or no longer) stored."""


class CorruptEntryError(StorageError):
    """An entry read from disk does not match its stored checksum or framing."""


def segment_file_name(base_entry_id: int) -> str:
    """Return the file name of the segment whose first entry is ``base_entry_id``."""
    return f"{base_entry_id:0{_NAME_DIGITS}d}{SEGMENT_SUFFIX}"


def parse_segment_file_name(name: str) -> int | None:
    """Return the base entry id encoded in a segment file name, or None if it is not one."""
    stem, dot, suffix = name.partition(".")
    if dot + suffix != SEGMENT_SUFFIX or len(stem) != _NAME_DIGITS or not stem.isdigit():
        return None
    return int(stem)


def _scan(fd: int, size: int) -> tuple[array, int, str | None, int]:
    """Index the records of a file: return (record offsets, end of the last intact record, problem,
    damaged records).

    A record whose checksum fails while its framing holds, and that is followed by an intact record
    (damage in the middle, not a torn tail), keeps its place in the index, so the entries after it
    stay readable; reading it raises CorruptEntryError. Damaged records at the very end are cut off
    as a torn tail.
    """
    offsets = array("Q")
    if size == 0:
        return offsets, 0, None, 0
    pos = 0
    damaged = 0
    intact_count, intact_end = 0, 0
    problem: str | None = None
    with mmap.mmap(fd, size, access=mmap.ACCESS_READ) as mm, memoryview(mm) as view:
        while pos < size:
            if size - pos < RECORD_OVERHEAD:
                problem = "torn record header"
                break
            length, crc = RECORD_HEADER.unpack_from(view, pos)
            if length > MAX_RECORD_BYTES:
                problem = f"record length {length} exceeds the {MAX_RECORD_BYTES} byte maximum"
                break
            end = pos + RECORD_OVERHEAD + length
            if end > size:
                problem = "torn record data"
                break
            with view[pos + RECORD_OVERHEAD : end] as data:
                intact = crc32c(data) == crc
            offsets.append(pos)
            pos = end
            if intact:
                intact_count, intact_end = len(offsets), pos
            else:
                damaged += 1
    if intact_count < len(offsets):  # damaged records with nothing intact after them: a torn tail
        damaged -= len(offsets) - intact_count
        del offsets[intact_count:]
        pos = intact_end
        problem = problem or "checksum mismatch"
    return offsets, pos, problem, damaged


def _write_all(files: FileLayer, fd: int, header: bytes, data: bytes | bytearray | memoryview, total: int) -> None:
    """Write header and data at the current file position, retrying short writes."""
    written = files.writev(fd, [header, data])
    if written < total:
        rest = memoryview(b"".join((header, data)))
        while written < total:
            n = files.write(fd, rest[written:])
            if n <= 0:
                raise OSError(f"write made no progress ({written} of {total} bytes)")
            written += n


#: buffers per writev (the kernel's IOV_MAX)
_IOV_MAX = 1024


def _write_buffers(files: FileLayer, fd: int, buffers: list[bytes | memoryview]) -> None:
    """Write ``buffers`` at the current file position, IOV_MAX at a time, retrying short writes."""
    for i in range(0, len(buffers), _IOV_MAX):
        chunk = buffers[i : i + _IOV_MAX]
        total = sum(len(b) for b in chunk)
        written = files.writev(fd, chunk)
        if written < total:
            rest = memoryview(b"".join(chunk))
            while written < total:
                n = files.write(fd, rest[written:])
                if n <= 0:
                    raise OSError(f"write made no progress ({written} of {total} bytes)")
                written += n


class Segment:
    """An append-only file of consecutive entries with an in-memory offset index.

    The active (last) segment of a ledger is opened writable: its index is built at
    open, and a torn or corrupted tail is truncated away. Older segments are opened
    read-only and indexed lazily on first access.
    """

    def __init__(
        self,
        path: Path,
        base_entry_id: int,
        fd: int | None,
        writable: bool,
        offsets: array | None,
        end: int,
        file_size: int,
        files: FileLayer | None = None,
    ) -> None:
        """Wrap already-opened state; use :meth:`Segment.open` instead."""
        self._files = files if files is not None else default_file_layer()
        self._path = path
        self._base = base_entry_id
        self._fd = fd
        self._writable = writable
        self._offsets = offsets
        self._end = end
        self._file_size = file_size
        self._closed = False
        #: when the file was last written once sealed (epoch s): its time at open, or when it was sealed;
        #: None while writable (kept, so that trimming and stats make no stat on the event loop)
        self.modified: float | None = None
        # Opening the file, indexing it and closing it, which a read on the ledger's read thread
        # (:meth:`dup_for_read`) may race with the owner's thread or the reaper's close.
        self._io_lock = threading.RLock()

    @classmethod
    def open(cls, path: Path | str, base_entry_id: int, *, writable: bool, files: FileLayer | None = None) -> Segment:
        """Open (creating it when writable) the segment file at ``path``.

        A writable segment is scanned immediately and its file is truncated to the
        last intact record. A read-only segment is only stat'ed; it is indexed on
        first read.
        """
        path = Path(path)
        files = files if files is not None else default_file_layer()
        if not writable:
            stats = path.stat()
            segment = cls(path, base_entry_id, None, False, None, stats.st_size, stats.st_size, files)
            segment.modified = stats.st_mtime
            return segment
        fd = files.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            size = files.size(fd)
            offsets, end, problem, damaged = _scan(fd, size)
            if damaged:
                logger.error("segment %s: %d damaged records in the middle; they will be skipped", path, damaged)
            if problem is not None:
                logger.warning(
                    "segment %s: %s at byte %d after entry %d; truncating %d bytes",
                    path,
                    problem,
                    end,
                    base_entry_id + len(offsets) - 1,
                    size - end,
                )
                files.truncate(fd, end)
                files.fsync(fd)
            files.seek(fd, end)
        except BaseException:
            files.close(fd)
            raise
        return cls(path, base_entry_id, fd, True, offsets, end, end, files)

    @property
    def path(self) -> Path:
        """The segment file path."""
        return self._path

    @property
    def base_entry_id(self) -> int:
        """Entry id of the first record of this segment."""
        return self._base

    @property
    def writable(self) -> bool:
        """Whether appends are accepted (only the active segment is writable)."""
        return self._writable

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    @property
    def entry_count(self) -> int:
        """Number of readable entries (indexes a lazy segment)."""
        return len(self._index())

    @property
    def next_entry_id(self) -> int:
        """Entry id the next append would get (indexes a lazy segment)."""
        return self._base + len(self._index())

    @property
    def size_bytes(self) -> int:
        """Size of the segment file on disk."""
        return self._file_size

    def fileno(self) -> int:
        """Return the OS file descriptor, opening the file if it was not yet opened."""
        return self._open_fd()

    def seal(self) -> None:
        """Refuse further appends; the file stays open for reads and a final sync."""
        self._writable = False
        self.modified = time.time()

    def append(self, data: bytes | bytearray | memoryview, crc: int) -> int:
        """Write one record at once (no fsync) and return its entry id.

        ``crc`` must be the CRC32C of ``data``; a wrong value would make the record
        look corrupted at the next recovery.
        """
        if not self._writable or self._fd is None:
            raise StorageError(f"segment {self._path} is not writable")
        size = memoryview(data).nbytes
        if size > MAX_RECORD_BYTES:
            raise ValueError(f"entry of {size} bytes exceeds the {MAX_RECORD_BYTES} byte maximum")
        if not 0 <= crc <= 0xFFFFFFFF:
            raise ValueError(f"crc {crc} is not an unsigned 32-bit value")
        offsets = self._index()
        start = self._end
        total = RECORD_OVERHEAD + size
        try:
            _write_all(self._files, self._fd, RECORD_HEADER.pack(size, crc), data, total)
        except OSError as exc:
            # Drop whatever part of the record reached the file so the tail stays clean.
            try:
                self._files.truncate(self._fd, start)
                self._files.seek(self._fd, start)
            except OSError:
                logger.exception("segment %s: cannot roll back a failed append", self._path)
            raise StorageError(f"append to {self._path} failed: {exc}") from exc
        offsets.append(start)
        self._end = start + total
        self._file_size = self._end
        return self._base + len(offsets) - 1

    def write_records(self, fd: int, records: list[tuple[bytes | memoryview, int]]) -> tuple[list[int], int]:
        """Write queued records at the end of the file through ``fd`` (a duplicate of its descriptor,
        so that a close elsewhere cannot hand the number to another file: a segment trimmed or deleted
        meanwhile takes them in its unlinked file); returns (their offsets, the new end) for
        :meth:`index_written`. Sealed segments take the records queued before the seal.

        On failure the file is cut back to where it ended and StorageError is raised.
        """
        start = pos = self._end
        buffers: list[bytes | memoryview] = []
        positions: list[int] = []
        pack = RECORD_HEADER.pack
        for data, crc in records:
            size = len(data)
            if size > MAX_RECORD_BYTES:
                raise ValueError(f"entry of {size} bytes exceeds the {MAX_RECORD_BYTES} byte maximum")
            buffers.append(pack(size, crc))
            buffers.append(data)
            positions.append(pos)
            pos += RECORD_OVERHEAD + size
        try:
            _write_buffers(self._files, fd, buffers)
        except OSError as exc:
            try:
                self._files.truncate(fd, start)
                self._files.seek(fd, start)
            except OSError:
                logger.exception("segment %s: cannot roll back a failed write", self._path)
            raise StorageError(f"write to {self._path} failed: {exc}") from exc
        return positions, pos

    def index_written(self, positions: list[int], end: int) -> None:
        """Make the records :meth:`write_records` wrote readable (offsets first, then the end)."""
        self._index().extend(positions)
        self._end = end
        self._file_size = end

    def sync(self) -> None:
        """Flush written data to stable storage (fdatasync)."""
        if self._fd is not None:
            self._files.datasync(self._fd)

    def truncate(self, next_entry_id: int) -> None:
        """Drop every entry from ``next_entry_id`` on and make the cut durable (writable segment).

        Used to reopen a ledger from what is known durable after a failed sync.
        """
        if not self._writable or self._fd is None:
            raise StorageError(f"segment {self._path} is not writable")
        offsets = self._index()
        keep = max(0, next_entry_id - self._base)
        if keep >= len(offsets):
            return
        cut = offsets[keep]
        self._files.truncate(self._fd, cut)
        self._files.fsync(self._fd)
        self._files.seek(self._fd, cut)
        del offsets[keep:]
        self._end = self._file_size = cut

    def read(self, entry_id: int) -> tuple[memoryview, int]:
        """Return ``(data, crc)`` of one entry, verifying its checksum (data: a view of the record read)."""
        offsets = self._index()
        i = entry_id - self._base
        if not 0 <= i < len(offsets):
            raise EntryNotFoundError(f"entry {entry_id} is not in segment {self._path.name}")
        start = offsets[i]
        end = self._record_end(i)
        buf = self._files.pread(self._open_fd(), end - start, start)
        data, crc, _ = self._decode(memoryview(buf), 0, entry_id)
        return data, crc

    def dup_for_read(self) -> int:
        """A duplicate of the file's descriptor, the file opened and indexed first if it was not, for
        :meth:`read_many` on another thread: a close or trim of the segment meanwhile cannot hand the
        number to another file. The caller closes it. StorageError when the segment is closed."""
        with self._io_lock:
            self._index()
            return self._files.dup(self._open_fd())

    def close_dup(self, fd: int) -> None:
        """Close a descriptor :meth:`dup_for_read` returned."""
        self._files.close(fd)

    def read_many(
        self, first: int, last: int, max_bytes: int | None = None, *, at_least_one: bool = True
    ) -> list[tuple[memoryview, int]]:
        """Return ``(data, crc)`` for entries ``first..last`` (inclusive) with one pread.

        With ``max_bytes``, only the longest prefix whose data sizes sum to at most
        ``max_bytes`` is returned, but at least one entry when ``at_least_one``.
        """
        buf, count = self.read_span(first, last, max_bytes, at_least_one=at_least_one)
        return self.decode_span(buf, first, count)

    def read_span(
        self, first: int, last: int, max_bytes: int | None = None, *, at_least_one: bool = True, fd: int | None = None
    ) -> tuple[bytes, int]:
        """The records of entries ``first..last`` (within ``max_bytes`` as :meth:`read_many`) with one
        pread, not decoded: (the bytes, how many records they hold); :meth:`decode_span` decodes them.
        ``fd``: read through this descriptor (from :meth:`dup_for_read`) instead of the segment's own.
        A read thread does only this part (the pread, which releases the GIL), its owner the decoding.
        """
        if last < first:
            return b"", 0
        offsets = self._index()
        i, j = first - self._base, last - self._base
        if i < 0 or j >= len(offsets):
            raise EntryNotFoundError(f"entries {first}..{last} are not all in segment {self._path.name}")
        if max_bytes is not None:
            budget = max_bytes
            k = i
            while k <= j:
                size = self._record_end(k) - offsets[k] - RECORD_OVERHEAD
                if size > budget and (k > i or not at_least_one):
                    break
                budget -= size
                k += 1
            j = k - 1
            if j < i:
                return b"", 0
        start = offsets[i]
        return self._files.pread(self._open_fd() if fd is None else fd, self._record_end(j) - start, start), j - i + 1

    def decode_span(self, buf: bytes, first: int, count: int) -> list[tuple[memoryview, int]]:
        """``(data, crc)`` of the ``count`` records from entry ``first`` on that :meth:`read_span`
        read into ``buf``, each checksum verified (CorruptEntryError). Each data is a view of ``buf``,
        not a copy: the span stays in memory while any of its entries is kept (a dispatcher's
        read-ahead hands them out in order and drops them once taken)."""
        out: list[tuple[memoryview, int]] = []
        pos = 0
        view = memoryview(buf)
        for entry_id in range(first, first + count):
            data, crc, pos = self._decode(view, pos, entry_id)
            out.append((data, crc))
        return out

    def close(self) -> None:
        """Close the file descriptor; the object is unusable afterwards."""
        with self._io_lock:
            self._closed = True
            self._writable = False
            if self._fd is not None:
                fd, self._fd = self._fd, None
                self._files.close(fd)

    def delete(self) -> None:
        """Close and remove the segment file."""
        self.close()
        self._path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("writable" if self._writable else "sealed")
        return f"Segment({self._path.name!r}, base={self._base}, {state})"

    def _open_fd(self) -> int:
        fd = self._fd
        if fd is not None and not self._closed:
            return fd
        with self._io_lock:
            if self._closed:
                raise StorageError(f"segment {self._path} is closed")
            if self._fd is None:
                self._fd = self._files.open(self._path, os.O_RDONLY)
            return self._fd

    def _index(self) -> array:
        offsets = self._offsets
        if offsets is None:
            with self._io_lock:
                if self._offsets is None:
                    self._load_index()
                offsets = self._offsets
                assert offsets is not None
        return offsets

    def _load_index(self) -> None:
        fd = self._open_fd()
        size = self._files.size(fd)
        offsets, end, problem, damaged = _scan(fd, size)
        if damaged:
            logger.error("sealed segment %s: %d damaged records in the middle; they will be skipped", self._path, damaged)
        if problem is not None:
            logger.error(
                "sealed segment %s: %s at byte %d; entries from %d on are unavailable",
                self._path,
                problem,
                end,
                self._base + len(offsets),
            )
        self._offsets = offsets
        self._end = end
        self._file_size = size

    def _record_end(self, i: int) -> int:
        offsets = self._offsets
        assert offsets is not None
        return offsets[i + 1] if i + 1 < len(offsets) else self._end

    def _decode(self, buf: memoryview, pos: int, entry_id: int) -> tuple[memoryview, int, int]:
        """Decode the record at ``buf[pos:]``; return (data, a view of ``buf``; crc; position after it)."""
        if len(buf) - pos < RECORD_OVERHEAD:
            raise CorruptEntryError(f"entry {entry_id} in {self._path.name}: short read")
        length, crc = RECORD_HEADER.unpack_from(buf, pos)
        start = pos + RECORD_OVERHEAD
        data = buf[start : start + length]
        if len(data) != length:
            raise CorruptEntryError(f"entry {entry_id} in {self._path.name}: short read")
        if crc32c(data) != crc:
            raise CorruptEntryError(f"entry {entry_id} in {self._path.name}: checksum mismatch")
        return data, crc, start + length


def delete_segment_files(segments: Sequence[Segment]) -> None:
    """Close and unlink segments already detached from their ledger (a clean-up job: any thread).

    Oldest first, so that a crash half-way leaves only newer files: the ledger found at the next
    start is contiguous, starting lower, as if the trim had not happened.
    """
    for segment in segments:
        try:
            segment.delete()
        except OSError as exc:
            logger.error("cannot delete segment file %s: %s", segment.path, exc)


def remove_segment_directory(directory: Path, segments: Sequence[Segment]) -> None:
    """Close a deleted ledger's segments and remove its directory with every file in it (a clean-up
    job: any thread)."""
    for segment in segments:
        try:
            segment.close()
        except OSError as exc:
            logger.error("cannot close segment file %s: %s", segment.path, exc)
    import shutil  # with a deletion only: shutil loads bz2, lzma and zlib, 4-5 ms of every broker start

    shutil.rmtree(directory, ignore_errors=True)


#: a file in a ledger directory naming what the ledger belongs to (rebuilds lost metadata)
LABEL_FILE = "LABEL"


def open_ledger_segments(
    directory: Path, files: FileLayer, label: str | None, *, sync_directory: bool = True
) -> tuple[list[Segment], bool]:
    """Open the segments of the ledger in ``directory`` (creating it, and a first empty segment, when
    needed): the older ones read-only, the last one writable and recovered. ``label`` is written once
    next to them (see :func:`read_ledger_label`).

    Returns the segments and whether ``directory`` has entries not yet synced (it was created or
    labelled here). With ``sync_directory`` it is synced here; without, the caller must sync it
    before anything in it counts as durable (the ledger does it in its first sync, off the event
    loop: a directory fsync waits for the file system's journal, tens of milliseconds on a busy disk).
    """
    directory.mkdir(parents=True, exist_ok=True)
    bases = sorted(base for name in os.listdir(directory) if (base := parse_segment_file_name(name)) is not None)
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
        if created and sync_directory:
            files.sync_directory(directory)
            created = False
    except BaseException:
        for segment in segments:
            segment.close()
        raise
    return segments, created


def read_ledger_label(directory: Path) -> str | None:
    """The label a ledger was opened with (its topic name), or None."""
    try:
        return (Path(directory) / LABEL_FILE).read_text().strip() or None
    except OSError:
        return None
