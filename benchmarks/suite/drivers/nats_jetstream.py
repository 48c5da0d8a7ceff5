"""The scenarios on NATS JetStream (file storage) with nats-py: publishes with a bounded number of acks
outstanding, pull consumers fetching batches and acknowledging each batch (AckPolicy.ALL)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import nats
from benchmarks.suite.drivers.common import (
    Params,
    age_micros,
    latency,
    paced,
    payload,
    stamped,
    throughput,
)
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StorageType

from magnetar.cli.perf.recorder import LatencyRecorder

#: publish_async's bound on acks outstanding (nats-py's default is 4000)
PENDING = 4000


async def _connect(p: Params) -> Any:
    nc = await nats.connect(p.address, pending_size=64 * 1024 * 1024)
    return nc, nc.jetstream(publish_async_max_pending=PENDING)


def _stream_name(topic: str) -> str:
    return topic.replace(".", "_").replace("-", "_")


async def _add_stream(js: Any, topic: str) -> None:
    await js.add_stream(name=_stream_name(topic), subjects=[topic], storage=StorageType.FILE)


class AckCounter:
    """Counts JetStream publish acks arriving on one reply subject; ``below(n)`` waits until at most
    n publishes are unacknowledged."""

    def __init__(self) -> None:
        self.acked = 0
        self.errors = 0
        self.sent = 0
        self.limit = 0
        self.event = asyncio.Event()

    async def on_ack(self, msg: Any) -> None:
        """The reply subscription's callback."""
        self.acked += 1
        if msg.data.startswith(b'{"error"') or b'"error"' in msg.data[:20]:
            self.errors += 1
        if self.sent - self.acked <= self.limit:
            self.event.set()

    async def below(self, limit: int) -> None:
        """Wait until at most ``limit`` publishes await their ack."""
        self.limit = limit
        while self.sent - self.acked > limit:
            self.event.clear()
            await asyncio.wait_for(self.event.wait(), 600)


async def _produce(js: Any, subjects: list[str], count: int, size: int) -> float:
    """Core publishes with a reply subject per message and one wildcard subscription counting the acks
    (nats-py's publish_async makes a future per message, which costs four times as much)."""
    nc = js._nc
    data = payload(size)
    acks = AckCounter()
    inbox = nc.new_inbox()
    sub = await nc.subscribe(f"{inbox}.*", cb=acks.on_ack, pending_msgs_limit=PENDING * 4)
    started = time.perf_counter()
    publish = nc.publish
    for i in range(count):
        await publish(subjects[i % len(subjects)], data, reply=f"{inbox}.{i}")
        acks.sent += 1
        if acks.sent - acks.acked > PENDING:
            await acks.below(PENDING // 2)
    await acks.below(0)
    seconds = time.perf_counter() - started
    await sub.unsubscribe()
    if acks.errors:
        raise RuntimeError(f"{acks.errors} publishes were refused")
    return seconds


async def _pull(js: Any, topic: str, durable: str, count: int, batch: int, deliver: DeliverPolicy,
                on_data: Any = None) -> int:
    # AckPolicy.ALL: one ack for the last message of each batch covers the batch (as the Pulsar clients
    # group acks into one command)
    config = ConsumerConfig(ack_policy=AckPolicy.ALL, deliver_policy=deliver, max_ack_pending=-1)
    sub = await js.pull_subscribe(topic, durable, stream=_stream_name(topic), config=config)
    received = 0
    idle_until = time.monotonic() + 10
    while received < count and time.monotonic() < idle_until:
        try:
            msgs = await sub.fetch(min(batch, count - received), timeout=0.5)
        except nats.errors.TimeoutError:
            continue
        if on_data is not None:
            for msg in msgs:
                on_data(msg.data)
        if msgs:
            await msgs[-1].ack()
        received += len(msgs)
        idle_until = time.monotonic() + 10
    return received


async def produce(p: Params) -> dict[str, Any]:
    """Max produce rate: publish_async, until every ack."""
    nc, js = await _connect(p)
    try:
        await _add_stream(js, p.topic)
        seconds = await _produce(js, [p.topic], p.count, p.size)
    finally:
        await nc.close()
    return throughput(p.count, seconds)


async def consume(p: Params) -> dict[str, Any]:
    """Fill (not timed), then fetch + ack every message from the start."""
    nc, js = await _connect(p)
    try:
        await _add_stream(js, p.topic)
        await _produce(js, [p.topic], p.count, p.size)
        started = time.perf_counter()
        received = await _pull(js, p.topic, "bench", p.count, p.batch, DeliverPolicy.ALL)
        seconds = time.perf_counter() - started
    finally:
        await nc.close()
    return throughput(received, seconds)


async def _paced_publish(js: Any, p: Params, make: Any, recorder: LatencyRecorder | None) -> tuple[int, float]:
    """Core publishes with a reply subject per message (as :func:`_produce`); each ack's latency is
    taken from its send time, found by the reply subject's index."""
    nc = js._nc
    await js.publish(p.topic, make())  # warm-up, not measured
    sent_at: dict[str, int] = {}
    acks = AckCounter()
    inbox = nc.new_inbox()

    async def on_ack(msg: Any) -> None:
        t0 = sent_at.pop(msg.subject, None)
        if recorder is not None and t0 is not None:
            recorder.record((time.perf_counter_ns() - t0) // 1000)
        await acks.on_ack(msg)

    sub = await nc.subscribe(f"{inbox}.*", cb=on_ack, pending_msgs_limit=1 << 20)
    started = time.perf_counter()
    async for due in paced(p.rate, p.duration_s, p.count):
        for _ in range(due):
            reply = f"{inbox}.{acks.sent}"
            sent_at[reply] = time.perf_counter_ns()
            await nc.publish(p.topic, make(), reply=reply)
            acks.sent += 1
    await nc.flush()
    await acks.below(0)
    seconds = time.perf_counter() - started
    await sub.unsubscribe()
    return acks.sent, seconds


async def rate(p: Params) -> dict[str, Any]:
    """Publish latency (publish_async to its ack) at a fixed rate."""
    recorder = LatencyRecorder()
    nc, js = await _connect(p)
    try:
        await _add_stream(js, p.topic)
        data = payload(p.size)
        sent, seconds = await _paced_publish(js, p, lambda: data, recorder)
    finally:
        await nc.close()
    return latency(recorder, sent, seconds, target_rate=p.rate)


async def e2e(p: Params) -> dict[str, Any]:
    """Publish-to-receive latency at a fixed rate, a pull consumer fetching concurrently."""
    recorder = LatencyRecorder()
    nc, js = await _connect(p)
    try:
        await _add_stream(js, p.topic)
        received = {"n": 0}

        async def on_message(msg: Any) -> None:
            recorder.record(age_micros(msg.data))
            received["n"] += 1

        # a push consumer (acked by nats-py after the callback): a pull fetch(batch) waits for a full
        # batch or its timeout, which would be measured instead of the delivery
        sub = await js.subscribe(p.topic, cb=on_message, deliver_policy=DeliverPolicy.NEW,
                                 pending_msgs_limit=1 << 20)
        sent, seconds = await _paced_publish(js, p, lambda: stamped(p.size), None)
        deadline = time.monotonic() + 5
        while received["n"] < sent and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await sub.unsubscribe()
    finally:
        await nc.close()
    return latency(recorder, sent, seconds, target_rate=p.rate)


async def fanout(p: Params) -> dict[str, Any]:
    """One producer, ``subscriptions`` durable pull consumers reading concurrently."""
    nc, js = await _connect(p)
    try:
        await _add_stream(js, p.topic)
        started = time.perf_counter()
        tasks = [asyncio.create_task(_pull(js, p.topic, f"fan{i}", p.count, p.batch, DeliverPolicy.ALL))
                 for i in range(p.subscriptions)]
        produce_s = await _produce(js, [p.topic], p.count, p.size)
        counts = await asyncio.gather(*tasks)
        seconds = time.perf_counter() - started
    finally:
        await nc.close()
    return throughput(sum(counts), seconds, produce_msg_per_s=round(p.count / produce_s, 1))


async def topics(p: Params) -> dict[str, Any]:
    """Produce across ``topics`` streams."""
    nc, js = await _connect(p)
    try:
        names = [f"{p.topic}-{i}" for i in range(p.topics)]
        for name in names:
            await _add_stream(js, name)
        seconds = await _produce(js, names, p.count, p.size)
    finally:
        await nc.close()
    return throughput(p.count, seconds)


async def sync(p: Params) -> dict[str, Any]:
    """One publish at a time, each awaiting its ack."""
    recorder = LatencyRecorder()
    nc, js = await _connect(p)
    try:
        await _add_stream(js, p.topic)
        data = payload(p.size)
        started = time.perf_counter()
        sent = 0
        while sent < p.count and time.perf_counter() - started < p.duration_s:
            t0 = time.perf_counter_ns()
            await js.publish(p.topic, data)
            recorder.record((time.perf_counter_ns() - t0) // 1000)
            sent += 1
        seconds = time.perf_counter() - started
    finally:
        await nc.close()
    return latency(recorder, sent, seconds)
