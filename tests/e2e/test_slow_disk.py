"""A slow disk, end to end: every fsync of the ledgers takes 100 ms (through storage's file layer),
under an in-process broker and official-client producers with the default send timeout (30 s).

What must hold, as on a Pulsar broker with a slow journal: throughput falls to what the disk allows
(at most one sync round per 100 ms, each round confirming many messages at once), the fsync-round
and append-latency histograms of ``/metrics`` show the slow rounds, backpressure keeps the publish
bytes waiting for durability under the configured limits (so memory stays bounded), and every send
gets its receipt: nothing times out.
"""

from __future__ import annotations

import re
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.broker.session.base import SessionBase
from magnetar.storage.files import FileLayer, use_file_layer
from magnetar.testing import BrokerThread, free_port

from .helpers import new_client

FSYNC_SECONDS = 0.1
MESSAGE_BYTES = 8 * 1024
MESSAGES_PER_PRODUCER = 500
PRODUCERS = 2
KiB = 1024
MiB = 1024 * KiB
PER_CONNECTION_LIMIT = 1 * MiB
TOTAL_LIMIT = 3 * MiB // 2
#: frames already read from the socket when reading pauses are still appended: at most one read
#: buffer (256 KiB in asyncio and uvloop) plus the message that crossed the limit
READ_OVERSHOOT = 256 * KiB + MESSAGE_BYTES + 64 * KiB


class SlowDisk(FileLayer):
    """A file layer whose syncs (fdatasync and fsync) each take ``delay`` seconds more."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.syncs = 0
        self._lock = threading.Lock()

    def datasync(self, fd: int) -> None:
        """Wait, then sync."""
        self._slow()
        super().datasync(fd)

    def fsync(self, fd: int) -> None:
        """Wait, then sync."""
        self._slow()
        super().fsync(fd)

    def _slow(self) -> None:
        with self._lock:
            self.syncs += 1
        time.sleep(self.delay)


class PendingPeaks:
    """The highest publish bytes awaiting durability, per connection and in all, and the pauses."""

    def __init__(self) -> None:
        self.connection = 0
        self.total = 0
        self.pauses = 0


@pytest.fixture
def peaks(monkeypatch: pytest.MonkeyPatch) -> PendingPeaks:
    """Records the pending publish bytes each time the broker counts a new publish."""
    seen = PendingPeaks()
    original = SessionBase.publish_started

    def publish_started(self: SessionBase, size: int) -> None:
        was_paused = self.reading_paused
        original(self, size)
        seen.connection = max(seen.connection, self.pending_publish_bytes)
        seen.total = max(seen.total, self.service.pending_publish_bytes)
        seen.pauses += int(self.reading_paused and not was_paused)

    monkeypatch.setattr(SessionBase, "publish_started", publish_started)
    return seen


@pytest.fixture
def slow_broker(tmp_path: Path) -> Iterator[tuple[BrokerThread, SlowDisk, int]]:
    """An in-process broker whose ledgers sync through a 100 ms disk; (broker, disk, HTTP port)."""
    disk = SlowDisk(FSYNC_SECONDS)
    http_port = free_port()
    config = BrokerConfig(
        data_dir=tmp_path / "data", port=free_port(), http_port=http_port, fsync="always",
        max_pending_publish_bytes_per_connection=PER_CONNECTION_LIMIT, max_pending_publish_bytes=TOTAL_LIMIT,
    )
    with use_file_layer(disk), BrokerThread(config) as broker:
        yield broker, disk, http_port


def _produce(client: pulsar.Client, topic: str, results: list[tuple[pulsar.Result, float]]) -> None:
    """Asynchronous sends with the default send timeout, blocking while the client's queue is full."""
    producer = client.create_producer(topic, batching_enabled=False, block_if_queue_full=True)
    payload = b"s" * MESSAGE_BYTES
    for _ in range(MESSAGES_PER_PRODUCER):
        sent = time.monotonic()
        producer.send_async(payload, lambda res, _mid, sent=sent: results.append((res, time.monotonic() - sent)))
    producer.flush()
    producer.close()


def _histogram(text: str, name: str) -> dict[str, float]:
    """{le: cumulative count, "count": n, "sum": seconds} of a Prometheus histogram."""
    out = {le: float(v) for le, v in re.findall(rf'^{name}_bucket{{le="([^"]+)"}} (\S+)', text, re.M)}
    out["count"] = float(re.search(rf"^{name}_count (\S+)", text, re.M).group(1))
    out["sum"] = float(re.search(rf"^{name}_sum (\S+)", text, re.M).group(1))
    return out


def test_slow_fsync_degrades_throughput_keeps_memory_bounded_and_every_receipt(
    slow_broker: tuple[BrokerThread, SlowDisk, int], peaks: PendingPeaks
) -> None:
    broker, disk, http_port = slow_broker
    clients = [new_client(broker.service_url) for _ in range(PRODUCERS)]  # one connection each
    results: list[list[tuple[pulsar.Result, float]]] = [[] for _ in range(PRODUCERS)]
    threads = [
        threading.Thread(target=_produce, args=(c, f"persistent://public/default/slow-disk-{i}", results[i]))
        for i, c in enumerate(clients)
    ]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    elapsed = time.monotonic() - started
    for c in clients:
        c.close()
    assert not any(t.is_alive() for t in threads), "producers still sending after 60 s"

    # every send got its receipt, well within the official client's default send timeout
    outcomes = [res for per_producer in results for res, _ in per_producer]
    assert len(outcomes) == PRODUCERS * MESSAGES_PER_PRODUCER
    assert set(outcomes) == {pulsar.Result.Ok}
    assert max(latency for per_producer in results for _, latency in per_producer) < 15

    # throughput is what the disk allows: rounds no faster than one sync, many messages per round
    committer = broker.server.service.committer
    rounds = committer.rounds
    assert disk.syncs > 0
    assert rounds <= elapsed / FSYNC_SECONDS + 1
    assert len(outcomes) / rounds >= 10, f"{rounds} rounds for {len(outcomes)} messages"
    # a round confirms what waited for it, which backpressure bounds
    assert len(outcomes) * MESSAGE_BYTES / rounds <= TOTAL_LIMIT + PRODUCERS * READ_OVERSHOOT

    # the slow rounds show in the histograms
    with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    fsync_rounds = _histogram(text, "magnetar_fsync_round_seconds")
    assert fsync_rounds["count"] == rounds
    assert fsync_rounds["count"] - fsync_rounds["0.1"] >= rounds / 2, fsync_rounds
    assert fsync_rounds["sum"] >= FSYNC_SECONDS * rounds / 2
    append_latency = _histogram(text, "magnetar_append_latency_seconds")
    assert append_latency["sum"] / append_latency["count"] >= FSYNC_SECONDS, append_latency

    # backpressure engaged and held the bytes awaiting durability under the limits
    assert peaks.pauses > 0
    assert peaks.connection <= PER_CONNECTION_LIMIT + READ_OVERSHOOT
    assert peaks.total <= TOTAL_LIMIT + PRODUCERS * READ_OVERSHOOT
