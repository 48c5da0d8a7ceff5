"""A dispatcher hands out one read batch per turn of the event loop (issue 22).

A subscription catching up on a backlog must not hold the loop for thousands of entries: one run
sends at most ``dispatch_batch_entries`` entries and ``dispatch_max_read_bytes`` bytes, then
schedules itself behind whatever else is ready, so another client's publish waits for one batch at
most. These tests run the dispatch loop over an in-memory topic (test_read_sizing's), by hand and on
a real event loop.
"""

from __future__ import annotations

import asyncio

import pytest

from magnetar.broker.subscriptions.consumer import Consumer
from magnetar.broker.subscriptions.dispatchers import base
from magnetar.broker.subscriptions.dispatchers.base import Dispatcher
from magnetar.broker.subscriptions.subscription import Subscription
from magnetar.protocol.enums import SubType
from magnetar.protocol.framing import encode_entry
from magnetar.protocol.schema import MessageMetadata
from magnetar.storage import Entry

from .test_read_sizing import CountingTopic, subscribe


def runs_until_idle(sub: Subscription) -> list[list[int]]:
    """Run the dispatcher by hand, one run per turn, while it schedules itself; the entry ids each
    run sent (to every consumer)."""
    dispatcher = sub.dispatcher
    assert dispatcher is not None
    sent: list[list[int]] = []
    before = 0
    for _ in range(10_000):
        if not dispatcher._scheduled:
            return sent
        dispatcher._scheduled = False
        dispatcher._dispatch()
        ids = [e for c in dispatcher.consumers for e in c.connection.sent]
        sent.append(ids[before:])
        before = len(ids)
    raise AssertionError("the dispatcher keeps rescheduling itself")


def loop_runs_until_idle(sub: Subscription) -> list[list[int]]:
    """As :func:`runs_until_idle`, each run started as the loop starts it (``_run``: its time bounded)."""
    dispatcher = sub.dispatcher
    assert dispatcher is not None
    sent: list[list[int]] = []
    before = 0
    for _ in range(10_000):
        if not dispatcher._scheduled:
            return sent
        dispatcher._run()
        ids = [e for c in dispatcher.consumers for e in c.connection.sent]
        sent.append(ids[before:])
        before = len(ids)
    raise AssertionError("the dispatcher keeps rescheduling itself")


@pytest.fixture
def ticking_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn of 1 s on a clock that moves 0.25 s each time it is read: the run reads it once as it
    starts and once after each entry sent, so a run's fourth entry ends it."""
    now = [0.0]

    def clock() -> float:
        now[0] += 0.25
        return now[0]

    monkeypatch.setattr(base, "TURN_SECONDS", 1.0)
    monkeypatch.setattr(Dispatcher, "clock", staticmethod(clock))


@pytest.fixture
def manual_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    def schedule(self: Dispatcher) -> None:
        self._scheduled = True

    monkeypatch.setattr(Dispatcher, "schedule", schedule)


@pytest.mark.usefixtures("manual_schedule")
@pytest.mark.parametrize("sub_type", [SubType.Exclusive, SubType.Shared, SubType.Key_Shared])
def test_a_catch_up_goes_out_one_batch_per_turn(sub_type: SubType) -> None:
    topic = CountingTopic([10] * 1050)
    topic.config.dispatch_batch_entries = 100
    sub, (consumer,) = subscribe(topic, sub_type)
    sub.flow(consumer, 1050 * 10)
    runs = runs_until_idle(sub)
    assert consumer.connection.sent == list(range(1050))  # all of them, once each, in order
    sizes = [len(r) for r in runs]
    assert max(sizes) == 100
    assert sum(sizes) == 1050
    assert len([s for s in sizes if s]) == 11  # 10 full turns and one of 50


@pytest.mark.usefixtures("manual_schedule", "ticking_clock")
@pytest.mark.parametrize("sub_type", [SubType.Exclusive, SubType.Shared, SubType.Key_Shared])
def test_a_turn_stops_at_its_time(sub_type: SubType) -> None:
    """A run the loop makes yields once it has held the loop for TURN_SECONDS, after the entry that
    crossed it, however many entries its batch still has; what it read and did not send goes next."""
    topic = CountingTopic([10] * 50)
    topic.config.dispatch_batch_entries = 100
    sub, (consumer,) = subscribe(topic, sub_type)
    sub.flow(consumer, 50 * 10)
    runs = loop_runs_until_idle(sub)
    assert consumer.connection.sent == list(range(50))  # all of them, once each, in order
    assert [len(r) for r in runs if r] == [4] * 12 + [2]
    assert sub.dispatcher is not None and sub.dispatcher._turn_deadline == float("inf")


@pytest.mark.usefixtures("manual_schedule", "ticking_clock")
@pytest.mark.parametrize("sub_type", [SubType.Exclusive, SubType.Shared, SubType.Key_Shared])
def test_a_turn_yields_early_to_a_commit_outcome_waiting_for_the_loop(
    monkeypatch: pytest.MonkeyPatch, sub_type: SubType
) -> None:
    """While a commit round's outcome (receipts) handed to the loop has not run, a run ends once it has
    held the loop URGENT_MIN_RUN_SECONDS, after the entry that crossed it; once the loop ran the outcome,
    runs last their TURN_SECONDS again. Every entry goes out once, in order."""
    monkeypatch.setattr(base, "URGENT_MIN_RUN_SECONDS", 0.5)
    topic = CountingTopic([10] * 50)
    topic.config.dispatch_batch_entries = 100
    sub, (consumer,) = subscribe(topic, sub_type)
    sub.flow(consumer, 50 * 10)
    dispatcher = sub.dispatcher
    assert dispatcher is not None
    topic.loop_urgency.handed += 1  # a commit thread handed an outcome over
    dispatcher._run()
    dispatcher._run()
    assert consumer.connection.sent == [0, 1, 2, 3]  # two runs of two entries (0.5 s each)
    topic.loop_urgency.ran += 1  # the loop ran it
    runs = loop_runs_until_idle(sub)
    assert consumer.connection.sent == list(range(50))
    assert [len(r) for r in runs if r] == [4 + 4] + [4] * 10 + [2]  # the first also counts the four above
    assert dispatcher._urgency.waiting() is False and dispatcher._urgent_after == float("inf")


@pytest.mark.usefixtures("manual_schedule")
def test_a_run_made_by_hand_ignores_the_urgency() -> None:
    """Runs called directly (not by the loop) are not bounded, by time or by an outcome waiting."""
    topic = CountingTopic([1] * 30)
    topic.config.dispatch_batch_entries = 100
    sub, (consumer,) = subscribe(topic, SubType.Exclusive)
    sub.flow(consumer, 30)
    topic.loop_urgency.handed += 1
    assert [len(r) for r in runs_until_idle(sub) if r] == [30]


@pytest.mark.usefixtures("manual_schedule", "ticking_clock")
def test_redeliveries_stop_at_the_time_too() -> None:
    topic = CountingTopic([1] * 30)
    sub, (first,) = subscribe(topic, SubType.Key_Shared)
    sub.flow(first, 30)
    loop_runs_until_idle(sub)
    assert first.connection.sent == list(range(30))
    second = Consumer(type(first.connection)(), 9, "c9", sub, SubType.Key_Shared)
    sub.add_consumer(second)
    sub.remove_consumer(first)  # its 30 unacknowledged entries are replayed to the other consumer
    sub.flow(second, 1000)
    runs = loop_runs_until_idle(sub)
    assert second.connection.sent == list(range(30))
    assert [len(r) for r in runs if r] == [4] * 7 + [2]


@pytest.mark.usefixtures("manual_schedule")
def test_a_turn_stops_at_its_bytes() -> None:
    topic = CountingTopic([1] * 40)
    for i, entry in enumerate(topic.entries):  # entries of about 1 KiB
        topic.entries[i] = Entry(entry.entry_id, encode_entry(MessageMetadata(producer_name="p", sequence_id=i,
                                                                            publish_time=1), b"x" * 1000), 0)
    size = len(topic.entries[0].data)
    topic.config.dispatch_max_read_bytes = 3 * size + size // 2
    sub, (consumer,) = subscribe(topic, SubType.Exclusive)
    sub.flow(consumer, 1000)
    runs = runs_until_idle(sub)
    assert consumer.connection.sent == list(range(40))
    assert [len(r) for r in runs if r] == [3] * 13 + [1]


@pytest.mark.usefixtures("manual_schedule")
def test_an_entry_larger_than_the_turn_still_goes() -> None:
    topic = CountingTopic([1] * 5)
    topic.config.dispatch_max_read_bytes = 1
    sub, (consumer,) = subscribe(topic, SubType.Exclusive)
    sub.flow(consumer, 1000)
    runs = runs_until_idle(sub)
    assert consumer.connection.sent == list(range(5))
    assert [len(r) for r in runs if r] == [1] * 5


@pytest.mark.usefixtures("manual_schedule")
def test_redeliveries_are_bounded_per_turn_too() -> None:
    topic = CountingTopic([1] * 300)
    topic.config.dispatch_batch_entries = 100
    sub, (first,) = subscribe(topic, SubType.Shared)
    sub.flow(first, 300)
    runs_until_idle(sub)
    assert first.connection.sent == list(range(300))
    second = Consumer(type(first.connection)(), 9, "c9", sub, SubType.Shared)
    sub.add_consumer(second)
    sub.remove_consumer(first)  # its 300 unacknowledged entries go to the other consumer
    sub.flow(second, 1000)
    runs = runs_until_idle(sub)
    assert second.connection.sent == list(range(300))
    assert max(len(r) for r in runs) == 100


def test_other_callbacks_run_between_batches() -> None:
    """On a real loop: while a catch-up of 2,000 entries goes out 100 at a time, a coroutine that
    yields to the loop runs between every two batches, and sees the catch-up progress by at most one
    batch each time."""

    async def main() -> tuple[list[int], list[int]]:
        topic = CountingTopic([10] * 2000)
        topic.config.dispatch_batch_entries = 100
        sub, (consumer,) = subscribe(topic, SubType.Exclusive)
        seen: list[int] = []

        async def other() -> None:
            while len(consumer.connection.sent) < 2000:
                seen.append(len(consumer.connection.sent))
                await asyncio.sleep(0)

        task = asyncio.create_task(other())
        await asyncio.sleep(0)
        sub.flow(consumer, 2000 * 10)  # schedules the dispatch
        await asyncio.wait_for(task, 10)
        return seen, consumer.connection.sent

    seen, sent = asyncio.run(main())
    assert sent == list(range(2000))
    steps = [b - a for a, b in zip(seen, seen[1:], strict=False)]
    assert max(steps) <= 100
    assert len({s for s in seen if 0 < s < 2000}) >= 19  # it ran between every two of the 20 batches
