"""Rates of topics, subscriptions, producers and consumers for the admin API and /metrics.

Producers, consumers and topics only count (messages and bytes). :class:`StatsTracker` samples
those counters about once a second and computes each rate as the counter's growth since the
oldest sample inside the window, divided by the time elapsed. Consumers and subscriptions that
go away keep contributing their final counts to the subscription and topic totals: the tracker
holds the objects it saw at the previous sample, so their last counts are read exactly.

The background sampler walks the loaded topics once a second while there are fewer than
:data:`WALK_MAX_TOPICS`; past that it takes them in :data:`SLICES` slices, one every
``SAMPLE_INTERVAL / SLICES`` seconds, so every topic is still sampled once a second but the loop is
held for a twentieth of the walk at a time (10,000 topics: ~45 ms per full walk,
benchmarks/PROFILES.md section 30). Each series keeps its own timestamps, so the rates are as exact as with one walk.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from magnetar.broker.service import BrokerService
    from magnetar.broker.subscriptions.consumer import Consumer
    from magnetar.broker.subscriptions.subscription import Subscription
    from magnetar.broker.topics.base import Topic
    from magnetar.broker.topics.producer import Producer

log = logging.getLogger("magnetar.broker.stats")

#: seconds over which rates are computed
RATE_WINDOW = 10.0
#: seconds between two samples of every counter
SAMPLE_INTERVAL = 1.0
#: slices the loaded topics are sampled in, one per ``SAMPLE_INTERVAL / SLICES`` seconds ...
SLICES = 20
#: ... once there are this many: fewer are walked at once, once per interval (a walk of this many
#: holds the loop about as long as one slice of 10,000 topics, ~2 ms, and saves 19 wake-ups a second)
WALK_MAX_TOPICS = 500


class _Series:
    """Timestamped samples of a tuple of counters."""

    __slots__ = ("samples",)

    def __init__(self, now: float, width: int) -> None:
        # A new object has counted since at most one interval ago: seed a zero sample there.
        self.samples: deque[tuple[float, tuple[int, ...]]] = deque([(now - SAMPLE_INTERVAL, (0,) * width)])

    def add(self, now: float, values: tuple[int, ...], window: float) -> None:
        """Record a sample, dropping those older than the window (keeping at least two)."""
        samples = self.samples
        samples.append((now, values))
        while len(samples) > 2 and now - samples[1][0] > window:
            samples.popleft()

    def rates(self, now: float, current: tuple[int, ...], window: float) -> tuple[float, ...]:
        """Per-second growth of each counter since the oldest sample inside the window."""
        base = None
        for t, values in self.samples:
            if now - t <= window:
                base = (t, values)
                break
        if base is None:
            base = self.samples[-1]
        elapsed = now - base[0]
        if elapsed <= 0:
            return (0.0,) * len(current)
        return tuple(max(0, c - b) / elapsed for c, b in zip(current, base[1], strict=True))


class _SubTrack:
    __slots__ = ("sub", "series", "consumer_series")

    def __init__(self, sub: Subscription, now: float) -> None:
        self.sub = sub
        self.series = _Series(now, 2)
        self.consumer_series: dict[int, _Series] = {}

    def counters(self) -> tuple[int, int]:
        """Messages and bytes delivered by this subscription, consumers gone included."""
        return self.sub.msg_out_counter, self.sub.bytes_out_counter


class _TopicTrack:
    __slots__ = ("topic", "series", "subs", "producer_series")

    def __init__(self, topic: Topic, now: float) -> None:
        self.topic = topic
        self.series = _Series(now, 4)
        self.subs: dict[str, _SubTrack] = {}
        self.producer_series: dict[int, _Series] = {}

    def out_counters(self) -> tuple[int, int]:
        """Messages and bytes delivered from the topic, subscriptions gone included."""
        return self.topic.msg_out_counter, self.topic.bytes_out_counter

    def counters(self) -> tuple[int, int, int, int]:
        """Messages and bytes in, messages and bytes out."""
        out_msgs, out_bytes = self.out_counters()
        return self.topic.msg_in_counter, self.topic.bytes_in_counter, out_msgs, out_bytes


class StatsTracker:
    """Samples the counters of every loaded topic and answers rates over :data:`RATE_WINDOW`."""

    def __init__(self, service: BrokerService, window: float = RATE_WINDOW) -> None:
        self.service = service
        self.window = window
        self._topics: dict[str, _TopicTrack] = {}
        self._task: asyncio.Task | None = None
        #: the next slice of the loaded topics to sample (0 .. SLICES - 1)
        self._next_slice = 0

    # -- sampling ------------------------------------------------------------------------
    def start(self) -> None:
        """Sample in the background on the running loop (cancelled when the service stops)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="admin-stats")
            # the service cancels and awaits its background tasks when it stops
            self.service._tasks.append(self._task)

    async def _run(self) -> None:
        while True:
            # up to WALK_MAX_TOPICS topics: one walk per interval, the same samples without 19 wake-ups
            # of the loop a second (an idle broker's CPU is mostly its wake-ups: 100 loaded topics
            # cost 7 ms of CPU a second in slices)
            walk = self._next_slice == 0 and len(self.service.topics) < WALK_MAX_TOPICS
            await asyncio.sleep(SAMPLE_INTERVAL if walk else SAMPLE_INTERVAL / SLICES)
            try:
                if walk:
                    self.sample()
                else:
                    self.sample_slice()
            except Exception:  # a stats bug must not stop sampling
                log.exception("sampling topic statistics failed")

    def sample(self) -> None:
        """Record the counters of every loaded topic now."""
        now = time.monotonic()
        window = self.window
        self._forget_unloaded()
        for topic in list(self.service.topics.values()):
            track = self._track(topic, now)
            self._sample_topic(track, now, window)

    def sample_slice(self) -> None:
        """Record the counters of the next of :data:`SLICES` slices of the loaded topics: called
        every ``SAMPLE_INTERVAL / SLICES`` seconds, it samples every topic once per interval.

        A slice is a range of positions in the topics loaded now, so a topic loaded meanwhile is
        sampled within an interval, as with one walk (a topic unloaded before others' positions
        may move one of them to a slice already sampled: it waits one more interval)."""
        if self._next_slice == 0:
            self._forget_unloaded()
        loaded = list(self.service.topics.values())
        per_slice = -(-len(loaded) // SLICES)
        start = self._next_slice * per_slice
        now = time.monotonic()
        window = self.window
        for topic in loaded[start : start + per_slice]:
            self._sample_topic(self._track(topic, now), now, window)
        self._next_slice = (self._next_slice + 1) % SLICES

    def _forget_unloaded(self) -> None:
        topics = self.service.topics
        for name in [n for n, t in self._topics.items() if topics.get(n) is not t.topic]:
            del self._topics[name]

    def _track(self, topic: Topic, now: float) -> _TopicTrack:
        track = self._topics.get(topic.name)
        if track is None or track.topic is not topic:
            track = self._topics[topic.name] = _TopicTrack(topic, now)
        return track

    def _sample_topic(self, track: _TopicTrack, now: float, window: float) -> None:
        topic = track.topic
        subs = topic.subscriptions
        for name in [n for n, t in track.subs.items() if subs.get(n) is not t.sub]:
            del track.subs[name]
        for name, sub in subs.items():
            sub_track = track.subs.get(name)
            if sub_track is None:
                sub_track = track.subs[name] = _SubTrack(sub, now)
            live = sub.consumers
            ids = {id(c) for c in live}
            for gone in [i for i in sub_track.consumer_series if i not in ids]:
                del sub_track.consumer_series[gone]
            for c in live:
                series = sub_track.consumer_series.get(id(c))
                if series is None:
                    series = sub_track.consumer_series[id(c)] = _Series(now, 2)
                series.add(now, (c.msg_out_counter, c.bytes_out_counter), window)
            sub_track.series.add(now, sub_track.counters(), window)
        producers = {id(p): p for p in topic.producers.values()}
        for pid in [pid for pid in track.producer_series if pid not in producers]:
            del track.producer_series[pid]
        for pid, p in producers.items():
            series = track.producer_series.get(pid)
            if series is None:
                series = track.producer_series[pid] = _Series(now, 2)
            series.add(now, (p.msg_in_counter, p.bytes_in_counter), window)
        track.series.add(now, track.counters(), window)

    # -- reading -------------------------------------------------------------------------
    def topic_numbers(self, topic: Topic) -> dict[str, float]:
        """Counters and rates of one topic."""
        now = time.monotonic()
        track = self._track(topic, now)
        counters = track.counters()
        rate_in, tput_in, rate_out, tput_out = track.series.rates(now, counters, self.window)
        return {
            "msgInCounter": counters[0],
            "bytesInCounter": counters[1],
            "msgOutCounter": counters[2],
            "bytesOutCounter": counters[3],
            "msgRateIn": rate_in,
            "msgThroughputIn": tput_in,
            "msgRateOut": rate_out,
            "msgThroughputOut": tput_out,
        }

    def subscription_numbers(self, topic: Topic, sub: Subscription) -> dict[str, float]:
        """Counters and rates of one subscription."""
        now = time.monotonic()
        track = self._track(topic, now)
        sub_track = track.subs.get(sub.name)
        if sub_track is None or sub_track.sub is not sub:
            sub_track = track.subs[sub.name] = _SubTrack(sub, now)
        counters = sub_track.counters()
        rate, tput = sub_track.series.rates(now, counters, self.window)
        return {"msgOutCounter": counters[0], "bytesOutCounter": counters[1], "msgRateOut": rate, "msgThroughputOut": tput}

    def consumer_numbers(self, topic: Topic, sub: Subscription, consumer: Consumer) -> dict[str, float]:
        """Counters and rates of one consumer."""
        now = time.monotonic()
        counters = (consumer.msg_out_counter, consumer.bytes_out_counter)
        track = self._topics.get(topic.name)
        sub_track = track.subs.get(sub.name) if track is not None else None
        series = sub_track.consumer_series.get(id(consumer)) if sub_track is not None else None
        rate, tput = series.rates(now, counters, self.window) if series is not None else (0.0, 0.0)
        return {"msgOutCounter": counters[0], "bytesOutCounter": counters[1], "msgRateOut": rate, "msgThroughputOut": tput}

    def producer_numbers(self, topic: Topic, producer: Producer) -> dict[str, float]:
        """Counters and rates of one producer."""
        now = time.monotonic()
        counters = (producer.msg_in_counter, producer.bytes_in_counter)
        track = self._topics.get(topic.name)
        series = track.producer_series.get(id(producer)) if track is not None else None
        rate, tput = series.rates(now, counters, self.window) if series is not None else (0.0, 0.0)
        return {"msgInCounter": counters[0], "bytesInCounter": counters[1], "msgRateIn": rate, "msgThroughputIn": tput}
