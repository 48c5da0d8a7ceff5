"""Storage under injected file-system faults: ENOSPC, EIO, short writes, failures while opening.

Faults go through the storage's file layer seam (:class:`FaultyFileLayer`); no test needs a real
failing disk.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from magnetar.storage import CorruptEntryError, LedgerFencedError, ManagedLedger, StorageError
from magnetar.storage.files import FaultyFileLayer, use_file_layer
from magnetar.storage.health import storage_health
from magnetar.storage.segment import segment_file_name


@pytest.fixture(autouse=True)
def _fresh_health() -> Iterator[None]:
    storage_health.reset()
    yield
    storage_health.reset()  # the health is process-wide: leave no "disk full" to later tests


def _open(directory: Path, files: FaultyFileLayer, **kwargs: int) -> ManagedLedger:
    return ManagedLedger.open(directory, 1, files=files, **kwargs)


def _on_disk(directory: Path) -> list[bytes]:
    """Every entry a fresh open of the ledger directory finds."""
    with ManagedLedger.open(directory, 1) as ledger:
        return [e.data for e in ledger.read_range(ledger.first_entry_id, ledger.last_entry_id)]


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_enospc_on_write_leaves_the_segment_clean_and_appends_resume(tmp_path: Path) -> None:
    """The write happens in the sync (the commit thread): ENOSPC fences the ledger like a failed
    fsync; the recovery cuts back to what is durable and appends go on once space is back."""
    files = FaultyFileLayer()
    ledger = _open(tmp_path / "l", files)
    ledger.append(b"first")
    assert ledger.sync() == 0
    size = ledger.size_bytes
    files.inject("write", errno.ENOSPC, times=-1)
    assert ledger.append(b"second") == 1  # queued
    with pytest.raises(StorageError, match="No space left"):
        ledger.sync()
    assert ledger.fenced and ledger.last_durable_entry_id == 0
    assert storage_health.disk_full and storage_health.write_errors == 1
    assert "disk full" in storage_health.problems()[0]
    assert os.path.getsize(tmp_path / "l" / segment_file_name(0)) == size
    files.clear()
    assert ledger.recover() == 0
    assert ledger.size_bytes == size and ledger.last_entry_id == 0
    assert ledger.append(b"third") == 1
    assert ledger.sync() == 1
    assert not storage_health.disk_full
    ledger.close()
    assert _on_disk(tmp_path / "l") == [b"first", b"third"]


def test_short_writes_are_completed(tmp_path: Path) -> None:
    files = FaultyFileLayer()
    ledger = _open(tmp_path / "l", files)
    files.inject("write", short=3)  # the first writev writes 3 bytes; the rest follows with write()
    assert ledger.append(b"a record written in pieces") == 0
    assert ledger.flush() == 0
    ledger.close()
    assert _on_disk(tmp_path / "l") == [b"a record written in pieces"]


def test_a_short_write_then_enospc_rolls_the_partial_record_back(tmp_path: Path) -> None:
    files = FaultyFileLayer()
    ledger = _open(tmp_path / "l", files)
    ledger.append(b"kept")
    ledger.sync()
    size = ledger.size_bytes
    files.inject("write", short=5)
    files.inject("write", errno.ENOSPC, after=1)
    ledger.append(b"x" * 100)
    with pytest.raises(StorageError):
        ledger.flush()
    assert os.path.getsize(tmp_path / "l" / segment_file_name(0)) == size
    files.clear()
    ledger.recover()
    ledger.append(b"after")
    ledger.close()
    assert _on_disk(tmp_path / "l") == [b"kept", b"after"]


@pytest.mark.parametrize("error", [errno.EIO, errno.ENOSPC])
def test_failed_fsync_fences_the_ledger_and_is_never_retried(tmp_path: Path, error: int) -> None:
    files = FaultyFileLayer()
    ledger = _open(tmp_path / "l", files)
    for i in range(3):
        ledger.append(b"durable-%d" % i)
    assert ledger.sync() == 2
    ledger.append(b"lost-3")
    ledger.append(b"lost-4")
    files.inject("datasync", error)
    with pytest.raises(LedgerFencedError):
        ledger.sync()
    assert ledger.fenced and storage_health.ledgers_fenced == 1
    syncs = files.calls["datasync"]
    # Never retried: a second sync fails at once without calling fsync again.
    with pytest.raises(LedgerFencedError):
        ledger.sync()
    assert files.calls["datasync"] == syncs
    with pytest.raises(LedgerFencedError):
        ledger.append(b"refused")
    assert ledger.last_durable_entry_id == 2
    # Reopened from what is durable: the entries the failed sync covered are gone.
    assert ledger.recover() == 2
    assert not ledger.fenced and ledger.last_entry_id == 2
    with pytest.raises(StorageError):
        ledger.read(3)
    assert ledger.append(b"retried-3") == 3
    assert ledger.sync() == 3
    ledger.close()
    assert _on_disk(tmp_path / "l") == [b"durable-0", b"durable-1", b"durable-2", b"retried-3"]


def test_failed_fsync_across_a_roll_drops_the_unsynced_segments(tmp_path: Path) -> None:
    files = FaultyFileLayer()
    ledger = _open(tmp_path / "l", files, segment_max_bytes=64)
    ledger.append(b"a" * 40)
    ledger.sync()
    for _ in range(4):
        ledger.append(b"b" * 40)  # each in a new segment
    assert ledger.segment_count == 5
    files.inject("datasync", errno.EIO)
    with pytest.raises(LedgerFencedError):
        ledger.sync()
    ledger.recover()
    assert ledger.segment_count == 1 and ledger.last_entry_id == 0
    assert sorted(os.listdir(tmp_path / "l")) == [segment_file_name(0)]
    assert ledger.append(b"c" * 40) == 1
    ledger.close()
    assert _on_disk(tmp_path / "l") == [b"a" * 40, b"c" * 40]


def test_recovery_that_fails_keeps_the_ledger_fenced(tmp_path: Path) -> None:
    files = FaultyFileLayer()
    ledger = _open(tmp_path / "l", files)
    ledger.append(b"ok")
    ledger.sync()
    ledger.append(b"unsynced")
    files.inject("datasync", errno.EIO)
    with pytest.raises(LedgerFencedError):
        ledger.sync()
    files.inject("fsync", errno.EIO)  # the sync of the cut fails too
    with pytest.raises(StorageError):
        ledger.recover()
    assert ledger.fenced
    files.clear()
    ledger.recover()
    assert not ledger.fenced and ledger.last_entry_id == 0
    ledger.close()
    assert _on_disk(tmp_path / "l") == [b"ok"]


def test_failure_while_opening_closes_what_was_opened(tmp_path: Path) -> None:
    directory = tmp_path / "l"
    with ManagedLedger.open(directory, 1, segment_max_bytes=64) as ledger:
        for i in range(4):
            ledger.append(b"%d" % i * 40)
    files = FaultyFileLayer()
    files.inject("open", errno.EMFILE, path_part=segment_file_name(3))
    before = _open_fds()
    with pytest.raises(OSError):
        _open(directory, files)
    assert _open_fds() == before
    files.clear()
    files.inject("truncate", errno.EIO)
    with (directory / segment_file_name(3)).open("ab") as f:
        f.write(b"\x00\x00\x00\x09torn")  # a torn tail: recovery must truncate, and that fails
    with pytest.raises(OSError):
        _open(directory, files)
    assert _open_fds() == before
    files.clear()
    with _open(directory, files) as ledger:
        assert ledger.last_entry_id == 3


def test_failure_to_create_a_new_segment_refuses_the_append_only(tmp_path: Path) -> None:
    files = FaultyFileLayer()
    ledger = _open(tmp_path / "l", files, segment_max_bytes=64)
    ledger.append(b"a" * 40)
    files.inject("open", errno.ENOSPC, path_part=segment_file_name(1))
    with pytest.raises(StorageError):
        ledger.append(b"b" * 40)
    assert storage_health.disk_full
    assert ledger.last_entry_id == 0 and ledger.segment_count == 1
    files.clear()
    assert ledger.append(b"b" * 40) == 1
    ledger.close()
    assert _on_disk(tmp_path / "l") == [b"a" * 40, b"b" * 40]


def test_the_default_layer_is_used_by_ledgers_opened_without_one(tmp_path: Path) -> None:
    files = FaultyFileLayer()
    with use_file_layer(files):
        ledger = ManagedLedger.open(tmp_path / "l", 1)
    files.inject("write", errno.ENOSPC)
    ledger.append(b"x")
    with pytest.raises(StorageError):
        ledger.flush()
    ledger.close()


def test_a_segment_lost_to_damage_reads_as_corrupt_not_missing(tmp_path: Path) -> None:
    directory = tmp_path / "l"
    with ManagedLedger.open(directory, 1, segment_max_bytes=64) as ledger:
        for i in range(3):
            ledger.append(b"%d" % i * 40)
    with (directory / segment_file_name(0)).open("r+b") as f:
        f.write(b"\xff")  # the first record's length: the whole segment loses its framing
    with ManagedLedger.open(directory, 1, cache_max_bytes=0) as ledger:
        with pytest.raises(CorruptEntryError):
            ledger.read(0)
        with pytest.raises(CorruptEntryError):
            ledger.read_range(0, 2)
        assert ledger.read(1).data == b"1" * 40
