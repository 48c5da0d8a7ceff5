"""Pacing by schedule: message ``i`` is due at ``start + i / rate``, whatever happened before.

The sender asks how many messages are due now and sends them all, then sleeps until the next
one is due. A late wake-up (a timer firing a millisecond late, a pause of the loop) is made up at
once by sending the messages that fell due meanwhile, so the achieved rate is the target rate
over any window longer than a timer tick; sleeping a fixed time per message would drift below it.
Each message's *intended* send time is its scheduled time: latency measured from there counts the
waiting that a slow broker causes (no coordinated omission), as pulsar-perf does.
"""

from __future__ import annotations

import asyncio
import time

NANOS = 1_000_000_000


class RateSchedule:
    """The send schedule of one load generator: a target rate (0 = as fast as possible), a start
    time and an optional end (a message count, a time limit or both)."""

    def __init__(self, rate: float, start_ns: int, max_messages: int = 0, duration_s: float = 0) -> None:
        if rate < 0 or max_messages < 0 or duration_s < 0:
            raise ValueError("rate, message count and duration must not be negative")
        self.rate = float(rate)
        self.start_ns = start_ns
        self.max_messages = max_messages
        self.end_ns = start_ns + int(duration_s * NANOS) if duration_s > 0 else 0
        #: with a rate and a time limit: the messages scheduled before the end
        self._limit_by_time = self._messages_before_end() if self.rate and self.end_ns else 0

    def _messages_before_end(self) -> int:
        """How many scheduled messages fall strictly before the end time."""
        span = self.end_ns - self.start_ns
        count = -(-span * self.rate // NANOS)  # ceil(span * rate / 1e9): message i is at i / rate
        return int(count)

    @property
    def limited(self) -> bool:
        """Whether there is a target rate."""
        return self.rate > 0

    def total(self) -> int:
        """Messages this schedule will ever send (0 = no fixed number: runs until stopped)."""
        counts = [n for n in (self.max_messages, self._limit_by_time) if n > 0]
        return min(counts) if counts else 0

    def intended_ns(self, index: int) -> int:
        """When message ``index`` (from 0) is due, in ``time.perf_counter_ns`` time."""
        return self.start_ns + int(index * NANOS / self.rate)

    def due(self, now_ns: int) -> int:
        """How many messages are due by ``now_ns`` (counted from the first), capped by the total.

        Without a target rate every message is due at once.
        """
        total = self.total()
        if not self.rate:
            return total if total else 1 << 62
        elapsed = now_ns - self.start_ns
        count = 0 if elapsed < 0 else int(elapsed * self.rate // NANOS) + 1
        return min(count, total) if total else count

    def finished(self, sent: int, now_ns: int) -> bool:
        """Whether the sender is done after ``sent`` messages at ``now_ns``."""
        total = self.total()
        if total and sent >= total:
            return True
        # with a rate the time limit is already a message count: the last messages due before the
        # end are still sent when the loop wakes up a little after it
        return not self.rate and bool(self.end_ns) and now_ns >= self.end_ns

    def delay_s(self, sent: int, now_ns: int) -> float:
        """Seconds until message ``sent`` is due (0 when it is due already or there is no rate)."""
        if not self.rate:
            return 0.0
        return max(0.0, (self.intended_ns(sent) - now_ns) / NANOS)


async def wait_until_due(schedule: RateSchedule, sent: int) -> None:
    """Sleep until message ``sent`` is due (returns at once when it is, or without a rate)."""
    delay = schedule.delay_s(sent, time.perf_counter_ns())
    if delay > 0:
        await asyncio.sleep(delay)
