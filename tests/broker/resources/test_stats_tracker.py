"""The admin stats sampler: sampled in slices (every topic once per interval, a slice per tick), with
the same rates as one walk of every topic, forgetting topics that were unloaded."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from magnetar.broker.resources import stats_tracker
from magnetar.broker.resources.stats_tracker import SLICES, StatsTracker


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def fake_topic(i: int) -> SimpleNamespace:
    consumer = SimpleNamespace(msg_out_counter=0, bytes_out_counter=0)
    sub = SimpleNamespace(name="s", consumers=[consumer], msg_out_counter=0, bytes_out_counter=0)
    producer = SimpleNamespace(msg_in_counter=0, bytes_in_counter=0)
    return SimpleNamespace(
        name=f"persistent://t/n/t{i}", subscriptions={"s": sub}, producers={1: producer},
        msg_in_counter=0, bytes_in_counter=0, msg_out_counter=0, bytes_out_counter=0,
    )


def count(topic: SimpleNamespace, n: int) -> None:
    """``n`` messages of 10 bytes in through the producer and out through the consumer."""
    producer, sub = topic.producers[1], topic.subscriptions["s"]
    consumer = sub.consumers[0]
    for obj in (topic, producer):
        obj.msg_in_counter += n
        obj.bytes_in_counter += 10 * n
    for obj in (topic, sub, consumer):
        obj.msg_out_counter += n
        obj.bytes_out_counter += 10 * n


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(stats_tracker.time, "monotonic", clock)
    return clock


def test_a_slice_samples_a_tenth_and_rates_match_one_walk(clock: Clock) -> None:
    topics = [fake_topic(i) for i in range(95)]
    service = SimpleNamespace(topics={t.name: t for t in topics}, _tasks=[])
    sliced, walked = StatsTracker(service), StatsTracker(service)
    for second in range(5):
        for i, topic in enumerate(topics):
            count(topic, 10 * (i + 1))
        walked.sample()
        for k in range(SLICES):
            sliced.sample_slice()
            if second == 0 and k == 0:
                assert len(sliced._topics) == -(-95 // SLICES)  # noqa: SLF001 - the first slice's topics
        clock.now += 1.0
    for i, topic in enumerate(topics):
        expected = walked.topic_numbers(topic)
        assert sliced.topic_numbers(topic) == expected
        # 5 samples of 10 * (i + 1) each since the zero seeded a second before the first: 6 seconds ago
        assert expected["msgRateIn"] == pytest.approx(5 * 10 * (i + 1) / 6)
        sub, producer = topic.subscriptions["s"], topic.producers[1]
        assert sliced.subscription_numbers(topic, sub) == walked.subscription_numbers(topic, sub)
        assert sliced.producer_numbers(topic, producer) == walked.producer_numbers(topic, producer)
        consumer = sub.consumers[0]
        assert sliced.consumer_numbers(topic, sub, consumer) == walked.consumer_numbers(topic, sub, consumer)
        assert sliced.consumer_numbers(topic, sub, consumer)["msgRateOut"] == pytest.approx(5 * 10 * (i + 1) / 6)


def test_unloaded_topics_are_forgotten_and_not_sampled(clock: Clock) -> None:
    topics = [fake_topic(i) for i in range(20)]
    service = SimpleNamespace(topics={t.name: t for t in topics}, _tasks=[])
    tracker = StatsTracker(service)
    tracker.sample_slice()  # the first slice: topic 0
    del service.topics[topics[5].name]
    for _ in range(SLICES - 1):
        tracker.sample_slice()
    assert topics[5].name not in tracker._topics  # noqa: SLF001
    assert len(tracker._topics) == 19  # noqa: SLF001
    del service.topics[topics[0].name]
    tracker.sample_slice()  # a new round forgets what was unloaded
    assert topics[0].name not in tracker._topics  # noqa: SLF001


def test_a_topic_loaded_during_a_round_is_sampled_within_the_interval(clock: Clock) -> None:
    topics = [fake_topic(i) for i in range(40)]
    service = SimpleNamespace(topics={t.name: t for t in topics[:39]}, _tasks=[])
    tracker = StatsTracker(service)
    for _ in range(SLICES // 2):
        tracker.sample_slice()
    service.topics[topics[39].name] = topics[39]
    count(topics[39], 30)
    for _ in range(SLICES - SLICES // 2):
        tracker.sample_slice()
    assert topics[39].name in tracker._topics  # noqa: SLF001
    clock.now += 1.0
    assert tracker.producer_numbers(topics[39], topics[39].producers[1])["msgRateIn"] > 0


def test_few_topics_are_sampled_in_one_walk_per_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    topics = [fake_topic(i) for i in range(3)]
    service = SimpleNamespace(topics={t.name: t for t in topics}, _tasks=[])
    tracker = StatsTracker(service)
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) > 3:
            raise asyncio.CancelledError

    monkeypatch.setattr(stats_tracker.asyncio, "sleep", sleep)
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(tracker._run())  # noqa: SLF001
    assert sleeps == [stats_tracker.SAMPLE_INTERVAL] * 4  # not SLICES wake-ups per interval
    assert set(tracker._topics) == {t.name for t in topics}  # noqa: SLF001 - every topic sampled each time
    # a hundred topics (the suite's topics-100 leaves them loaded) are still one walk: 20 wake-ups a
    # second for them cost 7 ms of CPU a second
    service.topics.update({f"t{i}": fake_topic(100 + i) for i in range(100)})
    sleeps.clear()
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(tracker._run())  # noqa: SLF001
    assert sleeps == [stats_tracker.SAMPLE_INTERVAL] * 4
    assert len(tracker._topics) == 103  # noqa: SLF001
    many = stats_tracker.WALK_MAX_TOPICS
    service.topics.update({f"t{i}": fake_topic(1000 + i) for i in range(100, many)})
    sleeps.clear()
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(tracker._run())  # noqa: SLF001
    assert sleeps == [stats_tracker.SAMPLE_INTERVAL / SLICES] * 4  # many topics: sliced as before
