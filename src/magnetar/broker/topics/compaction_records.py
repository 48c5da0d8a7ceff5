"""The compactor's records in the metadata store: each topic's compaction status (RUNNING, then SUCCESS
or ERROR, read by the admin API) and, when a topic is deleted, its status and compacted-view pointer
dropped. Each is a job of the metadata thread (the store's one writer), run in the order asked for, its
commit's fsync left to the metadata sync: the loop neither commits nor waits for the disk."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from magnetar.storage import MetadataStore

log = logging.getLogger("magnetar.broker.topics.compaction")

#: metadata key of a topic's compacted view: {"dir": n, "horizon": entry id}
POINTER_PREFIX = "compacted/"
#: metadata key of a topic's compaction status (read by the admin API)
STATUS_PREFIX = "compaction-status/"

#: runs a job on the metadata thread, its commits' fsync left to the metadata sync (the service's
#: :meth:`~magnetar.broker.service.BrokerService.metadata_job`)
MetadataJobs = Callable[[Callable[[], Any]], Awaitable[Any]]


class CompactionRecords:
    """Writes the compactor's rows, one job after another (inline until :meth:`start` gives the jobs)."""

    def __init__(self) -> None:
        self.metadata: MetadataStore | None = None
        self._jobs: MetadataJobs | None = None
        #: the last record asked for (:meth:`recorded`)
        self._last: Awaitable[object] | None = None

    def start(self, metadata: MetadataStore, jobs: MetadataJobs | None) -> None:
        """Write to ``metadata`` with ``jobs``; a compaction a previous broker left RUNNING (it crashed)
        did not finish: marked ERROR by the first job."""
        self.metadata = metadata
        self._jobs = jobs
        self.record(self._interrupted_by_restart)

    def record(self, job: Callable[..., object], *args: object) -> Awaitable[object] | None:
        """``job(*args)`` as a job of the metadata thread, after every record asked for before (a status
        RUNNING is written before its SUCCESS); nobody need await it (a failure is logged). Inline, and
        None, without jobs."""
        if self._jobs is None:
            job(*args)
            return None
        done = asyncio.ensure_future(self._jobs(partial(job, *args)))
        done.add_done_callback(_log_failed)
        self._last = done
        return done

    async def recorded(self) -> None:
        """Return once every record asked for so far is written (or failed, logged)."""
        await settled(self._last)

    def status(self, name: str, status: str, error: str = "") -> Awaitable[object] | None:
        """Record a topic's compaction status."""
        assert self.metadata is not None
        value = json.dumps({"status": status, "lastError": error}).encode()
        return self.record(self.metadata.put_kv, STATUS_PREFIX + name, value)

    def forget(self, name: str) -> None:
        """A topic is deleted: drop its pointer and status."""
        self.record(self._forget, name)

    def _forget(self, name: str) -> None:
        assert self.metadata is not None
        self.metadata.delete_kv(POINTER_PREFIX + name)
        self.metadata.delete_kv(STATUS_PREFIX + name)

    def _interrupted_by_restart(self) -> None:
        """(a metadata job) A status left RUNNING becomes ERROR."""
        metadata = self.metadata
        assert metadata is not None
        for key, raw in metadata.list_kv(STATUS_PREFIX).items():
            try:
                status = json.loads(raw)
            except ValueError:
                continue
            if status.get("status") == "RUNNING":
                metadata.put_kv(key, json.dumps({"status": "ERROR", "lastError": "interrupted by a broker restart"}).encode())


async def settled(record: Awaitable[object] | None) -> None:
    """Wait for a record's job (its failure is logged)."""
    if record is not None:
        await asyncio.gather(record, return_exceptions=True)


def _log_failed(done: asyncio.Future[object]) -> None:
    if not done.cancelled() and done.exception() is not None:
        log.error("a compaction record could not be written: %s", done.exception())
