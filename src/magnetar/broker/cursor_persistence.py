"""Persisting the broker's durable cursors and deduplication snapshots in the metadata store.

Changed cursors (and the topics' deduplication snapshots) go to SQLite in one transaction per
round, in a worker thread: every ``cursor_persist_delay_seconds``, and with ``cursor_persist =
"commit"`` also round after round while acknowledgements come in: the first change after a quiet
spell at once, then at most ``mark_delete_rate_limit`` rounds a second (Pulsar's
``managedLedgerDefaultMarkDeleteRateLimit``, 1 by default: Apache Pulsar persists a cursor's
mark-delete position at most that often and redelivers the rest after a crash; 0: no limit).
A cursor created, reset (seek) or deleted is persisted at once, whatever the limit (Pulsar
writes those before it answers). After a round the ledgers of the topics written are trimmed. Shutdown's final :meth:`flush` is
never held back. The service owns one
:class:`CursorPersistence`; deleting a topic holds its :attr:`~CursorPersistence.lock`, so that
no write of the topic's cursors is in flight then.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

from magnetar.broker.config import BrokerConfig
from magnetar.storage.health import storage_health
from magnetar.storage.managed_cursor import CursorStore
from magnetar.storage.metadata import MetadataStore

if TYPE_CHECKING:
    from magnetar.broker.topics.base import Topic

log = logging.getLogger("magnetar.broker")

T = TypeVar("T")


def _dedup_key(topic: str) -> str:
    return f"dedup/{topic}"


class CursorPersistence:
    """Writes changed cursors and deduplication snapshots to the metadata store, off the loop.

    ``topics`` is the service's registry of loaded topics (read, never changed here);
    ``trim(topic)`` releases what a topic's cursors now allow once their positions are stored.
    """

    def __init__(
        self,
        config: BrokerConfig,
        metadata: MetadataStore,
        topics: dict[str, Topic],
        trim: Callable[[Topic], None],
    ) -> None:
        self.config = config
        self.metadata = metadata
        #: the durable cursors and their batched persistence
        self.cursors = CursorStore(metadata)
        #: held by a round and by a topic's deletion: one at a time
        self.lock = asyncio.Lock()
        self._topics = topics
        self._trim = trim
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="magnetar-meta")
        self._flush_task: asyncio.Task | None = None
        #: the task persisting changed cursors round after round (acknowledgements at commit cadence)
        self._rounds_task: asyncio.Task | None = None
        self.running = False
        rate = config.mark_delete_rate_limit
        #: with ``cursor_persist = "commit"``, the least time between two writing rounds (0: none)
        self.spacing = 1.0 / rate if rate > 0 and config.cursor_persist == "commit" else 0.0
        #: loop time before which a paced round does not write (one spacing after the last write)
        self._next_write = 0.0
        #: rounds that wrote (or tried to write) cursors or snapshots, for the tests and the profiles
        self.writes = 0
        #: the unpaced rounds of created, reset and deleted cursors under way
        self._at_once: set[asyncio.Task] = set()
        #: set by :meth:`stop`: a round waiting out its pacing gives up the wait (the final flush is the caller's)
        self._stopping = asyncio.Event()

    @property
    def longest_delay(self) -> float:
        """The longest a changed cursor waits before a round persists it (without failures)."""
        return max(self.config.cursor_persist_delay_seconds, self.spacing)

    def start(self) -> None:
        """Start the periodic rounds (and the commit-cadence ones when configured)."""
        if self.config.cursor_persist == "commit":
            self.cursors.on_pending = self._cursors_pending
            if self.spacing > 0:
                self.cursors.on_structural_change = self._persist_at_once
        self._flush_task = asyncio.create_task(self._flush_loop(), name="cursor-flush")
        self._stopping.clear()
        self.running = True

    async def stop(self) -> None:
        """Stop the rounds and wait for the one under way; the final :meth:`flush` is the caller's."""
        self.running = False
        self._stopping.set()
        tasks = [task for task in (self._flush_task, self._rounds_task, *self._at_once) if task is not None]
        if self._flush_task is not None:
            self._flush_task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def run(self, job: Callable[[], T]) -> Awaitable[T]:
        """Run ``job`` on the metadata thread (after the writes queued there); await the result."""
        return asyncio.wrap_future(self._executor.submit(job))

    def close(self) -> None:
        """Let the writer thread finish and end it (after the final flush)."""
        self._executor.shutdown(wait=True)

    def dedup_snapshot(self, topic: str) -> tuple[dict[str, int], int]:
        """(last sequence id of each producer, the entry id they were taken at) stored for ``topic``,
        or ({}, -1) when none was."""
        snapshot = self.metadata.get_kv(_dedup_key(topic))
        if snapshot is None:
            return {}, -1
        data = json.loads(snapshot)
        return data["sequence_ids"], data["entry_id"]

    async def flush(self, dedup: bool = True, *, paced: bool = False) -> None:
        """Persist every changed cursor (and, with ``dedup``, the deduplication snapshots) in one
        metadata transaction, then trim their ledgers. When the write fails (a full disk) nothing is
        marked persisted: the same changes go into the next flush, and the error is raised. A
        ``paced`` round writes nothing sooner than :attr:`spacing` after the last write."""
        async with self.lock:
            topics = self._topics
            loop_time = asyncio.get_running_loop().time()
            if paced and loop_time < self._next_write:
                return
            dedup_pending = dedup and any(t.dedup_dirty for t in topics.values())
            if not self.cursors.pending and not dedup_pending:
                return
            self._next_write = loop_time + self.spacing
            self.writes += 1
            batch = self.cursors.take_batch()
            snapshots = []
            for topic in topics.values() if dedup_pending else ():
                snap = topic.dedup_snapshot()
                if snap is not None:
                    entry_id, seqs = snap
                    snapshots.append((topic, json.dumps({"entry_id": entry_id, "sequence_ids": seqs})))
            metadata = self.metadata

            def write() -> None:
                batch.write(metadata)
                for topic, value in snapshots:
                    metadata.put_kv(_dedup_key(topic.name), value.encode())

            try:
                await asyncio.get_running_loop().run_in_executor(self._executor, write)
            except Exception as exc:
                storage_health.write_failed("persisting cursors", exc, metadata=True)
                self.cursors.write_failed(batch)
                for topic, _ in snapshots:
                    topic.dedup_dirty = True
                raise
            storage_health.write_succeeded()
            for name in batch.topics:
                topic = topics.get(name)
                if topic is not None:
                    self._trim(topic)

    async def _flush_loop(self) -> None:
        delay = self.config.cursor_persist_delay_seconds
        paced = self.spacing > 0
        while True:
            await asyncio.sleep(delay)
            try:
                await self.flush(paced=paced)
            except Exception:
                log.exception("persisting cursors failed")

    def _persist_at_once(self) -> None:
        """A cursor was created, reset or deleted: a round now, not held back by the rate limit."""
        if self.running:
            task = asyncio.get_running_loop().create_task(self._round_at_once(), name="cursor-round-at-once")
            self._at_once.add(task)
            task.add_done_callback(self._at_once.discard)

    async def _round_at_once(self) -> None:
        try:
            await self.flush(dedup=False)
        except Exception:
            log.exception("persisting cursors failed")  # the paced rounds and the 1 s flush try again

    def _cursors_pending(self) -> None:
        """A cursor changed: persist it in the next cursor round (``cursor_persist = "commit"``)."""
        task = self._rounds_task
        if self.running and (task is None or task.done()):
            self._rounds_task = asyncio.get_running_loop().create_task(self._rounds(), name="cursor-rounds")

    async def _rounds(self) -> None:
        """Persist changed cursors round after round while there are changes, like the group commit:
        one SQLite transaction per round covers every acknowledgement since the previous one; with a
        rate limit a round waits until :attr:`spacing` after the last write, and writes the
        deduplication snapshots too (the periodic flush may find itself too early)."""
        loop = asyncio.get_running_loop()
        paced = self.spacing > 0
        while self.running and self.cursors.pending:
            # at least one turn: take in the acknowledgements of this loop iteration
            await asyncio.sleep(0)
            if paced and not await self._paused(self._next_write - loop.time()):
                return
            try:
                await self.flush(dedup=paced, paced=paced)
            except Exception:
                log.exception("persisting cursors failed; retrying in %.1f s", self.config.cursor_persist_delay_seconds)
                if not await self._paused(self.config.cursor_persist_delay_seconds):
                    return

    async def _paused(self, seconds: float) -> bool:
        """Wait ``seconds`` (if positive); False when :meth:`stop` came meanwhile, so a broker's shutdown
        never waits out a paced round (1 s at the default ``managedLedgerDefaultMarkDeleteRateLimit``)."""
        if seconds > 0:
            try:
                await asyncio.wait_for(self._stopping.wait(), seconds)
            except TimeoutError:
                pass
        return not self._stopping.is_set()
