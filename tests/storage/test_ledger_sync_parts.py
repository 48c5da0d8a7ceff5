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


def test_a_sync_begun_holds_the_ledgers_other_syncs_until_it_ends(tmp_path: Path) -> None:
    with ManagedLedger.open(tmp_path / "l", 1) as ledger:
        ledger.append(b"one")
        pending = ledger.begin_sync()
        ledger.append(b"two")
        done = threading.Event()
        outcome: list[int] = []

        def other_sync() -> None:
            outcome.append(ledger.sync())
            done.set()

        thread = threading.Thread(target=other_sync)
        thread.start()
        assert not done.wait(0.2)  # waits for the begun sync to end
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
