"""The no-space state of a persistent topic: producers closed, registrations refused with the error
the official clients treat as final, lifted by the probe once space is back."""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path

import pytest

from magnetar.broker.errors import BrokerError
from magnetar.broker.topics import no_space
from magnetar.broker.topics.no_space import NoSpaceGuard
from magnetar.protocol.enums import ServerError
from magnetar.storage.health import storage_health


def test_the_guard_refuses_producers_until_the_probe_finds_space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(no_space, "PROBE_SECONDS", 0.01)
    free = {"bytes": 0}
    monkeypatch.setattr(no_space, "free_bytes", lambda _directory: free["bytes"])
    closed: list[int] = []
    storage_health.reset()

    async def run() -> None:
        guard = NoSpaceGuard("persistent://public/default/t", tmp_path, lambda: closed.append(1))
        guard.check_producer()  # nothing wrong yet
        guard.enter(OSError(errno.ENOSPC, "No space left on device"))
        assert closed == [1] and guard.active and storage_health.disk_full
        with pytest.raises(BrokerError) as refused:
            guard.check_producer()
        assert refused.value.code == ServerError.ProducerBlockedQuotaExceededException
        assert "no space left on the device" in str(refused.value)
        storage_health.write_succeeded()  # a small write that fits does not end it
        assert storage_health.disk_full
        await asyncio.sleep(0.05)
        assert guard.active
        free["bytes"] = no_space.RESUME_FREE_BYTES
        for _ in range(100):
            if not guard.active:
                break
            await asyncio.sleep(0.01)
        assert not guard.active and not storage_health.disk_full
        guard.check_producer()
        guard.close()

    asyncio.run(run())
    storage_health.reset()
