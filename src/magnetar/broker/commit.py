"""Group commit: one fsync round covers every entry appended since the previous one.

Topics report appends with :meth:`GroupCommitter.appended`. The committer runs one round at a
time on its own commit thread over every topic appended to since the last round began: the round
writes what each ledger queued (the event loop never writes a segment file: a write can wait for
the file system's journal for milliseconds) and, with fsync "always", fdatasyncs it; when it
completes, each topic learns how far its ledger is durable and sends the receipts that covers.
Appends keep being queued while a round runs, and the next round starts as soon as the previous
one ends. With fsync "never", entries count as durable once written.

With fsync "always" and several topics, the commit thread writes every ledger of the round first,
then runs their fdatasyncs at once (itself and up to ``SYNC_CONCURRENCY - 1`` pool threads, each
taking the next ledger not taken), and ends each ledger's sync; without fsync it only writes, on its
own thread.

A round costs two thread hops besides the fsync: the loop hands the round to the commit thread
through a :class:`queue.SimpleQueue` (a lock release in C: the cheapest wake-up Python has), and
the commit thread hands the outcome back with one ``call_soon_threadsafe``, which runs the
receipts in the loop's next iteration (no executor future chained to an asyncio future, which
took a further iteration and two future objects per round). The outcome runs within
``completion_scope`` (the service passes net's ``flushed_at_exit``): the round's receipts are written
to their sockets in that same callback, not one loop iteration later behind whatever else is ready.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from typing import Protocol

log = logging.getLogger("magnetar.broker.commit")

#: fdatasyncs of one round run this many at once (the commit thread and SYNC_CONCURRENCY - 1 pool
#: threads, each taking the next ledger): the file system's journal commits concurrent
#: fdatasyncs together (ext4, xfs), where one after the other a round lasts topics x one commit
SYNC_CONCURRENCY = 16


class LedgerSyncRun(Protocol):
    """A ledger sync begun (its records written) whose fdatasyncs are still to run."""

    #: whether :meth:`run` has anything to do
    needed: bool

    def run(self) -> None:
        """fdatasync what the sync covers (any thread); never raises."""


class SyncedLedger(Protocol):
    """The part of a ledger the committer uses."""

    #: the newest entry appended
    last_entry_id: int

    def sync(self) -> int:
        """Make every entry appended so far durable; returns the last entry id it covers."""

    def begin_sync(self) -> LedgerSyncRun:
        """:meth:`sync` in parts: write, and take what to fdatasync (ended by :meth:`end_sync`)."""

    def end_sync(self, pending: LedgerSyncRun) -> int:
        """End a sync begun once it ran; returns the last entry id it covers (raises if it failed)."""

    def flush(self) -> int:
        """Write every entry appended so far (no fdatasync); returns the last entry id written."""


class CommittedTopic(Protocol):
    """What the committer needs of a topic that appends entries (a persistent topic)."""

    name: str
    closed: bool
    ledger: SyncedLedger

    def on_durable(self, last_durable_id: int) -> None:
        """Entries up to ``last_durable_id`` are durable."""

    def on_sync_failed(self, error: BaseException) -> None:
        """The sync of the topic's ledger failed."""


#: one round for the commit thread: the topics to sync and when the round's oldest append was made
_Round = tuple[list[CommittedTopic], float | None]


class GroupCommitter:
    """Schedules ledger syncs and reports durability back to topics on the loop.

    Rounds run on the committer's own thread, started with the first round and stopped by
    :meth:`close`.
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
        self._dirty: dict[int, CommittedTopic] = {}
        self._running = False
        self.rounds = 0
        self.sync_seconds_total = 0.0
        self._idle: asyncio.Event = asyncio.Event()
        self._idle.set()
        #: optional observer of each round's duration in seconds (metrics)
        self.on_round: object = None
        #: optional observer, once per round, of the wait of the round's oldest append until it
        #: became durable: the worst append-to-receipt latency of that round (metrics)
        self.on_append_latency: object = None
        self._oldest_append: float | None = None
        #: runs the syncs of a round over several topics at once (created on the first such round)
        self._sync_pool: ThreadPoolExecutor | None = None
        #: rounds for the commit thread (None: stop)
        self._rounds: queue.SimpleQueue[_Round | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def appended(self, topic: CommittedTopic) -> None:
        """``topic`` appended at least one entry that is not durable yet."""
        self._dirty[id(topic)] = topic
        if self._oldest_append is None:
            self._oldest_append = time.monotonic()
        self._idle.clear()
        if not self._running:
            self._start_round()

    def _start_round(self) -> None:
        topics, self._dirty = list(self._dirty.values()), {}
        self._running = True
        if self._fsync and len(topics) > 1 and self._sync_pool is None:
            self._sync_pool = ThreadPoolExecutor(max(1, SYNC_CONCURRENCY - 1), thread_name_prefix="magnetar-fsync")
        if self._thread is None:
            self._thread = threading.Thread(target=self._commit_thread, name="magnetar-commit", daemon=True)
            self._thread.start()
        self._rounds.put((topics, self._take_oldest_append()))

    def _commit_thread(self) -> None:
        """(commit thread) Run each round handed over, and hand its outcome back to the loop."""
        while (job := self._rounds.get()) is not None:
            topics, oldest = job
            results, elapsed = _sync_all(topics, self._sync_pool, self._fsync)
            try:
                self._loop.call_soon_threadsafe(self._round_done, topics, results, elapsed, oldest)
            except RuntimeError:  # the loop is closed: nobody waits for the outcome any more
                return

    def _take_oldest_append(self) -> float | None:
        oldest, self._oldest_append = self._oldest_append, None
        return oldest

    def _report_append_latency(self, oldest: float | None) -> None:
        if oldest is not None and callable(self.on_append_latency):
            self.on_append_latency(time.monotonic() - oldest)

    def _round_done(
        self, topics: list[CommittedTopic], results: list[int | BaseException], elapsed: float, oldest: float | None
    ) -> None:
        with self._completion_scope():
            self._complete_round(topics, results, elapsed, oldest)

    def _complete_round(
        self, topics: list[CommittedTopic], results: list[int | BaseException], elapsed: float, oldest: float | None
    ) -> None:
        self._running = False
        if self._fsync:  # with fsync never a round only writes: it is not a sync round
            self.rounds += 1
            self.sync_seconds_total += elapsed
            if callable(self.on_round):
                self.on_round(elapsed)
        self._report_append_latency(oldest)
        dirty = self._dirty
        for topic, outcome in zip(topics, results, strict=True):
            if topic.closed:
                continue
            if isinstance(outcome, BaseException):
                log.error("sync of %s failed: %s", topic.name, outcome)
                topic.on_sync_failed(outcome)
                continue
            if outcome >= topic.ledger.last_entry_id and dirty.pop(id(topic), None) is not None and not dirty:
                # its appends made while the round ran were covered by it (the ledger's sync takes
                # what was appended when it starts): no round of its own for them
                self._oldest_append = None
            topic.on_durable(outcome)
        if dirty:
            self._start_round()
        else:
            self._idle.set()

    async def drain(self) -> None:
        """Wait until every append so far is durable and reported."""
        await self._idle.wait()

    def close(self) -> None:
        """Stop the commit thread and the sync threads (after :meth:`drain`)."""
        if self._thread is not None:
            self._rounds.put(None)
            self._thread.join()
            self._thread = None
        if self._sync_pool is not None:
            self._sync_pool.shutdown(wait=True)
            self._sync_pool = None


def _sync_one(topic: CommittedTopic) -> int | BaseException:
    try:
        return topic.ledger.sync()
    except BaseException as exc:  # reported on the loop, per topic
        return exc


def _flush_one(topic: CommittedTopic) -> int | BaseException:
    try:
        return topic.ledger.flush()
    except BaseException as exc:  # reported on the loop, per topic
        return exc


def _sync_all(
    topics: list[CommittedTopic], pool: ThreadPoolExecutor | None, fsync: bool = True
) -> tuple[list[int | BaseException], float]:
    """Write and (with ``fsync``) sync every topic of a round; the outcomes in order.

    Without fsync, or for one topic, on this thread: a flush is one writev, and a lone sync gains
    nothing from another thread. With fsync and several topics see :func:`_sync_many`.
    """
    start = time.perf_counter()
    if not fsync:
        results = [_flush_one(topic) for topic in topics]
    elif len(topics) == 1 or pool is None:
        results = [_sync_one(topic) for topic in topics]
    else:
        results = _sync_many(topics, pool)
    return results, time.perf_counter() - start


def _sync_many(topics: list[CommittedTopic], pool: ThreadPoolExecutor) -> list[int | BaseException]:
    """Sync several ledgers: write them all on this thread, run their fdatasyncs at once (this
    thread and up to SYNC_CONCURRENCY - 1 of ``pool``'s), then end each sync.

    A failed write or fdatasync is that ledger's outcome only (it fenced itself); the others'
    syncs go on. Every sync begun is ended, whatever happens, so no ledger stays locked.
    """
    results: list[int | BaseException] = []
    begun: list[tuple[int, LedgerSyncRun]] = []
    ledgers: set[int] = set()
    again: list[int] = []  # a ledger met twice: a second begin_sync would wait for the first's end
    for index, topic in enumerate(topics):
        results.append(-1)
        if id(topic.ledger) in ledgers:
            again.append(index)
            continue
        ledgers.add(id(topic.ledger))
        try:
            begun.append((index, topic.ledger.begin_sync()))
        except BaseException as exc:  # reported on the loop, per topic
            results[index] = exc
    try:
        _fdatasync_at_once([pending for _, pending in begun if pending.needed], pool)
    finally:
        for index, pending in begun:
            try:
                results[index] = topics[index].ledger.end_sync(pending)
            except BaseException as exc:  # reported on the loop, per topic
                results[index] = exc
    for index in again:
        results[index] = _sync_one(topics[index])
    return results


def _fdatasync_at_once(pendings: list[LedgerSyncRun], pool: ThreadPoolExecutor) -> None:
    """Run ``pendings`` (their fdatasyncs) concurrently on this thread and up to SYNC_CONCURRENCY - 1
    of ``pool``'s (one future per thread, not per ledger); each thread takes the next one not
    taken, so one slow fdatasync holds up no other."""
    remaining = iter(pendings)  # a list iterator's next() is atomic under the GIL
    futures = [pool.submit(_run_taken, remaining) for _ in range(min(SYNC_CONCURRENCY, len(pendings)) - 1)]
    _run_taken(remaining)
    for future in futures:
        future.result()


def _run_taken(pendings: Iterator[LedgerSyncRun]) -> None:
    for pending in pendings:
        pending.run()
