"""The fsync of the metadata writes an HTTP request or a binary command made without it, on the
metadata thread.

Every admin write of the metadata store (create a tenant, a namespace, set a policy) is a job of the
metadata thread (:meth:`ResourceContext.write <magnetar.broker.resources.base.ResourceContext.write>`:
its checks, its read-modify-write and its commit), and so are the broker's own writes (a topic's
termination, the schema registry's, the compactor's records): the loop commits no SQLite. With
``synchronous=FULL`` each commit would wait for an fsync of the write-ahead log, milliseconds to tens
of milliseconds on a loaded disk, holding up the writes behind it. Within
:func:`~magnetar.storage.metadata.deferring_sync` (the HTTP layer wraps every write request in it and
the job runs in the request's context) the commit is made without that fsync; :class:`MetadataSync`
runs it next on the metadata thread, one for every commit made meanwhile, and the answer waits for
:meth:`MetadataSync.durable`: nothing is acknowledged before it is durable. Namespace and tenant
writes are synced in their job instead (``ResourceContext.off_loop``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable

from magnetar.storage.metadata import MetadataStore

log = logging.getLogger("magnetar.broker")


class MetadataSync:
    """Runs :meth:`MetadataStore.sync_wal` on the metadata thread after deferred commits and tells
    the waiters of :meth:`durable` when theirs are durable. Made and used on the loop."""

    def __init__(self, metadata: MetadataStore, run: Callable[[Callable[[], int]], Awaitable[int]]) -> None:
        """Sync ``metadata``'s deferred commits with ``run`` (runs a job on the metadata thread)."""
        self._metadata = metadata
        self._run = run
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        #: deferred commits known durable
        self._synced = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._task: asyncio.Task | None = None
        #: a failed fsync is never retried (the kernel may have dropped what it did not write): every
        #: wait fails from then on, as a fenced ledger refuses appends
        self._failed: BaseException | None = None
        metadata.on_deferred_commit = self._committed

    def _committed(self) -> None:
        """(the committing thread) A deferred commit was made: sync soon."""
        if threading.get_ident() == self._loop_thread:
            self._start()
        else:
            self._loop.call_soon_threadsafe(self._start)

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._task = self._loop.create_task(self._sync_rounds(), name="metadata-sync")

    async def durable(self) -> None:
        """Return once every deferred commit made before the call is durable; OSError when the sync
        failed (the writes may be lost at a crash)."""
        target = self._metadata.deferred_commits
        if target <= self._synced:
            return
        if self._failed is not None:
            raise self._failed
        future: asyncio.Future[None] = self._loop.create_future()
        self._waiters.append((target, future))
        self._start()
        await future

    async def _sync_rounds(self) -> None:
        """One fsync round after another while deferred commits are not known durable; each covers
        every commit made before it started."""
        metadata = self._metadata
        while metadata.deferred_commits > self._synced and self._failed is None:
            try:
                synced = await self._run(metadata.sync_wal)
            except Exception as exc:
                log.error("metadata sync failed: %s", exc)
                self._failed = exc
                waiters, self._waiters = self._waiters, []
                for _, future in waiters:
                    if not future.done():
                        future.set_exception(exc)
                return
            self._synced = max(self._synced, synced)
            waiting = []
            for target, future in self._waiters:
                if target <= self._synced:
                    if not future.done():
                        future.set_result(None)
                else:
                    waiting.append((target, future))
            self._waiters = waiting

    async def close(self) -> None:
        """Let the round under way end (the store's writes are unhooked first)."""
        self._metadata.on_deferred_commit = None
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
