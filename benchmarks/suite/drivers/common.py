"""What every driver shares: the parameters of one measurement, pacing at a fixed rate, latency
histograms (magnetar perf's HDR recorder) and the shape of a result."""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

from magnetar.cli.perf.recorder import LatencyRecorder

#: a rate loop sends what is due every tick (the analogue of a 1 ms batching delay)
TICK_S = 0.001
STAMP = struct.Struct("<q")


@dataclass(frozen=True)
class Params:
    """One measurement: where, what, how much. ``count`` bounds every loop; ``duration_s`` bounds the
    fixed-rate and one-at-a-time ones too."""

    address: str
    topic: str
    size: int = 100
    count: int = 10_000
    rate: float = 0
    duration_s: float = 5.0
    subscriptions: int = 1
    topics: int = 1
    batch: int = 1000
    batch_delay_ms: float = 10.0

    @classmethod
    def of(cls, values: dict[str, Any]) -> Params:
        """From the JSON the runner passes."""
        return cls(**values)


def payload(size: int) -> bytes:
    """``size`` bytes of letters."""
    return (b"abcdefghijklmnopqrstuvwxyz" * (size // 26 + 1))[:size]


def stamped(size: int) -> bytes:
    """A payload that starts with the current perf_counter_ns (for end-to-end latency in one process)."""
    return STAMP.pack(time.perf_counter_ns()) + payload(max(0, size - STAMP.size))


def age_micros(data: bytes | memoryview) -> int:
    """Microseconds since a :func:`stamped` payload was made."""
    return (time.perf_counter_ns() - STAMP.unpack_from(data)[0]) // 1000


def throughput(messages: int, seconds: float, **extra: Any) -> dict[str, Any]:
    """A throughput result."""
    return {"messages": messages, "seconds": round(seconds, 4),
            "msg_per_s": round(messages / seconds, 1) if seconds > 0 else 0.0, **extra}


def latency(recorder: LatencyRecorder, messages: int, seconds: float, **extra: Any) -> dict[str, Any]:
    """A latency result: percentiles (ms) and the rate achieved."""
    return {**throughput(messages, seconds), "latency_ms": recorder.total().as_dict(), **extra}


def due_counts(rate: float, duration_s: float, limit: int) -> Iterator[tuple[int, float]]:
    """(messages due now, time to sleep first) for a run at ``rate`` msg/s of at most ``duration_s``
    and ``limit`` messages; the caller sleeps, then sends the count."""
    started = time.perf_counter()
    sent = 0
    while sent < limit:
        now = time.perf_counter()
        if now - started >= duration_s:
            return
        due = min(int((now - started) * rate) + 1, limit) - sent
        if due <= 0:
            yield 0, TICK_S
            continue
        sent += due
        yield due, 0.0


async def paced(rate: float, duration_s: float, limit: int) -> AsyncIterator[int]:
    """Asyncio form of :func:`due_counts`: yields how many messages to send now."""
    for due, pause in due_counts(rate, duration_s, limit):
        if pause:
            await asyncio.sleep(pause)
        else:
            yield due


def paced_sync(rate: float, duration_s: float, limit: int) -> Iterator[int]:
    """Blocking form of :func:`due_counts`."""
    for due, pause in due_counts(rate, duration_s, limit):
        if pause:
            time.sleep(pause)
        else:
            yield due


def run_async(coro: Any) -> Any:
    """Run a driver coroutine on uvloop when present."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover
        return asyncio.run(coro)
    return uvloop.run(coro)
