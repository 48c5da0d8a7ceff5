"""Write-behind: append only queues the record; the sync (the commit thread) writes, then fdatasyncs.

Readers get queued entries from memory, never from file bytes not written yet; a roll-over, a close,
a delete and a trim each keep the queued records in order (or drop them with the ledger).
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from magnetar.storage import LedgerFencedError, ManagedLedger
from magnetar.storage.files import FaultyFileLayer
from magnetar.storage.segment import segment_file_name


def _payload(i: int) -> bytes:
    return b"entry-%05d-" % i + bytes(i % 37)


def _on_disk(directory: Path) -> list[bytes]:
    with ManagedLedger.open(directory, 1) as ledger:
        return [e.data for e in ledger.read_range(ledger.first_entry_id, ledger.last_entry_id)]


class _OrderLayer(FaultyFileLayer):
    """Records the order of writes and syncs."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[str] = []

    def writev(self, fd: int, buffers: list) -> int:  # type: ignore[override]
        self.order.append("write")
        return super().writev(fd, buffers)

    def datasync(self, fd: int) -> None:
        self.order.append("sync")
        super().datasync(fd)


def test_append_writes_nothing_and_sync_writes_then_syncs(tmp_path: Path) -> None:
    files = _OrderLayer()
    ledger = ManagedLedger.open(tmp_path / "l", 1, files=files, cache_max_bytes=0)
    for i in range(5):
        assert ledger.append(_payload(i)) == i
    assert files.order == [] and os.path.getsize(tmp_path / "l" / segment_file_name(0)) == 0
    assert ledger.last_durable_entry_id == -1
    assert [e.data for e in ledger.read_range(0, 4)] == [_payload(i) for i in range(5)]  # from memory
    assert ledger.sync() == 4
    assert files.order == ["write", "sync"]  # one writev for the five records, then the fdatasync
    assert ledger.last_durable_entry_id == 4
    ledger.close()
    assert _on_disk(tmp_path / "l") == [_payload(i) for i in range(5)]


def test_flush_writes_without_syncing(tmp_path: Path) -> None:
    files = _OrderLayer()
    ledger = ManagedLedger.open(tmp_path / "l", 1, files=files)
    ledger.append(b"a")
    assert ledger.flush() == 0
    assert files.order == ["write"] and ledger.last_durable_entry_id == -1
    assert os.path.getsize(tmp_path / "l" / segment_file_name(0)) == 8 + 1
    ledger.close()


def test_queued_records_of_sealed_segments_are_written_in_order_at_close(tmp_path: Path) -> None:
    ledger = ManagedLedger.open(tmp_path / "l", 1, segment_max_bytes=64, cache_max_bytes=0)
    for i in range(20):
        ledger.append(_payload(i))
    assert ledger.segment_count > 5
    ledger.close()  # the final sync writes every segment's records, then closes the files
    assert _on_disk(tmp_path / "l") == [_payload(i) for i in range(20)]


def test_delete_drops_the_queued_records(tmp_path: Path) -> None:
    ledger = ManagedLedger.open(tmp_path / "l", 1)
    ledger.append(b"gone")
    ledger.delete()
    assert ledger.sync() == -1  # a round of the commit thread after the delete: nothing to write
    assert not (tmp_path / "l").exists()


def test_trim_drops_the_queued_records_of_trimmed_segments_only(tmp_path: Path) -> None:
    ledger = ManagedLedger.open(tmp_path / "l", 1, segment_max_bytes=64, cache_max_bytes=0)
    for i in range(10):
        ledger.append(_payload(i))
    ledger.flush()
    for i in range(10, 30):
        ledger.append(_payload(i))
    ledger.trim_before(20)
    first = ledger.first_entry_id
    assert 10 < first <= 20
    assert [e.data for e in ledger.read_range(first, 29)] == [_payload(i) for i in range(first, 30)]
    assert ledger.sync() == 29
    ledger.close()
    assert _on_disk(tmp_path / "l") == [_payload(i) for i in range(first, 30)]


def test_a_failed_write_fences_and_nothing_unwritten_is_read_from_the_file(tmp_path: Path) -> None:
    files = FaultyFileLayer()
    ledger = ManagedLedger.open(tmp_path / "l", 1, files=files, cache_max_bytes=0)
    ledger.append(b"kept")
    ledger.sync()
    size = os.path.getsize(tmp_path / "l" / segment_file_name(0))
    files.inject("write", errno.EIO)
    ledger.append(b"lost")
    with pytest.raises(LedgerFencedError, match="Input/output error"):
        ledger.sync()
    assert os.path.getsize(tmp_path / "l" / segment_file_name(0)) == size
    assert ledger.read(1).data == b"lost"  # still queued in memory until the recovery drops it
    assert ledger.recover() == 0 and ledger.last_entry_id == 0
    ledger.append(b"again")
    ledger.close()
    assert _on_disk(tmp_path / "l") == [b"kept", b"again"]


def test_reads_while_the_commit_thread_writes(tmp_path: Path) -> None:
    """Appends and reads on one thread, syncs on another: every read returns the right bytes."""
    ledger = ManagedLedger.open(tmp_path / "l", 1, segment_max_bytes=4096, cache_max_bytes=0)
    stop = threading.Event()
    errors: list[BaseException] = []

    def commit_thread() -> None:
        try:
            while not stop.is_set():
                ledger.flush()
        except BaseException as exc:  # reported below
            errors.append(exc)

    thread = threading.Thread(target=commit_thread)
    thread.start()
    try:
        for i in range(3000):
            ledger.append(_payload(i))
            low = max(0, i - 50)
            assert [e.data for e in ledger.read_range(low, i)] == [_payload(k) for k in range(low, i + 1)]
            assert ledger.read(i // 2).data == _payload(i // 2)
    finally:
        stop.set()
        thread.join()
    assert not errors
    ledger.close()
    assert _on_disk(tmp_path / "l") == [_payload(i) for i in range(3000)]


def test_without_write_behind_append_writes_at_once(tmp_path: Path) -> None:
    ledger = ManagedLedger.open(tmp_path / "l", 1, write_behind=False)
    ledger.append(b"now")
    assert os.path.getsize(tmp_path / "l" / segment_file_name(0)) == 8 + 3
    ledger.close()
