"""Pipelined syncs of one ledger (storage/ledger_sync.py): the next sync writes before the previous
one ended, syncs end in order, and a failed fdatasync confirms nothing begun before or after it."""

from __future__ import annotations

import errno
import threading
from pathlib import Path

import pytest

from magnetar.storage import ManagedLedger
from magnetar.storage.files import FaultyFileLayer
from magnetar.storage.ledger import LedgerFencedError, SyncSupersededError


def _data(ledger: ManagedLedger) -> list[bytes]:
    return [e.data for e in ledger.read_range(ledger.first_entry_id, ledger.last_entry_id)]


def test_a_failed_fdatasync_supersedes_the_sync_written_after_it(tmp_path: Path) -> None:
    """Round k fails its fdatasync while round k+1 is written and its fdatasync succeeds: neither is
    confirmed, the ledger is fenced once (k's LedgerFencedError), k+1 ends superseded, and the
    recovery cuts both off."""
    files = FaultyFileLayer()
    with ManagedLedger.open(tmp_path / "l", 1, files=files) as ledger:
        ledger.append(b"kept")
        assert ledger.sync() == 0
        ledger.append(b"k")
        first = ledger.begin_sync()
        ledger.append(b"k+1")
        second = ledger.begin_sync()  # written while the first has not run its fdatasync
        assert second.target == 2 and second.needed
        files.inject("datasync", errno.EIO)  # the next fdatasync (the first's) fails, then they work
        first.run()
        second.run()
        assert isinstance(first.error, OSError) and second.error is None
        with pytest.raises(LedgerFencedError) as failed:
            ledger.end_sync(first)
        assert not isinstance(failed.value, SyncSupersededError)
        with pytest.raises(SyncSupersededError):
            ledger.end_sync(second)
        assert ledger.fenced and ledger.last_durable_entry_id == 0
        with pytest.raises(SyncSupersededError):  # a sync while fenced confirms nothing either
            ledger.begin_sync()
        with pytest.raises(LedgerFencedError):
            ledger.append(b"refused")
        assert ledger.recover() == 0
        assert _data(ledger) == [b"kept"]
        ledger.append(b"again")
        assert ledger.sync() == 1 and _data(ledger) == [b"kept", b"again"]
    with ManagedLedger.open(tmp_path / "l", 1) as reopened:
        assert _data(reopened) == [b"kept", b"again"]


def test_the_recovery_waits_for_the_sync_written_after_a_failed_one(tmp_path: Path) -> None:
    """The recovery waits for every sync begun to end: the one written after a failed fdatasync ends
    superseded, and the recovery cuts what it wrote."""
    files = FaultyFileLayer()
    with ManagedLedger.open(tmp_path / "l", 1, files=files) as ledger:
        ledger.sync()
        ledger.append(b"k")
        first = ledger.begin_sync()
        ledger.append(b"k+1")
        second = ledger.begin_sync()
        files.inject("datasync", errno.EIO)
        first.run()
        with pytest.raises(LedgerFencedError):
            ledger.end_sync(first)
        recovered: list[int] = []
        thread = threading.Thread(target=lambda: recovered.append(ledger.recover()))
        thread.start()
        thread.join(0.2)
        assert thread.is_alive() and recovered == []  # waits for the second sync to end
        second.run()
        with pytest.raises(SyncSupersededError):
            ledger.end_sync(second)
        thread.join(5)
        assert recovered == [-1] and ledger.last_entry_id == -1 and ledger.last_durable_entry_id == -1


def test_a_sync_written_before_a_failed_write_still_ends_well(tmp_path: Path) -> None:
    """A failed write fences the ledger without superseding the sync begun before it: that sync was
    written whole and its fdatasync began after; the recovery keeps what it confirmed."""
    files = FaultyFileLayer()
    with ManagedLedger.open(tmp_path / "l", 1, files=files) as ledger:
        ledger.sync()
        ledger.append(b"k")
        first = ledger.begin_sync()
        ledger.append(b"k+1")
        files.inject("write", errno.ENOSPC)
        with pytest.raises(LedgerFencedError) as failed:
            ledger.begin_sync()
        assert not isinstance(failed.value, SyncSupersededError) and ledger.fenced
        recovered: list[int] = []
        thread = threading.Thread(target=lambda: recovered.append(ledger.recover()))
        thread.start()
        first.run()
        assert ledger.end_sync(first) == 0
        thread.join(5)
        assert recovered == [0] and _data(ledger) == [b"k"] and not ledger.fenced


def test_syncs_end_in_the_order_they_began(tmp_path: Path) -> None:
    """Three syncs begun one after the other, run and ended from three threads in reverse: each end
    waits for the earlier ones, so the durable id only ever grows through 0, 1, 2."""
    with ManagedLedger.open(tmp_path / "l", 1) as ledger:
        ledger.sync()
        pendings = []
        for entry in range(3):
            ledger.append(b"e%d" % entry)
            pendings.append(ledger.begin_sync())
        ended: list[tuple[int, int]] = []
        lock = threading.Lock()

        def end(index: int) -> None:
            pendings[index].run()
            durable = ledger.end_sync(pendings[index])
            with lock:
                ended.append((index, durable))

        threads = [threading.Thread(target=end, args=(index,)) for index in (2, 1, 0)]
        for thread in threads:
            thread.start()
            thread.join(0.1)
        for thread in threads:
            thread.join(5)
        assert ended == [(0, 0), (1, 1), (2, 2)]


def test_sync_needed_tells_entries_no_begun_sync_took(tmp_path: Path) -> None:
    with ManagedLedger.open(tmp_path / "l", 1, write_behind=False) as ledger:
        assert not ledger.sync_needed
        ledger.append(b"a")  # written at once (no write-behind), not synced: still needed
        assert ledger.sync_needed
        pending = ledger.begin_sync()
        assert not ledger.sync_needed
        ledger.append(b"b")
        assert ledger.sync_needed
        pending.run()
        ledger.end_sync(pending)
        assert ledger.sync() == 1 and not ledger.sync_needed
