"""Receipts of messages sent in groups: counted per settlement, each run timed, failures taken back."""

from __future__ import annotations

import asyncio
import json
import urllib.request
import uuid

from magnetar.cli.perf.options import ProducerSettings
from magnetar.cli.perf.produce import ProducerLoad
from magnetar.cli.perf.recorder import LatencyRecorder
from magnetar.cli.perf.send_groups import ProducerReceipts, group_limit
from magnetar.client import AsyncClient
from magnetar.client.exceptions import Timeout
from magnetar.testing import BrokerProcess
from tests.cli.perf.test_loads import FakeClient, FakeProducer


class Counter:
    """A receipt counter that keeps its totals; message ``i`` has ``i + 1`` bytes."""

    def __init__(self) -> None:
        self.latency = LatencyRecorder()
        self.acked = self.acked_bytes = self.errors = 0
        self.failures: list[str] = []

    def count_acknowledged(self, count: int, size: int, now_ns: int) -> None:
        self.acked += count
        self.acked_bytes += size

    def count_failed(self, count: int, size: int, error: Exception) -> None:
        self.acked -= count
        self.acked_bytes -= size
        self.errors += count
        self.failures.append(str(error))

    def bytes_of(self, index: int, count: int) -> int:
        return sum(index + 1 + j * 3 for j in range(count))  # stride 3


def test_a_settlement_across_runs_times_each_run_from_its_intended_time() -> None:
    counter = Counter()
    receipts = ProducerReceipts(counter, 3, 100)
    receipts.add_run(0, 0, 4)
    receipts.add_run(10_000_000, 12, 4)  # 10 ms later
    receipts.settled(6)  # all of the first run, two of the second
    assert counter.acked == 6 and counter.acked_bytes == 600
    values = sorted(counter.latency.counts.items())
    assert [count for _, count in values] == [2, 4] and values[1][0] - values[0][0] == 10_000
    receipts.settled(2)
    assert counter.acked == 8 and sum(counter.latency.counts.values()) == 8
    assert receipts.head == 2 and receipts.used == 0


def test_sizes_of_mixed_payloads_come_from_each_runs_positions() -> None:
    counter = Counter()
    receipts = ProducerReceipts(counter, 3, None)
    receipts.add_run(0, 1, 3)  # messages 1, 4, 7: 2 + 5 + 8 bytes
    receipts.settled(2)
    assert counter.acked_bytes == 7
    receipts.settled(1)
    assert counter.acked_bytes == 15


def test_an_error_callback_turns_the_latest_settlement_into_failures_once() -> None:
    counter = Counter()
    receipts = ProducerReceipts(counter, 1, 10)
    receipts.add_run(0, 0, 10)
    receipts.settled(4)
    receipts.on_result(None, object())  # a receipt's callback counts nothing more
    before = dict(counter.latency.counts)
    receipts.settled(6)
    receipts.on_result(Timeout("no receipt"), None)
    receipts.on_result(Timeout("no receipt"), None)  # the same failure's other callbacks
    assert (counter.acked, counter.errors, counter.acked_bytes) == (4, 6, 40)
    assert counter.latency.counts == before and counter.failures == ["no receipt"]


def test_settled_runs_are_dropped_and_counting_goes_on() -> None:
    counter = Counter()
    receipts = ProducerReceipts(counter, 1, 1)
    for i in range(10_000):
        receipts.add_run(i, i * 3, 3)
    for _ in range(15_000):
        receipts.settled(2)
    assert counter.acked == 30_000 and sum(counter.latency.counts.values()) == 30_000
    assert len(receipts.lengths) < 5000 and receipts.head == len(receipts.lengths)


def test_groups_are_never_longer_than_the_shortest_batch_the_client_cuts() -> None:
    assert group_limit(True, False, 1000, 128 * 1024, 100, 1000) == 1000
    assert group_limit(True, False, 1000, 128 * 1024, 1024, 1000) == 128  # 128 KiB batches of 1 KiB
    assert group_limit(True, False, 1000, 1000, 300, 1000) == 3  # 3 x 300 B < 1000 B: the 4th closes it
    assert group_limit(True, False, 1000, 1000, 1000, 1000) == 1  # sent on its own
    assert group_limit(True, False, 50, 128 * 1024, 0, 1000) == 50
    assert group_limit(False, False, 1000, 128 * 1024, 100, 1000) == 1
    assert group_limit(True, True, 1000, 128 * 1024, 100, 1000) == 1


def run_load(settings: ProducerSettings, batch: int, delay_s: float = 0.0,
             client: FakeClient | None = None) -> tuple[ProducerLoad, FakeClient]:
    async def scenario() -> tuple[ProducerLoad, FakeClient]:
        fake = client or FakeClient(delay_s=delay_s, batch=batch)
        load = ProducerLoad(settings)
        await load.start(fake)
        await load.run(asyncio.Event())
        await load.drain(5)
        return load, fake

    return asyncio.run(scenario())


def test_latency_counts_equal_the_messages_acknowledged_with_batches_across_chunks() -> None:
    # chunks of at most 7 (the outstanding cap) against batches of 5: groups straddle batches
    settings = ProducerSettings(["t", "p"], rate=0, max_messages=10_007, batch_max_messages=5, max_outstanding=7,
                                payloads=(b"a", b"bbb"))
    load, client = run_load(settings, batch=5, delay_s=0.001)
    assert load.sent == load.acked == 10_007 and load.errors == 0 and load.pending == 0
    assert load.latency.total().count == load.acked
    assert load.acked_bytes == sum(len(payload) for producer in client.producers for payload, _, _ in producer.sent)
    assert any(size < 5 for producer in client.producers for size in producer.batches)  # cuts between chunks
    for producer in client.producers:
        assert [seq for _, seq, _ in producer.sent] == list(range(len(producer.sent)))


def test_latency_counts_equal_the_messages_acknowledged_at_full_speed() -> None:
    settings = ProducerSettings(["t"], producers_per_topic=3, rate=0, max_messages=250_001, batch_max_messages=1000)
    load, client = run_load(settings, batch=1000)
    assert load.acked == 250_001 and load.latency.total().count == 250_001
    assert load.acked_bytes == 250_001 * 1024 and load.sent_bytes == load.acked_bytes


def test_receipts_that_count_every_message_once_also_with_keys() -> None:
    settings = ProducerSettings(["t"], producers_per_topic=2, rate=0, max_messages=3001, key_mode="autoIncrement",
                                batch_max_messages=100)
    load, client = run_load(settings, batch=100)
    assert load.acked == load.latency.total().count == 3001
    keys = sorted(int(key) for producer in client.producers for _, _, key in producer.sent if key is not None)
    assert keys == list(range(3001))


class FailingProducer(FakeProducer):
    """Fails its ``fail_batch``-th batch as the client fails a send: the count settled, then every
    callback of the batch given the error."""

    def __init__(self, name: str, batch: int, fail_batch: int) -> None:
        super().__init__(name, 0.0, batch)
        self.fail_batch = fail_batch

    def _cut(self) -> None:
        if len(self.batches) != self.fail_batch or not self._open:
            super()._cut()
            return
        waiters, self._open = self._open, []
        self.batches.append(len(waiters))
        self._pending -= len(waiters)
        self.settled_hook(len(waiters))
        for waiter in waiters:
            if waiter is not None:
                waiter(Timeout("lost"), None)


class OneFailingClient(FakeClient):
    """Its second producer fails one batch of 37 messages."""

    async def create_producer(self, topic: str, producer_name: str | None = None, **_: object) -> FakeProducer:
        producer = (FailingProducer(f"{topic}-1", 37, 3) if len(self.producers) == 1
                    else FakeProducer(f"{topic}-{len(self.producers)}", 0.0, 37))
        self.producers.append(producer)
        return producer


def test_a_failed_batch_of_one_producer_counts_its_messages_as_errors_and_untimed() -> None:
    settings = ProducerSettings(["t"], producers_per_topic=4, rate=0, max_messages=20_000, batch_max_messages=37)
    load, client = run_load(settings, batch=37, client=OneFailingClient())
    assert (load.sent, load.acked, load.errors, load.pending) == (20_000, 20_000 - 37, 37, 0)
    assert load.latency.total().count == load.acked and load.acked_bytes == load.acked * 1024
    assert load.first_error == "Timeout: lost"


def test_a_hundred_producers_on_a_broker_send_each_topic_its_exact_count(broker: BrokerProcess) -> None:
    topics = [f"persistent://public/default/groups-{uuid.uuid4().hex[:6]}-{i}" for i in range(100)]
    settings = ProducerSettings(topics, rate=0, max_messages=30_011, payloads=(b"x" * 100,), batch_delay_ms=10)

    async def scenario() -> ProducerLoad:
        async with AsyncClient(broker.service_url, operation_timeout_seconds=30) as client:
            load = ProducerLoad(settings)
            await load.start(client)
            await load.run(asyncio.Event())
            await load.drain(30)
            await load.close()
            return load

    load = asyncio.run(scenario())
    assert (load.acked, load.errors, load.pending) == (30_011, 0, 0)
    assert load.latency.total().count == 30_011 and load.acked_bytes == 30_011 * 100
    for i, topic in enumerate(topics):
        path = topic.replace("persistent://", "persistent/")
        with urllib.request.urlopen(f"{broker.http_url}/admin/v2/{path}/stats", timeout=10) as answer:
            stats = json.load(answer)
        assert stats["msgInCounter"] == (301 if i < 11 else 300), (topic, stats["msgInCounter"])
