"""The scenarios on Redis Streams: XADDs pipelined on a raw connection whose replies hiredis parses,
and redis-py's asyncio client (hiredis parser) for consumer groups: XREADGROUP + XACK per batch."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import hiredis
import redis.asyncio as redis
from benchmarks.suite.drivers.common import (
    Params,
    age_micros,
    latency,
    paced,
    payload,
    stamped,
    throughput,
)

from magnetar.cli.perf.recorder import LatencyRecorder

FIELD = b"d"


def _connect(p: Params) -> redis.Redis:
    host, port = p.address.rsplit(":", 1)
    return redis.Redis(host=host, port=int(port))


class Pipelined:
    """One raw connection that writes XADDs without waiting and parses the replies with hiredis's C
    reader: redis-py's Python-level work per reply (about 20-50 µs) would be what is measured, not Redis."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.parser = hiredis.Reader()

    @classmethod
    async def open(cls, p: Params) -> Pipelined:
        """Connect to the server of ``p``."""
        host, port = p.address.rsplit(":", 1)
        return cls(*await asyncio.open_connection(host, int(port)))

    def xadd(self, key: str, values: list[bytes]) -> None:
        """Queue one XADD per value (written at the next await)."""
        name = key.encode()
        head = b"*5\r\n$4\r\nXADD\r\n$%d\r\n%s\r\n$1\r\n*\r\n$1\r\nd\r\n" % (len(name), name)
        self.writer.write(b"".join(b"%s$%d\r\n%s\r\n" % (head, len(v), v) for v in values))

    def command(self, *args: str | bytes) -> None:
        """Queue one command."""
        parts = [a.encode() if isinstance(a, str) else a for a in args]
        self.writer.write(b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in parts))

    async def reply(self) -> Any:
        """The next reply, parsed by hiredis; an error reply raises."""
        while True:
            reply = self.parser.gets()
            if reply is False:
                self.parser.feed(await self.reader.read(1 << 16))
                continue
            if isinstance(reply, hiredis.ReplyError):
                raise reply
            return reply

    async def replies(self, n: int) -> None:
        """Read ``n`` replies; an error reply raises."""
        while n:
            reply = self.parser.gets()
            if reply is False:
                self.parser.feed(await self.reader.read(1 << 16))
                continue
            if isinstance(reply, hiredis.ReplyError):
                raise reply
            n -= 1

    async def close(self) -> None:
        """Close the connection."""
        self.writer.close()
        await self.writer.wait_closed()


async def _produce(p: Params, keys: list[str], count: int) -> float:
    """XADDs ``batch`` at a time in one write, the next write after the replies of the previous one."""
    data = payload(p.size)
    conn = await Pipelined.open(p)
    try:
        started = time.perf_counter()
        sent = 0
        while sent < count:
            n = min(p.batch, count - sent)
            if len(keys) == 1:
                conn.xadd(keys[0], [data] * n)
            else:
                for i in range(n):
                    conn.xadd(keys[(sent + i) % len(keys)], [data])
            await conn.writer.drain()
            await conn.replies(n)
            sent += n
        return time.perf_counter() - started
    finally:
        await conn.close()


async def _consume(p: Params, key: str, group: str, count: int, on_data: Any = None) -> int:
    """XREADGROUP ``batch`` entries at a time; the XACK of a batch goes in one write with the next read."""
    conn = await Pipelined.open(p)
    received = 0
    idle_until = time.monotonic() + 10
    try:
        conn.command("XREADGROUP", "GROUP", group, "c", "COUNT", str(p.batch), "BLOCK", "200", "STREAMS", key, ">")
        while received < count and time.monotonic() < idle_until:
            reply = await conn.reply()
            if not reply:
                conn.command("XREADGROUP", "GROUP", group, "c", "COUNT", str(p.batch), "BLOCK", "200", "STREAMS",
                             key, ">")
                continue
            entries = reply[0][1]
            if on_data is not None:
                for _id, fields in entries:
                    on_data(fields[1])
            received += len(entries)
            conn.command("XACK", key, group, *[entry_id for entry_id, _ in entries])
            if received < count:
                conn.command("XREADGROUP", "GROUP", group, "c", "COUNT", str(p.batch), "BLOCK", "200", "STREAMS",
                             key, ">")
            await conn.reply()  # the XACK's count
            idle_until = time.monotonic() + 10
    finally:
        await conn.close()
    return received


async def produce(p: Params) -> dict[str, Any]:
    """Max produce rate: pipelines of ``batch`` XADDs, one after the other."""
    seconds = await _produce(p, [p.topic], p.count)
    return throughput(p.count, seconds)


async def consume(p: Params) -> dict[str, Any]:
    """Fill (not timed), then XREADGROUP from the start + XACK each batch."""
    async with _connect(p) as r:
        await _produce(p, [p.topic], p.count)
        await r.xgroup_create(p.topic, "bench", id="0")
        started = time.perf_counter()
        received = await _consume(p, p.topic, "bench", p.count)
        seconds = time.perf_counter() - started
    return throughput(received, seconds)


async def _paced_xadd(p: Params, make: Any, recorder: LatencyRecorder | None) -> tuple[int, float]:
    """What is due each tick goes out as one write; a reader task takes the replies in order (RESP
    answers a connection's commands in order), so writes never wait for replies."""
    conn = await Pipelined.open(p)
    conn.xadd(p.topic, [make()])
    await conn.replies(1)  # warm-up, not measured
    batches: asyncio.Queue[tuple[int, int]] = asyncio.Queue()

    async def read_replies() -> None:
        while True:
            n, t0 = await batches.get()
            if n == 0:
                return
            await conn.replies(n)
            if recorder is not None:
                micros = (time.perf_counter_ns() - t0) // 1000
                for _ in range(n):
                    recorder.record(micros)

    reader = asyncio.create_task(read_replies())
    sent = 0
    started = time.perf_counter()
    try:
        async for due in paced(p.rate, p.duration_s, p.count):
            t0 = time.perf_counter_ns()
            conn.xadd(p.topic, [make() for _ in range(due)])
            batches.put_nowait((due, t0))
            sent += due
        batches.put_nowait((0, 0))
        await reader
    finally:
        reader.cancel()
        await conn.close()
    return sent, time.perf_counter() - started


async def rate(p: Params) -> dict[str, Any]:
    """Publish latency at a fixed rate: what is due each 1 ms tick goes as one pipelined write."""
    recorder = LatencyRecorder()
    data = payload(p.size)
    sent, seconds = await _paced_xadd(p, lambda: data, recorder)
    return latency(recorder, sent, seconds, target_rate=p.rate)


async def e2e(p: Params) -> dict[str, Any]:
    """Publish-to-receive latency at a fixed rate, a consumer group reading with BLOCK."""
    recorder = LatencyRecorder()
    async with _connect(p) as reader:
        await reader.xgroup_create(p.topic, "e2e", id="$", mkstream=True)
        task = asyncio.create_task(
            _consume(p, p.topic, "e2e", p.count, lambda data: recorder.record(age_micros(data))))
        sent, seconds = await _paced_xadd(p, lambda: stamped(p.size), None)
        await asyncio.wait({task}, timeout=5)
        task.cancel()
    return latency(recorder, sent, seconds, target_rate=p.rate)


async def fanout(p: Params) -> dict[str, Any]:
    """One producer, ``subscriptions`` consumer groups (each its own connection) reading concurrently."""
    async with _connect(p) as r:
        for i in range(p.subscriptions):
            await r.xgroup_create(p.topic, f"fan-{i}", id="$", mkstream=True)
        started = time.perf_counter()
        tasks = [asyncio.create_task(_consume(p, p.topic, f"fan-{i}", p.count)) for i in range(p.subscriptions)]
        produce_s = await _produce(p, [p.topic], p.count)
        counts = await asyncio.gather(*tasks)
        seconds = time.perf_counter() - started
    return throughput(sum(counts), seconds, produce_msg_per_s=round(p.count / produce_s, 1))


async def topics(p: Params) -> dict[str, Any]:
    """Produce across ``topics`` streams (pipelines spread over all of them)."""
    seconds = await _produce(p, [f"{p.topic}-{i}" for i in range(p.topics)], p.count)
    return throughput(p.count, seconds)


async def sync(p: Params) -> dict[str, Any]:
    """One XADD at a time, each awaited."""
    recorder = LatencyRecorder()
    data = payload(p.size)
    async with _connect(p) as r:
        started = time.perf_counter()
        sent = 0
        while sent < p.count and time.perf_counter() - started < p.duration_s:
            t0 = time.perf_counter_ns()
            await r.xadd(p.topic, {FIELD: data})
            recorder.record((time.perf_counter_ns() - t0) // 1000)
            sent += 1
        seconds = time.perf_counter() - started
    return latency(recorder, sent, seconds)
