"""Trimmed segments and deleted ledgers leave the ledger at once; the reaper deletes their files later,
off the event loop, and a crash before it did leaves the ledger as a crash just before the trim."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from magnetar.storage import (
    CursorStore,
    EntryNotFoundError,
    LedgerFencedError,
    ManagedLedger,
    MetadataStore,
    StorageError,
)
from magnetar.storage.files import FileLayer
from magnetar.storage.segment import parse_segment_file_name

TOPIC = "persistent://public/default/reaped"
SLOW_CLOSE_S = 0.5


class SlowCloseFiles(FileLayer):
    """A file layer whose close of a file named in ``slow`` takes half a second, like closing and
    unlinking a 64 MiB segment on a busy disk (the close of a deleted segment comes first)."""

    def __init__(self) -> None:
        self.slow: set[str] = set()
        self._paths: dict[int, str] = {}

    def open(self, path: Path | str, flags: int, mode: int = 0o644) -> int:
        fd = super().open(path, flags, mode)
        self._paths[fd] = str(path)
        return fd

    def close(self, fd: int) -> None:
        if self._paths.pop(fd, None) in self.slow:
            time.sleep(SLOW_CLOSE_S)
        super().close(fd)


def _payload(i: int) -> bytes:
    return f"entry-{i:04d}-".encode() + bytes([i % 256]) * 20


def _segment_files(directory: Path) -> list[int]:
    return sorted(b for n in os.listdir(directory) if (b := parse_segment_file_name(n)) is not None)


def _filled(directory: Path, reaper: Callable | None = None, files: FileLayer | None = None) -> ManagedLedger:
    ledger = ManagedLedger.open(
        directory, 1, segment_max_bytes=100, cache_max_bytes=0, reaper=reaper, files=files
    )
    for i in range(40):
        assert ledger.append(_payload(i)) == i
    ledger.sync()
    return ledger


def test_trim_detaches_at_once_and_the_reaper_deletes_the_files(tmp_path: Path) -> None:
    jobs: list[Callable[[], None]] = []
    directory = tmp_path / "l"
    ledger = _filled(directory, reaper=jobs.append)
    bases = _segment_files(directory)
    assert len(bases) >= 4
    freed = ledger.trim_before(bases[2])
    assert freed > 0
    assert ledger.first_entry_id == bases[2] and ledger.segment_count == len(bases) - 2
    with pytest.raises(EntryNotFoundError):
        ledger.read(bases[2] - 1)
    assert _segment_files(directory) == bases, "the files stay until the reaper's job runs"
    assert len(jobs) == 1
    jobs.pop()()
    assert _segment_files(directory) == bases[2:]
    assert ledger.read(bases[2]).data == _payload(bases[2])
    ledger.close()


def test_crash_between_detach_and_unlink_is_a_crash_before_the_trim(tmp_path: Path) -> None:
    jobs: list[Callable[[], None]] = []
    directory = tmp_path / "l"
    ledger = _filled(directory, reaper=jobs.append)
    bases = _segment_files(directory)
    with MetadataStore(tmp_path / "meta") as metadata:
        store = CursorStore(metadata)
        cursor = store.open(ledger, TOPIC, "s", -1)
        cursor.ack_cumulative(bases[2] - 1)
        store.take_batch().write(metadata)  # the broker persists cursors, then trims
    freed = ledger.trim_before(cursor.trim_position)
    # the process dies here: the reaper's job never runs (and the ledger is never closed)

    reopened = ManagedLedger.open(directory, 1, segment_max_bytes=100)
    assert _segment_files(directory) == bases
    assert reopened.first_entry_id == 0, "the old segments are found again, as if never trimmed"
    assert [e.data for e in reopened.read_range(0, 39)] == [_payload(i) for i in range(40)]
    with MetadataStore(tmp_path / "meta") as metadata:
        (restored,) = CursorStore(metadata).load(reopened, TOPIC)
        first = restored.read_entries(1, last_readable=39)
        assert [e.entry_id for e in first] == [bases[2]], "nothing acknowledged is served again"
        assert reopened.trim_before(restored.trim_position) == freed, "the next trim deletes them again"
    assert freed > 0 and _segment_files(directory) == bases[2:]
    reopened.close()
    ledger.close()
    for job in jobs:  # releases the dead ledger's descriptors; its files are gone already
        job()


def test_delete_closes_the_ledger_at_once_and_the_reaper_removes_the_directory(tmp_path: Path) -> None:
    jobs: list[Callable[[], None]] = []
    directory = tmp_path / "l"
    ledger = _filled(directory, reaper=jobs.append)
    ledger.delete()
    assert ledger.closed and directory.is_dir()
    assert len(jobs) == 1
    jobs.pop()()
    assert not directory.exists()
    ledger.delete()  # idempotent
    jobs.pop()()


def test_trim_and_delete_in_a_reaper_thread_leave_the_loop_running(tmp_path: Path) -> None:
    files = SlowCloseFiles()
    executor = ThreadPoolExecutor(max_workers=1)
    trimmed, deleted = tmp_path / "trimmed", tmp_path / "deleted"

    async def main() -> None:
        loop = asyncio.get_running_loop()
        ledger = _filled(trimmed, reaper=executor.submit, files=files)
        other = _filled(deleted, reaper=executor.submit, files=files)
        bases = _segment_files(trimmed)
        # one slow file in each: the reaper needs a second in all
        files.slow = {str(trimmed / min(os.listdir(trimmed))), str(deleted / min(os.listdir(deleted)))}
        ticks: list[float] = []
        loop.call_later(0.05, lambda: ticks.append(time.monotonic()))
        started = time.monotonic()
        ledger.trim_before(bases[-1])
        other.delete()
        assert time.monotonic() - started < SLOW_CLOSE_S / 2, "trim and delete return at once"
        reaped = executor.submit(time.monotonic)  # runs once the deletions before it are done
        await asyncio.sleep(0.2)
        assert ticks, "the loop timer fired"
        assert ticks[0] < await asyncio.wrap_future(reaped), "... while the files were being deleted"
        await loop.run_in_executor(None, executor.shutdown)
        assert _segment_files(trimmed) == bases[-1:]
        assert not deleted.exists()
        files.slow = set()
        ledger.close()

    asyncio.run(main())


class CountingFiles(FileLayer):
    """A file layer that counts the fdatasyncs made, and on which thread."""

    def __init__(self) -> None:
        self.syncs: list[str] = []

    def datasync(self, fd: int) -> None:
        self.syncs.append(threading.current_thread().name)
        super().datasync(fd)


def test_close_hands_the_final_sync_to_the_reaper_and_a_reopen_waits_for_it(tmp_path: Path) -> None:
    jobs: list[Callable[[], None]] = []
    files = CountingFiles()
    directory = tmp_path / "l"
    ledger = ManagedLedger.open(directory, 1, reaper=jobs.append, files=files)
    for i in range(5):
        ledger.append(_payload(i))
    ledger.close()
    assert ledger.closed and files.syncs == [] and len(jobs) == 1, "close returns before any fsync"
    with pytest.raises(StorageError):
        ledger.append(b"late")

    reopened: list[ManagedLedger] = []
    opener = threading.Thread(target=lambda: reopened.append(ManagedLedger.open(directory, 1)))
    opener.start()
    opener.join(0.2)
    assert opener.is_alive() and not reopened, "a reopen waits for the pending close"
    runner = threading.Thread(target=jobs.pop(), name="reaper")
    runner.start()
    runner.join(5)
    opener.join(5)
    assert files.syncs == ["reaper"], "the final sync ran in the reaper's thread"
    (again,) = reopened
    assert [e.data for e in again.read_range(0, 4)] == [_payload(i) for i in range(5)]
    assert again.last_durable_entry_id == 4
    again.close()


def test_close_of_a_fenced_ledger_closes_its_files_without_a_sync(tmp_path: Path) -> None:
    from magnetar.storage.files import FaultyFileLayer

    jobs: list[Callable[[], None]] = []
    files = FaultyFileLayer()
    ledger = ManagedLedger.open(tmp_path / "l", 1, reaper=jobs.append, files=files)
    ledger.append(b"a")
    files.inject("datasync", errno.EIO)
    with pytest.raises(LedgerFencedError):
        ledger.sync()
    ledger.close()
    files.clear()
    files.inject("datasync", errno.EIO)  # a second sync would fail: there must be none
    jobs.pop()()
    assert ledger.closed


def test_close_with_a_shut_down_reaper_runs_at_once(tmp_path: Path) -> None:
    executor = ThreadPoolExecutor(max_workers=1)
    executor.shutdown()
    ledger = ManagedLedger.open(tmp_path / "l", 1, reaper=executor.submit)
    ledger.append(b"a")
    ledger.close()
    with ManagedLedger.open(tmp_path / "l", 1) as reopened:
        assert reopened.read(0).data == b"a"
