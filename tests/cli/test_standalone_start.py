"""``magnetar standalone`` start-up refusals: a data directory another broker holds, a port in use.

Both must leave the data directory exactly as it was (a busy port: not even created), exit non-zero
and say in one line what is wrong.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import subprocess
import time
from pathlib import Path

import pulsar
import pytest

from magnetar.admin.standalone import StandaloneServer
from magnetar.broker.config import BrokerConfig
from magnetar.storage.dir_lock import DataDirLockedError
from magnetar.testing import BrokerProcess, BrokerThread, free_port

TOPIC = "persistent://public/default/one-owner"


def new_client(service_url: str) -> pulsar.Client:
    """An official client with bounded operations and quiet logs."""
    return pulsar.Client(service_url, operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


def snapshot(data_dir: Path) -> dict[str, tuple[int, str]]:
    """Every file under ``data_dir``: its size and content hash."""
    files: dict[str, tuple[int, str]] = {}
    for root, _dirs, names in os.walk(data_dir):
        for name in names:
            path = Path(root, name)
            data = path.read_bytes()
            files[str(path.relative_to(data_dir))] = (len(data), hashlib.sha256(data).hexdigest())
    return files


def run_second(data_dir: Path, port: int, http_port: int) -> subprocess.CompletedProcess[str]:
    """``magnetar standalone`` on ``data_dir`` and the given ports, to its exit (at most 60 s)."""
    command = BrokerProcess(data_dir, port=port, http_port=http_port).command()
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def wait_quiet(data_dir: Path, seconds: float = 1.0) -> dict[str, tuple[int, str]]:
    """The directory's snapshot once it has not changed for ``seconds`` (a broker at rest)."""
    deadline = time.monotonic() + 20
    last = snapshot(data_dir)
    while time.monotonic() < deadline:
        time.sleep(seconds)
        now = snapshot(data_dir)
        if now == last:
            return now
        last = now
    raise AssertionError("the broker's data directory never came to rest")


def test_a_second_broker_on_a_held_directory_refuses_and_writes_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with BrokerProcess(data_dir, args=("--fsync", "always")) as first:
        client = new_client(first.service_url)
        try:
            producer = client.create_producer(TOPIC)
            sent = [producer.send(f"m-{i}".encode()) for i in range(20)]
            consumer = client.subscribe(TOPIC, "sub", initial_position=pulsar.InitialPosition.Earliest)
            for _ in range(5):
                consumer.acknowledge(consumer.receive(10_000))
            before = wait_quiet(data_dir)
            second = run_second(data_dir, free_port(), free_port())
            assert second.returncode == 1
            assert second.stderr == (
                f"error: cannot start broker: data directory {data_dir} is in use by process {first.proc.pid}\n"
            )
            assert snapshot(data_dir) == before
            # the first broker serves on, untouched
            rest = [consumer.receive(10_000) for _ in range(15)]
            assert [m.data() for m in rest] == [f"m-{i}".encode() for i in range(5, 20)]
            assert rest[-1].message_id().entry_id() == sent[-1].entry_id()
        finally:
            client.close()
    # and after its clean stop the lock is gone: the same directory starts again with everything in it
    with BrokerProcess(data_dir, args=("--fsync", "always")) as again:
        client = new_client(again.service_url)
        try:
            consumer = client.subscribe(TOPIC, "sub")
            assert [consumer.receive(10_000).data() for _ in range(15)] == [f"m-{i}".encode() for i in range(5, 20)]
        finally:
            client.close()


def test_in_process_brokers_take_the_lock_too(tmp_path: Path) -> None:
    config = BrokerConfig(data_dir=tmp_path / "a", port=0, http_port=0, fsync="never")
    with BrokerThread(config), BrokerThread(BrokerConfig(data_dir=tmp_path / "b", port=0, http_port=0, fsync="never")):
        twin = StandaloneServer(BrokerConfig(data_dir=tmp_path / "a", port=0, http_port=0, fsync="never"))
        before = snapshot(tmp_path / "a")

        async def start_twin() -> None:
            await twin.start()

        with pytest.raises(DataDirLockedError) as refused:
            asyncio.run(start_twin())
        assert refused.value.pid == os.getpid()
        assert snapshot(tmp_path / "a") == before
    # both stopped: the directory is free again
    with BrokerThread(BrokerConfig(data_dir=tmp_path / "a", port=0, http_port=0, fsync="never")):
        pass


@pytest.mark.parametrize("busy", ["binary", "http"])
@pytest.mark.parametrize("existing", [False, True])
def test_a_busy_port_is_named_and_the_data_directory_is_untouched(tmp_path: Path, busy: str, existing: bool) -> None:
    data_dir = tmp_path / "data"
    if existing:
        with BrokerProcess(data_dir, args=("--fsync", "never")):
            pass
    before = snapshot(data_dir) if existing else None
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        ports = (taken, free_port()) if busy == "binary" else (free_port(), taken)
        second = run_second(data_dir, *ports)
    assert second.returncode == 1
    assert second.stderr == f"error: cannot start broker: 127.0.0.1:{taken} is already in use\n"
    if existing:
        assert snapshot(data_dir) == before
    else:
        assert not data_dir.exists()


def test_a_data_directory_that_cannot_be_made_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    started = run_second(blocker / "data", free_port(), free_port())
    assert started.returncode == 1
    assert started.stderr == f"error: cannot start broker: {blocker / 'data'}: Not a directory\n"
