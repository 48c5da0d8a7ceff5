"""Group commit: one sync round covers every append since the last, receipts follow durability."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from magnetar.broker.commit import GroupCommitter


class FakeLedger:
    def __init__(self) -> None:
        self.last_entry_id = -1
        self.syncs = 0
        self.gate = threading.Event()
        self.gate.set()

    def sync(self) -> int:
        covered = self.last_entry_id  # as the real ledger: what was appended before the fsync began
        self.gate.wait(5)
        self.syncs += 1
        return covered


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
        pool = ThreadPoolExecutor(1)
        committer = GroupCommitter(asyncio.get_running_loop(), pool, fsync=True)
        rounds: list[float] = []
        latencies: list[float] = []
        committer.on_round = rounds.append
        committer.on_append_latency = latencies.append
        a, b = FakeTopic("a"), FakeTopic("b")
        a.ledger.gate.clear()  # hold the first round in fsync
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
        pool.shutdown()

    asyncio.run(run())


def test_without_fsync_entries_are_durable_at_the_end_of_the_loop_iteration() -> None:
    async def run() -> None:
        pool = ThreadPoolExecutor(1)
        committer = GroupCommitter(asyncio.get_running_loop(), pool, fsync=False)
        latencies: list[float] = []
        committer.on_append_latency = latencies.append
        t = FakeTopic("t")
        for _ in range(3):
            t.append()
            committer.appended(t)
        assert t.durable == []
        await asyncio.wait_for(committer.drain(), 5)
        assert t.durable == [2] and t.ledger.syncs == 0 and len(latencies) == 1
        pool.shutdown()

    asyncio.run(run())
