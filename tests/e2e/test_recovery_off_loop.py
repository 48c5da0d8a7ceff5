"""A fenced ledger recovered off the event loop, end to end with the official client: while topic a's
ledger is cut back after a failed fdatasync (its truncate held 1 s here, as a congested disk would), the
broker goes on serving topic b at once, a's producer (closed by the broker) re-registers and is answered
"not ready" until a's ledger takes appends again, and every message is stored once.
"""

from __future__ import annotations

import errno
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pulsar
import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.broker.topics import recovery
from magnetar.storage.files import FaultyFileLayer, use_file_layer
from magnetar.storage.health import storage_health
from magnetar.testing import BrokerThread
from magnetar.testing.ports import free_port

SLOW_CUT_SECONDS = 1.0


class SlowCutLayer(FaultyFileLayer):
    """Truncates of paths containing ``slow_part`` take SLOW_CUT_SECONDS (a recovery's cut)."""

    def __init__(self) -> None:
        super().__init__()
        self.slow_part = "\0"
        self.cuts: list[str] = []

    def truncate(self, fd: int, length: int) -> None:
        if self.slow_part in self._paths.get(fd, ""):
            self.cuts.append(threading.current_thread().name)
            time.sleep(SLOW_CUT_SECONDS)
        super().truncate(fd, length)


def _wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_a_slow_recovery_holds_neither_the_loop_nor_a_message(
    tmp_path: Path, client_factory: Callable[[str], pulsar.Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    held: list[str] = []
    hold = recovery.LedgerRecovery.hold

    def recording_hold(self: recovery.LedgerRecovery, producer: object) -> bool:
        waits = hold(self, producer)  # type: ignore[arg-type]
        if waits:
            held.append(producer.name)  # type: ignore[attr-defined]
        return waits

    monkeypatch.setattr(recovery.LedgerRecovery, "hold", recording_hold)
    layer = SlowCutLayer()
    storage_health.reset()
    config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=free_port())
    with use_file_layer(layer), BrokerThread(config) as broker:
        client = client_factory(broker.service_url)
        topics = ["persistent://public/default/slow-cut-a", "persistent://public/default/slow-cut-b"]
        consumers = [client.subscribe(t, "all", initial_position=pulsar.InitialPosition.Earliest) for t in topics]
        a, b = (client.create_producer(t, batching_enabled=False, send_timeout_millis=30_000) for t in topics)
        a.send(b"a-0")
        b.send(b"b-0")
        layer.slow_part = str(broker.server.service.topics[topics[0]].ledger.directory)
        fault = layer.inject("datasync", errno.EIO, times=1, path_part=layer.slow_part)
        a_results: list[pulsar.Result] = []
        for i in range(1, 21):
            a.send_async(f"a-{i}".encode(), lambda res, _mid: a_results.append(res))
        _wait_for(lambda: layer.cuts != [], 10, "the recovery's cut")
        cut_began = time.monotonic()
        b_latencies = []
        for i in range(1, 11):  # topic b, while a's ledger is being cut
            started = time.monotonic()
            b.send(f"b-{i}".encode())
            b_latencies.append(time.monotonic() - started)
        assert time.monotonic() - cut_began < SLOW_CUT_SECONDS  # b was served during the cut
        assert max(b_latencies) < SLOW_CUT_SECONDS / 2
        _wait_for(lambda: len(a_results) == 20, 30, "a's sends")
        assert fault.fired == 1 and set(a_results) == {pulsar.Result.Ok}
        assert layer.cuts == ["magnetar-read_0"]
        assert held, "a's producer re-registered after the recovery: nothing was held"
        received = []
        for consumer in consumers:
            while True:
                try:
                    msg = consumer.receive(timeout_millis=3000)
                except pulsar.Timeout:
                    break
                received.append(msg.data().decode())
                consumer.acknowledge(msg)
        assert sorted(m for m in received if m.startswith("a-")) == sorted(f"a-{i}" for i in range(21))
        assert sorted(m for m in received if m.startswith("b-")) == sorted(f"b-{i}" for i in range(11))
    storage_health.reset()
