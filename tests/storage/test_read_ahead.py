"""A cursor's reads of entries no longer in memory go to the ledger's read thread (Pulsar's
asyncReadEntries): [] until they are in, then the same entries, in the same order, as a read on the
spot; at the tail nothing leaves the loop; seeks, trims and closes meanwhile change nothing served."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from magnetar.storage import segment as segment_module
from magnetar.storage.entries import Entry
from magnetar.storage.ledger import ManagedLedger
from magnetar.storage.managed_cursor import ManagedCursor
from magnetar.storage.read_ahead import READ_AHEAD_BYTES, READ_AHEAD_ENTRIES, ReadAhead
from magnetar.storage.read_thread import ReadThread


class Harness:
    """A ledger with a read thread posting back to a running loop, and a cursor reading it off the loop."""

    def __init__(self, tmp_path: Path, loop: asyncio.AbstractEventLoop, count: int, **options: object) -> None:
        self.reads = ReadThread(loop.call_soon_threadsafe)
        self.ledger = ManagedLedger.open(tmp_path / "ledger", 1, reads=self.reads, **options)  # type: ignore[arg-type]
        for i in range(count):
            self.ledger.append(b"entry-%06d" % i)
        self.ledger.sync()
        self.wakes = asyncio.Event()
        self.woken = 0
        self.cursor = ManagedCursor(self.ledger, "persistent://t/n/x", "sub")
        self.cursor.read_off_loop(self._woken)

    def _woken(self) -> None:
        self.woken += 1
        self.wakes.set()

    async def read_all(self, count: int, batch: int) -> list[int]:
        """Read ``count`` entries ``batch`` at a time, waiting for the read thread when told to."""
        got: list[int] = []
        while len(got) < count:
            self.wakes.clear()
            entries = self.cursor.read_entries(batch, self.ledger.last_entry_id)
            if not entries:
                await asyncio.wait_for(self.wakes.wait(), 10)
                continue
            assert [e.data for e in entries] == [b"entry-%06d" % e.entry_id for e in entries]
            got.extend(e.entry_id for e in entries)
        return got

    def close(self) -> None:
        self.ledger.close()
        self.reads.shutdown()


def _run(body: Callable[[asyncio.AbstractEventLoop], object]) -> None:
    async def main() -> None:
        await body(asyncio.get_running_loop())  # type: ignore[misc]

    asyncio.run(main())


def test_a_backlog_comes_from_the_read_thread_in_order_and_complete(tmp_path: Path) -> None:
    loop_thread: list[int] = []
    readers: list[int] = []
    original = segment_module.Segment.read_span

    def recording(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        readers.append(threading.get_ident())
        return original(self, *args, **kwargs)

    async def body(loop: asyncio.AbstractEventLoop) -> None:
        loop_thread.append(threading.get_ident())
        h = Harness(tmp_path, loop, 1500, cache_max_bytes=0, segment_max_bytes=16 * 1024)
        try:
            assert h.cursor.read_entries(100, h.ledger.last_entry_id) == []  # under way
            got = await h.read_all(1500 - 0, 100)
            assert got == list(range(1500))
            # read ahead: a few reads of READ_AHEAD_ENTRIES, not one per dispatch batch of 100
            assert h.woken <= 1500 // (READ_AHEAD_ENTRIES // 2) + 2
        finally:
            h.close()

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(segment_module.Segment, "read_span", recording)
        _run(body)
    assert readers and loop_thread[0] not in readers  # no file read on the loop


def test_at_the_tail_entries_come_on_the_spot_without_the_read_thread(tmp_path: Path) -> None:
    async def body(loop: asyncio.AbstractEventLoop) -> None:
        h = Harness(tmp_path, loop, 50)  # all in the tail cache
        try:
            entries = h.cursor.read_entries(100, h.ledger.last_entry_id)
            assert [e.entry_id for e in entries] == list(range(50))
            h.ledger.append(b"entry-%06d" % 50)
            assert [e.entry_id for e in h.cursor.read_entries(100, h.ledger.last_entry_id)] == [50]
            assert h.woken == 0
        finally:
            h.close()

    _run(body)


def test_a_rewind_within_what_was_read_is_served_again_from_memory(tmp_path: Path) -> None:
    async def body(loop: asyncio.AbstractEventLoop) -> None:
        h = Harness(tmp_path, loop, 300, cache_max_bytes=0)
        try:
            first = await h.read_all(100, 100)
            assert first == list(range(100))
            h.cursor.rewind_to(40)  # 40..99 read but not dispatched
            woken = h.woken
            again = h.cursor.read_entries(100, h.ledger.last_entry_id)
            assert [e.entry_id for e in again] == list(range(40, 140))
            assert h.woken == woken
        finally:
            h.close()

    _run(body)


def test_a_seek_while_a_read_is_under_way_reads_from_the_new_position(tmp_path: Path) -> None:
    async def body(loop: asyncio.AbstractEventLoop) -> None:
        h = Harness(tmp_path, loop, 2000, cache_max_bytes=0)
        try:
            assert h.cursor.read_entries(10, h.ledger.last_entry_id) == []
            h.cursor.seek(1500)
            got = await h.read_all(500, 100)
            assert got == list(range(1500, 2000))
            assert h.cursor.mark_delete == 1499
        finally:
            h.close()

    _run(body)


def test_a_trim_while_a_read_is_under_way_resumes_at_the_first_stored_entry(tmp_path: Path) -> None:
    async def body(loop: asyncio.AbstractEventLoop) -> None:
        h = Harness(tmp_path, loop, 600, cache_max_bytes=0, segment_max_bytes=2048)
        try:
            assert h.cursor.read_entries(10, h.ledger.last_entry_id) == []
            h.ledger.trim_before(300)
            first = h.ledger.first_entry_id
            assert 0 < first <= 300
            got = await h.read_all(600 - first, 100)
            assert got == list(range(first, 600))
        finally:
            h.close()

    _run(body)


def test_a_read_finishing_after_its_ledger_closed_is_harmless(tmp_path: Path) -> None:
    async def body(loop: asyncio.AbstractEventLoop) -> None:
        h = Harness(tmp_path, loop, 600, cache_max_bytes=0)
        assert h.cursor.read_entries(10, h.ledger.last_entry_id) == []
        h.ledger.close()
        await asyncio.wait_for(h.wakes.wait(), 10)  # whatever it read, the owner is told
        h.reads.shutdown()
        with pytest.raises(Exception, match="closed"):
            # kept entries, if any, are served; otherwise the read on the spot says the ledger is closed
            while h.cursor.read_entries(10, h.ledger.last_entry_id):
                pass

    _run(body)


def test_a_damaged_entry_read_off_the_loop_is_skipped_as_on_the_spot(tmp_path: Path) -> None:
    async def body(loop: asyncio.AbstractEventLoop) -> None:
        h = Harness(tmp_path, loop, 20, cache_max_bytes=0)
        try:
            path = h.ledger.directory / sorted(p.name for p in h.ledger.directory.glob("*.log"))[0]
            raw = bytearray(path.read_bytes())
            needle = raw.find(b"entry-000005")
            raw[needle] ^= 0xFF
            path.write_bytes(bytes(raw))
            got = await h.read_all(19, 100)
            assert got == [i for i in range(20) if i != 5]
            assert h.cursor.is_acked(5)  # skipped and acknowledged, as a read on the spot does
        finally:
            h.close()

    _run(body)


def test_redeliveries_not_in_memory_come_from_the_read_thread(tmp_path: Path) -> None:
    async def body(loop: asyncio.AbstractEventLoop) -> None:
        h = Harness(tmp_path, loop, 100, cache_max_bytes=0)
        try:
            h.wakes.clear()
            assert h.cursor.read_ids([3, 50, 7]) is None  # being read
            assert h.cursor.read_ids([3]) is None  # still: one read by id at a time
            await asyncio.wait_for(h.wakes.wait(), 10)
            got = h.cursor.read_ids([3, 50, 7])
            assert got is not None and [(e.entry_id, e.data) for e in got] == [
                (3, b"entry-000003"), (50, b"entry-000050"), (7, b"entry-000007")]
            assert h.cursor.read_position == 0  # a redelivery does not move it
        finally:
            h.close()

    _run(body)


def test_redeliveries_trimmed_or_damaged_meanwhile_are_left_out_as_on_the_spot(tmp_path: Path) -> None:
    async def body(loop: asyncio.AbstractEventLoop) -> None:
        h = Harness(tmp_path, loop, 600, cache_max_bytes=0, segment_max_bytes=2048)
        try:
            path = h.ledger.directory / sorted(p.name for p in h.ledger.directory.glob("*.log"))[-2]
            raw = bytearray(path.read_bytes())
            damaged = int(bytes(raw[raw.find(b"entry-") + 6 : raw.find(b"entry-") + 12]))
            raw[raw.find(b"entry-") + 7] ^= 0xFF
            path.write_bytes(bytes(raw))
            h.wakes.clear()
            assert h.cursor.read_ids([1, damaged, 599]) is None
            h.ledger.trim_before(300)  # entry 1 goes
            await asyncio.wait_for(h.wakes.wait(), 10)
            got = h.cursor.read_ids([1, damaged, 599])
            assert got is not None and [e.entry_id for e in got] == [599]
            assert h.cursor.is_acked(damaged)
        finally:
            h.close()

    _run(body)


class _BigEntries:
    """A detached source of ``count`` entries of 1 MiB (one shared bytes object) whose reads off the
    loop are answered when the test says so, honouring their byte limit as the ledger does."""

    SIZE = 1 << 20

    def __init__(self, count: int) -> None:
        self.data = bytes(self.SIZE)
        self.count = count
        self.pending: list[Callable[[], None]] = []
        self.first_entry_id = 0

    def in_memory(self, first: int) -> bool:
        return False

    def read_later(self, first: int, last: int, max_bytes: int | None, done: Callable[[object], None]) -> bool:
        fits = max(1, (max_bytes or len(self.data)) // len(self.data))
        entries = [Entry(i, self.data, 0) for i in range(first, min(last, first + fits - 1) + 1)]
        self.pending.append(lambda: done(entries))
        return True

    def read_ids_later(self, entry_ids: list[int], done: Callable[[object], None]) -> bool:
        return False


def test_large_entries_read_off_the_loop_are_kept_within_a_few_reads_worth_of_bytes() -> None:
    # 1 MiB batch entries: keeping READ_AHEAD_ENTRIES of them behind the cursor held 200 MB per
    # subscription catching up (issue 27's consume-1024 peak)
    source = _BigEntries(1000)
    reads = ReadAhead(source, lambda: None)  # type: ignore[arg-type]
    got: list[int] = []
    most = 0
    while len(got) < source.count:
        first = len(got)
        out = reads.read(first, first + 99, source.count - 1)
        assert out is not None
        got.extend(e.entry_id for e in out)
        most = max(most, reads.kept_bytes)
        while source.pending:  # the read thread answers (a read may start another)
            source.pending.pop(0)()
            most = max(most, reads.kept_bytes)
    assert got == list(range(source.count))
    assert most <= 3 * READ_AHEAD_BYTES + _BigEntries.SIZE
    assert reads.kept_bytes == 0  # caught up: nothing held for a subscription at the end


def test_a_cursor_that_read_everything_kept_holds_nothing() -> None:
    source = _BigEntries(150)
    source.data = b"x" * 100
    reads = ReadAhead(source, lambda: None)  # type: ignore[arg-type]
    assert reads.read(0, 99, 149) == []
    source.pending.pop(0)()
    assert reads.kept_bytes == 150 * 100
    assert [e.entry_id for e in reads.read(0, 99, 149) or []] == list(range(100))
    assert reads.kept_bytes == 150 * 100  # 100..149 still to come, 0..99 kept for a rewind
    assert [e.entry_id for e in reads.read(100, 199, 149) or []] == list(range(100, 150))
    assert reads.kept_bytes == 0 and not source.pending


def test_small_entries_stay_kept_behind_for_a_rewind_up_to_read_ahead_entries() -> None:
    source = _BigEntries(1000)
    source.data = b"x" * 100
    reads = ReadAhead(source, lambda: None)  # type: ignore[arg-type]
    assert reads.read(0, 99, 999) == []
    source.pending.pop(0)()
    assert [e.entry_id for e in reads.read(0, 99, 999) or []] == list(range(100))
    while source.pending:
        source.pending.pop(0)()
    # a rewind into what was handed out is served from memory, at once
    assert [e.entry_id for e in reads.read(40, 139, 999) or []] == list(range(40, 140))


class _VariedEntries(_BigEntries):
    """Entries of 60-140 KB (a batch of ~1,000 small messages each), sizes varying by id."""

    def read_later(self, first: int, last: int, max_bytes: int | None, done: Callable[[object], None]) -> bool:
        entries, total = [], 0
        for i in range(first, last + 1):
            size = 60_000 + (i * 7919) % 80_000
            if entries and max_bytes is not None and total + size > max_bytes:
                break
            entries.append(Entry(i, bytes(size), 0))
            total += size
        self.pending.append(lambda: done(entries))
        return True


def test_one_large_entry_at_a_time_keeps_the_byte_count_of_what_is_kept_exact() -> None:
    # a consumer whose permits take one batch entry per dispatch: each read drops one entry from
    # what is kept; the count of kept bytes follows the drops (it was a new sum of all kept entries)
    source = _VariedEntries(600)
    reads = ReadAhead(source, lambda: None)  # type: ignore[arg-type]
    got: list[int] = []
    while len(got) < source.count:
        out = reads.read(len(got), len(got), source.count - 1)
        assert out is not None
        got.extend(e.entry_id for e in out)
        assert reads.kept_bytes == sum(len(e.data) for e in reads._kept)
        while source.pending:
            source.pending.pop(0)()
            assert reads.kept_bytes == sum(len(e.data) for e in reads._kept)
        assert reads.kept_bytes <= 3 * READ_AHEAD_BYTES + 140_000
    assert got == list(range(source.count))
    assert reads.kept_bytes == 0
