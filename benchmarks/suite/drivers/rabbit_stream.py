"""The scenarios on a RabbitMQ stream with rstream (the stream protocol's Python client): batches with
publisher confirms; consumers read from an offset (streams have no per-message ack: a consumer
stores its offset, done here once at the end)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from benchmarks.suite.drivers.common import (
    Params,
    age_micros,
    latency,
    paced,
    payload,
    stamped,
    throughput,
)
from rstream import Consumer, ConsumerOffsetSpecification, OffsetType, Producer

from magnetar.cli.perf.recorder import LatencyRecorder

#: rstream's publisher confirms are bounded by this many batches in flight
IN_FLIGHT_BATCHES = 8


def _endpoint(p: Params) -> dict[str, Any]:
    host, port = p.address.rsplit(":", 1)
    return {"host": host, "port": int(port), "username": "guest", "password": "guest"}


class Confirms:
    """Counts publisher confirms; ``reached(n)`` waits until n arrived."""

    def __init__(self) -> None:
        self.count = 0
        self.event = asyncio.Event()
        self.target = 0

    def __call__(self, _status: Any) -> None:
        """The confirm callback."""
        self.count += 1
        if self.count >= self.target:
            self.event.set()

    async def reached(self, target: int) -> None:
        """Wait until ``target`` confirms arrived."""
        self.target = target
        if self.count < target:
            self.event.clear()
            await asyncio.wait_for(self.event.wait(), 600)


async def _produce(producer: Producer, streams: list[str], count: int, size: int, batch: int) -> float:
    data = payload(size)
    confirms = Confirms()
    started = time.perf_counter()
    sent = 0
    while sent < count:
        n = min(batch, count - sent)
        await producer.send_batch(streams[(sent // batch) % len(streams)], [data] * n, on_publish_confirm=confirms)
        sent += n
        if sent - confirms.count > IN_FLIGHT_BATCHES * batch:
            await confirms.reached(sent - IN_FLIGHT_BATCHES * batch)
    await confirms.reached(count)
    return time.perf_counter() - started


async def _read(p: Params, stream: str, count: int, first: bool, on_data: Any = None,
                ready: asyncio.Event | None = None) -> int:
    state = {"n": 0}
    done = asyncio.Event()

    async def on_message(msg: Any, _ctx: Any) -> None:
        if on_data is not None:
            on_data(bytes(msg))
        state["n"] += 1
        if state["n"] >= count:
            done.set()

    offset = ConsumerOffsetSpecification(OffsetType.FIRST if first else OffsetType.NEXT, None)
    async with Consumer(**_endpoint(p)) as consumer:
        await consumer.subscribe(stream, on_message, offset_specification=offset, subscriber_name="bench")
        if ready is not None:
            ready.set()
        try:
            await asyncio.wait_for(done.wait(), 600)
        except TimeoutError:
            pass
    return state["n"]


async def produce(p: Params) -> dict[str, Any]:
    """Max produce rate: send_batch of ``batch`` messages, a few batches unconfirmed at most."""
    async with Producer(**_endpoint(p)) as producer:
        await producer.create_stream(p.topic, exists_ok=True)
        seconds = await _produce(producer, [p.topic], p.count, p.size, p.batch)
    return throughput(p.count, seconds)


async def consume(p: Params) -> dict[str, Any]:
    """Fill (not timed), then read it all from the first offset."""
    async with Producer(**_endpoint(p)) as producer:
        await producer.create_stream(p.topic, exists_ok=True)
        await _produce(producer, [p.topic], p.count, p.size, p.batch)
    started = time.perf_counter()
    received = await _read(p, p.topic, p.count, first=True)
    return throughput(received, time.perf_counter() - started)


async def _paced_send(producer: Producer, p: Params, make: Any, recorder: LatencyRecorder | None) -> tuple[int, float]:
    await producer.send_wait(p.topic, make())  # warm-up (creates the publisher), not measured
    sent = 0
    confirms = Confirms()
    started = time.perf_counter()
    async for due in paced(p.rate, p.duration_s, p.count):
        t0 = time.perf_counter_ns()

        def confirmed(status: Any, t0: int = t0) -> None:
            confirms(status)
            if recorder is not None:
                recorder.record((time.perf_counter_ns() - t0) // 1000)

        await producer.send_batch(p.topic, [make() for _ in range(due)], on_publish_confirm=confirmed)
        sent += due
    await confirms.reached(sent)
    return sent, time.perf_counter() - started


async def rate(p: Params) -> dict[str, Any]:
    """Publish latency (to the confirm) at a fixed rate: what is due each 1 ms tick goes as one batch."""
    recorder = LatencyRecorder()
    async with Producer(**_endpoint(p)) as producer:
        await producer.create_stream(p.topic, exists_ok=True)
        data = payload(p.size)
        sent, seconds = await _paced_send(producer, p, lambda: data, recorder)
    return latency(recorder, sent, seconds, target_rate=p.rate)


async def e2e(p: Params) -> dict[str, Any]:
    """Publish-to-receive latency at a fixed rate, a consumer reading from the next offset."""
    recorder = LatencyRecorder()
    async with Producer(**_endpoint(p)) as producer:
        await producer.create_stream(p.topic, exists_ok=True)
        ready = asyncio.Event()
        task = asyncio.create_task(_read(p, p.topic, p.count, False, lambda d: recorder.record(age_micros(d)), ready))
        await asyncio.wait_for(ready.wait(), 30)
        sent, seconds = await _paced_send(producer, p, lambda: stamped(p.size), None)
        await asyncio.wait({task}, timeout=5)
        task.cancel()
    return latency(recorder, sent, seconds, target_rate=p.rate)


async def fanout(p: Params) -> dict[str, Any]:
    """One producer, ``subscriptions`` consumers reading the stream from its start concurrently."""
    async with Producer(**_endpoint(p)) as producer:
        await producer.create_stream(p.topic, exists_ok=True)
        started = time.perf_counter()
        tasks = [asyncio.create_task(_read(p, p.topic, p.count, True)) for _ in range(p.subscriptions)]
        produce_s = await _produce(producer, [p.topic], p.count, p.size, p.batch)
        counts = await asyncio.gather(*tasks)
        seconds = time.perf_counter() - started
    return throughput(sum(counts), seconds, produce_msg_per_s=round(p.count / produce_s, 1))


async def topics(p: Params) -> dict[str, Any]:
    """Produce across ``topics`` streams."""
    names = [f"{p.topic}-{i}" for i in range(p.topics)]
    async with Producer(**_endpoint(p)) as producer:
        for name in names:
            await producer.create_stream(name, exists_ok=True)
            await producer.send_wait(name, b"warm-up")  # declares this stream's publisher, not measured
        seconds = await _produce(producer, names, p.count, p.size, min(p.batch, max(1, p.count // p.topics)))
    return throughput(p.count, seconds)


async def sync(p: Params) -> dict[str, Any]:
    """One message at a time, each awaiting its confirm (send_wait)."""
    recorder = LatencyRecorder()
    data = payload(p.size)
    async with Producer(**_endpoint(p)) as producer:
        await producer.create_stream(p.topic, exists_ok=True)
        started = time.perf_counter()
        sent = 0
        while sent < p.count and time.perf_counter() - started < p.duration_s:
            t0 = time.perf_counter_ns()
            await producer.send_wait(p.topic, data)
            recorder.record((time.perf_counter_ns() - t0) // 1000)
            sent += 1
        seconds = time.perf_counter() - started
    return latency(recorder, sent, seconds)
