"""What a ledger keeps of the bytes it is given (``owned_entry``) and what a read back hands out."""

from __future__ import annotations

from pathlib import Path

from crc32c import crc32c

from magnetar.storage import ManagedLedger
from magnetar.storage.entries import VIEW_MAX_SLACK, VIEW_MIN_BYTES, owned_entry
from magnetar.storage.segment import Segment, segment_file_name


def test_bytes_are_kept_as_they_are() -> None:
    data = b"x" * 100
    assert owned_entry(data) is data


def test_a_large_view_of_a_buffer_that_is_little_more_than_it_is_kept_not_copied() -> None:
    frame = b"h" * VIEW_MAX_SLACK + b"e" * VIEW_MIN_BYTES  # a received frame: its header, then its entry
    view = memoryview(frame)[VIEW_MAX_SLACK:]
    kept = owned_entry(view)
    assert kept is view
    assert kept == b"e" * VIEW_MIN_BYTES


def test_views_that_would_pin_more_than_the_entry_or_are_small_or_mutable_are_copied() -> None:
    big_read = b"h" * (VIEW_MAX_SLACK + 1) + b"e" * VIEW_MIN_BYTES  # a read holding more than this frame
    small = b"h" * 10 + b"e" * (VIEW_MIN_BYTES - 1)
    mutable = bytearray(b"e" * VIEW_MIN_BYTES)
    cases = [memoryview(big_read)[VIEW_MAX_SLACK + 1 :], memoryview(small)[10:], memoryview(mutable), mutable]
    for data in cases:
        kept = owned_entry(data)
        assert kept.__class__ is bytes and kept == bytes(data)
    copied = owned_entry(memoryview(mutable))
    mutable[0] = ord("z")  # the caller reuses its buffer: what the ledger kept does not change
    assert copied == b"e" * VIEW_MIN_BYTES


def test_the_ledger_keeps_a_received_frames_view_and_writes_and_reads_it_back(tmp_path: Path) -> None:
    entry = bytes(range(256)) * (VIEW_MIN_BYTES // 256 + 1)
    frame = b"\x00" * 60 + entry
    view = memoryview(frame)[60:]
    with ManagedLedger.open(tmp_path / "ledger", 1) as ledger:
        entry_id = ledger.append(view, crc32c(entry))
        assert ledger.read(entry_id).data is view  # from the tail cache: the view itself, no copy
        ledger.sync()
    with ManagedLedger.open(tmp_path / "ledger", 1) as ledger:  # reopened: read from the file
        back = ledger.read(entry_id)
        assert back.data == entry and back.crc == crc32c(entry)


def test_records_read_back_are_views_of_one_read_each_checked(tmp_path: Path) -> None:
    payloads = [b"a" * 10, b"b" * 5000, b"c" * 3]
    segment = Segment.open(tmp_path / segment_file_name(0), 0, writable=True)
    for payload in payloads:
        segment.append(payload, crc32c(payload))
    segment.sync()
    records = segment.read_many(0, 2)
    assert [(bytes(data), crc) for data, crc in records] == [(p, crc32c(p)) for p in payloads]
    assert all(data.__class__ is memoryview for data, _ in records)
    assert records[0][0].obj is records[2][0].obj  # one pread's buffer, sliced, not copied per record
    segment.close()
