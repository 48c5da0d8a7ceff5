"""A persistent topic whose disk is full: its producers get a final error, its readers go on.

A SEND_ERROR would not do: the C++ client (under the Python client) closes the connection after any
SEND_ERROR but a checksum error and resends, forever. What all three official clients treat as final
for the messages a producer has pending, while they keep the producer and reconnect it, is a
refused re-registration with ProducerBlockedQuotaExceededException (C++ ``ProducerImpl::
handleCreateProducer``, Java ``ProducerImpl.connectionOpened``, Go ``reconnectToBroker``: "fail
pending messages but continue trying to reconnect"). So when an append or a sync of the topic's
ledger fails for want of space, the topic closes its producers (CLOSE_PRODUCER: they re-register
at once), the publishes under way fail without a SEND_ERROR, and every PRODUCER is refused with
that error while no space is left. A probe (statvfs, off the loop, every second) lifts the state
once :data:`RESUME_FREE_BYTES` are free again: the clients' next reconnection succeeds, and
publishing resumes without a restart. Dispatch and acknowledgements are not affected.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path

from magnetar.broker.errors import BrokerError
from magnetar.protocol.enums import ServerError
from magnetar.storage.health import storage_health

log = logging.getLogger("magnetar.broker.topics.no_space")

__all__ = ["PROBE_SECONDS", "RESUME_FREE_BYTES", "NoSpaceGuard", "free_bytes"]

#: free bytes on the ledger's file system from which publishing resumes
RESUME_FREE_BYTES = 8 * 1024 * 1024
#: seconds between two looks at the free space while none is left
PROBE_SECONDS = 1.0


def free_bytes(directory: Path) -> int:
    """Bytes an unprivileged writer may still use on the file system of ``directory`` (blocking)."""
    stats = os.statvfs(directory)
    return stats.f_bavail * stats.f_frsize


class NoSpaceGuard:
    """The "no space left on the device" state of one persistent topic, and its probe."""

    def __init__(self, topic_name: str, directory: Path, close_producers: Callable[[], None]) -> None:
        self._topic_name = topic_name
        self._directory = directory
        self._close_producers = close_producers
        #: why publishing stopped (None while it is allowed)
        self.reason: str | None = None
        self._probe: asyncio.Task[None] | None = None

    @property
    def active(self) -> bool:
        """Whether the topic refuses producers for want of space."""
        return self.reason is not None

    def enter(self, error: BaseException) -> None:
        """An append or a sync failed for want of space: close the producers (they re-register and
        are refused until space is back) and start probing (on the running loop)."""
        if self.reason is None:
            log.error("%s: no space left for its ledger (%s): producers refused until space is freed",
                      self._topic_name, error)
            storage_health.space_wanted(True)
        self.reason = str(error)
        self._close_producers()
        if self._probe is None or self._probe.done():
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # a topic driven without a loop (tests): no probe, the state stays
                return
            self._probe = loop.create_task(self._watch(), name=f"no-space {self._topic_name}")

    def check_producer(self) -> None:
        """Raise the error the official clients treat as final for pending sends, while no space is left."""
        if self.reason is not None:
            raise BrokerError(
                ServerError.ProducerBlockedQuotaExceededException,
                f"cannot publish on {self._topic_name}: no space left on the device ({self.reason})",
            )

    async def _watch(self) -> None:
        """Look at the free space every PROBE_SECONDS, off the loop; lift the state once it is back."""
        loop = asyncio.get_running_loop()
        while self.reason is not None:
            await asyncio.sleep(PROBE_SECONDS)
            try:
                free = await loop.run_in_executor(None, free_bytes, self._directory)
            except OSError as exc:
                log.warning("%s: cannot read the free space (%s)", self._topic_name, exc)
                continue
            if free >= RESUME_FREE_BYTES:
                log.warning("%s: %d bytes free again: producers accepted", self._topic_name, free)
                self._lift()

    def _lift(self) -> None:
        if self.reason is not None:
            self.reason = None
            storage_health.space_wanted(False)

    def close(self) -> None:
        """Stop probing (the topic closes)."""
        self._lift()
        if self._probe is not None:
            self._probe.cancel()
            self._probe = None
