"""A read_compacted cursor reads its compacted view's records on the read thread, as it reads the
topic's ledger (issue 22): [] while they are read, then the same entries, with their original ids, in
order, as a read on the spot; past the view's horizon it reads the topic's ledger."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from magnetar.broker.topics.compaction import ENTRY_BATCHES
from magnetar.storage import CompactedView, CompactedWriter
from magnetar.storage import segment as segment_module
from magnetar.storage.ledger import ManagedLedger
from magnetar.storage.managed_cursor import ManagedCursor
from magnetar.storage.read_thread import ReadThread

from ..broker.topics.test_compaction import compact_all, single

KEYS = 40  # keys a..; each written 3 times, so the view keeps the last 40 of 120 entries


def _topic_entries() -> list[bytes]:
    return [single(f"k{n % KEYS:02d}", b"v%d" % n) for n in range(3 * KEYS)]


def _view(directory: Path, reads: ReadThread | None) -> CompactedView:
    _, compacted = compact_all(_topic_entries())
    writer = CompactedWriter(directory, 9, 4096)
    for entry_id, data, ack_set in compacted:
        writer.add(entry_id, data, ack_set)
    writer.finish(3 * KEYS - 1)
    return CompactedView.open(directory, 9, 3 * KEYS - 1, ENTRY_BATCHES, reads)


def test_the_view_is_read_on_the_read_thread_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readers: list[str] = []
    original = segment_module.Segment.read_span

    def recording(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        readers.append(threading.current_thread().name)
        return original(self, *args, **kwargs)

    async def main() -> tuple[list[int], list[bytes], list[int], list[int]]:
        loop = asyncio.get_running_loop()
        reads = ReadThread(loop.call_soon_threadsafe)
        view = _view(tmp_path / "view", reads)
        ledger = ManagedLedger.open(tmp_path / "topic", 9, reads=reads, cache_max_bytes=0)
        for data in _topic_entries():
            ledger.append(data)
        for n in range(5):  # after the horizon
            ledger.append(single("tail", b"t%d" % n))
        ledger.sync()
        expected = [e.entry_id for e in view.read_from(0, 1000)]
        monkeypatch.setattr(segment_module.Segment, "read_span", recording)
        woken = asyncio.Event()
        cursor = ManagedCursor(ledger, "persistent://t/n/x", "sub")
        cursor.read_off_loop(woken.set)
        got: list[int] = []
        data: list[bytes] = []
        empty = 0
        try:
            while len(got) < KEYS + 5:
                woken.clear()
                entries = cursor.read_entries(7, ledger.last_entry_id, view)
                if not entries:
                    empty += 1
                    await asyncio.wait_for(woken.wait(), 10)
                    continue
                got.extend(e.entry_id for e in entries)
                data.extend(bytes(e.data) for e in entries)
        finally:
            view.close()
            ledger.close()
            reads.shutdown()
        return got, data, expected, [empty]

    got, data, expected, (empty,) = asyncio.run(main())
    assert expected == list(range(2 * KEYS, 3 * KEYS))  # the last write of each key
    assert got == expected + list(range(3 * KEYS, 3 * KEYS + 5))
    assert data[:KEYS] == [single(f"k{n % KEYS:02d}", b"v%d" % n) for n in expected]
    assert empty >= 2  # the view's records, then the topic's tail, each waited for
    assert readers and all(name.startswith("magnetar-read") for name in readers)


def test_without_a_read_thread_the_view_is_read_on_the_spot(tmp_path: Path) -> None:
    async def main() -> list[int]:
        view = _view(tmp_path / "view", None)
        ledger = ManagedLedger.open(tmp_path / "topic", 9, cache_max_bytes=0)
        for data in _topic_entries():
            ledger.append(data)
        ledger.sync()
        cursor = ManagedCursor(ledger, "persistent://t/n/x", "sub")
        cursor.read_off_loop(lambda: None)
        try:
            return [e.entry_id for e in cursor.read_entries(100, ledger.last_entry_id, view)]
        finally:
            view.close()
            ledger.close()

    assert asyncio.run(main()) == list(range(2 * KEYS, 3 * KEYS))


def test_redeliveries_from_the_view_are_read_on_the_read_thread(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    readers: list[str] = []
    original = segment_module.Segment.read_span

    def recording(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        readers.append(threading.current_thread().name)
        return original(self, *args, **kwargs)

    async def main() -> tuple[list[int] | None, list[int], list[bytes]]:
        loop = asyncio.get_running_loop()
        reads = ReadThread(loop.call_soon_threadsafe)
        view = _view(tmp_path / "view", reads)
        ledger = ManagedLedger.open(tmp_path / "topic", 9, reads=reads, cache_max_bytes=0)
        for data in _topic_entries():
            ledger.append(data)
        ledger.sync()
        monkeypatch.setattr(segment_module.Segment, "read_span", recording)
        woken = asyncio.Event()
        cursor = ManagedCursor(ledger, "persistent://t/n/x", "sub")
        cursor.read_off_loop(woken.set)
        # 3 is compacted out (not in the view), 119 and 85 are; asked in that order
        wanted = [119, 3, 85]
        try:
            first = cursor.read_ids(wanted, view)
            for _ in range(10):
                woken.clear()
                got = cursor.read_ids(wanted, view)
                if got is not None:
                    break
                await asyncio.wait_for(woken.wait(), 10)
            assert got is not None
            return (None if first is None else [e.entry_id for e in first]), [e.entry_id for e in got], \
                [bytes(e.data) for e in got]
        finally:
            view.close()
            ledger.close()
            reads.shutdown()

    first, got, data = asyncio.run(main())
    assert first is None  # being read off the loop
    assert got == [119, 85]
    assert data == [single(f"k{n % KEYS:02d}", b"v%d" % n) for n in (119, 85)]
    assert readers and all(name.startswith("magnetar-read") for name in readers)
