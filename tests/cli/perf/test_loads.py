"""The producer, consumer and end-to-end loads on stand-in clients: pacing, counting, matching."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

from magnetar.cli.perf.consume import ConsumerLoad
from magnetar.cli.perf.end_to_end import EndToEndRun
from magnetar.cli.perf.options import ConsumerSettings, ProducerSettings
from magnetar.cli.perf.produce import ProducerLoad


class FakeId:
    """The parts of a message id that tell where in its batch a message is."""

    def __init__(self, batch_index: int, batch_size: int) -> None:
        self.batch_index, self.batch_size = batch_index, batch_size


class FakeProducer:
    """Completes each send on the next loop iteration, after ``delay_s``; with ``batch`` > 1 it
    collects messages in batches of that many (sent when full, or at the next loop iteration) and
    answers each batch's waiters as the client does: its ``settled_hook`` told the count first, then
    the waiters, skipping None, with ids with batch positions."""

    def __init__(self, name: str, delay_s: float = 0.0, batch: int = 1) -> None:
        self.name = name
        self.delay_s = delay_s
        self.batch = batch
        self.sent: list[tuple[bytes, int, str | None]] = []
        self.most_pending = 0
        self.batches: list[int] = []
        self._pending = 0
        self._open: list[Any] = []
        self.settled_hook: Any = None

    def send_nowait(self, payload: bytes, callback: Any, sequence_id: int, *, partition_key: str | None = None) -> None:
        self.sent.append((payload, sequence_id, partition_key))
        self._pending += 1
        self.most_pending = max(self.most_pending, self._pending)
        self._open.append(callback)
        if len(self._open) == 1:
            asyncio.get_running_loop().call_soon(self._cut)
        if len(self._open) >= self.batch:
            self._cut()

    def _cut(self) -> None:
        waiters, self._open = self._open, []
        if not waiters:
            return
        self.batches.append(len(waiters))

        def done() -> None:
            self._pending -= len(waiters)
            if self.settled_hook is not None:
                self.settled_hook(len(waiters))
            for i, waiter in enumerate(waiters):
                if waiter is not None:
                    waiter(None, FakeId(i if self.batch > 1 else -1, len(waiters) if self.batch > 1 else 0))

        asyncio.get_running_loop().call_later(self.delay_s, done)

    async def flush(self) -> None:
        self._cut()
        while self._pending:
            await asyncio.sleep(0.001)

    async def close(self) -> None:
        pass


class FakeClient:
    """Producers that answer by themselves; topics ``p*`` have two partitions."""

    def __init__(self, delay_s: float = 0.0, batch: int = 1) -> None:
        self.delay_s = delay_s
        self.batch = batch
        self.producers: list[FakeProducer] = []

    async def get_topic_partitions(self, topic: str) -> list[str]:
        return [f"{topic}-partition-0", f"{topic}-partition-1"] if topic.startswith("p") else [topic]

    async def create_producer(self, topic: str, producer_name: str | None = None, **_: Any) -> FakeProducer:
        producer = FakeProducer(producer_name or f"{topic}-{len(self.producers)}", self.delay_s, self.batch)
        self.producers.append(producer)
        return producer


_ENTRIES = itertools.count()


class FakeEntryId:
    """The ledger and entry of a stand-in message's id (as the official client's MessageId gives them)."""

    def __init__(self, ledger: int, entry: int) -> None:
        self.ledger, self.entry = ledger, entry

    def ledger_id(self) -> int:
        return self.ledger

    def entry_id(self) -> int:
        return self.entry


class FakeMessage:
    """A stand-in received message; each is its own entry unless ``entry`` says which it shares."""

    def __init__(self, payload: bytes, producer: str = "", sequence_id: int = 0, publish_ms: int = 0,
                 entry: int | None = None) -> None:
        self.payload, self.producer, self.seq, self.publish_ms = payload, producer, sequence_id, publish_ms
        self.entry = next(_ENTRIES) if entry is None else entry

    def message_id(self) -> FakeEntryId:
        return FakeEntryId(7, self.entry)

    def data(self) -> bytes:
        return self.payload

    def producer_name(self) -> str:
        return self.producer

    def sequence_id(self) -> int:
        return self.seq

    def publish_timestamp(self) -> int:
        return self.publish_ms


class FakeConsumer:
    """A receiver queue filled by the test."""

    def __init__(self, messages: list[FakeMessage]) -> None:
        self.queue = list(messages)
        self.acked: list[FakeMessage] = []

    def receive_nowait(self, n: int) -> list[FakeMessage]:
        out, self.queue = self.queue[:n], self.queue[n:]
        return out

    async def receive(self, timeout_ms: int) -> FakeMessage:
        from magnetar.client.exceptions import Timeout

        await asyncio.sleep(timeout_ms / 1000)
        raise Timeout("nothing")

    def acknowledge_many(self, messages: list[FakeMessage]) -> None:
        self.acked.extend(messages)

    def queued(self) -> int:
        return len(self.queue)


def test_producers_take_turns_with_contiguous_sequence_ids_and_keys() -> None:
    async def scenario() -> tuple[ProducerLoad, FakeClient]:
        client = FakeClient()
        load = ProducerLoad(ProducerSettings(["t", "p"], producers_per_topic=2, rate=0, max_messages=60,
                                             payloads=(b"a", b"bb"), key_mode="autoIncrement"))
        await load.start(client)
        await load.run(asyncio.Event())
        await load.drain(5)
        return load, client

    load, client = asyncio.run(scenario())
    assert len(client.producers) == 6  # 2 on t, 2 on each of p's partitions
    assert [len(p.sent) for p in client.producers] == [10] * 6
    assert all([seq for _, seq, _ in p.sent] == list(range(10)) for p in client.producers)
    assert client.producers[0].sent[1] == (b"a", 1, "6")  # message 6 went to producer 0, payloads in turn
    assert load.acked == 60 and load.acked_bytes == 90 and load.pending == 0 and load.errors == 0
    assert load.latency.total().count == 60


def test_outstanding_messages_are_capped() -> None:
    async def scenario() -> tuple[ProducerLoad, FakeClient]:
        client = FakeClient(delay_s=0.005)
        load = ProducerLoad(ProducerSettings(["t"], rate=0, max_messages=500, max_outstanding=50))
        await load.start(client)
        await load.run(asyncio.Event())
        await load.drain(5)
        return load, client

    load, client = asyncio.run(scenario())
    assert load.acked == 500 and client.producers[0].most_pending <= 50


def test_one_outstanding_message_sends_each_after_the_previous_receipt() -> None:
    async def scenario() -> tuple[ProducerLoad, FakeClient]:
        client = FakeClient()
        load = ProducerLoad(ProducerSettings(["t"], rate=0, max_messages=200, max_outstanding=1))
        await load.start(client)
        await load.run(asyncio.Event())
        return load, client

    load, client = asyncio.run(scenario())
    assert load.acked == 200 and load.pending == 0 and client.producers[0].most_pending == 1


def test_a_sender_waiting_for_receipts_that_never_come_stops_at_its_time_limit() -> None:
    async def scenario() -> tuple[ProducerLoad, float]:
        client = FakeClient(delay_s=60)  # no receipt within the run
        load = ProducerLoad(ProducerSettings(["t"], rate=0, duration_s=0.3, max_outstanding=1))
        await load.start(client)
        started = time.monotonic()
        await load.run(asyncio.Event())
        return load, time.monotonic() - started

    load, elapsed = asyncio.run(scenario())
    assert load.sent == 1 and load.pending == 1 and 0.3 <= elapsed < 1.0


def test_a_fixed_rate_is_kept_and_latency_counts_from_the_schedule() -> None:
    async def scenario() -> ProducerLoad:
        load = ProducerLoad(ProducerSettings(["t"], rate=1000, duration_s=0.5))
        await load.start(FakeClient(delay_s=0.002))
        await load.run(asyncio.Event())
        await load.drain(5)
        return load

    load = asyncio.run(scenario())
    assert load.sent == load.acked == 500
    assert 950 <= load.send_rate().msg_per_s <= 1050
    assert load.latency.total().p50 >= 2.0  # the 2 ms the fake broker takes, at least


def test_consumers_pace_count_acknowledge_and_time_from_the_publish_time() -> None:
    now_ms = time.time_ns() // 1_000_000
    consumer = FakeConsumer([FakeMessage(b"xyz", publish_ms=now_ms - 50) for _ in range(300)])

    async def scenario() -> ConsumerLoad:
        load = ConsumerLoad(ConsumerSettings(["t"], ["s"], rate=1000, max_messages=200))
        load.consumers = [consumer]
        await load.run(asyncio.Event())
        return load

    started = time.perf_counter()
    load = asyncio.run(scenario())
    assert load.received == 200 and load.received_bytes == 600 and len(consumer.acked) == 200
    assert 0.18 <= time.perf_counter() - started < 1.5
    latency = load.latency.total()
    # published 50 ms before the run, received over 0.2 s: 50 to 250 ms and then some
    assert latency.count == 200 and 100 <= latency.p50 < 1000 and latency.max < 1600


def test_consumers_time_every_message_from_its_own_publish_time() -> None:
    now_ms = time.time_ns() // 1_000_000
    ages_ms = [1000] * 10 + [2000] * 80 + [3000] * 10  # three batches of different ages
    consumer = FakeConsumer([FakeMessage(b"ab", publish_ms=now_ms - age) for age in ages_ms])

    async def scenario() -> ConsumerLoad:
        load = ConsumerLoad(ConsumerSettings(["t"], ["s"], max_messages=100))
        load.consumers = [consumer]
        await load.run(asyncio.Event())
        return load

    load = asyncio.run(scenario())
    latency = load.latency.total()
    assert load.received == latency.count == 100 and load.received_bytes == 200
    assert 2000 <= latency.p50 < 2500 and 3000 <= latency.max < 3500
    assert 1900 <= latency.mean < 2500  # 0.1 * 1 s + 0.8 * 2 s + 0.1 * 3 s, and the run's own time


def test_end_to_end_matches_messages_to_their_send_time_and_counts_the_rest() -> None:
    run = EndToEndRun(ProducerSettings(["t"], producer_name_prefix="perf"), ConsumerSettings(["t"], ["s"]))
    run.producers.names = ["perf-0", "perf-1"]
    run._in_flight = [{}, {}]
    run._by_name = dict(zip(run.producers.names, run._in_flight, strict=True))
    sent_at = time.perf_counter_ns() - 3_000_000
    for seq in range(3):
        run._sent(0, seq, sent_at)
        run._sent(1, seq, sent_at)
    received = [FakeMessage(b"", "perf-0", 0), FakeMessage(b"", "perf-1", 2), FakeMessage(b"", "other", 0),
                FakeMessage(b"", "perf-0", 0)]
    run._received(received, time.perf_counter_ns())
    assert run.in_flight == 4 and run.unexpected == 2  # a stranger, and a second delivery
    latency = run.latency.total()
    assert latency.count == 2 and latency.p50 >= 3.0
