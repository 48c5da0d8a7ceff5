"""Group commit: one sync round covers every append since the last, receipts follow durability."""

from __future__ import annotations

import asyncio
import errno
import threading
import time
from pathlib import Path

from magnetar.broker.commit import GroupCommitter


class FakeLedger:
    """As the real ledger: a sync covers what was appended when it began; ``gate`` holds a begun sync
    in its write (the round's commit thread keeps the write turn), ``sync_gate`` in its fdatasync."""

    def __init__(self) -> None:
        self.last_entry_id = -1
        self.taken = -1
        self.syncs = 0
        self.flushes = 0
        self.flush_threads: list[str] = []
        self.gate = threading.Event()
        self.gate.set()
        self.sync_gate = threading.Event()
        self.sync_gate.set()
        self.begun: list[int] = []
        self.writing = threading.Event()  # set once a sync began its write

    @property
    def sync_needed(self) -> bool:
        return self.last_entry_id > self.taken

    def sync(self) -> int:
        pending = self.begin_sync()
        pending.run()
        return self.end_sync(pending)

    def begin_sync(self) -> FakeSync:
        pending = FakeSync(self, self.last_entry_id)
        self.taken = pending.covered
        self.begun.append(pending.covered)
        self.writing.set()
        self.gate.wait(5)
        return pending

    def end_sync(self, pending: FakeSync) -> int:
        return pending.covered

    def flush(self) -> int:
        self.flushes += 1
        self.flush_threads.append(threading.current_thread().name)
        return self.last_entry_id


class FakeSync:
    """A begun sync of a FakeLedger: its run is the fdatasync."""

    needed = True

    def __init__(self, ledger: FakeLedger, covered: int) -> None:
        self.ledger = ledger
        self.covered = covered

    def run(self) -> None:
        self.ledger.sync_gate.wait(5)
        self.ledger.syncs += 1


class FakeTopic:
    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False
        self.ledger = FakeLedger()
        self.durable: list[int] = []

    def append(self) -> None:
        self.ledger.last_entry_id += 1

    def on_durable(self, last: int) -> None:
        self.durable.append(last)

    def on_sync_failed(self, error: BaseException) -> None:
        raise AssertionError(error)


def test_appends_during_a_round_are_covered_by_the_next_single_round() -> None:
    async def run() -> None:
        committer = GroupCommitter(asyncio.get_running_loop(), fsync=True)
        rounds: list[float] = []
        latencies: list[float] = []
        committer.on_round = rounds.append
        committer.on_append_latency = latencies.append
        a, b = FakeTopic("a"), FakeTopic("b")
        a.ledger.gate.clear()  # hold the first round in its write: the write turn stays taken
        a.append()
        committer.appended(a)
        await asyncio.sleep(0.05)
        for _ in range(10):  # all of these land while the first round is stuck
            a.append()
            committer.appended(a)
            b.append()
            committer.appended(b)
        a.ledger.gate.set()
        await asyncio.wait_for(committer.drain(), 5)
        assert a.durable == [0, 10] and b.durable == [9]
        assert committer.rounds == 2 and len(rounds) == 2 and len(latencies) == 2
        assert latencies[0] >= 0.05  # the first round's oldest append waited for the stuck fsync
        committer.close()

    asyncio.run(run())


def test_without_fsync_entries_are_durable_once_the_commit_thread_wrote_them() -> None:
    async def run() -> None:
        committer = GroupCommitter(asyncio.get_running_loop(), fsync=False)
        latencies: list[float] = []
        committer.on_append_latency = latencies.append
        t = FakeTopic("t")
        for _ in range(3):
            t.append()
            committer.appended(t)
        assert t.durable == []
        await asyncio.wait_for(committer.drain(), 5)
        assert t.durable == [2] and t.ledger.syncs == 0 and len(latencies) == 1
        assert committer.rounds == 0  # a round that only writes is not counted as a sync round
        assert t.ledger.flushes == 1 and t.ledger.flush_threads == ["magnetar-commit"]  # without fsync: one thread
        committer.close()

    asyncio.run(run())


def test_failed_fsync_fails_the_publishes_and_the_resend_is_stored_once(tmp_path: Path) -> None:
    """fsyncgate: an fsync that fails is never assumed to have worked. The ledger is fenced, the
    publishes waiting on it fail with PersistenceError, nothing they appended is ever readable, and a
    producer resending them (same sequence ids, deduplication on) gets them stored exactly once."""
    from magnetar.protocol.enums import ServerError
    from magnetar.storage import ManagedLedger
    from magnetar.storage.files import FaultyFileLayer
    from tests.broker.topics.topic_harness import TopicHarness

    async def run() -> None:
        files = FaultyFileLayer()
        harness = TopicHarness(tmp_path)
        harness.ledger.close()
        ledger = ManagedLedger.open(tmp_path / "faulty", 11, files=files)
        topic = harness.topic
        topic.ledger = ledger
        committer = GroupCommitter(asyncio.get_running_loop(), fsync=True)
        topic._committer = committer
        harness.enable_deduplication()
        producer = harness.producer("p")
        for seq in range(3):
            harness.publish(producer, seq)
        await asyncio.wait_for(committer.drain(), 5)
        assert [e[0] for e in harness.log] == ["receipt"] * 3
        files.inject("datasync", errno.EIO)
        harness.publish(producer, 3)
        harness.publish(producer, 4)
        await asyncio.wait_for(committer.drain(), 5)
        assert harness.log[3:] == [("error", 3, ServerError.PersistenceError), ("error", 4, ServerError.PersistenceError)]
        assert topic.last_readable_id == 2 and ledger.last_entry_id == 2 and not ledger.fenced
        harness.publish(producer, 3)  # the client's resend after its SEND_ERROR
        harness.publish(producer, 4)
        await asyncio.wait_for(committer.drain(), 5)
        assert harness.log[5:] == [("receipt", 3, 11, 3), ("receipt", 4, 11, 4)]
        committer.close()
        ledger.close()

    asyncio.run(run())
    with ManagedLedger.open(tmp_path / "faulty", 11) as reopened:
        assert reopened.last_entry_id == 4


class LateLedger(FakeLedger):
    """A ledger whose sync covers what was appended until its write began (after the gate)."""

    def begin_sync(self) -> FakeSync:
        self.gate.wait(5)
        self.taken = self.last_entry_id
        return FakeSync(self, self.last_entry_id)


def test_appends_a_round_covered_get_no_round_of_their_own() -> None:
    async def run() -> None:
        committer = GroupCommitter(asyncio.get_running_loop(), fsync=True)
        t = FakeTopic("t")
        t.ledger = LateLedger()
        t.ledger.gate.clear()
        t.append()
        committer.appended(t)
        await asyncio.sleep(0.05)
        for _ in range(5):  # appended after the round was taken, before its write: it writes them too
            t.append()
            committer.appended(t)
        t.ledger.gate.set()
        await asyncio.wait_for(committer.drain(), 5)
        assert t.durable == [5] and committer.rounds == 1 and t.ledger.syncs == 1
        committer.close()

    asyncio.run(run())


def test_rounds_run_on_two_commit_threads_that_close_stops() -> None:
    async def run() -> None:
        def commit_threads() -> int:
            return len([t for t in threading.enumerate() if t.name in ("magnetar-commit", "magnetar-commit-2")])

        before = commit_threads()
        committer = GroupCommitter(asyncio.get_running_loop(), fsync=True)
        topics = [FakeTopic(str(i)) for i in range(3)]
        for _ in range(4):
            for topic in topics:
                topic.append()
                committer.appended(topic)
            await asyncio.wait_for(committer.drain(), 5)
        assert [t.durable[-1] for t in topics] == [3, 3, 3]
        assert commit_threads() == before + 2
        committer.close()
        assert commit_threads() == before

    asyncio.run(run())


def test_receipts_wait_for_the_commit_thread_to_write_and_sync(tmp_path: Path) -> None:
    """The loop only queues an append: the commit thread writes the record, then fdatasyncs, and only
    then does the publish get its receipt."""
    from magnetar.storage import ManagedLedger
    from magnetar.storage.files import FaultyFileLayer
    from magnetar.storage.segment import segment_file_name
    from tests.broker.topics.topic_harness import TopicHarness

    gate = threading.Event()
    write_gate = threading.Event()  # the commit thread may write at once: the check below must see before
    write_gate.set()  # until the ledger is open
    threads: dict[str, str] = {}

    class GatedLayer(FaultyFileLayer):
        def writev(self, fd: int, buffers: list) -> int:  # type: ignore[override]
            write_gate.wait(5)
            threads["write"] = threading.current_thread().name
            return super().writev(fd, buffers)

        def datasync(self, fd: int) -> None:
            gate.wait(5)
            super().datasync(fd)

    async def run() -> None:
        harness = TopicHarness(tmp_path)
        harness.ledger.close()
        ledger = ManagedLedger.open(tmp_path / "gated", 12, files=GatedLayer())
        write_gate.clear()
        topic = harness.topic
        topic.ledger = ledger
        committer = GroupCommitter(asyncio.get_running_loop(), fsync=True)
        topic._committer = committer
        producer = harness.producer("p")
        harness.publish(producer, 0)
        segment = tmp_path / "gated" / segment_file_name(0)
        assert segment.stat().st_size == 0  # queued on the loop, not written
        write_gate.set()
        await asyncio.sleep(0.2)
        assert segment.stat().st_size > 0 and threads["write"] in ("magnetar-commit", "magnetar-commit-2")
        assert harness.log == [] and topic.last_readable_id == -1  # written, not yet synced
        gate.set()
        await asyncio.wait_for(committer.drain(), 5)
        assert harness.log == [("receipt", 0, 11, 0)] and topic.last_readable_id == 0  # (ledger id: the topic's)
        committer.close()
        ledger.close()

    asyncio.run(run())


def test_a_rounds_outcomes_run_inside_one_completion_scope_in_order() -> None:
    """The receipts of one round are sent within one completion scope entered on the loop (the
    service's: written to their sockets as it exits), topic by topic in the round's order."""
    events: list[str] = []

    class Scope:
        def __enter__(self) -> None:
            events.append(f"enter {threading.current_thread() is threading.main_thread()}")

        def __exit__(self, *exc: object) -> None:
            events.append("exit")

    in_write = threading.Event()

    class HeldLedger(FakeLedger):
        def begin_sync(self) -> FakeSync:
            in_write.set()
            return super().begin_sync()

    class Recording(FakeTopic):
        def __init__(self, name: str) -> None:
            super().__init__(name)
            self.ledger = HeldLedger()

        def on_durable(self, last: int) -> None:
            events.append(f"{self.name} {last}")
            super().on_durable(last)

    async def run() -> None:
        committer = GroupCommitter(asyncio.get_running_loop(), fsync=True, completion_scope=Scope)
        a, b, c = Recording("a"), Recording("b"), Recording("c")
        a.ledger.gate.clear()  # hold a first round in its write, so that b and c (and a again) make one round
        a.append()
        committer.appended(a)
        assert await asyncio.to_thread(in_write.wait, 5)  # the first round took a's entry 0 only
        for topic in (b, c, a):
            topic.append()
            committer.appended(topic)
        a.ledger.gate.set()
        await asyncio.wait_for(committer.drain(), 5)
        committer.close()

    asyncio.run(run())
    assert events == ["enter True", "a 0", "exit", "enter True", "b 0", "c 0", "a 1", "exit"]


def test_each_topic_of_a_round_is_observed_before_it_hears_of_the_round() -> None:
    async def run() -> None:
        committer = GroupCommitter(asyncio.get_running_loop(), fsync=True)
        seen: list[tuple[str, int | BaseException, float, float, list[int]]] = []

        def observe(topic: FakeTopic, outcome: int | BaseException, wait: float, elapsed: float) -> None:
            seen.append((topic.name, outcome, wait, elapsed, list(topic.durable)))

        committer.on_topic_round = observe  # type: ignore[assignment]
        a, b = FakeTopic("a"), FakeTopic("b")
        a.ledger.sync_gate.clear()  # the round of a and b waits in its fdatasync
        for topic in (a, a, b):  # appended before the committer hears of them: a's round covers both of a's
            topic.append()
        committer.appended(a)
        committer.appended(b)
        await asyncio.sleep(0.05)
        a.ledger.sync_gate.set()
        await asyncio.wait_for(committer.drain(), 5)
        assert sorted((name, outcome, before) for name, outcome, _, _, before in seen) == [("a", 1, []), ("b", 0, [])]
        for name, _, wait, elapsed, _ in seen:
            assert wait >= elapsed  # from the round's oldest append, taken before the round began
            if name == "a":  # (b may have come in the next round, pipelined behind a's)
                assert elapsed >= 0.05  # a's round waited in its fdatasync
        assert a.durable == [1] and b.durable == [0]
        committer.close()

    asyncio.run(run())


def test_a_rounds_outcome_counts_as_waiting_for_the_loop_until_the_loop_runs_it() -> None:
    """The committer's ``urgency`` (which a dispatch run yields to) says an outcome waits from the
    moment the commit thread hands it over until the loop starts it, and no longer."""
    async def run() -> None:
        committer = GroupCommitter(asyncio.get_running_loop(), fsync=True)
        t = FakeTopic("t")
        t.append()
        committer.appended(t)
        assert not committer.urgency.waiting()
        for _ in range(5000):  # the loop held (as by a long callback) until the round is handed over
            if committer.urgency.handed:
                break
            time.sleep(0.001)
        assert committer.urgency.waiting() and t.durable == []
        await asyncio.wait_for(committer.drain(), 5)
        assert not committer.urgency.waiting() and committer.urgency.handed == committer.urgency.ran == 1
        assert t.durable == [0]
        committer.close()

    asyncio.run(run())
