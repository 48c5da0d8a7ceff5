"""``magnetar backup`` of a running broker under load: every message confirmed before the backup
began is in the copy, as a contiguous prefix without a corrupt or repeated record, the copied
subscription delivers all it had not acknowledged, and a broker starts on the copy."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pulsar
from typer.testing import CliRunner

from magnetar.cli.main import build_app
from magnetar.storage.repair import repair_data_dir
from magnetar.testing import BrokerProcess

from .helpers import new_client

TOPIC = "persistent://public/default/backed-up"
MESSAGES = 3000
PAD = b"." * 1000


def payload(i: int) -> bytes:
    return b"m-%06d|" % i + PAD


def read_everything(client: pulsar.Client) -> list[bytes]:
    reader = client.create_reader(TOPIC, pulsar.MessageId.earliest)
    got: list[bytes] = []
    while True:
        try:
            got.append(reader.read_next(2_000).data())
        except pulsar.Timeout:
            return got


class Load:
    """A producer of numbered messages (receipt times kept) and an acking consumer, on threads."""

    def __init__(self, client: pulsar.Client) -> None:
        self.producer = client.create_producer(TOPIC, batching_enabled=False, max_pending_messages=100,
                                               block_if_queue_full=True, send_timeout_millis=30_000)
        self.consumer = client.subscribe(TOPIC, "audit", initial_position=pulsar.InitialPosition.Earliest)
        # a subscription that never acknowledges: nothing is trimmed, the copy starts at entry 0
        self.keeper = client.subscribe(TOPIC, "keeper", initial_position=pulsar.InitialPosition.Earliest,
                                       receiver_queue_size=1)
        self.confirmed: dict[int, float] = {}
        self.failed: list[tuple[int, object]] = []
        self.acked: dict[int, float] = {}
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._produce), threading.Thread(target=self._ack)]

    def _produce(self) -> None:
        for i in range(MESSAGES):
            def done(result: pulsar.Result, _id: object, i: int = i) -> None:
                if result == pulsar.Result.Ok:
                    self.confirmed[i] = time.monotonic()
                else:
                    self.failed.append((i, result))
            self.producer.send_async(payload(i), done)
        self.producer.flush()

    def _ack(self) -> None:
        while not self.stop.is_set():
            try:
                msg = self.consumer.receive(200)
            except pulsar.Timeout:
                continue
            self.consumer.acknowledge(msg)
            self.acked[int(msg.data()[2:8])] = time.monotonic()

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.threads[0].join(120)
        self.stop.set()
        self.threads[1].join(30)


def test_a_backup_taken_under_load_holds_every_message_confirmed_before_it(tmp_path: Path) -> None:
    settings = tmp_path / "broker.toml"
    settings.write_text("segment_max_bytes = 65536\nsegment_min_rollover_minutes = 0\n")
    source, copy = tmp_path / "data", tmp_path / "copy"
    with BrokerProcess(source, args=("--fsync", "always", "--config", str(settings))) as broker:
        client = new_client(broker.service_url)
        try:
            with Load(client) as load:
                deadline = time.monotonic() + 60
                while len(load.confirmed) < MESSAGES // 3 and time.monotonic() < deadline:
                    time.sleep(0.01)
                began = time.monotonic()
                result = CliRunner().invoke(build_app(["backup"]), ["backup", str(source), str(copy)])
                ended = time.monotonic()
            assert result.exit_code == 0, result.output
            assert not load.failed
            assert len(load.confirmed) == MESSAGES
        finally:
            client.close()
    before = {i for i, at in load.confirmed.items() if at < began}
    assert len(before) >= MESSAGES // 3
    assert max(load.confirmed.values()) > ended, "the producer kept going after the backup"
    segments = sorted((copy / "ledgers").glob("*/*.log"))
    assert len(segments) > 10  # roll-overs happened: the copy spans many segments
    assert repair_data_dir(copy, fix=False).clean

    with BrokerProcess(copy, args=("--fsync", "always")) as restored:
        client = new_client(restored.service_url)
        try:
            stored = read_everything(client)
            count = len(stored)
            assert stored == [payload(i) for i in range(count)]  # a prefix: in order, none repeated or corrupt
            assert before <= set(range(count))
            assert f"{count} entries" in result.output
            audit = client.subscribe(TOPIC, "audit")
            redelivered: list[int] = []
            while True:
                try:
                    redelivered.append(int(audit.receive(2_000).data()[2:8]))
                except pulsar.Timeout:
                    break
        finally:
            client.close()
    assert redelivered == sorted(set(redelivered))
    acked_by_end = {i for i, at in load.acked.items() if at < ended}
    assert set(range(count)) - acked_by_end <= set(redelivered) <= set(range(count))
