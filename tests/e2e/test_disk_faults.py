"""A full disk, end to end: a broker whose data directory is a small tmpfs, and the official client.

While the disk is full, publishes fail with Pulsar's PersistenceError (the client reconnects and
retries until its send timeout: never a hang on the broker's side), consumers go on receiving and
acknowledging, and the health endpoint and ``/metrics`` say what is wrong. Once space is back,
publishing resumes without a restart, and a restart afterwards finds every confirmed message exactly
once.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pulsar
import pytest

from magnetar.testing import BrokerProcess

TOPIC = "persistent://public/default/disk-full"
MESSAGE_BYTES = 40_000


def _payload(i: int) -> bytes:
    head = f"full-{i:05d}:".encode()
    return head + hashlib.sha256(head).digest() * (MESSAGE_BYTES // 32)


def _index_of(data: bytes) -> int:
    i = int(data[5:10])
    assert data == _payload(i), f"corrupted payload {data[:20]!r}"
    return i


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs (root only), unmounted afterwards."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount_point)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    yield mount_point
    subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _http(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_disk_full_fails_publishes_and_publishing_resumes_by_itself(
    small_disk: Path,
    dedicated_broker: Callable[..., BrokerProcess],
    client_factory: Callable[[str], pulsar.Client],
) -> None:
    conf = small_disk.parent / "broker.toml"
    conf.write_text("segment_max_bytes = 1048576\n")
    ballast = small_disk / "ballast"
    ballast.write_bytes(b"\0" * (1536 * 1024))
    log_path = small_disk.parent / "broker.log"  # not on the full disk
    broker = dedicated_broker(small_disk / "data", args=("--config", str(conf)), log_path=log_path)
    producing = client_factory(broker.service_url)
    consuming = client_factory(broker.service_url)
    consuming.subscribe(TOPIC, "audit").close()  # holds every message back from trimming
    consumer = consuming.subscribe(TOPIC, "live")
    producer = producing.create_producer(TOPIC, send_timeout_millis=3000, batching_enabled=False)

    confirmed: list[int] = []
    stuck: tuple[int, threading.Event, list] | None = None
    for i in range(400):  # 16 MB: far more than the disk holds
        done, result = threading.Event(), []
        producer.send_async(_payload(i), lambda res, _mid, d=done, r=result: (r.append(res), d.set()))
        # The broker answers every attempt with SEND_ERROR PersistenceError; the official client
        # reconnects and resends the message until it is stored: it stays pending meanwhile.
        if not done.wait(5):
            stuck = (i, done, result)
            break
        assert result == [pulsar.Result.Ok]
        confirmed.append(i)
    assert stuck is not None, "the disk never filled"
    assert len(confirmed) > 20
    assert "No space left on device" in broker.log()

    status, text = _http(f"{broker.http_url}/admin/v2/brokers/health")
    assert status == 503 and "disk full" in text, (status, text)
    _, metrics = _http(f"{broker.http_url}/metrics")
    assert "magnetar_storage_disk_full 1.0" in metrics
    assert "PersistenceError" in broker.log() or "No space left" in broker.log()

    # Reads, dispatch and acknowledgements go on while the disk is full.
    seen: set[int] = set()
    deadline = time.monotonic() + 60
    while len(seen) < len(confirmed) and time.monotonic() < deadline:
        try:
            msg = consumer.receive(timeout_millis=2000)
        except pulsar.Timeout:
            continue
        seen.add(_index_of(msg.data()))
        consumer.acknowledge(msg)
    assert seen >= set(confirmed)

    # Space comes back: the pending send is stored by itself, and new sends work, no restart.
    ballast.unlink()
    index, done, result = stuck
    assert done.wait(30), "publishing did not resume once space was back"
    assert result == [pulsar.Result.Ok]
    confirmed.append(index)
    producer.send(_payload(9999))
    confirmed.append(9999)
    _wait_for(lambda: _http(f"{broker.http_url}/admin/v2/brokers/health") == (200, "ok"), 10, "health back to ok")
    producing.close()
    consuming.close()

    assert broker.stop() == 0, broker.log()
    broker = dedicated_broker(
        broker.data_dir, port=broker.port, http_port=broker.http_port, args=("--config", str(conf)), log_path=log_path
    )
    client = client_factory(broker.service_url)
    audit = client.subscribe(TOPIC, "audit")
    stored: dict[int, int] = {}
    while True:
        try:
            msg = audit.receive(timeout_millis=3000)
        except pulsar.Timeout:
            break
        i = _index_of(msg.data())
        stored[i] = stored.get(i, 0) + 1
    assert all(stored.get(i) == 1 for i in confirmed), {i: stored.get(i) for i in confirmed if stored.get(i) != 1}


def test_damaged_files_the_broker_starts_and_serves_what_is_intact(
    dedicated_broker: Callable[..., BrokerProcess], client_factory: Callable[[str], pulsar.Client]
) -> None:
    """A damaged metadata.db and a corrupt record in the middle of a segment: the broker starts, says
    what it found, serves every intact message (never the corrupt one) and does not stall on it."""
    broker = dedicated_broker()
    topic = "persistent://public/default/damaged"
    client = client_factory(broker.service_url)
    client.subscribe(topic, "sub").close()
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(10):
        producer.send(_payload(i)[:200])
    client.close()
    assert broker.stop() == 0, broker.log()

    data = broker.data_dir
    (data / "metadata.db" / "metadata.db").write_bytes(b"\x00garbage" * 512)
    for suffix in ("-wal", "-shm"):
        Path(f"{data / 'metadata.db' / 'metadata.db'}{suffix}").unlink(missing_ok=True)
    segment = next((data / "ledgers").glob("*/00000000000000000000.log"))
    raw = bytearray(segment.read_bytes())
    pos = 0
    for _ in range(4):  # to the fifth record
        pos += 8 + int.from_bytes(raw[pos : pos + 4], "big")
    raw[pos + 8 + 20] ^= 0xFF
    segment.write_bytes(bytes(raw))

    broker = dedicated_broker(data, port=broker.port, http_port=broker.http_port)
    assert "metadata database" in broker.log() and "damaged" in broker.log()
    client = client_factory(broker.service_url)
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    got = []
    while True:
        try:
            msg = consumer.receive(timeout_millis=3000)
        except pulsar.Timeout:
            break
        got.append(msg.data())
        consumer.acknowledge(msg)
    assert got == [_payload(i)[:200] for i in range(10) if i != 4]
    assert "skipping entry 4" in broker.log()
    _, metrics = _http(f"{broker.http_url}/metrics")
    assert "magnetar_storage_damaged_entries_skipped_total 1.0" in metrics
