"""magnetar.testing.Broker: context manager, async form, settings, and a broker that dies with its parent."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import unittest
from pathlib import Path

import pytest

from magnetar.client import AsyncClient, Client
from magnetar.testing import AdminError, Broker, BrokerStartError
from magnetar.testing.lifeline import _start_time, reap_stale, registry_dir

pytestmark = pytest.mark.timeout(180)


def _alive(pid: int) -> bool:
    return _start_time(pid) is not None and "Z" not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]


def test_context_manager_starts_serves_and_removes_its_directory() -> None:
    with Broker({"max_message_size": 4096}) as broker:
        directory = broker.directory
        assert broker.running and (directory / "data").is_dir()
        with Client(broker.service_url) as client:
            consumer = client.subscribe("public/default/cm", "s")
            client.create_producer("public/default/cm").send(b"one")
            assert consumer.receive(5000).data() == b"one"
        broker.admin.create_namespace("public/cm")
        with pytest.raises(AdminError) as exists:
            broker.admin.create_namespace("public/cm")
        assert exists.value.status == 409 and "exists" in exists.value.reason.lower()
    assert not broker.running
    assert not directory.exists()


def test_a_bad_setting_fails_the_start_with_the_brokers_message() -> None:
    broker = Broker({"fsync": "sometimes"})
    with pytest.raises(BrokerStartError, match="fsync must be 'always' or 'never'"):
        broker.start()
    assert not broker.running and broker.directory is None


def test_start_waits_on_the_brokers_word_and_leaks_no_descriptor() -> None:
    before = sorted(os.listdir("/proc/self/fd"))
    broker = Broker()
    broker.start(warm_admin=False)
    try:
        assert broker._ready_pipe is None  # the broker's byte came and the pipe is closed
        with socket.create_connection(("127.0.0.1", broker.port), timeout=5):
            pass
        broker.kill()
        broker.restart()  # a new pipe for the new process
        assert broker._ready_pipe is None and broker.running
    finally:
        broker.stop()
    assert sorted(os.listdir("/proc/self/fd")) == before


class AsyncFormTest(unittest.IsolatedAsyncioTestCase):
    """The async form, as an ``IsolatedAsyncioTestCase`` uses it."""

    async def asyncSetUp(self) -> None:
        self.broker = await Broker().astart()
        self.client = AsyncClient(self.broker.service_url)

    async def asyncTearDown(self) -> None:
        await self.client.close()
        await self.broker.astop()

    async def test_roundtrip(self) -> None:
        consumer = await self.client.subscribe("public/default/async", "s")
        producer = await self.client.create_producer("public/default/async")
        await producer.send(b"async")
        self.assertEqual((await consumer.receive()).data(), b"async")


PARENT = """
import sys, time
from magnetar.testing import Broker
broker = Broker().start()
print(broker.proc.pid, broker.directory, flush=True)
time.sleep(60)
"""


def test_the_broker_dies_with_the_process_that_started_it() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        pid_text, directory = parent.stdout.readline().split()
        pid = int(pid_text)
        assert _alive(pid)
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 10
    while _alive(pid):
        assert time.monotonic() < deadline, "the broker outlived its parent"
        time.sleep(0.05)
    reap_stale()  # the next start removes what the dead parent left behind
    assert not Path(directory).exists()
    assert not (registry_dir() / f"{pid}.json").exists()


def test_a_broker_whose_parent_is_gone_is_reaped_at_the_next_start(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone_start = _start_time(gone.pid)
    gone.wait()
    stand_in = subprocess.Popen(["sleep", "60"])  # a broker started without the kernel's guard
    directory = tmp_path / "left-behind"
    directory.mkdir()
    registry_dir().mkdir(mode=0o700, exist_ok=True)
    record = {"pid": stand_in.pid, "start": _start_time(stand_in.pid), "parent": gone.pid,
              "parent_start": gone_start, "directory": str(directory)}
    (registry_dir() / f"{stand_in.pid}.json").write_text(json.dumps(record))
    try:
        assert stand_in.pid in reap_stale()
        assert stand_in.wait(5) == -signal.SIGKILL
        assert not directory.exists()
        assert stand_in.pid not in reap_stale()
    finally:
        if stand_in.poll() is None:
            stand_in.kill()
