"""A full disk, end to end: a broker whose data directory is a small tmpfs, and the official client.

While the disk is full, the official client's sends fail at once with ProducerBlockedQuotaExceededException
(the broker closes the producers and refuses their re-registration: see broker/topics/no_space.py),
consumers go on receiving and acknowledging, and the health endpoint and ``/metrics`` say what is wrong. Once space is back,
publishing resumes without a restart, and a restart afterwards finds every confirmed message exactly
once.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pulsar
import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.storage.files import FaultyFileLayer, use_file_layer
from magnetar.storage.health import storage_health
from magnetar.testing import BrokerProcess, BrokerThread
from magnetar.testing.ports import free_port

from .helpers import QUIET_MS

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
    """A 48 MiB tmpfs (root only), unmounted afterwards."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(mount_point)], capture_output=True)
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


def _until_quiet(receiver: pulsar.Consumer, expected: int, ack: bool = True) -> list[pulsar.Message]:
    """What ``receiver`` gets: up to 3 s for each of the ``expected`` messages, then until QUIET_MS of
    silence (more than ``expected`` is what the caller's assertion catches)."""
    got: list[pulsar.Message] = []
    while True:
        try:
            msg = receiver.receive(timeout_millis=3000 if len(got) < expected else QUIET_MS)
        except pulsar.Timeout:
            return got
        got.append(msg)
        if ack:
            receiver.acknowledge(msg)


def _fill(disk: Path, leave: int) -> Path:
    """A filler file that leaves ``leave`` bytes free on ``disk``."""
    stats = os.statvfs(disk)
    filler = disk / "filler"
    with open(filler, "wb") as out:
        remaining = stats.f_bavail * stats.f_frsize - leave
        while remaining > 0:
            remaining -= out.write(b"\0" * min(remaining, 1 << 20))
    return filler


def _timed_send(producer: pulsar.Producer, data: bytes) -> tuple[BaseException | None, float]:
    started = time.monotonic()
    try:
        producer.send(data)
    except Exception as exc:  # noqa: BLE001 - the test asserts which
        return exc, time.monotonic() - started
    return None, time.monotonic() - started


SEND_TIMEOUT_MS = 10_000


def test_disk_full_gives_the_official_client_a_final_error_and_publishing_resumes(
    small_disk: Path,
    dedicated_broker: Callable[..., BrokerProcess],
    client_factory: Callable[[str], pulsar.Client],
) -> None:
    conf = small_disk.parent / "broker.toml"
    conf.write_text("segment_max_bytes = 1048576\n")
    log_path = small_disk.parent / "broker.log"  # not on the full disk
    broker = dedicated_broker(small_disk / "data", args=("--config", str(conf)), log_path=log_path)
    producing = client_factory(broker.service_url)
    consuming = client_factory(broker.service_url)
    consuming.subscribe(TOPIC, "audit").close()  # holds every message back from trimming
    consumer = consuming.subscribe(TOPIC, "live")
    producer = producing.create_producer(TOPIC, send_timeout_millis=SEND_TIMEOUT_MS, batching_enabled=False)
    filler = _fill(small_disk, 3 * 1024 * 1024)

    confirmed: list[int] = []
    failure: BaseException | None = None
    for i in range(400):  # 16 MB: far more than the 3 MB left
        failure, took = _timed_send(producer, _payload(i))
        if failure is not None:
            break
        confirmed.append(i)
    # the send that found the disk full fails at once with the error the client treats as final
    assert isinstance(failure, pulsar.ProducerBlockedQuotaExceededException), repr(failure)
    assert took < SEND_TIMEOUT_MS / 1000, took
    assert 20 < len(confirmed) < 120
    # so does the next one, while the disk is still full
    again, took_again = _timed_send(producer, _payload(1000))
    assert isinstance(again, (pulsar.ProducerBlockedQuotaExceededException, pulsar.Timeout)), repr(again)
    assert took_again < SEND_TIMEOUT_MS / 1000 + 1, took_again
    assert "no space left for its ledger" in broker.log()

    status, text = _http(f"{broker.http_url}/admin/v2/brokers/health")
    assert status == 503 and "disk full" in text, (status, text)
    _, metrics = _http(f"{broker.http_url}/metrics")
    assert "magnetar_storage_disk_full 1.0" in metrics

    # Reads, dispatch and acknowledgements go on while the disk is full: exactly what was confirmed.
    seen = [_index_of(msg.data()) for msg in _until_quiet(consumer, len(confirmed))]
    assert seen == confirmed

    # Space comes back: the same producer publishes again (once its client reconnects), no restart.
    filler.unlink()
    freed = time.monotonic()
    while True:
        error, _took = _timed_send(producer, _payload(9999))
        if error is None:
            break
        assert time.monotonic() - freed < 60, f"publishing did not resume: {error!r}"
    confirmed.append(9999)
    fresh = producing.create_producer(TOPIC, batching_enabled=False)
    fresh.send(_payload(9998))
    confirmed.append(9998)
    assert [_index_of(consumer.receive(10_000).data()) for _ in range(2)] == [9999, 9998]
    _wait_for(lambda: _http(f"{broker.http_url}/admin/v2/brokers/health") == (200, "ok"), 10, "health back to ok")
    producing.close()
    consuming.close()

    assert broker.stop() == 0, broker.log()
    broker = dedicated_broker(
        broker.data_dir, port=broker.port, http_port=broker.http_port, args=("--config", str(conf)), log_path=log_path
    )
    client = client_factory(broker.service_url)
    audit = client.subscribe(TOPIC, "audit")
    stored = [_index_of(msg.data()) for msg in _until_quiet(audit, len(confirmed), ack=False)]
    assert stored == confirmed


def test_disk_full_fails_every_pending_async_send_of_a_pipelining_producer(
    small_disk: Path,
    dedicated_broker: Callable[..., BrokerProcess],
    client_factory: Callable[[str], pulsar.Client],
) -> None:
    conf = small_disk.parent / "broker.toml"
    conf.write_text("segment_max_bytes = 1048576\n")
    broker = dedicated_broker(small_disk / "data", args=("--config", str(conf)), log_path=small_disk.parent / "broker.log")
    client = client_factory(broker.service_url)
    consumer = client.subscribe(TOPIC, "live")
    producer = client.create_producer(TOPIC, send_timeout_millis=SEND_TIMEOUT_MS, batching_enabled=False,
                                      max_pending_messages=50, block_if_queue_full=True)
    _fill(small_disk, 3 * 1024 * 1024)
    results: dict[int, tuple[pulsar.Result, float]] = {}
    issued = time.monotonic()
    for i in range(150):  # 6 MB in flight, 50 at a time: twice what the disk holds
        producer.send_async(_payload(i), lambda res, _mid, i=i: results.__setitem__(i, (res, time.monotonic())))
    _wait_for(lambda: len(results) == 150, SEND_TIMEOUT_MS / 1000, "every send to complete")
    assert max(at for _res, at in results.values()) - issued < SEND_TIMEOUT_MS / 1000
    stored = [i for i in range(150) if results[i][0] == pulsar.Result.Ok]
    assert stored == list(range(len(stored))) and 20 < len(stored) < 120  # a prefix, then final errors
    assert {results[i][0] for i in range(len(stored), 150)} == {pulsar.Result.ProducerBlockedQuotaExceededException}
    received = [_index_of(msg.data()) for msg in _until_quiet(consumer, len(stored))]
    assert received == stored


INTEROP = Path(__file__).resolve().parents[1] / "interop"


def _client_command(client: str, build_dir: Path) -> list[str]:
    """How to run the disk-full driver of the official ``go`` or ``java`` client (built here)."""
    tool = shutil.which({"go": "go", "java": "mvn"}[client])
    if tool is None or (client == "java" and shutil.which("java") is None):
        pytest.fail(f"the {client} client's disk-full driver needs {'go' if client == 'go' else 'mvn and java'} on PATH")
    if client == "go":
        binary = build_dir / "diskfull"
        subprocess.run([tool, "build", "-o", str(binary), "./diskfull"], cwd=INTEROP / "go", check=True, timeout=900,
                       capture_output=True)
        return [str(binary), "-url", "{url}", "-dir", "{dir}", "-topic", "{topic}"]
    classpath = build_dir / "classpath.txt"
    subprocess.run([tool, "-B", "-q", "dependency:build-classpath", f"-Dmdep.outputFile={classpath}"],
                   cwd=INTEROP / "java", check=True, timeout=900, capture_output=True)
    driver = INTEROP / "java" / "diskfull" / "DiskFull.java"
    return ["java", "-cp", classpath.read_text().strip(), str(driver), "{url}", "{dir}", "{topic}"]


# the driver's build (go build / mvn, up to 900 s each) runs inside the test: on a clean machine the Go
# build cache is cold and this file runs before tests/interop warms it (a cold go build took over 120 s)
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("client", ["go", "java"])
def test_disk_full_gives_the_go_and_java_clients_a_final_error(
    client: str, small_disk: Path, dedicated_broker: Callable[..., BrokerProcess], tmp_path: Path
) -> None:
    command = _client_command(client, tmp_path)
    conf = small_disk.parent / "broker.toml"
    conf.write_text("segment_max_bytes = 1048576\n")
    broker = dedicated_broker(small_disk / "data", args=("--config", str(conf)), log_path=tmp_path / "broker.log")
    topic = f"persistent://public/default/disk-full-{client}"
    values = {"url": broker.service_url, "dir": str(small_disk), "topic": topic}
    done = subprocess.run([part.format(**values) for part in command], capture_output=True, text=True, timeout=400,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["fail_blocked"], result["fail_error"]
    assert result["fail_seconds"] < SEND_TIMEOUT_MS / 1000
    assert result["next_error"] and result["next_seconds"] < SEND_TIMEOUT_MS / 1000 + 1
    assert 20 < len(result["confirmed"]) < 120
    assert result["received"] == result["confirmed"]  # reads and acks went on; nothing unconfirmed stored
    assert result["resumed_seconds"] < 60
    assert "no space left for its ledger" in broker.log()


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
    got = [msg.data() for msg in _until_quiet(consumer, 9)]
    assert got == [_payload(i)[:200] for i in range(10) if i != 4]
    assert "skipping entry 4" in broker.log()
    _, metrics = _http(f"{broker.http_url}/metrics")
    assert "magnetar_storage_damaged_entries_skipped_total 1.0" in metrics


def test_a_failed_fdatasync_under_pipelining_official_producers_stores_every_message_once(
    tmp_path: Path, client_factory: Callable[[str], pulsar.Client]
) -> None:
    """An fdatasync of topic a's ledger fails (EIO) while one official client has 100 sends in flight
    to a and 100 to b, over one connection, without deduplication: every send succeeds (the client
    resends what the failed round held once its producer, closed by the broker, registered again) and
    each topic's consumer receives every message exactly once. Before: a's SEND_ERRORs made the client
    close its connection, the SENDs already on their way to a were stored after the recovery with their
    receipts lost, and resent (68-99 of 400 stored twice); and a SEND to a's closed producer answered
    with a SEND_ERROR closed the connection too, losing b's receipts on their way (b's messages resent:
    14 of 400 stored twice in one run of three)."""
    layer = FaultyFileLayer()
    storage_health.reset()
    config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=free_port())
    with use_file_layer(layer), BrokerThread(config) as broker:
        client = client_factory(broker.service_url)
        topics = ["persistent://public/default/eio-a", "persistent://public/default/eio-b"]
        consumers = [client.subscribe(t, "all", initial_position=pulsar.InitialPosition.Earliest) for t in topics]
        producers = [client.create_producer(t, batching_enabled=False, max_pending_messages=100,
                                            block_if_queue_full=True, send_timeout_millis=30_000) for t in topics]
        for producer in producers:
            producer.send(b"first")  # the ledgers' directories and first rounds are behind us
        a_directory = str(broker.server.service.topics[topics[0]].ledger.directory)
        fault = layer.inject("datasync", errno.EIO, after=3, times=1, path_part=a_directory)
        results: dict[tuple[int, int], pulsar.Result] = {}
        for i in range(400):
            for t, producer in enumerate(producers):
                producer.send_async(f"m-{i}".encode(), lambda res, _mid, key=(t, i): results.__setitem__(key, res))
        _wait_for(lambda: len(results) == 800, 30, "every send to complete")
        assert fault.fired == 1
        assert {key for key, res in results.items() if res != pulsar.Result.Ok} == set()
        for consumer in consumers:
            received = [msg.data().decode() for msg in _until_quiet(consumer, 401)]
            assert received[0] == "first"
            assert sorted(received[1:], key=lambda m: int(m[2:])) == [f"m-{i}" for i in range(400)]
    storage_health.reset()
