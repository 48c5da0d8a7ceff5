"""Group commit rounds of many topics: every ledger written first, then the fdatasyncs at once.

A round of several topics with fsync "always" writes each ledger on the commit thread, runs the
fdatasyncs concurrently, and only then completes the publishes; one ledger's failed write or
fdatasync fails that topic's publishes only. Without fsync a round only writes, on the commit thread.
"""

from __future__ import annotations

import asyncio
import errno
import threading
from pathlib import Path

from magnetar.broker.commit import GroupCommitter
from magnetar.protocol.enums import ServerError
from magnetar.storage import ManagedLedger
from magnetar.storage.files import FaultyFileLayer
from magnetar.storage.segment import segment_file_name
from tests.broker.test_commit import FakeTopic
from tests.broker.topics.topic_harness import TopicHarness

TOPICS = 20


class GatedLayer(FaultyFileLayer):
    """Records the threads that write; fdatasyncs wait for ``gate``."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__()
        self.gate = gate
        self.write_threads: set[str] = set()
        self.synced = 0

    def writev(self, fd: int, buffers: list) -> int:  # type: ignore[override]
        self.write_threads.add(threading.current_thread().name)
        return super().writev(fd, buffers)

    def datasync(self, fd: int) -> None:
        self.gate.wait(5)
        super().datasync(fd)
        self.synced += 1


def many_topics(tmp_path: Path, committer: GroupCommitter, layers: list[FaultyFileLayer]) -> list[TopicHarness]:
    """One harness per layer, each topic on its own ledger, all logging to one list."""
    shared: list[tuple] = []
    harnesses = []
    for index, layer in enumerate(layers):
        harness = TopicHarness(tmp_path / f"t{index}")
        harness.ledger.close()
        ledger = ManagedLedger.open(tmp_path / f"t{index}" / "data", 100 + index, files=layer)
        ledger.sync()  # its new directory: not part of the rounds under test
        harness.topic.ledger = ledger
        harness.topic._committer = committer
        harness.log = shared
        harnesses.append(harness)
    return harnesses


def hold_first_round(committer: GroupCommitter) -> FakeTopic:
    """Start a round that waits in its write (a fake ledger's begin_sync: the write turn stays taken)
    so that the next appends make one round."""
    blocker = FakeTopic("blocker")
    blocker.ledger.gate.clear()
    blocker.append()
    committer.appended(blocker)
    assert blocker.ledger.writing.wait(5)  # taken alone
    return blocker


def test_a_round_of_many_topics_writes_all_then_syncs_then_receipts_in_topic_order(tmp_path: Path) -> None:
    gate = threading.Event()
    gate.set()  # until the topics are set up
    layer = GatedLayer(gate)

    async def run() -> None:
        committer = GroupCommitter(asyncio.get_running_loop(), fsync=True)
        harnesses = many_topics(tmp_path, committer, [layer] * TOPICS)
        gate.clear()
        layer.synced = 0
        layer.write_threads.clear()
        blocker = hold_first_round(committer)
        producers = [h.producer(f"p{i}") for i, h in enumerate(harnesses)]
        for entry in range(3):  # interleaved across topics; the round takes them in order of first append
            for index, (harness, producer) in enumerate(zip(harnesses, producers, strict=True)):
                harness.publish(producer, 10 * index + entry)  # a sequence id tells the topic
        blocker.ledger.gate.set()
        await asyncio.sleep(0.3)
        # every ledger written (by the commit thread) before any fdatasync completed, no receipt yet
        for index in range(TOPICS):
            assert (tmp_path / f"t{index}" / "data" / segment_file_name(0)).stat().st_size > 0
        assert len(layer.write_threads) == 1 and layer.synced == 0  # one commit thread wrote them all
        assert layer.write_threads <= {"magnetar-commit", "magnetar-commit-2"}
        assert harnesses[0].log == [] and all(h.topic.last_readable_id == -1 for h in harnesses)
        gate.set()
        await asyncio.wait_for(committer.drain(), 5)
        assert layer.synced == TOPICS and committer.rounds == 2
        expected = [("receipt", 10 * i + entry, 11, entry) for i in range(TOPICS) for entry in range(3)]
        assert harnesses[0].log == expected
        assert all(h.topic.last_readable_id == 2 for h in harnesses)
        committer.close()
        for harness in harnesses:
            harness.topic.ledger.close()

    asyncio.run(run())


def one_failing(tmp_path: Path, op: str) -> None:
    """A round of TOPICS topics whose topic 3 fails ``op``: only its publishes fail, then it recovers."""
    layers = [FaultyFileLayer() for _ in range(TOPICS)]

    async def run() -> None:
        committer = GroupCommitter(asyncio.get_running_loop(), fsync=True)
        harnesses = many_topics(tmp_path, committer, layers)
        layers[3].inject(op, errno.EIO)
        blocker = hold_first_round(committer)
        producers = [h.producer(f"p{i}") for i, h in enumerate(harnesses)]
        for entry in range(2):
            for index, (harness, producer) in enumerate(zip(harnesses, producers, strict=True)):
                harness.publish(producer, 10 * index + entry)
        blocker.ledger.gate.set()
        await asyncio.wait_for(committer.drain(), 5)
        log = harnesses[0].log
        failed = [("error", 30 + entry, ServerError.PersistenceError) for entry in range(2)]
        expected = [("receipt", 10 * i + entry, 11, entry) for i in range(TOPICS) for entry in range(2)]
        assert log == expected[:6] + failed + expected[8:]
        failing = harnesses[3].topic
        assert failing.last_readable_id == -1 and failing.ledger.last_entry_id == -1 and not failing.ledger.fenced
        assert all(h.topic.last_readable_id == 1 for i, h in enumerate(harnesses) if i != 3)
        del log[:]
        harnesses[3].publish(producers[3], 30)  # the client's resend after its SEND_ERROR
        await asyncio.wait_for(committer.drain(), 5)
        assert log == [("receipt", 30, 11, 0)] and failing.last_readable_id == 0
        committer.close()
        for harness in harnesses:
            harness.topic.ledger.close()

    asyncio.run(run())


def test_a_failing_fdatasync_of_one_topic_in_a_round_of_many_fails_that_topic_only(tmp_path: Path) -> None:
    one_failing(tmp_path, "datasync")


def test_a_failing_write_of_one_topic_in_a_round_of_many_fails_that_topic_only(tmp_path: Path) -> None:
    one_failing(tmp_path, "write")


def test_without_fsync_a_round_of_many_topics_only_writes_on_the_commit_thread() -> None:
    async def run() -> None:
        committer = GroupCommitter(asyncio.get_running_loop(), fsync=False)
        topics = [FakeTopic(str(i)) for i in range(TOPICS)]
        for _ in range(3):
            for topic in topics:
                topic.append()
                committer.appended(topic)
            await asyncio.wait_for(committer.drain(), 5)
        assert all(t.durable[-1] == 2 and t.ledger.syncs == 0 for t in topics)
        assert {name for t in topics for name in t.ledger.flush_threads} == {"magnetar-commit"}
        assert not [t for t in threading.enumerate() if t.name.startswith("magnetar-fsync")]
        committer.close()

    asyncio.run(run())


def test_two_topics_on_one_ledger_in_a_round_are_both_synced(tmp_path: Path) -> None:
    """A ledger met twice in a round: begun twice (the second takes nothing), ended in that order."""

    async def run() -> None:
        committer = GroupCommitter(asyncio.get_running_loop(), fsync=True)
        ledger = ManagedLedger.open(tmp_path / "shared", 7)
        first, second = FakeTopic("first"), FakeTopic("second")
        first.ledger = second.ledger = ledger  # type: ignore[assignment]
        blocker = hold_first_round(committer)
        ledger.append(b"a")
        committer.appended(first)
        ledger.append(b"b")
        committer.appended(second)
        blocker.ledger.gate.set()
        await asyncio.wait_for(committer.drain(), 5)
        assert first.durable == [1] and second.durable == [1] and ledger.last_durable_entry_id == 1
        committer.close()
        ledger.close()

    asyncio.run(run())
