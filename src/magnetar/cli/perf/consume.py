"""The consuming side of ``magnetar perf``: consumers receiving and acknowledging, timed.

Each consumer takes what its receiver queue holds in one go (``receive_nowait``) and waits with
``receive`` only when it is empty, then acknowledges the lot. Without a hook the end-to-end latency
is the receive time minus the message's publish time, in milliseconds of the wall clock as
pulsar-perf measures it (sender and receiver clocks must agree); ``perf end-to-end`` passes a
hook that times each message from its intended send time instead.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Iterator
from itertools import groupby
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from magnetar.cli.perf.options import ConsumerSettings
from magnetar.cli.perf.rate_limiter import NANOS, RateSchedule, wait_until_due
from magnetar.cli.perf.recorder import LatencyRecorder
from magnetar.cli.perf.report import Rate, Snapshot
from magnetar.cli.perf.runner import Output, drive, frozen_heap, keep_freed_heap, open_client
from magnetar.client.api.message import Message, UniformMessage
from magnetar.client.exceptions import Timeout

if TYPE_CHECKING:
    from magnetar.cli.messaging import Connection

#: most messages taken from a receiver queue at once
TAKE_AT_ONCE = 1000
#: how long a receive waits before the stop conditions are checked again, ms
RECEIVE_POLL_MS = 100
#: called with each batch of received messages and the time they were taken (perf_counter_ns)
ReceiveHook = Callable[[list[Any], int], None]
_LEDGER_ENTRY = attrgetter("ledger", "entry")
_CTX = attrgetter("_ctx")
_PAYLOAD = attrgetter("_payload")


def _entry_key(message: Message) -> tuple[int, int]:
    return _LEDGER_ENTRY(message._ctx)  # the MessageEntry the messages of one entry share


def entry_runs(messages: list[Message]) -> list[tuple[Message, int, int]]:
    """The runs of ``messages`` that came in one entry, in order: each run's first message, its
    length and its payload bytes. A batch's messages share their MessageEntry, so this is one
    Python step per entry, not per message (the per-message part, the grouping by that shared
    object, runs in C; a uniform batch's payload sizes are its entry's, not sliced out)."""
    return [_run_of(run) for _, run in groupby(messages, _CTX)]


def _run_of(run: Iterator[Message]) -> tuple[Message, int, int]:
    first = next(run)
    if first.__class__ is UniformMessage:
        length = 1 + len(list(run))
        return first, length, length * first._ctx.size
    rest = list(run)
    return first, 1 + len(rest), len(first._payload) + sum(map(len, map(_PAYLOAD, rest)))


def _publish_time_counts(runs: list[tuple[Message, int, int]]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for first, size, _ in runs:
        published_ms = first.publish_timestamp()
        counts[published_ms] = counts.get(published_ms, 0) + size
    return counts


def entry_keys(messages: list[Any]) -> list[tuple[int, int]]:
    """The (ledger, entry) of each message, in order (a batch's messages share theirs)."""
    if isinstance(messages[0], Message):
        return list(map(_entry_key, messages))
    ids = [m.message_id() for m in messages]
    return [(mid.ledger_id(), mid.entry_id()) for mid in ids]


class ConsumerLoad:
    """The consumers of a run and their counters: received, bytes, end-to-end latency."""

    def __init__(self, settings: ConsumerSettings, on_receive: ReceiveHook | None = None) -> None:
        self.settings = settings
        self.on_receive = on_receive
        self.consumers: list[Any] = []
        #: (topic, subscription) of each consumer, in the order of ``consumers``
        self.subscription_of: list[tuple[str, str]] = []
        #: messages received by each consumer
        self.received_by: list[int] = []
        self.latency = LatencyRecorder()
        self.received = 0
        self.received_bytes = 0
        #: entries the received messages came in (a change of (ledger, entry) from one message to the next)
        self.entries = 0
        self._last_entry: tuple[int, int] | None = None
        self.start_ns = 0
        self.end_ns = 0
        self._reported = (0, 0)

    async def start(self, client: Any) -> None:
        """Subscribe ``consumers_per_subscription`` consumers to each subscription of each topic."""
        s = self.settings
        options = s.subscribe_options()
        for topic in s.topics:
            for subscription in s.subscriptions:
                for _ in range(s.consumers_per_subscription):
                    self.consumers.append(await client.subscribe(topic, subscription, **options))
                    self.subscription_of.append((topic, subscription))

    async def run(self, stop: asyncio.Event) -> None:
        """Receive until the count or time limit is reached or ``stop`` is set."""
        s = self.settings
        schedule = RateSchedule(s.rate, time.perf_counter_ns(), s.max_messages, s.duration_s)
        self.start_ns = self.end_ns = schedule.start_ns
        self.received_by = [0] * len(self.consumers)
        tasks = [asyncio.ensure_future(self._consume(i, schedule, stop)) for i in range(len(self.consumers))]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()

    async def _consume(self, index: int, schedule: RateSchedule, stop: asyncio.Event) -> None:
        consumer = self.consumers[index]
        received_by = self.received_by
        acknowledge_many = getattr(consumer, "acknowledge_many", None)
        while not stop.is_set():
            now = time.perf_counter_ns()
            if schedule.finished(self.received, now):
                return
            budget = min(schedule.due(now) - self.received, TAKE_AT_ONCE)
            if budget <= 0:
                await wait_until_due(schedule, self.received)
                continue
            messages = consumer.receive_nowait(budget)
            if not messages:
                try:
                    messages = [await consumer.receive(RECEIVE_POLL_MS)]
                except Timeout:
                    continue
            self._took(messages)
            received_by[index] += len(messages)
            if acknowledge_many is not None:
                acknowledge_many(messages)
            else:
                for message in messages:
                    consumer.acknowledge(message)

    def _took(self, messages: list[Any]) -> None:
        now = time.perf_counter_ns()
        self.received += len(messages)
        self.end_ns = now
        runs: list[tuple[Message, int, int]] | None = None
        if isinstance(messages[0], Message):
            runs = entry_runs(messages)
            self.received_bytes += sum([size for _, _, size in runs])
            self._count_entries([_entry_key(first) for first, _, _ in runs])
        else:
            self.received_bytes += sum([len(m.data()) for m in messages])
            self._count_entries(entry_keys(messages))
        if self.on_receive is not None:
            self.on_receive(messages, now)
            return
        wall_micros = time.time_ns() // 1000
        counts = self.latency.counts
        # the messages of a batch share their publish time: one update per entry's run
        per_time = Counter([m.publish_timestamp() for m in messages]) if runs is None else _publish_time_counts(runs)
        for published_ms, count in per_time.items():
            micros = wall_micros - published_ms * 1000
            counts[micros] = counts.get(micros, 0) + count

    def _count_entries(self, keys: list[tuple[int, int]]) -> None:
        last = self._last_entry
        changes = 0
        for key in keys:
            if key != last:
                changes += 1
                last = key
        self.entries += changes
        self._last_entry = last

    def interval_rate(self, seconds: float) -> Rate:
        """Messages and bytes received since the previous call."""
        messages, size = self.received - self._reported[0], self.received_bytes - self._reported[1]
        self._reported = (self.received, self.received_bytes)
        return Rate(messages, size, seconds)

    def total_rate(self) -> Rate:
        """Messages and bytes received from the start to the last message."""
        return Rate(self.received, self.received_bytes, (self.end_ns - self.start_ns) / NANOS)

    def per_subscription(self) -> list[int]:
        """Messages received on each subscription of each topic (all its consumers together).

        In a fan-out run each subscription must get every message once: more than were produced
        means the broker delivered some twice, fewer that it stopped delivering."""
        if len(self.subscription_of) != len(self.received_by):  # consumers not made by start()
            return list(self.received_by)
        totals: dict[tuple[str, str], int] = {}
        for key, count in zip(self.subscription_of, self.received_by, strict=True):
            totals[key] = totals.get(key, 0) + count
        return list(totals.values())

    def queued(self) -> int:
        """Messages waiting in the consumers' receiver queues."""
        return sum(consumer.queued() for consumer in self.consumers if hasattr(consumer, "queued"))

    async def close(self, unsubscribe: bool = False) -> None:
        """Close (or unsubscribe) the consumers; the client closes anything left."""
        for consumer in self.consumers:
            try:
                await (consumer.unsubscribe() if unsubscribe else consumer.close())
            except Exception:  # noqa: BLE001 - closing is best effort at the end of a run
                pass


class ConsumeRun:
    """The figures of ``perf consume``: consumed rate, queued messages, end-to-end latency."""

    def __init__(self, load: ConsumerLoad) -> None:
        self.load = load

    def interval(self, elapsed_s: float, seconds: float) -> Snapshot:
        """The figures since the previous interval."""
        load = self.load
        return Snapshot(elapsed_s, {"consumed": load.interval_rate(seconds)}, {"queued": load.queued()},
                        {"end_to_end": load.latency.interval()})

    def total(self) -> Snapshot:
        """The figures of the whole run, from the start to the last message."""
        load = self.load
        rate = load.total_rate()
        counts = load.per_subscription() or [0]
        counters = {"fewest_per_subscription": min(counts), "most_per_subscription": max(counts),
                    "entries": load.entries}
        return Snapshot(rate.seconds, {"consumed": rate}, counters, {"end_to_end": load.latency.total()})


async def consume_main(connection: Connection, settings: ConsumerSettings, output: Output) -> bool:
    """``magnetar perf consume``: run, report; whether it ended well (always, once subscribed). The
    process keeps its freed heap for reuse (:func:`keep_freed_heap`)."""
    keep_freed_heap()
    async with open_client(connection) as client:
        load = ConsumerLoad(settings)
        await load.start(client)
        stop = asyncio.Event()
        figures = ConsumeRun(load)
        with frozen_heap():
            intervals = await drive(load.run(stop), figures, output, stop)
        output.final("consume", settings.describe(), figures.total(), intervals, settings.rate)
        await load.close()
        return True
