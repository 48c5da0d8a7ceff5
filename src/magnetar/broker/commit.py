"""Group commit: one fsync round covers every entry appended since the previous one was taken.

Topics report appends with :meth:`GroupCommitter.appended`, which hands the topic to the commit
threads (:class:`~magnetar.broker.commit_rounds.RoundHandoff`). A round is what a commit thread
takes from there: it writes what each ledger queued (the event loop never writes a segment file: a
write can wait for the file system's journal for milliseconds) and, with fsync "always",
fdatasyncs it; when it completes, each topic learns how far its ledger is durable and sends the
receipts that covers. With fsync "never", entries count as durable once written.

**Pipelined, self-continuing rounds** (fsync "always"). Two commit threads pass a write turn and a
sync turn between them: a thread with something to take gets the write turn, takes the next round
and writes it, then lets the write turn go and waits for the sync turn, which rounds get in the
order they were taken; holding it, it runs the round's fdatasyncs, ends each ledger's sync and
hands the outcome to the loop. So while round k's fdatasync runs, the other thread writes round k+1
(what was appended since k was taken), and fdatasyncs it once k ended; and no thread waits for the
loop to start the next round: a thread that ended its round takes whatever the loop appended
meanwhile at once. A lone send's round is taken, written, synced and reported by one thread woken
once, as before (the other one sleeps on). Invariant: an entry is confirmed only after an fdatasync that began
after its write returned (the round that wrote it runs it), rounds end in order, and a failed
fdatasync fails its round and every later round of that ledger (``ManagedLedger.end_sync``: the
later ones end with ``SyncSupersededError``, which the committer passes over, since the failed
round's report already failed every publish still waiting; see storage/ledger_sync.py). Two
failures in flight at once (round k's fdatasync, round k+1's write) are reported once: the second
finds the ledger recovered by the first report and is passed over (``commit_rounds.report``).

With several topics, a round writes every ledger first, then runs their fdatasyncs at once (its
thread and up to ``SYNC_CONCURRENCY - 1`` pool threads, each taking the next ledger not taken), and
ends each ledger's sync. Without fsync, one commit thread only writes.

The loop wakes a sleeping commit thread through a :class:`queue.SimpleQueue` (a lock release in C),
and each round's outcome comes back with one ``call_soon_threadsafe``, which runs the receipts in
the loop's next iteration, within ``completion_scope`` (the service passes net's
``flushed_at_exit``): the round's receipts are written to their sockets in that same callback.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext

from magnetar.broker.commit_rounds import (
    CommittedTopic,
    RoundHandoff,
    SyncTurn,
    begin_round,
    finish_round,
    report,
)
from magnetar.broker.loop_urgency import LoopUrgency

__all__ = ["SYNC_CONCURRENCY", "CommittedTopic", "GroupCommitter"]

#: commit threads with fsync "always": one writes round k+1 while the other's round k fdatasyncs
PIPELINE_THREADS = 2

#: fdatasyncs of one round run this many at once (the round's commit thread and SYNC_CONCURRENCY - 1
#: pool threads, each taking the next ledger): the file system's journal commits concurrent
#: fdatasyncs together (ext4, xfs), where one after the other a round lasts topics x one commit
SYNC_CONCURRENCY = 16


class GroupCommitter:
    """Schedules ledger syncs and reports durability back to topics on the loop.

    Rounds run on the committer's own threads (``magnetar-commit``, and ``magnetar-commit-2`` with
    fsync "always"), started with the first append and stopped by :meth:`close`.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        fsync: bool = True,
        completion_scope: Callable[[], AbstractContextManager[object]] = nullcontext,
    ) -> None:
        self._loop = loop
        self._fsync = fsync
        #: entered around each round's outcome on the loop (the receipts it sends)
        self._completion_scope = completion_scope
        self._handoff = RoundHandoff()
        #: (loop) rounds whose outcome the loop reported, set on each
        self._completed = 0
        self._progress: asyncio.Event = asyncio.Event()
        #: the rounds' outcomes handed to the loop and not yet run: a dispatch run yields to them
        self.urgency = LoopUrgency()
        self.rounds = 0
        self.sync_seconds_total = 0.0
        #: optional observer of each round's duration in seconds (its writes, fdatasyncs and ends)
        self.on_round: object = None
        #: optional observer, once per round, of the wait of the round's oldest append until it
        #: became durable: the worst append-to-receipt latency of that round (metrics)
        self.on_append_latency: object = None
        #: optional observer, per round and topic before the topic hears of it: (topic, outcome, the
        #: round's oldest append wait, the round's duration) (topics/storage_stats.py's observe_round)
        self.on_topic_round: Callable[[CommittedTopic, int | BaseException, float, float], None] | None = None
        #: held by the commit thread that takes and writes a round
        self._write_turn = threading.Lock()
        #: (write turn) the number of the next round taken
        self._next_round = 0
        self._sync_turn = SyncTurn()
        #: (sync turn) runs the fdatasyncs of a round of several topics at once (made on the first)
        self._sync_pool: ThreadPoolExecutor | None = None
        self._threads: list[threading.Thread] = []

    def appended(self, topic: CommittedTopic) -> None:
        """``topic`` appended at least one entry that is not durable yet."""
        if not self._threads:
            self._start_threads()
        self._handoff.add(topic)

    def _start_threads(self) -> None:
        names = ["magnetar-commit"] + [f"magnetar-commit-{n}" for n in range(2, PIPELINE_THREADS + 1) if self._fsync]
        self._threads = [threading.Thread(target=self._commit_thread, name=name, daemon=True) for name in names]
        for thread in self._threads:
            thread.start()

    def _commit_thread(self) -> None:
        """(commit thread) Take a round, write it, then in its turn sync, end and report it; again."""
        wake: queue.SimpleQueue[None] = queue.SimpleQueue()
        while self._handoff.wait(wake):
            with self._write_turn:
                job = self._handoff.take()
                if job is None:  # the other thread took it, or a begun sync had taken its entries
                    continue
                topics, oldest = job
                number, self._next_round = self._next_round, self._next_round + 1
                start = time.perf_counter()
                begun = begin_round(topics, self._fsync)
                written = time.perf_counter() - start
            self._sync_turn.wait(number)
            try:
                start = time.perf_counter()
                results = finish_round(topics, begun, self._pool_for(topics), SYNC_CONCURRENCY - 1)
                elapsed = written + time.perf_counter() - start
                # reported inside the turn: the loop gets the rounds' outcomes in their order
                self.urgency.handed += 1
                self._loop.call_soon_threadsafe(self._round_done, topics, results, elapsed, oldest)
            except RuntimeError:  # the loop is closed: nobody waits for the outcome any more
                return
            finally:
                self._sync_turn.done(number)

    def _pool_for(self, topics: list[CommittedTopic]) -> ThreadPoolExecutor | None:
        """(sync turn) The pool of a round's fdatasyncs, made for the first round of several topics."""
        if self._fsync and len(topics) > 1 and self._sync_pool is None:
            self._sync_pool = ThreadPoolExecutor(max(1, SYNC_CONCURRENCY - 1), thread_name_prefix="magnetar-fsync")
        return self._sync_pool

    def _round_done(
        self, topics: list[CommittedTopic], results: list[int | BaseException], elapsed: float, oldest: float | None
    ) -> None:
        self.urgency.ran += 1
        with self._completion_scope():
            self._complete_round(topics, results, elapsed, oldest)

    def _complete_round(
        self, topics: list[CommittedTopic], results: list[int | BaseException], elapsed: float, oldest: float | None
    ) -> None:
        self._completed += 1
        if self._fsync:  # with fsync never a round only writes: it is not a sync round
            self.rounds += 1
            self.sync_seconds_total += elapsed
            if callable(self.on_round):
                self.on_round(elapsed)
        wait = elapsed if oldest is None else time.monotonic() - oldest
        if oldest is not None and callable(self.on_append_latency):
            self.on_append_latency(wait)
        observe = self.on_topic_round
        for topic, outcome in zip(topics, results, strict=True):
            if observe is not None:
                observe(topic, outcome, wait, elapsed)
            report(topic, outcome)
        self._progress.set()

    async def drain(self) -> None:
        """Wait until every append so far is durable and reported."""
        while not self._handoff.idle(self._completed):
            self._progress.clear()
            await self._progress.wait()

    def close(self) -> None:
        """Stop the commit threads and the sync threads (after :meth:`drain`)."""
        self._handoff.stop()
        for thread in self._threads:
            thread.join()
        self._threads = []
        if self._sync_pool is not None:
            self._sync_pool.shutdown(wait=True)
            self._sync_pool = None


def _sync_all(
    topics: list[CommittedTopic], pool: ThreadPoolExecutor | None, fsync: bool = True
) -> tuple[list[int | BaseException], float]:
    """One round written and synced on this thread, unpipelined (benchmarks/commit_rounds.py times
    it); the outcomes in the topics' order and the seconds it took."""
    start = time.perf_counter()
    results = finish_round(topics, begin_round(topics, fsync), pool if fsync else None, SYNC_CONCURRENCY - 1)
    return results, time.perf_counter() - start
