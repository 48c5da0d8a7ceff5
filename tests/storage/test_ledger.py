"""Tests of the managed ledger: ids, roll-over, cache, reopen, trim and concurrent sync."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from crc32c import crc32c

from magnetar.storage import Entry, EntryNotFoundError, ManagedLedger, StorageError
from magnetar.storage.segment import RECORD_OVERHEAD, parse_segment_file_name


def _payload(i: int) -> bytes:
    return f"entry-{i:04d}-".encode() + bytes([i % 256]) * (i % 7)


def _segment_files(directory: Path) -> list[int]:
    return sorted(b for n in os.listdir(directory) if (b := parse_segment_file_name(n)) is not None)


def _fill(ledger: ManagedLedger, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        assert ledger.append(_payload(i)) == i


def test_new_ledger_is_empty(tmp_path: Path) -> None:
    with ManagedLedger.open(tmp_path / "l", 3) as ledger:
        assert ledger.ledger_id == 3
        assert ledger.first_entry_id == 0
        assert ledger.next_entry_id == 0
        assert ledger.last_entry_id == -1
        assert ledger.last_durable_entry_id == -1
        assert ledger.entry_count == 0
        assert ledger.size_bytes == 0
        assert ledger.read_range(0, -1) == []
        with pytest.raises(EntryNotFoundError):
            ledger.read(0)


def test_ids_start_at_zero_and_crc_is_returned(tmp_path: Path) -> None:
    with ManagedLedger.open(tmp_path / "l", 1) as ledger:
        assert ledger.append(b"first") == 0
        assert ledger.append(memoryview(b"second")) == 1
        assert ledger.append(b"third", crc32c(b"third")) == 2
        assert ledger.read(0) == Entry(0, b"first", crc32c(b"first"))
        assert ledger.read(1).data == b"second"
        assert ledger.read(2).crc == crc32c(b"third")
        assert ledger.entry_count == 3
        assert ledger.size_bytes == sum(len(p) + RECORD_OVERHEAD for p in (b"first", b"second", b"third"))


@pytest.mark.parametrize("cache_max_bytes", [0, 200, 1 << 20])
def test_roll_over_and_reads_across_segments(tmp_path: Path, cache_max_bytes: int) -> None:
    directory = tmp_path / "l"
    ledger = ManagedLedger.open(directory, 1, segment_max_bytes=120, cache_max_bytes=cache_max_bytes)
    _fill(ledger, 60)
    bases = _segment_files(directory)
    assert len(bases) > 5
    assert bases[0] == 0
    size = ledger.size_bytes
    assert all(path.stat().st_size == 0 for path in directory.iterdir())  # queued, not written yet
    for _ in ("queued", "written"):
        for i in range(60):
            entry = ledger.read(i)
            assert (entry.entry_id, entry.data, entry.crc) == (i, _payload(i), crc32c(_payload(i)))
        entries = ledger.read_range(0, 59)
        assert [e.entry_id for e in entries] == list(range(60))
        assert [e.data for e in entries] == [_payload(i) for i in range(60)]
        assert all(e.crc == crc32c(e.data) for e in entries)
        middle = ledger.read_range(bases[2] - 1, bases[3] + 1)
        assert [e.entry_id for e in middle] == list(range(bases[2] - 1, bases[3] + 2))
        assert ledger.flush() == 59
    for path in directory.iterdir():
        assert path.stat().st_size <= 120
    assert ledger.size_bytes == size == sum(p.stat().st_size for p in directory.iterdir())
    ledger.close()


def test_read_range_max_bytes(tmp_path: Path) -> None:
    for cache in (0, 1 << 20):
        ledger = ManagedLedger.open(tmp_path / f"l{cache}", 1, segment_max_bytes=60, cache_max_bytes=cache)
        for _ in range(10):
            ledger.append(b"x" * 20)
        assert len(ledger.read_range(0, 9, max_bytes=100)) == 5
        assert len(ledger.read_range(0, 9, max_bytes=99)) == 4
        assert len(ledger.read_range(3, 9, max_bytes=1)) == 1
        assert len(ledger.read_range(0, 9, max_bytes=None)) == 10
        ledger.close()


def test_read_range_mixing_disk_and_cache(tmp_path: Path) -> None:
    ledger = ManagedLedger.open(tmp_path / "l", 1, segment_max_bytes=100, cache_max_bytes=64)
    _fill(ledger, 40)
    entries = ledger.read_range(0, 39)
    assert [e.data for e in entries] == [_payload(i) for i in range(40)]
    assert [e.data for e in ledger.read_range(30, 39, max_bytes=40)] == [_payload(30), _payload(31)]
    ledger.close()


def test_reads_outside_stored_range_raise(tmp_path: Path) -> None:
    with ManagedLedger.open(tmp_path / "l", 1) as ledger:
        _fill(ledger, 3)
        with pytest.raises(EntryNotFoundError):
            ledger.read(3)
        with pytest.raises(EntryNotFoundError):
            ledger.read(-1)
        with pytest.raises(EntryNotFoundError):
            ledger.read_range(1, 3)
        assert issubclass(EntryNotFoundError, StorageError)


def test_reopen_continues_ids(tmp_path: Path) -> None:
    directory = tmp_path / "l"
    ledger = ManagedLedger.open(directory, 1, segment_max_bytes=100)
    _fill(ledger, 25)
    ledger.close()
    with pytest.raises(StorageError):
        ledger.append(b"closed")

    ledger = ManagedLedger.open(directory, 1, segment_max_bytes=100, cache_max_bytes=0)
    assert ledger.next_entry_id == 25
    assert ledger.last_entry_id == 24
    assert ledger.last_durable_entry_id == 24
    assert ledger.entry_count == 25
    _fill(ledger, 5, start=25)
    assert [e.data for e in ledger.read_range(0, 29)] == [_payload(i) for i in range(30)]
    ledger.close()


def test_reopen_recovers_torn_tail(tmp_path: Path) -> None:
    directory = tmp_path / "l"
    ledger = ManagedLedger.open(directory, 1, segment_max_bytes=100)
    _fill(ledger, 12)
    ledger.close()
    last = directory / f"{_segment_files(directory)[-1]:020d}.log"
    with last.open("r+b") as f:
        f.truncate(last.stat().st_size - 2)
    ledger = ManagedLedger.open(directory, 1, segment_max_bytes=100)
    assert ledger.last_entry_id == 10
    assert ledger.append(b"again") == 11
    assert ledger.read(11).data == b"again"
    ledger.close()


def test_trim_before(tmp_path: Path) -> None:
    directory = tmp_path / "l"
    ledger = ManagedLedger.open(directory, 1, segment_max_bytes=100, cache_max_bytes=0)
    _fill(ledger, 40)
    bases = _segment_files(directory)
    assert len(bases) >= 4
    size_before = ledger.size_bytes
    assert ledger.flush() == 39

    assert ledger.trim_before(bases[1] - 1) == 0
    assert ledger.first_entry_id == 0

    freed = ledger.trim_before(bases[2] + 1)
    assert freed > 0
    assert ledger.size_bytes == size_before - freed
    assert _segment_files(directory) == bases[2:]
    assert ledger.first_entry_id == bases[2]
    assert ledger.entry_count == 40 - bases[2]
    with pytest.raises(EntryNotFoundError):
        ledger.read(bases[2] - 1)
    with pytest.raises(EntryNotFoundError):
        ledger.read_range(0, 5)
    assert ledger.read(bases[2]).data == _payload(bases[2])

    ledger.trim_before(10_000)
    assert _segment_files(directory) == bases[-1:], "the active segment is never deleted"
    assert ledger.first_entry_id == bases[-1]
    assert ledger.append(b"still works") == 40
    ledger.close()

    ledger = ManagedLedger.open(directory, 1, segment_max_bytes=100)
    assert ledger.first_entry_id == bases[-1]
    assert ledger.next_entry_id == 41
    ledger.close()


def test_trim_drops_cached_entries(tmp_path: Path) -> None:
    ledger = ManagedLedger.open(tmp_path / "l", 1, segment_max_bytes=100, cache_max_bytes=1 << 20)
    _fill(ledger, 30)
    ledger.flush()
    ledger.trim_before(29)
    first = ledger.first_entry_id
    assert first > 0
    with pytest.raises(EntryNotFoundError):
        ledger.read(first - 1)
    assert [e.entry_id for e in ledger.read_range(first, 29)] == list(range(first, 30))
    ledger.close()


def test_sync_reports_durable_ids(tmp_path: Path) -> None:
    directory = tmp_path / "l"
    ledger = ManagedLedger.open(directory, 1, segment_max_bytes=100)
    assert ledger.sync() == -1
    _fill(ledger, 20)
    assert ledger.last_durable_entry_id == -1
    assert ledger.sync() == 19
    assert ledger.last_durable_entry_id == 19
    assert ledger.sync() == 19
    ledger.close()


def test_sync_from_a_thread_while_appending(tmp_path: Path) -> None:
    ledger = ManagedLedger.open(tmp_path / "l", 1, segment_max_bytes=2000)
    total = 3000
    appended = [-1]
    reported: list[tuple[int, int]] = []
    done = threading.Event()
    errors: list[BaseException] = []

    def syncer() -> None:
        try:
            while not done.is_set():
                floor = appended[0]
                durable = ledger.sync()
                reported.append((floor, durable))
            reported.append((appended[0], ledger.sync()))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=syncer)
    thread.start()
    for i in range(total):
        assert ledger.append(_payload(i)) == i
        appended[0] = i
    done.set()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert not errors
    assert len(reported) >= 2
    durables = [d for _, d in reported]
    assert durables == sorted(durables), "durable ids are monotonic"
    for floor, durable in reported:
        # Everything appended before sync() started is covered, nothing beyond what exists.
        assert floor <= durable <= total - 1
    assert durables[-1] == total - 1
    assert ledger.last_durable_entry_id == total - 1
    ledger.close()


def test_delete_removes_directory(tmp_path: Path) -> None:
    directory = tmp_path / "l"
    ledger = ManagedLedger.open(directory, 1)
    _fill(ledger, 3)
    ledger.delete()
    assert not directory.exists()
    assert ledger.closed


def test_invalid_options(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        ManagedLedger.open(tmp_path / "l", 1, segment_max_bytes=0)
    with pytest.raises(ValueError):
        ManagedLedger.open(tmp_path / "l", 1, cache_max_bytes=-1)


def test_shared_cache_budget_bounds_the_total_over_many_ledgers(tmp_path: Path) -> None:
    from magnetar.storage import CacheBudget

    budget = CacheBudget(limit=10_000)
    ledgers = [
        ManagedLedger.open(tmp_path / f"l{i}", i, cache_max_bytes=8_000, cache_budget=budget) for i in range(5)
    ]
    for ledger in ledgers:
        for _ in range(20):
            ledger.append(b"x" * 500)
    assert budget.used <= 10_000
    assert budget.used == sum(led.cache.bytes for led in ledgers)  # white-box accounting check
    for ledger in ledgers:  # everything still readable, from cache or disk
        assert [e.data for e in ledger.read_range(0, 19)] == [b"x" * 500] * 20
    ledgers[0].trim_before(10)
    ledgers[1].close()
    ledgers[2].delete()
    assert budget.used == sum(led.cache.bytes for led in ledgers)
    for ledger in (ledgers[0], ledgers[3], ledgers[4]):
        ledger.close()
    assert budget.used == 0
