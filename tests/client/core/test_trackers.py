"""Redelivery schedules with a controllable clock: negative-ack backoff and ack timeouts.

The tables are the ones of the Pulsar documentation for MultiplierRedeliveryBackoff with its
defaults (min 1 s, max 60 s, multiplier 2): redelivery count 0, 1, 2 ... waits 1, 2, 4, 8, 16,
32, 60, 60 ... seconds. Nothing here sleeps: the clock is a variable the test moves.
"""

from __future__ import annotations

import pytest

from magnetar.client import (
    AsyncClient,
    ConsumerType,
    InvalidConfiguration,
    MultiplierRedeliveryBackoff,
)
from magnetar.client.core.trackers import NegativeAckTracker, UnackedMessageTracker
from magnetar.protocol.batch import build_entry
from magnetar.protocol.enums import CommandType
from magnetar.protocol.schema import MessageMetadata

from ..conftest import run
from ..fakebroker import FakeBroker

#: redelivery count -> seconds, MultiplierRedeliveryBackoff() (the documentation's table)
DOC_TABLE = [(0, 1), (1, 2), (2, 4), (3, 8), (4, 16), (5, 32), (6, 60), (7, 60), (10, 60), (100, 60), (10_000, 60)]


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.mark.parametrize(("count", "seconds"), DOC_TABLE)
def test_multiplier_backoff_matches_the_documented_table(count: int, seconds: int) -> None:
    assert MultiplierRedeliveryBackoff().next(count) == seconds * 1000


def test_multiplier_backoff_with_other_parameters() -> None:
    backoff = MultiplierRedeliveryBackoff(min_delay_ms=100, max_delay_ms=1000, multiplier=3)
    assert [backoff.next(n) for n in range(5)] == [100, 300, 900, 1000, 1000]
    assert MultiplierRedeliveryBackoff(0, 10).next(5) == 0
    with pytest.raises(InvalidConfiguration):
        MultiplierRedeliveryBackoff(1000, 10)
    with pytest.raises(InvalidConfiguration):
        MultiplierRedeliveryBackoff(multiplier=1)


def test_negative_ack_tracker_fixed_delay() -> None:
    clock = FakeClock()
    tracker = NegativeAckTracker(500, None, clock)
    tracker.add((1, 1))
    clock.advance(0.2)
    tracker.add((1, 2))
    clock.advance(0.299)
    assert tracker.pop_due() == []
    assert tracker.next_deadline() == pytest.approx(1000.5)
    clock.advance(0.001)
    assert tracker.pop_due() == [(1, 1)]
    clock.advance(0.2)
    assert tracker.pop_due() == [(1, 2)]
    assert tracker.next_deadline() is None


def test_negative_ack_tracker_follows_the_backoff_table() -> None:
    clock = FakeClock()
    tracker = NegativeAckTracker(60000, MultiplierRedeliveryBackoff(), clock)
    for count, _ in DOC_TABLE:
        tracker.add((7, count), redelivery_count=count)
    released: dict[int, int] = {}
    for second in range(1, 62):
        clock.advance(1)
        for _, count in tracker.pop_due():
            released[count] = second
    assert released == dict(DOC_TABLE)


def test_negative_ack_renack_moves_the_deadline() -> None:
    clock = FakeClock()
    tracker = NegativeAckTracker(1000, None, clock)
    tracker.add((1, 1))
    clock.advance(0.9)
    tracker.add((1, 1))
    clock.advance(0.5)
    assert tracker.pop_due() == []
    clock.advance(0.5)
    assert tracker.pop_due() == [(1, 1)]


def test_unacked_tracker_times_out_unacknowledged_messages() -> None:
    clock = FakeClock()
    tracker = UnackedMessageTracker(1000, 100, None, clock)
    tracker.add((1, 1))
    tracker.add((1, 2))
    clock.advance(0.5)
    tracker.add((1, 3))
    tracker.add((1, 1))  # received again (a batch sibling): keeps its deadline
    tracker.remove((1, 2))  # acknowledged
    clock.advance(0.5)
    assert tracker.pop_due() == [(1, 1)]
    clock.advance(0.5)
    assert tracker.pop_due() == [(1, 3)]
    assert len(tracker) == 0


def test_unacked_tracker_with_backoff_uses_redelivery_counts() -> None:
    clock = FakeClock()
    tracker = UnackedMessageTracker(1000, 100, MultiplierRedeliveryBackoff(), clock)
    for count, _ in DOC_TABLE:
        tracker.add((3, count), redelivery_count=count)
    released = {}
    for second in range(1, 62):
        clock.advance(1)
        for _, count in tracker.pop_due():
            released[count] = second
    assert released == dict(DOC_TABLE)


def _entry(payload: bytes) -> bytes:
    return build_entry(MessageMetadata(producer_name="p", sequence_id=0, publish_time=1), payload)


def _redelivered(fake: FakeBroker) -> list[list[int]]:
    return [[m.entry_id for m in r.message_ids] for r in fake.commands(CommandType.REDELIVER_UNACKNOWLEDGED_MESSAGES)]


def _spy_redeliveries(consumer: object, clock: FakeClock, start: float) -> dict[int, float]:
    """Record the clock time at which each entry is asked for again (then let the request go out)."""
    seen: dict[int, float] = {}
    original = consumer._redeliver_ids  # type: ignore[attr-defined]

    def spy(ids: list) -> None:
        for m in ids:
            seen.setdefault(m.entry_id, round(clock.now - start, 3))
        original(ids)

    consumer._redeliver_ids = spy  # type: ignore[attr-defined]
    return seen


def test_consumer_negative_acks_follow_the_backoff_table() -> None:
    clock = FakeClock()

    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe(
                "t", "sub", consumer_type=ConsumerType.Shared, clock=clock,
                negative_ack_redelivery_backoff=MultiplierRedeliveryBackoff(),
            )
            conn = fake.connections[0]
            counts = [count for count, _ in DOC_TABLE[:8]]
            for entry_id, count in enumerate(counts):
                fake.push_message(conn, consumer.consumer_id, _entry(b"m%d" % entry_id), 1, entry_id, redelivery_count=count)
            for _ in counts:
                msg = await consumer.receive(5000)
                consumer.negative_acknowledge(msg)
            released = _spy_redeliveries(consumer, clock, clock.now)
            for _ in range(61):
                clock.advance(1)
                consumer._nack_due()  # what the consumer's timer does when it fires
            assert {counts[e]: s for e, s in released.items()} == dict(DOC_TABLE[:8])
            # and the requests reached the broker, with the ids
            await fake.wait_for(lambda: sorted(e for ids in _redelivered(fake) for e in ids) == list(range(8)))

    run(main())


def test_consumer_ack_timeout_redelivers_unacknowledged_ids() -> None:
    clock = FakeClock()

    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe(
                "t", "sub", consumer_type=ConsumerType.Shared, clock=clock,
                unacked_messages_timeout_ms=10_000, tick_duration_ms=1000,
            )
            conn = fake.connections[0]
            for entry_id in range(4):
                fake.push_message(conn, consumer.consumer_id, _entry(b"m"), 1, entry_id)
            got = [await consumer.receive(5000) for _ in range(4)]
            consumer.acknowledge(got[1])
            consumer.negative_acknowledge(got[2])  # handed to the nack tracker instead
            clock.advance(9.9)
            consumer._on_tick()
            assert _redelivered(fake) == []
            clock.advance(0.1)
            consumer._on_tick()
            await fake.wait_for(lambda: _redelivered(fake))
            assert _redelivered(fake) == [[0, 3]]

    run(main())


def test_consumer_ack_timeout_with_backoff() -> None:
    clock = FakeClock()

    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe(
                "t", "sub", consumer_type=ConsumerType.Shared, clock=clock, unacked_messages_timeout_ms=1000,
                ack_timeout_redelivery_backoff=MultiplierRedeliveryBackoff(),
            )
            conn = fake.connections[0]
            for entry_id, count in enumerate([0, 2, 5]):
                fake.push_message(conn, consumer.consumer_id, _entry(b"m"), 1, entry_id, redelivery_count=count)
            for _ in range(3):
                await consumer.receive(5000)
            seen = _spy_redeliveries(consumer, clock, clock.now)
            for _ in range(40):
                clock.advance(1)
                consumer._on_tick()
            assert seen == {0: 1, 1: 4, 2: 32}
            await fake.wait_for(lambda: len(_redelivered(fake)) == 3)

    run(main())


def test_ack_timeout_below_one_second_is_refused() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            with pytest.raises(InvalidConfiguration, match="at least 1000"):
                await client.subscribe("t", "sub", unacked_messages_timeout_ms=500)

    run(main())
