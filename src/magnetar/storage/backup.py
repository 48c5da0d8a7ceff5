"""A consistent copy of a data directory, taken while a broker may be writing to it.

The copy must hold every entry any cursor of the copied metadata acknowledges or reads past, so the
order is: (1) every segment file of the source is opened (a segment trimmed meanwhile stays
readable through its descriptor), (2) the metadata is copied with SQLite's backup API (one read
transaction: topics, cursors, schemas and policies as of one instant), (3) the ledgers of the
copied topics are copied: the files opened in (1) and those made since, each up to its last intact
record at the time it is read. An entry is acknowledged only once it was written, so (3) finds every
entry a cursor of (2) refers to; entries appended after (2) come along as far as they were written.
A segment is copied only while the ledger's ids run on without a hole: a sealed segment whose
last records the commit thread is still writing is read again until it reaches its successor's
first id. The copy's cursors are then checked against its ledgers (a cursor past its ledger's last
entry is cut back and reported, see :mod:`magnetar.storage.consistency`). The destination is
locked meanwhile, so no broker opens a half-made copy; the source's lock is not needed.
Restoring is starting a broker on the copy.
"""

from __future__ import annotations

import os
import sqlite3
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from magnetar.storage.consistency import LedgerExtent, SegmentSpan, check_cursors, ledger_extent
from magnetar.storage.data_format import check_format, stamp_format
from magnetar.storage.dir_lock import DataDirLock
from magnetar.storage.files import fsync_path
from magnetar.storage.metadata import DB_FILE_NAME
from magnetar.storage.segment import _scan, parse_segment_file_name

__all__ = ["BackupError", "BackupReport", "backup_data_dir"]

#: how long a sealed segment may take to reach its successor's first id (its last records being written)
SEALED_WAIT_SECONDS = 5.0
_CHUNK = 1 << 20


class BackupError(Exception):
    """The backup cannot be made (not a data directory, a destination in use or not empty)."""


@dataclass
class BackupReport:
    """What a backup copied, and what it found worth saying."""

    topics: int = 0
    ledgers: int = 0
    entries: int = 0
    bytes: int = 0
    notes: list[str] = field(default_factory=list)



def _open_segments(source_ledgers: Path, stack: ExitStack) -> dict[Path, int]:
    """Step (1): a read descriptor of every segment file under ``ledgers/`` (closed with ``stack``)."""
    held: dict[Path, int] = {}
    if not source_ledgers.is_dir():
        return held
    for root, _dirs, names in os.walk(source_ledgers):
        for name in names:
            if parse_segment_file_name(name) is None:
                continue
            path = Path(root, name)
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:  # trimmed while listed
                continue
            held[path] = fd
            stack.callback(os.close, fd)
    return held


def _copy_metadata(source: Path, dest: Path) -> tuple[int, set[int]]:
    """Step (2): the metadata database as of one instant; (topics, their ledger ids)."""
    (dest / DB_FILE_NAME).mkdir(parents=True)
    target_path = dest / DB_FILE_NAME / DB_FILE_NAME
    origin = sqlite3.connect(f"file:{source / DB_FILE_NAME / DB_FILE_NAME}?mode=ro", uri=True)
    try:
        target = sqlite3.connect(target_path)
        try:
            origin.backup(target)
            ledgers = {int(row[0]) for row in target.execute("SELECT ledger_id FROM topics")}
        finally:
            target.close()
    finally:
        origin.close()
    fsync_path(target_path)
    return len(ledgers), ledgers


def _copy_bytes(fd: int, dest: Path, length: int) -> None:
    """The first ``length`` bytes of ``fd`` into a new file ``dest``, synced."""
    out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        offset = 0
        while offset < length:
            chunk = os.pread(fd, min(_CHUNK, length - offset), offset)
            if not chunk:
                raise BackupError(f"{dest.name}: the source shrank while it was copied")
            os.write(out, chunk)
            offset += len(chunk)
        os.fsync(out)
    finally:
        os.close(out)


def _intact(fd: int) -> tuple[int, int]:
    """(intact records, bytes up to the end of the last of them) of a segment file now."""
    size = os.fstat(fd).st_size
    offsets, end, _problem, _damaged = _scan(fd, size)
    return len(offsets), end


def _segment_fds(directory: Path, held: dict[Path, int], stack: ExitStack) -> list[tuple[int, int]]:
    """(base, fd) of the segments of one ledger directory: those held since step (1) and those made
    since, ascending."""
    found = {path: fd for path, fd in held.items() if path.parent == directory}
    for name in os.listdir(directory):
        path = directory / name
        if parse_segment_file_name(name) is None or path in found:
            continue
        try:
            found[path] = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        stack.callback(os.close, found[path])
    return sorted((base, fd) for path, fd in found.items() if (base := parse_segment_file_name(path.name)) is not None)


def _copy_ledger(source: Path, dest: Path, held: dict[Path, int], report: BackupReport) -> list[SegmentSpan]:
    """Step (3) for one ledger directory: its segments while their ids run on, its small files."""
    dest.mkdir(parents=True)
    spans: list[SegmentSpan] = []
    with ExitStack() as stack:
        segments = _segment_fds(source, held, stack)
        for i, (base, fd) in enumerate(segments):
            count, end = _intact(fd)
            if i + 1 < len(segments):
                following = segments[i + 1][0]
                deadline = time.monotonic() + SEALED_WAIT_SECONDS
                while base + count < following and time.monotonic() < deadline:
                    time.sleep(0.01)
                    count, end = _intact(fd)
                if base + count < following:
                    report.notes.append(
                        f"{source.name}: entries {base + count}..{following - 1} were never written; "
                        f"the copy stops at entry {base + count - 1}"
                    )
                    segments = segments[: i + 1]
            name = f"{base:020d}.log"
            _copy_bytes(fd, dest / name, end)
            spans.append(SegmentSpan(name, base, count))
            report.entries += count
            report.bytes += end
            if i + 1 >= len(segments):
                break
    for name in os.listdir(source):
        path = source / name
        if parse_segment_file_name(name) is None and not name.endswith(".tmp") and path.is_file():
            try:
                (dest / name).write_bytes(path.read_bytes())
            except FileNotFoundError:
                continue
    fsync_path(dest)
    return spans


def _copy_ledgers(source: Path, dest: Path, ledger_ids: set[int], held: dict[Path, int], report: BackupReport) -> dict[int, LedgerExtent]:
    """Step (3): every ledger (and compacted ledger) of the copied topics; {ledger id: ids copied}."""
    extents: dict[int, LedgerExtent] = {}
    root = source / "ledgers"
    (dest / "ledgers").mkdir()
    for entry in sorted(root.iterdir()) if root.is_dir() else []:
        owner = entry.name.partition("-")[0]
        if not entry.is_dir() or not owner.isdigit() or int(owner) not in ledger_ids:
            continue
        if entry.name.isdigit():
            extents[int(entry.name)] = ledger_extent(_copy_ledger(entry, dest / "ledgers" / entry.name, held, report))
            report.ledgers += 1
            continue
        for child in sorted(entry.iterdir()):  # <id>-compacted/<n>/: one ledger per compaction
            if child.is_dir():
                _copy_ledger(child, dest / "ledgers" / entry.name / child.name, held, report)
        fsync_path(dest / "ledgers" / entry.name)
    fsync_path(dest / "ledgers")
    return extents


def backup_data_dir(source: Path | str, dest: Path | str) -> BackupReport:
    """Copy the data directory ``source`` (a broker may be running on it) into ``dest`` (new or empty),
    consistently: every entry confirmed before the call is in the copy, with the cursors as of one
    instant during it."""
    source, dest = Path(source), Path(dest)
    if not (source / DB_FILE_NAME / DB_FILE_NAME).is_file():
        raise BackupError(f"{source} is not a magnetar data directory (no {DB_FILE_NAME})")
    check_format(source)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BackupError(f"{dest} exists and is not an empty directory")
    report = BackupReport()
    with DataDirLock.acquire(dest), ExitStack() as stack:
        held = _open_segments(source / "ledgers", stack)
        report.topics, ledger_ids = _copy_metadata(source, dest)
        extents = _copy_ledgers(source, dest, ledger_ids, held, report)
        found, _missing, repaired = check_cursors(dest / DB_FILE_NAME, extents, fix=True)
        report.notes.extend(found + repaired)
        stamp_format(dest)
        fsync_path(dest)
    return report
