"""Pipelined, self-continuing commit rounds: round k+1 is written while round k's fdatasync runs,
fdatasynced once k ended, and taken by a commit thread without waiting for the loop.

Invariant under test: an entry is confirmed only after an fdatasync that began after its write
returned; rounds end (and their receipts go out) in order; a failed fdatasync fails its round and
every later round of the ledger, and the producers get what they got before pipelining (one
PersistenceError per publish waiting, nothing of it readable, a resend stored once).
"""

from __future__ import annotations

import asyncio
import errno
import threading
import time
from collections.abc import Callable
from pathlib import Path

from magnetar.broker.commit import GroupCommitter
from magnetar.protocol.enums import ServerError
from magnetar.storage import ManagedLedger
from magnetar.storage.files import FaultyFileLayer
from tests.broker.test_commit import FakeTopic
from tests.broker.topics.topic_harness import TopicHarness

COMMIT_THREADS = {"magnetar-commit", "magnetar-commit-2"}


class TimelineLayer(FaultyFileLayer):
    """Records each write and fdatasync (begin, end) with its thread; fdatasyncs wait for ``gate``."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()
        self.events: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def _record(self, what: str) -> None:
        with self._lock:
            self.events.append((what, threading.current_thread().name))

    def writev(self, fd: int, buffers: list) -> int:  # type: ignore[override]
        written = super().writev(fd, buffers)
        self._record("write")
        return written

    def datasync(self, fd: int) -> None:
        self._record("sync begin")
        try:
            self.gate.wait(5)
            super().datasync(fd)  # an injected fault fires here, after the gate
        finally:
            self._record("sync end")

    def count(self, what: str) -> int:
        with self._lock:
            return sum(1 for event, _ in self.events if event == what)


async def _until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.005)


def _gated_topic(tmp_path: Path, committer: GroupCommitter) -> tuple[TopicHarness, TimelineLayer]:
    layer = TimelineLayer()
    harness = TopicHarness(tmp_path)
    harness.ledger.close()
    ledger = ManagedLedger.open(tmp_path / "gated", 11, files=layer)
    ledger.sync()  # its new directory: not part of the rounds under test
    layer.events.clear()
    harness.topic.ledger = ledger
    harness.topic._committer = committer
    return harness, layer


def test_the_next_round_is_written_during_an_fdatasync_and_synced_after_it(tmp_path: Path) -> None:
    async def run() -> None:
        committer = GroupCommitter(asyncio.get_running_loop(), fsync=True)
        harness, layer = _gated_topic(tmp_path, committer)
        producer = harness.producer("p")
        layer.gate.clear()
        harness.publish(producer, 0)  # round k: written, then held in its fdatasync
        await _until(lambda: layer.count("sync begin") == 1)
        harness.publish(producer, 1)  # round k+1: taken and written by the other commit thread
        harness.publish(producer, 2)
        await _until(lambda: layer.count("write") == 2)
        await asyncio.sleep(0.1)
        assert layer.count("sync begin") == 1  # k+1 waits for k's fdatasync to end before its own
        assert harness.log == [] and harness.topic.last_readable_id == -1
        layer.gate.set()
        await asyncio.wait_for(committer.drain(), 5)
        assert harness.log == [("receipt", seq, 11, seq) for seq in range(3)]
        assert committer.rounds == 2
        events = layer.events
        assert [event for event, _ in events] == ["write", "sync begin", "write", "sync end", "sync begin", "sync end"]
        (_, first), (_, second) = events[0], events[2]
        assert {first, second} == COMMIT_THREADS  # one round per thread, each writes and syncs its own
        assert events[1][1] == events[3][1] == first and events[4][1] == events[5][1] == second
        committer.close()
        harness.topic.ledger.close()

    asyncio.run(run())


def test_a_failed_fdatasync_with_the_next_round_written_confirms_neither(tmp_path: Path) -> None:
    async def run() -> None:
        committer = GroupCommitter(asyncio.get_running_loop(), fsync=True)
        harness, layer = _gated_topic(tmp_path, committer)
        ledger = harness.topic.ledger
        harness.enable_deduplication()
        producer = harness.producer("p")
        harness.publish(producer, 0)
        await asyncio.wait_for(committer.drain(), 5)
        assert harness.log == [("receipt", 0, 11, 0)]
        layer.gate.clear()
        layer.inject("datasync", errno.EIO)  # round k's fdatasync fails; k+1's succeeds
        harness.publish(producer, 1)
        await _until(lambda: layer.count("sync begin") == 2)  # (0's round, then k's, held)
        harness.publish(producer, 2)
        harness.publish(producer, 3)
        await _until(lambda: layer.count("write") == 3)  # k+1 written while k's fdatasync is held
        layer.gate.set()
        await asyncio.wait_for(committer.drain(), 5)
        errors = [("error", seq, ServerError.PersistenceError) for seq in (1, 2, 3)]
        assert harness.log[1:] == errors  # each publish fails exactly once, none confirmed
        assert layer.count("sync end") == 3  # k+1's fdatasync ran, and it still confirmed nothing
        assert harness.topic.last_readable_id == 0 and ledger.last_entry_id == 0 and not ledger.fenced
        for seq in (1, 2, 3):  # the client's resends after their SEND_ERROR
            harness.publish(producer, seq)
        await asyncio.wait_for(committer.drain(), 5)
        assert harness.log[4:] == [("receipt", seq, 11, seq) for seq in (1, 2, 3)]
        committer.close()
        ledger.close()

    asyncio.run(run())
    with ManagedLedger.open(tmp_path / "gated", 11) as reopened:
        assert reopened.last_entry_id == 3


def test_a_lone_send_is_written_synced_and_reported_by_one_thread_in_one_round(tmp_path: Path) -> None:
    async def run() -> None:
        committer = GroupCommitter(asyncio.get_running_loop(), fsync=True)
        harness, layer = _gated_topic(tmp_path, committer)
        producer = harness.producer("p")
        for seq in range(3):  # one at a time: each waits for its receipt
            harness.publish(producer, seq)
            await asyncio.wait_for(committer.drain(), 5)
            assert harness.log[-1] == ("receipt", seq, 11, seq)
        assert committer.rounds == 3
        events = layer.events
        assert [event for event, _ in events] == ["write", "sync begin", "sync end"] * 3
        for start in range(0, 9, 3):  # no hop between the write and the fdatasync of a round
            assert len({name for _, name in events[start : start + 3]}) == 1
        committer.close()
        harness.topic.ledger.close()

    asyncio.run(run())


def test_a_commit_thread_takes_the_next_round_without_the_loop() -> None:
    """While the loop is blocked, the commit threads end round k, sync round k+1 and take, write and
    sync round k+2: no round waits for a loop callback to be started."""

    async def run() -> None:
        committer = GroupCommitter(asyncio.get_running_loop(), fsync=True)
        topic = FakeTopic("t")
        ledger = topic.ledger
        ledger.sync_gate.clear()
        topic.append()
        committer.appended(topic)
        await _until(lambda: ledger.begun == [0])
        topic.append()
        committer.appended(topic)
        await _until(lambda: ledger.begun == [0, 1])  # k+1 written while k's fdatasync is held
        topic.append()
        committer.appended(topic)  # both threads busy: nobody is woken, the first free one takes it
        ledger.sync_gate.set()
        time.sleep(0.3)  # the loop runs nothing meanwhile
        assert ledger.begun == [0, 1, 2] and ledger.syncs == 3 and topic.durable == []
        await asyncio.wait_for(committer.drain(), 5)
        assert topic.durable == [0, 1, 2] and committer.rounds == 3
        committer.close()

    asyncio.run(run())


def test_a_round_of_several_topics_is_written_during_the_fdatasync_before_and_ends_after_it() -> None:
    """Rounds of several topics pipeline as one topic's: b and c, appended while a's round is held in
    its fdatasync, are written by the other thread at once, and fdatasynced (together, on the sync
    pool) and confirmed only after a's round ended."""

    async def run() -> None:
        committer = GroupCommitter(asyncio.get_running_loop(), fsync=True)
        a, b, c = FakeTopic("a"), FakeTopic("b"), FakeTopic("c")
        a.ledger.sync_gate.clear()
        a.append()
        committer.appended(a)
        await _until(lambda: a.ledger.begun == [0])
        for topic in (b, c):
            topic.append()
            committer.appended(topic)
        await _until(lambda: b.ledger.begun == [0] and c.ledger.begun == [0])  # round k+1 written
        await asyncio.sleep(0.1)
        assert (b.ledger.syncs, c.ledger.syncs, b.durable, c.durable) == (0, 0, [], [])  # waits for round k
        assert a.durable == [] and a.ledger.syncs == 0
        a.ledger.sync_gate.set()
        await asyncio.wait_for(committer.drain(), 5)
        assert (a.durable, b.durable, c.durable) == ([0], [0], [0]) and committer.rounds == 2
        assert (a.ledger.syncs, b.ledger.syncs, c.ledger.syncs) == (1, 1, 1)
        committer.close()

    asyncio.run(run())


def test_two_failures_in_flight_are_reported_once_and_a_publish_after_the_recovery_is_confirmed(tmp_path: Path) -> None:
    """Round k's fdatasync and round k+1's write fail while both are in flight: both fence the ledger
    before either is reported. The first report fails every publish waiting and recovers; a publish
    made before the second report reaches the loop must not be failed by it (its entry is stored by
    the next round and readable: its client would count a stored message as failed)."""

    async def run() -> None:
        committer = GroupCommitter(asyncio.get_running_loop(), fsync=True)
        harness, layer = _gated_topic(tmp_path, committer)
        topic, ledger = harness.topic, harness.topic.ledger
        producer = harness.producer("p")
        failed_reports: list[str] = []
        on_sync_failed = topic.on_sync_failed

        def publish_after_the_first_report(error: BaseException) -> None:
            failed_reports.append(str(error))
            on_sync_failed(error)
            if len(failed_reports) == 1:  # a SEND read between the two reports
                harness.publish(producer, 2)

        topic.on_sync_failed = publish_after_the_first_report  # type: ignore[method-assign]
        layer.gate.clear()
        harness.publish(producer, 0)  # round k: written, held in its fdatasync
        await _until(lambda: layer.count("sync begin") == 1)
        layer.inject("datasync", errno.EIO, times=1)  # k's fdatasync fails once the gate opens
        layer.inject("write", errno.EIO, times=1)  # k+1's write fails now
        harness.publish(producer, 1)
        await _until(lambda: ledger.fenced)
        layer.gate.set()
        await _until(lambda: len(harness.log) == 3)
        await asyncio.wait_for(committer.drain(), 5)
        assert len(failed_reports) == 1  # the second failure was reported by the first report
        assert harness.log == [("error", 0, ServerError.PersistenceError), ("error", 1, ServerError.PersistenceError),
                               ("receipt", 2, 11, 0)]
        assert topic.last_readable_id == 0 and ledger.last_entry_id == 0 and not ledger.fenced
        committer.close()
        ledger.close()

    asyncio.run(run())
    with ManagedLedger.open(tmp_path / "gated", 11) as reopened:
        assert reopened.last_entry_id == 0
