"""A ledger's sync in parts (begin_sync, LedgerSync.run, end_sync), as a commit round of many topics runs it."""

from __future__ import annotations

import errno
import threading
from pathlib import Path

import pytest

from magnetar.storage import ManagedLedger
from magnetar.storage.files import FaultyFileLayer
from magnetar.storage.ledger import LedgerFencedError
from magnetar.storage.segment import segment_file_name


def test_begin_writes_run_syncs_end_makes_durable(tmp_path: Path) -> None:
    files = FaultyFileLayer()
    with ManagedLedger.open(tmp_path / "l", 1, files=files) as ledger:
        ledger.sync()
        ledger.append(b"one")
        ledger.append(b"two")
        pending = ledger.begin_sync()
        assert (tmp_path / "l" / segment_file_name(0)).stat().st_size > 0  # written
        assert pending.needed and pending.target == 1 and ledger.last_durable_entry_id == -1
        syncs = files.calls.get("datasync", 0)
        pending.run()
        assert files.calls.get("datasync", 0) == syncs + 1 and ledger.last_durable_entry_id == -1
        assert ledger.end_sync(pending) == 1 and ledger.last_durable_entry_id == 1
        nothing = ledger.begin_sync()  # nothing appended since: no fdatasync to run
        assert not nothing.needed and ledger.end_sync(nothing) == 1


def test_a_sync_begun_later_writes_at_once_and_ends_after_the_earlier_one(tmp_path: Path) -> None:
    with ManagedLedger.open(tmp_path / "l", 1) as ledger:
        ledger.append(b"one")
        pending = ledger.begin_sync()
        ledger.append(b"two")
        written = threading.Event()
        done = threading.Event()
        outcome: list[int] = []
        segment = tmp_path / "l" / segment_file_name(0)
        size = segment.stat().st_size

        def other_sync() -> None:
            later = ledger.begin_sync()
            written.set()
            later.run()
            outcome.append(ledger.end_sync(later))
            done.set()

        thread = threading.Thread(target=other_sync)
        thread.start()
        assert written.wait(5) and segment.stat().st_size > size  # wrote before the first sync ended
        assert not done.wait(0.2)  # its end waits for the begun sync to end
        assert ledger.last_durable_entry_id == -1
        pending.run()
        assert ledger.end_sync(pending) == 0
        thread.join(5)
        assert outcome == [1] and ledger.last_durable_entry_id == 1


def test_a_failed_fdatasync_fences_at_the_end_and_the_ledger_recovers(tmp_path: Path) -> None:
    files = FaultyFileLayer()
    with ManagedLedger.open(tmp_path / "l", 1, files=files) as ledger:
        ledger.append(b"kept")
        ledger.sync()
        ledger.append(b"lost")
        files.inject("datasync", errno.EIO)
        pending = ledger.begin_sync()
        pending.run()  # never raises: the error is kept
        assert isinstance(pending.error, OSError) and not ledger.fenced
        with pytest.raises(LedgerFencedError):
            ledger.end_sync(pending)
        assert ledger.fenced and ledger.last_durable_entry_id == 0
        assert ledger.recover() == 0  # the sync mutex was released
        ledger.append(b"again")
        assert ledger.sync() == 1 and [e.data for e in ledger.read_range(0, 1)] == [b"kept", b"again"]


def test_a_failed_write_in_begin_sync_fences_and_leaves_nothing_to_end(tmp_path: Path) -> None:
    files = FaultyFileLayer()
    with ManagedLedger.open(tmp_path / "l", 1, files=files) as ledger:
        ledger.sync()
        ledger.append(b"lost")
        files.inject("write", errno.ENOSPC)
        with pytest.raises(LedgerFencedError):
            ledger.begin_sync()
        assert ledger.fenced
        assert ledger.recover() == -1  # the sync mutex was released
        ledger.append(b"again")
        assert ledger.sync() == 0


class _CountingFiles(FaultyFileLayer):
    """Counts the descriptors a ledger duplicates and which of them are still open."""

    def __init__(self) -> None:
        super().__init__()
        self.dups = 0
        self.open_dups: set[int] = set()

    def dup(self, fd: int) -> int:
        new = super().dup(fd)
        self.dups += 1
        self.open_dups.add(new)
        return new

    def close(self, fd: int) -> None:
        self.open_dups.discard(fd)
        super().close(fd)


def test_a_sync_round_duplicates_each_segment_once_and_closes_every_duplicate(tmp_path: Path) -> None:
    files = _CountingFiles()
    with ManagedLedger.open(tmp_path / "l", 1, files=files, segment_max_bytes=4096) as ledger:
        ledger.sync()
        for round_ in range(5):
            ledger.append(b"x" * 100)
            dups, syncs = files.dups, files.calls.get("datasync", 0)
            assert ledger.sync() == round_
            # the write and the fdatasync share one duplicate of the segment's descriptor
            assert files.dups == dups + 1 and files.calls.get("datasync", 0) == syncs + 1
            assert files.open_dups == set()
        for _ in range(60):  # 6,000 bytes over segments of 4 KiB: the round writes two segments
            ledger.append(b"y" * 100)
        syncs = files.calls.get("datasync", 0)
        assert ledger.sync() == 64 and ledger.segment_count >= 2
        assert files.calls.get("datasync", 0) >= syncs + 2 and files.open_dups == set()
        ledger.append(b"z")
        flushed = ledger.flush()  # fsync "never": written, its duplicate closed
        assert flushed == 65 and files.open_dups == set()
    assert [e.data for e in ManagedLedger.open(tmp_path / "l", 1).read_range(60, 65)] == [b"y" * 100] * 5 + [b"z"]
