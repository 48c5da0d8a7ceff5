"""``magnetar standalone`` collects and freezes start-up's objects after its first clients, not when it listens.

That collection holds the loop 40-60 ms: at "ready" it delayed a test run's first client (#25).
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import socket
import time
from pathlib import Path

import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.cli import standalone
from magnetar.testing import free_port


def test_freeze_start_up_turns_the_collector_on_with_start_ups_objects_frozen() -> None:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        standalone.freeze_start_up()
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        if not was_enabled:
            gc.disable()


def test_the_start_up_collection_comes_after_the_port_listens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    frozen: list[float] = []
    monkeypatch.setattr(standalone, "GC_FREEZE_DELAY", 0.4)
    monkeypatch.setattr(standalone, "freeze_start_up", lambda: frozen.append(time.monotonic()))
    port = free_port()
    config = BrokerConfig(data_dir=tmp_path / "data", port=port, http_port=0, fsync="never")

    async def scenario() -> tuple[float, list[float]]:
        broker = asyncio.create_task(standalone.run_standalone(config))
        deadline = time.monotonic() + 20
        while True:
            assert not broker.done(), "the broker stopped"
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "the broker did not listen"
            await asyncio.sleep(0.005)
        listening = time.monotonic()
        seen_at_listen = list(frozen)
        await asyncio.sleep(0.8)
        os.kill(os.getpid(), signal.SIGTERM)  # run_standalone's handler: a clean stop
        await asyncio.wait_for(broker, 20)
        return listening, seen_at_listen

    listening, seen_at_listen = asyncio.run(scenario())
    assert seen_at_listen == []
    assert len(frozen) == 1
    assert frozen[0] - listening >= 0.3
