"""Tests of segment files: round trips, reopen and crash recovery."""

from __future__ import annotations

import logging
import os
import struct
import tracemalloc
from pathlib import Path

import pytest
from crc32c import crc32c

from magnetar.storage.segment import (
    RECORD_OVERHEAD,
    CorruptEntryError,
    EntryNotFoundError,
    Segment,
    StorageError,
    parse_segment_file_name,
    segment_file_name,
)

PAYLOADS = [b"", b"a", b"hello world", bytes(range(256)) * 3, b"last-record-payload"]


def _write_segment(path: Path, payloads: list[bytes], base: int = 0) -> list[int]:
    """Write payloads to a fresh segment and return the record start offsets."""
    segment = Segment.open(path, base, writable=True)
    offsets = []
    for payload in payloads:
        offsets.append(segment.size_bytes)
        segment.append(payload, crc32c(payload))
    segment.sync()
    segment.close()
    return offsets


def test_file_names() -> None:
    assert segment_file_name(42) == "00000000000000000042.log"
    assert parse_segment_file_name("00000000000000000042.log") == 42
    assert parse_segment_file_name("42.log") is None
    assert parse_segment_file_name("00000000000000000042.tmp") is None
    assert parse_segment_file_name("0000000000000000004x.log") is None


def test_append_read_round_trip(tmp_path: Path) -> None:
    segment = Segment.open(tmp_path / segment_file_name(100), 100, writable=True)
    assert segment.entry_count == 0 and segment.next_entry_id == 100 and segment.size_bytes == 0
    ids = [segment.append(p, crc32c(p)) for p in PAYLOADS]
    assert ids == list(range(100, 100 + len(PAYLOADS)))
    assert segment.next_entry_id == 105
    assert segment.size_bytes == sum(len(p) + RECORD_OVERHEAD for p in PAYLOADS)
    assert segment.size_bytes == os.path.getsize(segment.path)
    for entry_id, payload in zip(ids, PAYLOADS, strict=True):
        assert segment.read(entry_id) == (payload, crc32c(payload))
    assert segment.read_many(100, 104) == [(p, crc32c(p)) for p in PAYLOADS]
    assert segment.read_many(101, 102) == [(p, crc32c(p)) for p in PAYLOADS[1:3]]
    assert segment.read_many(102, 101) == []
    segment.append(memoryview(b"from a view"), crc32c(b"from a view"))
    assert segment.read(105) == (b"from a view", crc32c(b"from a view"))
    with pytest.raises(EntryNotFoundError):
        segment.read(99)
    with pytest.raises(EntryNotFoundError):
        segment.read(106)
    with pytest.raises(EntryNotFoundError):
        segment.read_many(104, 110)
    segment.close()


def test_read_many_max_bytes(tmp_path: Path) -> None:
    segment = Segment.open(tmp_path / segment_file_name(0), 0, writable=True)
    for size in (10, 10, 10, 100):
        segment.append(b"x" * size, crc32c(b"x" * size))
    assert len(segment.read_many(0, 3, 25)) == 2
    assert len(segment.read_many(0, 3, 30)) == 3
    assert len(segment.read_many(3, 3, 5)) == 1
    assert segment.read_many(3, 3, 5, at_least_one=False) == []
    assert len(segment.read_many(0, 3, 0)) == 1
    segment.close()


def test_append_validation(tmp_path: Path) -> None:
    segment = Segment.open(tmp_path / segment_file_name(0), 0, writable=True)
    with pytest.raises(ValueError):
        segment.append(b"x", -1)
    with pytest.raises(ValueError):
        segment.append(b"x", 1 << 32)
    segment.seal()
    with pytest.raises(StorageError):
        segment.append(b"x", crc32c(b"x"))
    segment.close()


def test_reopen_after_close(tmp_path: Path) -> None:
    path = tmp_path / segment_file_name(7)
    _write_segment(path, PAYLOADS, base=7)
    segment = Segment.open(path, 7, writable=True)
    assert segment.entry_count == len(PAYLOADS)
    assert segment.read(11) == (PAYLOADS[4], crc32c(PAYLOADS[4]))
    assert segment.append(b"more", crc32c(b"more")) == 12
    segment.close()

    sealed = Segment.open(path, 7, writable=False)
    assert sealed.size_bytes == os.path.getsize(path)
    assert not sealed.writable
    assert sealed.read(12) == (b"more", crc32c(b"more"))
    assert sealed.entry_count == len(PAYLOADS) + 1
    with pytest.raises(StorageError):
        sealed.append(b"x", crc32c(b"x"))
    sealed.delete()
    assert not path.exists()
    with pytest.raises(StorageError):
        sealed.read(7)


def test_recovery_from_cut_at_every_byte_of_last_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = tmp_path / "source.log"
    offsets = _write_segment(source, PAYLOADS)
    original = source.read_bytes()
    last_start = offsets[-1]
    good = PAYLOADS[:-1]
    path = tmp_path / segment_file_name(0)
    for cut in range(last_start, len(original)):
        path.write_bytes(original[:cut])
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="magnetar.storage"):
            segment = Segment.open(path, 0, writable=True)
        assert segment.entry_count == len(good), cut
        assert os.path.getsize(path) == last_start, cut
        assert segment.size_bytes == last_start
        for entry_id, payload in enumerate(good):
            assert segment.read(entry_id) == (payload, crc32c(payload))
        with pytest.raises(EntryNotFoundError):
            segment.read(len(good))
        if cut > last_start:
            assert any("truncating" in r.getMessage() for r in caplog.records), cut
        new_id = segment.append(b"after-recovery", crc32c(b"after-recovery"))
        assert new_id == len(good)
        assert segment.read(new_id) == (b"after-recovery", crc32c(b"after-recovery"))
        segment.close()
        reopened = Segment.open(path, 0, writable=True)
        assert reopened.entry_count == len(good) + 1
        reopened.close()


def test_flipped_byte_in_last_record_is_truncated(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / segment_file_name(0)
    offsets = _write_segment(path, PAYLOADS)
    raw = bytearray(path.read_bytes())
    raw[offsets[-1] + RECORD_OVERHEAD + 3] ^= 0x40
    path.write_bytes(bytes(raw))
    with caplog.at_level(logging.WARNING, logger="magnetar.storage"):
        segment = Segment.open(path, 0, writable=True)
    assert any("checksum mismatch" in r.getMessage() for r in caplog.records)
    assert segment.entry_count == len(PAYLOADS) - 1
    assert os.path.getsize(path) == offsets[-1]
    segment.close()


def test_huge_announced_length_is_truncated_without_allocation(tmp_path: Path) -> None:
    path = tmp_path / segment_file_name(0)
    offsets = _write_segment(path, PAYLOADS[:2])
    end = os.path.getsize(path)
    for length in (0xFFFFFFF0, 60 * 1024 * 1024):
        with path.open("ab") as f:
            f.write(struct.pack(">II", length, 0) + b"garbage")
        tracemalloc.start()
        try:
            segment = Segment.open(path, 0, writable=True)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 1024 * 1024
        assert segment.entry_count == 2
        assert os.path.getsize(path) == end
        segment.close()
    assert offsets == [0, RECORD_OVERHEAD]


def test_sealed_segment_corrupted_in_the_middle(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A damaged record's bytes (its length intact) cost that entry only: the ones after stay readable."""
    path = tmp_path / segment_file_name(0)
    offsets = _write_segment(path, PAYLOADS)
    raw = bytearray(path.read_bytes())
    raw[offsets[2] + RECORD_OVERHEAD] ^= 0x01
    path.write_bytes(bytes(raw))
    segment = Segment.open(path, 0, writable=False)
    with caplog.at_level(logging.ERROR, logger="magnetar.storage"):
        assert segment.read(1) == (PAYLOADS[1], crc32c(PAYLOADS[1]))
    assert any("damaged" in r.getMessage() for r in caplog.records)
    assert segment.entry_count == len(PAYLOADS)
    with pytest.raises(CorruptEntryError):
        segment.read(2)
    for entry_id in (3, 4):
        assert segment.read(entry_id) == (PAYLOADS[entry_id], crc32c(PAYLOADS[entry_id]))
    assert os.path.getsize(path) == len(raw), "sealed segments are never truncated"
    segment.close()


def test_sealed_segment_with_a_damaged_length_in_the_middle(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A damaged record header loses the framing: entries from it on are unavailable, those before are served."""
    path = tmp_path / segment_file_name(0)
    offsets = _write_segment(path, PAYLOADS)
    raw = bytearray(path.read_bytes())
    raw[offsets[2]] ^= 0x40
    path.write_bytes(bytes(raw))
    segment = Segment.open(path, 0, writable=False)
    with caplog.at_level(logging.ERROR, logger="magnetar.storage"):
        assert segment.read(1) == (PAYLOADS[1], crc32c(PAYLOADS[1]))
    assert any("unavailable" in r.getMessage() for r in caplog.records)
    assert segment.entry_count == 2
    for entry_id in (2, 3, 4):
        with pytest.raises(EntryNotFoundError):
            segment.read(entry_id)
    assert os.path.getsize(path) == len(raw), "sealed segments are never truncated"
    segment.close()


def test_active_segment_keeps_entries_after_a_damaged_middle_record(tmp_path: Path) -> None:
    """Recovery of the writable segment truncates a torn tail only, never confirmed entries after a damaged one."""
    path = tmp_path / segment_file_name(0)
    offsets = _write_segment(path, PAYLOADS)
    raw = bytearray(path.read_bytes())
    raw[offsets[2] + RECORD_OVERHEAD + 3] ^= 0x08
    path.write_bytes(bytes(raw))
    segment = Segment.open(path, 0, writable=True)
    assert segment.entry_count == len(PAYLOADS)
    assert os.path.getsize(path) == len(raw)
    with pytest.raises(CorruptEntryError):
        segment.read(2)
    assert segment.read(4) == (PAYLOADS[4], crc32c(PAYLOADS[4]))
    segment.close()


def test_corruption_after_indexing_is_detected_on_read(tmp_path: Path) -> None:
    path = tmp_path / segment_file_name(0)
    offsets = _write_segment(path, PAYLOADS)
    segment = Segment.open(path, 0, writable=False)
    assert segment.entry_count == len(PAYLOADS)
    with path.open("r+b") as f:
        f.seek(offsets[2] + RECORD_OVERHEAD)
        f.write(b"Z")
    with pytest.raises(CorruptEntryError):
        segment.read(2)
    with pytest.raises(CorruptEntryError):
        segment.read_many(0, 4)
    segment.close()
