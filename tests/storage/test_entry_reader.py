"""Tests of a ledger's entry reads: each entry comes from the tail cache, the write queue or its
segment file, whichever holds it, also when the commit thread writes it in between."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from crc32c import crc32c

from magnetar.storage.entries import Entry
from magnetar.storage.entry_reader import EntryReader
from magnetar.storage.files import default_file_layer
from magnetar.storage.segment import CorruptEntryError, Segment, segment_file_name
from magnetar.storage.segment_chain import RolloverPolicy, SegmentChain
from magnetar.storage.tail_cache import TailCache
from magnetar.storage.write_queue import WriteQueue


def _data(i: int) -> bytes:
    return b"entry-%d" % i


class Ledgerish:
    """Entries 0..4 written to a segment file, 5..9 queued, 8..9 also in the tail cache."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir()
        segment = Segment.open(directory / segment_file_name(0), 0, writable=True)
        for i in range(5):
            segment.append(_data(i), crc32c(_data(i)))
        self.segment = segment
        self.chain = SegmentChain(directory, [segment], RolloverPolicy(), default_file_layer(), threading.Lock())
        self.cache = TailCache(1 << 20, None, 8)
        self.queue = WriteQueue()
        for i in range(5, 10):
            self.queue.add(segment, i, _data(i), crc32c(_data(i)))
        for i in (8, 9):
            self.cache.put(i, _data(i), crc32c(_data(i)))
        self.reader = EntryReader(7, self.chain, self.cache, self.queue)

    def write_queued(self) -> None:
        """What the commit thread does: write the queued records and index them, then forget them."""
        for segment, first, records in self.queue.take():
            positions, end = segment.write_records(segment.fileno(), records)
            segment.index_written(positions, end)
            self.chain.written = first + len(records) - 1
            self.queue.written(segment, first, records)


def test_entries_come_from_files_queue_and_cache(tmp_path: Path) -> None:
    ledger = Ledgerish(tmp_path / "l")
    expected = [Entry(i, _data(i), crc32c(_data(i))) for i in range(10)]
    assert ledger.reader.read_range(0, 9, None) == expected
    assert [ledger.reader.read(i) for i in range(10)] == expected
    assert ledger.reader.read_range(0, 9, 3 * len(_data(0))) == expected[:3]
    assert ledger.reader.read_range(6, 9, 1) == expected[6:7]  # at least one


def test_an_entry_written_meanwhile_is_read_from_its_file(tmp_path: Path) -> None:
    ledger = Ledgerish(tmp_path / "l")
    ledger.write_queued()
    assert ledger.queue.entries == {}
    assert [e.data for e in ledger.reader.read_range(0, 9, None)] == [_data(i) for i in range(10)]
    assert ledger.reader.read(6).data == _data(6)


def test_a_damaged_segment_loses_its_entries_but_read_intact_goes_on(tmp_path: Path) -> None:
    ledger = Ledgerish(tmp_path / "l")
    with open(ledger.segment.path, "r+b") as f:  # flip a byte of entry 1's data
        f.seek(2 * 8 + len(_data(0)))
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(CorruptEntryError):
        ledger.reader.read_range(0, 9, None)
    assert [e.entry_id for e in ledger.reader.read_intact(0, 9)] == [0, *range(2, 10)]
