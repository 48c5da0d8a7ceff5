"""The send schedule: counts due at each moment, limits by count and time, catch-up after lags."""

from __future__ import annotations

import asyncio
import random
import time

import pytest

from magnetar.cli.perf.rate_limiter import NANOS, RateSchedule, wait_until_due

MS = 1_000_000


def test_messages_fall_due_one_per_period_from_the_start() -> None:
    schedule = RateSchedule(1000, start_ns=5 * NANOS)
    assert schedule.due(5 * NANOS - 1) == 0
    assert schedule.due(5 * NANOS) == 1  # message 0 is due at the start
    assert schedule.due(5 * NANOS + MS - 1) == 1
    assert schedule.due(5 * NANOS + MS) == 2
    assert schedule.due(6 * NANOS) == 1001
    assert schedule.intended_ns(250) == 5 * NANOS + 250 * MS


def test_a_time_limit_with_a_rate_is_a_message_count() -> None:
    schedule = RateSchedule(2000, start_ns=0, duration_s=3)
    assert schedule.total() == 6000
    # the last messages are still due when the loop wakes up after the end
    assert schedule.due(3 * NANOS + 50 * MS) == 6000
    assert not schedule.finished(5990, 3 * NANOS + 50 * MS)
    assert schedule.finished(6000, 3 * NANOS)


def test_the_smaller_of_count_and_time_wins() -> None:
    assert RateSchedule(1000, 0, max_messages=500, duration_s=2).total() == 500
    assert RateSchedule(1000, 0, max_messages=5000, duration_s=2).total() == 2000
    assert RateSchedule(1000, 0).total() == 0  # runs until stopped


def test_without_a_rate_everything_is_due_and_time_ends_the_run() -> None:
    schedule = RateSchedule(0, start_ns=0, duration_s=1)
    assert schedule.due(0) > 10**12
    assert schedule.delay_s(10**6, 0) == 0
    assert not schedule.finished(10**6, NANOS - 1)
    assert schedule.finished(10**6, NANOS)
    counted = RateSchedule(0, start_ns=0, max_messages=7)
    assert counted.due(0) == 7 and counted.finished(7, 0)


def test_delay_until_the_next_message() -> None:
    schedule = RateSchedule(100, start_ns=0)
    assert schedule.delay_s(1, 0) == pytest.approx(0.01)
    assert schedule.delay_s(1, 20 * MS) == 0


@pytest.mark.parametrize("bad", [dict(rate=-1), dict(max_messages=-1), dict(duration_s=-1)])
def test_negative_settings_are_refused(bad: dict) -> None:
    args = {"rate": 10, "start_ns": 0, "max_messages": 0, "duration_s": 0, **bad}
    with pytest.raises(ValueError):
        RateSchedule(**args)


def test_late_wake_ups_are_made_up_so_the_rate_holds() -> None:
    """A sender that wakes up 0-3 ms late every time still sends exactly rate x time messages."""
    rng = random.Random(7)
    rate, seconds = 10_000, 2
    schedule = RateSchedule(rate, start_ns=0, duration_s=seconds)
    now, sent, sends_per_second = 0, 0, {}
    while not schedule.finished(sent, now):
        due = schedule.due(now)
        sends_per_second[now // NANOS] = sends_per_second.get(now // NANOS, 0) + due - sent
        sent = max(sent, due)
        now += int(schedule.delay_s(sent, now) * NANOS) + rng.randrange(3 * MS)
    assert sent == rate * seconds
    assert all(abs(n - rate) <= rate * 0.005 for second, n in sends_per_second.items() if second < seconds)


def test_pacing_on_the_event_loop_reaches_the_target_rate() -> None:
    async def pace() -> tuple[int, float]:
        schedule = RateSchedule(2000, time.perf_counter_ns(), duration_s=0.5)
        sent = 0
        while not schedule.finished(sent, time.perf_counter_ns()):
            sent = max(sent, schedule.due(time.perf_counter_ns()))
            await wait_until_due(schedule, sent)
        return sent, (time.perf_counter_ns() - schedule.start_ns) / NANOS

    sent, elapsed = asyncio.run(pace())
    assert sent == 1000
    assert 0.49 <= elapsed < 1.5
