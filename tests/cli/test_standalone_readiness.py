"""``magnetar standalone`` at "ready" (#25): it says so on the pipe of ``MAGNETAR_READY_FD`` the moment its ports
accept, and collects and freezes start-up's objects a second later, not at once (that collection holds
the loop 40-60 ms, when a test run's first client connects).
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


def test_signal_ready_writes_one_byte_and_closes_the_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    read_end, write_end = os.pipe()
    monkeypatch.setenv(standalone.READY_FD_ENV, str(write_end))
    try:
        standalone.signal_ready()
        assert os.read(read_end, 10) == b"1"
        assert os.read(read_end, 10) == b""  # the write end is closed: the broker's children never hold it
        assert standalone.READY_FD_ENV not in os.environ
    finally:
        os.close(read_end)


@pytest.mark.parametrize("value", ["not-a-number", "987654"])
def test_signal_ready_with_a_bad_descriptor_only_warns(value: str, monkeypatch: pytest.MonkeyPatch,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv(standalone.READY_FD_ENV, value)
    standalone.signal_ready()
    assert [record.levelname for record in caplog.records] == ["WARNING"]
    assert "not signalled" in caplog.records[0].getMessage()


def test_without_the_variable_nothing_is_signalled(monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv(standalone.READY_FD_ENV, raising=False)
    standalone.signal_ready()
    assert caplog.records == []
