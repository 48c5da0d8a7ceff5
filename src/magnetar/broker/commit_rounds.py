"""The parts of a group-commit round the commit threads run, and the state they share.

:class:`RoundHandoff` holds the topics the loop appended to until a commit thread takes them as a
round; :class:`SyncTurn` lets rounds run their fdatasyncs and end one after the other, in the order
they were taken. :func:`begin_round` writes a round (each ledger's ``begin_sync``, or ``flush``
without fsync), :func:`finish_round` runs its fdatasyncs and ends each ledger's sync, and
:func:`report` tells each topic the outcome, on the loop.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from magnetar.storage.ledger_sync import LedgerFencedError, SyncSupersededError

log = logging.getLogger("magnetar.broker.commit")


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

    @property
    def sync_needed(self) -> bool:
        """Whether entries were appended after the last begun sync took its target."""

    def begin_sync(self) -> LedgerSyncRun:
        """Write, and take what to fdatasync (ended by :meth:`end_sync`; the next may begin before)."""

    def end_sync(self, pending: LedgerSyncRun) -> int:
        """End a sync begun once it ran, after the ledger's earlier ones; the last entry id it covers
        (raises if it failed, SyncSupersededError if an earlier one failed)."""

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


#: what a round has of a topic once written: its begun sync, the last id a flush wrote, or the error
Begun = LedgerSyncRun | int | BaseException


class RoundHandoff:
    """The topics appended to since a commit thread last took them, from the loop to the commit threads.

    The loop calls :meth:`add`. A commit thread with nothing to do sleeps in :meth:`wait` (on a
    :class:`queue.SimpleQueue` of its own, the cheapest wake-up Python has) until there is something
    to take, then takes it with :meth:`take` holding the committer's write turn. An append wakes one
    sleeping thread, the last one to fall asleep, and no other until that one is up: one-at-a-time
    sends keep waking the same thread, the other one only wakes for appends made while the first is
    busy. It counts the
    rounds taken, so that the loop can tell when every append was taken and reported (:meth:`idle`).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[int, CommittedTopic] = {}
        #: when the oldest append not taken yet was made (None: none)
        self._oldest: float | None = None
        self._taken = 0
        #: the wake-ups of the commit threads asleep in wait(), the last one to fall asleep last
        self._asleep: list[queue.SimpleQueue[None]] = []
        #: whether a thread was woken and is not up yet
        self._waking = False
        self._stopped = False

    def add(self, topic: CommittedTopic) -> None:
        """(loop) ``topic`` appended an entry: the next round takes it."""
        with self._lock:
            self._pending[id(topic)] = topic
            if self._oldest is None:
                self._oldest = time.monotonic()
            wake = self._asleep.pop() if self._asleep and not self._waking else None
            if wake is not None:
                self._waking = True
        if wake is not None:
            wake.put(None)

    def wait(self, wake: queue.SimpleQueue[None]) -> bool:
        """(commit thread) Wait until there is something to take (``wake``: this thread's own
        wake-up); False once stopped."""
        with self._lock:
            if self._stopped:
                return False
            if self._pending:
                return True
            self._asleep.append(wake)
        wake.get()
        with self._lock:
            self._waking = False
            return not self._stopped

    def take(self) -> tuple[list[CommittedTopic], float | None] | None:
        """(commit thread, holding the write turn) The next round, or None when there is none: the
        topics with entries no begun sync took yet, and when the oldest of those appends was made."""
        with self._lock:
            topics = [topic for topic in self._pending.values() if topic.ledger.sync_needed]
            self._pending = {}
            oldest, self._oldest = self._oldest, None
            if not topics:
                return None
            self._taken += 1
            return topics, oldest

    def idle(self, completed: int) -> bool:
        """(loop) Whether every round taken was completed (``completed``: the rounds the loop reported)
        and no topic waits with entries to sync."""
        with self._lock:
            return self._taken == completed and not any(t.ledger.sync_needed for t in self._pending.values())

    def stop(self) -> None:
        """Make :meth:`wait` return False from now on (waking every commit thread asleep in it)."""
        with self._lock:
            self._stopped = True
            asleep, self._asleep = self._asleep, []
        for wake in asleep:
            wake.put(None)


class SyncTurn:
    """Rounds run their fdatasyncs and end in the order they were taken (numbered from 0)."""

    def __init__(self) -> None:
        self._turn = threading.Condition(threading.Lock())
        #: the round whose turn it is: only done() of the round before changes it to a round's number
        self._next = 0
        self._waiting = 0

    def wait(self, number: int) -> None:
        """Wait until round ``number`` - 1 ended."""
        if self._next == number:
            return
        with self._turn:
            self._waiting += 1
            while self._next != number:
                self._turn.wait()
            self._waiting -= 1

    def done(self, number: int) -> None:
        """Round ``number`` ended: the next one's turn."""
        with self._turn:
            self._next = number + 1
            if self._waiting:
                self._turn.notify_all()


def begin_round(topics: list[CommittedTopic], fsync: bool) -> list[Begun]:
    """Write every topic of a round: with ``fsync`` begin each ledger's sync, else flush it. A
    failure is that topic's outcome only (its ledger fenced itself)."""
    begun: list[Begun] = []
    for topic in topics:
        try:
            begun.append(topic.ledger.begin_sync() if fsync else topic.ledger.flush())
        except BaseException as exc:  # reported on the loop, per topic
            begun.append(exc)
    return begun


def finish_round(
    topics: list[CommittedTopic], begun: list[Begun], pool: ThreadPoolExecutor | None, helpers: int = 0
) -> list[int | BaseException]:
    """Run the fdatasyncs of a round written by :func:`begin_round` (several at once, on this thread
    and up to ``helpers`` threads of ``pool``, when there are several) and end each ledger's sync in
    the round's order; the outcomes.

    Every sync begun is ended, whatever happens, so that none holds up the ledger's later syncs.
    """
    needed = [item for item in begun if not isinstance(item, (int, BaseException)) and item.needed]
    try:
        if len(needed) > 1 and pool is not None and helpers > 0:
            _fdatasync_at_once(needed, pool, helpers)
        else:
            for pending in needed:
                pending.run()
    finally:
        results = [_end(topic, item) for topic, item in zip(topics, begun, strict=True)]
    return results


def _end(topic: CommittedTopic, item: Begun) -> int | BaseException:
    if isinstance(item, (int, BaseException)):
        return item
    try:
        return topic.ledger.end_sync(item)
    except BaseException as exc:  # reported on the loop, per topic
        return exc


def _fdatasync_at_once(pendings: list[LedgerSyncRun], pool: ThreadPoolExecutor, helpers: int) -> None:
    """Run ``pendings`` (their fdatasyncs) concurrently on this thread and up to ``helpers`` of
    ``pool``'s (one future per thread, not per ledger); each thread takes the next one not taken,
    so one slow fdatasync holds up no other."""
    remaining = iter(pendings)  # a list iterator's next() is atomic under the GIL
    futures = [pool.submit(_run_taken, remaining) for _ in range(min(helpers, len(pendings) - 1))]
    _run_taken(remaining)
    for future in futures:
        future.result()


def _run_taken(pendings: Iterator[LedgerSyncRun]) -> None:
    for pending in pendings:
        pending.run()


def report(topic: CommittedTopic, outcome: int | BaseException) -> None:
    """(loop) Tell ``topic`` how its ledger's sync in a round ended: durable up to an entry id, or failed.

    Passed over: a closed topic (it failed what it had waiting as it closed), a sync superseded by an
    earlier failure (whose report failed every publish waiting), and a failure of a fencing the topic
    already recovered from (two failures in flight fenced the ledger at once, the first report failed
    the publishes and recovered it): failing now would fail publishes made since, whose entries a later
    sync makes durable and readable.
    """
    if topic.closed or isinstance(outcome, SyncSupersededError):
        return
    if isinstance(outcome, BaseException):
        if isinstance(outcome, LedgerFencedError) and outcome.recovered:
            log.warning("sync of %s failed, reported before: %s", topic.name, outcome)
            return
        log.error("sync of %s failed: %s", topic.name, outcome)
        topic.on_sync_failed(outcome)
        return
    topic.on_durable(outcome)
