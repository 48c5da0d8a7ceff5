"""Admin peek / examine / by-id reads of entries no longer in memory go to the ledger's read thread
(issue 22: the event loop never waits on the segment files); what they return is what a read on the
spot returns, and a read that fails there is done once on the spot, for its error."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from magnetar.broker.resources.messages import read_off_loop
from magnetar.storage import segment as segment_module
from magnetar.storage.ledger import ManagedLedger
from magnetar.storage.read_thread import ReadThread
from magnetar.storage.segment import CorruptEntryError


def _ledger(tmp_path: Path, loop: asyncio.AbstractEventLoop, count: int) -> tuple[ManagedLedger, ReadThread]:
    reads = ReadThread(loop.call_soon_threadsafe)
    ledger = ManagedLedger.open(tmp_path / "ledger", 1, reads=reads, cache_max_bytes=0, segment_max_bytes=4096)
    for i in range(count):
        ledger.append(b"entry-%06d" % i)
    ledger.sync()
    return ledger, reads


def test_a_stored_entry_is_read_on_the_read_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readers: list[str] = []
    original = segment_module.Segment.read_span

    def recording(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        readers.append(threading.current_thread().name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(segment_module.Segment, "read_span", recording)

    async def main() -> None:
        ledger, reads = _ledger(tmp_path, asyncio.get_running_loop(), 500)
        try:
            for entry_id in (0, 137, 499):
                (entry,) = await read_off_loop(ledger, entry_id)
                assert (entry.entry_id, entry.data) == (entry_id, b"entry-%06d" % entry_id)
        finally:
            ledger.close()
            reads.shutdown()

    asyncio.run(main())
    assert len(readers) == 3
    assert all(name.startswith("magnetar-read") for name in readers)


def test_trimmed_entries_are_not_found(tmp_path: Path) -> None:
    async def main() -> None:
        ledger, reads = _ledger(tmp_path, asyncio.get_running_loop(), 500)
        try:
            assert ledger.trim_before(400) > 0
            assert await read_off_loop(ledger, 3) == []
            (entry,) = await read_off_loop(ledger, ledger.first_entry_id)
            assert entry.data == b"entry-%06d" % ledger.first_entry_id
        finally:
            ledger.close()
            reads.shutdown()

    asyncio.run(main())


def test_a_read_that_fails_off_the_loop_is_done_on_the_spot_for_its_error(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def damaged(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        raise CorruptEntryError("damaged")

    async def main() -> None:
        ledger, reads = _ledger(tmp_path, asyncio.get_running_loop(), 50)
        try:
            monkeypatch.setattr(segment_module.Segment, "read_span", damaged)
            monkeypatch.setattr(segment_module.Segment, "read_many", damaged)
            with pytest.raises(CorruptEntryError):
                await read_off_loop(ledger, 7)
        finally:
            ledger.close()
            reads.shutdown()

    asyncio.run(main())
