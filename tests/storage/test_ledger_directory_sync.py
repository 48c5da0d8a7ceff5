"""A new ledger's directory is synced by its first sync (the commit thread's), not by its open (the
event loop's): an entry is still never reported durable before the directory entry of its file is."""

from __future__ import annotations

from pathlib import Path

import pytest

from magnetar.storage.files import FaultyFileLayer
from magnetar.storage.ledger import LedgerFencedError, ManagedLedger


def test_open_of_a_new_ledger_leaves_the_directory_sync_to_the_first_sync(tmp_path: Path) -> None:
    files = FaultyFileLayer()
    ledger = ManagedLedger.open(tmp_path / "1", 1, files=files, label="persistent://public/default/t")
    assert files.calls.get("sync_directory", 0) == 0
    ledger.append(b"first")
    assert ledger.sync() == 0
    assert files.calls["sync_directory"] == 1
    ledger.append(b"second")
    assert ledger.sync() == 1
    assert files.calls["sync_directory"] == 1  # synced once, not by every sync
    ledger.close()
    reopened = ManagedLedger.open(tmp_path / "1", 1)
    assert [entry.data for entry in reopened.read_range(0, 1)] == [b"first", b"second"]
    reopened.close()


def test_a_failed_directory_sync_of_a_new_ledger_fences_it_with_nothing_durable(tmp_path: Path) -> None:
    files = FaultyFileLayer()
    files.inject("sync_directory")
    ledger = ManagedLedger.open(tmp_path / "1", 1, files=files)
    ledger.append(b"lost")
    with pytest.raises(LedgerFencedError):
        ledger.sync()
    assert ledger.last_durable_entry_id == -1
    assert ledger.fenced


def test_reopening_an_existing_ledger_syncs_no_directory(tmp_path: Path) -> None:
    ManagedLedger.open(tmp_path / "1", 1, label="t").close()
    files = FaultyFileLayer()
    ledger = ManagedLedger.open(tmp_path / "1", 1, files=files, label="t")
    ledger.append(b"x")
    assert ledger.sync() == 0
    assert files.calls.get("sync_directory", 0) == 0
    ledger.close()


def test_a_ledger_closed_without_appends_syncs_its_new_directory(tmp_path: Path) -> None:
    files = FaultyFileLayer()
    ManagedLedger.open(tmp_path / "1", 1, files=files, label="t").close()
    assert files.calls["sync_directory"] == 1
