"""The scenarios with the official pulsar-client (C++ core, blocking API, callbacks on its threads),
against any Pulsar-protocol broker."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pulsar
from benchmarks.suite.drivers.common import (
    Params,
    age_micros,
    latency,
    paced_sync,
    payload,
    stamped,
    throughput,
)

from magnetar.cli.perf.recorder import LatencyRecorder

WAIT_S = 600


def _client(p: Params) -> pulsar.Client:
    return pulsar.Client(p.address, operation_timeout_seconds=60, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


def _producer(client: pulsar.Client, topic: str, p: Params, batching: bool = True) -> pulsar.Producer:
    return client.create_producer(
        topic, batching_enabled=batching, batching_max_messages=max(p.batch, 2), batching_max_allowed_size_in_bytes=1 << 20,
        batching_max_publish_delay_ms=int(p.batch_delay_ms), max_pending_messages=10_000, block_if_queue_full=True,
        send_timeout_millis=60_000)


class Acked:
    """Counts send callbacks; ``done`` is set at ``expected``."""

    def __init__(self, expected: int, on_ack: Callable[[], None] | None = None) -> None:
        self.expected = expected
        self.count = 0
        self.failures = 0
        self.done = threading.Event()
        self.on_ack = on_ack

    def __call__(self, result: Any, _msg_id: Any) -> None:
        """The send callback."""
        if result != pulsar.Result.Ok:
            self.failures += 1
        self.count += 1
        if self.count >= self.expected:
            self.done.set()


def _produce(client: pulsar.Client, topics: list[str], p: Params, batching: bool = True) -> tuple[int, float, int]:
    producers = [_producer(client, topic, p, batching) for topic in topics]
    data = payload(p.size)
    acked = Acked(p.count)
    started = time.perf_counter()
    for i in range(p.count):
        producers[i % len(producers)].send_async(data, acked)
    for producer in producers:
        producer.flush()
    acked.done.wait(WAIT_S)
    return acked.count, time.perf_counter() - started, acked.failures


def produce(p: Params) -> dict[str, Any]:
    """Max produce rate: send_async with batching, until every receipt."""
    client = _client(p)
    try:
        count, seconds, failures = _produce(client, [p.topic], p)
    finally:
        client.close()
    return throughput(count, seconds, failures=failures)


class EntryCounter:
    """Counts the entries received messages came in: a change of (ledger, entry) from one message to
    the next (the messages of a batch share theirs)."""

    def __init__(self) -> None:
        self.count = 0
        self._last: tuple[int, int] | None = None

    def __call__(self, msg: Any) -> None:
        """Called with each received message, in order."""
        mid = msg.message_id()
        key = (mid.ledger_id(), mid.entry_id())
        if key != self._last:
            self.count += 1
            self._last = key


def _drain(consumer: pulsar.Consumer, count: int, on_message: Callable[[Any], None] | None = None) -> int:
    received = 0
    receive, ack = consumer.receive, consumer.acknowledge
    while received < count:
        try:
            msg = receive(10_000)
        except pulsar.Timeout:
            break
        if on_message is not None:
            on_message(msg)
        ack(msg)
        received += 1
    return received


def _subscribe(client: pulsar.Client, topic: str, name: str, earliest: bool = True) -> pulsar.Consumer:
    position = pulsar.InitialPosition.Earliest if earliest else pulsar.InitialPosition.Latest
    return client.subscribe(topic, name, consumer_type=pulsar.ConsumerType.Exclusive, initial_position=position,
                            receiver_queue_size=1000)


def consume(p: Params) -> dict[str, Any]:
    """Fill the topic (not timed), then receive + acknowledge it all from the earliest position."""
    client = _client(p)
    try:
        # the subscription exists before the fill, so the fill is its backlog: a topic without one keeps
        # only what retention asks for, and a broker may release its sealed segments at once
        _subscribe(client, p.topic, "bench").close()
        _produce(client, [p.topic], p)
        consumer = _subscribe(client, p.topic, "bench")
        started = time.perf_counter()
        received = _drain(consumer, p.count)
        seconds = time.perf_counter() - started
        over = _one_more(consumer)
    finally:
        client.close()
    if received < p.count or over:
        raise RuntimeError(f"consume: {received} of {p.count} messages received"
                           f"{', and more after that (delivered twice)' if over else ''}: benchmarks/README.md")
    return throughput(received, seconds)


def cost(p: Params) -> dict[str, Any]:
    """Produce ``count`` messages (batched unless ``batch`` is 1), then receive + acknowledge them all:
    the whole life of a message in the broker, whose CPU seconds the suite reads around this run.
    A broker that delivers messages twice is reported (``delivered_twice``), not refused: its
    cost per delivered message is what is measured."""
    client = _client(p)
    try:
        _subscribe(client, p.topic, "bench").close()
        produced, produce_s, failures = _produce(client, [p.topic], p, batching=p.batch > 1)
        consumer = _subscribe(client, p.topic, "bench")
        entries = EntryCounter()
        started = time.perf_counter()
        received = _drain(consumer, p.count, entries)
        consume_s = time.perf_counter() - started
        over = _one_more(consumer)
    finally:
        client.close()
    if received < p.count:
        raise RuntimeError(f"cost: {received} of {p.count} messages received")
    return throughput(received, produce_s + consume_s, failures=failures, delivered_twice=over, entries=entries.count,
                      produce_msg_per_s=round(produced / produce_s, 1), consume_msg_per_s=round(received / consume_s, 1))


def _paced_send(producer: pulsar.Producer, p: Params, make: Callable[[], bytes],
                recorder: LatencyRecorder | None) -> tuple[int, float]:
    producer.send(make())  # warm-up: the first send sets up the connection's state, not measured
    sent = 0
    acked = Acked(1 << 62)
    started = time.perf_counter()
    for due in paced_sync(p.rate, p.duration_s, p.count):
        for _ in range(due):
            if recorder is None:
                producer.send_async(make(), acked)
            else:
                t0 = time.perf_counter_ns()
                producer.send_async(make(), lambda res, mid, t0=t0: recorder.record((time.perf_counter_ns() - t0) // 1000))
        sent += due
    producer.flush()
    return sent, time.perf_counter() - started


def rate(p: Params) -> dict[str, Any]:
    """Publish latency (send_async to its receipt) at a fixed rate, batching delay 1 ms."""
    client = _client(p)
    recorder = LatencyRecorder()
    try:
        producer = _producer(client, p.topic, p)
        data = payload(p.size)
        sent, seconds = _paced_send(producer, p, lambda: data, recorder)
        time.sleep(0.2)
    finally:
        client.close()
    return latency(recorder, sent, seconds, target_rate=p.rate)


def e2e(p: Params) -> dict[str, Any]:
    """Publish-to-receive latency at a fixed rate (one process, perf_counter stamps)."""
    client = _client(p)
    recorder = LatencyRecorder()
    try:
        consumer = _subscribe(client, p.topic, "e2e", earliest=False)
        producer = _producer(client, p.topic, p)
        state = {"expected": p.count}
        done = threading.Event()

        def receive() -> None:
            _drain(consumer, state["expected"], lambda msg: recorder.record(age_micros(msg.data())))
            done.set()

        thread = threading.Thread(target=receive, daemon=True)
        thread.start()
        sent, seconds = _paced_send(producer, p, lambda: stamped(p.size), None)
        state["expected"] = sent
        done.wait(30)
    finally:
        client.close()
    return latency(recorder, sent, seconds, target_rate=p.rate)


def fanout(p: Params) -> dict[str, Any]:
    """One producer, ``subscriptions`` exclusive subscriptions reading concurrently."""
    client = _client(p)
    try:
        consumers = [_subscribe(client, p.topic, f"fan-{i}") for i in range(p.subscriptions)]
        counts = [0] * len(consumers)

        def drain(i: int) -> None:
            counts[i] = _drain(consumers[i], p.count)

        threads = [threading.Thread(target=drain, args=(i,), daemon=True) for i in range(len(consumers))]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        produced, produce_s, _ = _produce(client, [p.topic], p)
        for thread in threads:
            thread.join(WAIT_S)
        seconds = time.perf_counter() - started
        # (after the clock) a message beyond the count was delivered twice: the count included duplicates
        over = [_one_more(consumer) for consumer in consumers]
    finally:
        client.close()
    if min(counts) < p.count or any(over):
        raise RuntimeError(f"fan-out: per subscription {counts} of {p.count} messages received"
                           f"{', and more after that (delivered twice)' if any(over) else ''}: benchmarks/README.md")
    return throughput(sum(counts), seconds, produce_msg_per_s=round(produced / produce_s, 1))


def _one_more(consumer: pulsar.Consumer, wait_ms: int = 300) -> bool:
    """Whether another message arrives within ``wait_ms``."""
    try:
        consumer.receive(wait_ms)
    except pulsar.Timeout:
        return False
    return True


def topics(p: Params) -> dict[str, Any]:
    """Produce across ``topics`` topics (one producer each), until every receipt."""
    client = _client(p)
    try:
        names = [f"{p.topic}-{i}" for i in range(p.topics)]
        count, seconds, failures = _produce(client, names, p)
    finally:
        client.close()
    return throughput(count, seconds, failures=failures)


def sync(p: Params) -> dict[str, Any]:
    """One-at-a-time durable sends: send() waits for each receipt, no batching."""
    client = _client(p)
    recorder = LatencyRecorder()
    try:
        producer = _producer(client, p.topic, p, batching=False)
        data = payload(p.size)
        started = time.perf_counter()
        sent = 0
        while sent < p.count and time.perf_counter() - started < p.duration_s:
            t0 = time.perf_counter_ns()
            producer.send(data)
            recorder.record((time.perf_counter_ns() - t0) // 1000)
            sent += 1
        seconds = time.perf_counter() - started
    finally:
        client.close()
    return latency(recorder, sent, seconds)
