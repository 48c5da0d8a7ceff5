"""The last ten minutes of what the console charts, kept by the broker so a page opened (or
reloaded) draws them at once instead of starting empty.

:class:`ChartHistory` samples every :data:`INTERVAL` seconds, into rings of :data:`SAMPLES`
samples (bounded memory): the broker's totals (messages and bytes per second in and out, the
group commit's fsync-round latency, connections) and, for the topics a console page asked about in
the last :data:`WATCH_SECONDS` (at most :data:`MAX_WATCHED`), their rates in and out and backlog.
A topic's history therefore starts with the first page that shows it and survives reloads.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from magnetar.broker.resources.admin import BrokerAdmin

log = logging.getLogger("magnetar.admin.console")

#: seconds between two samples
INTERVAL = 5.0
#: samples kept per series: ten minutes
SAMPLES = 120
#: topics read between two yields to the loop while sampling (10,000 topics: the loop is never
#: held for the whole walk)
TOPICS_PER_STEP = 256
#: topics whose series are kept, and how long after the last page that asked
MAX_WATCHED = 32
WATCH_SECONDS = 1800.0

BROKER_SERIES = ("rateIn", "rateOut", "throughputIn", "throughputOut", "fsyncMs", "connections")
TOPIC_SERIES = ("rateIn", "rateOut", "backlog")


@dataclass
class _Rings:
    """Series sampled together: the times (epoch seconds) and one ring per name."""

    names: tuple[str, ...]
    samples: int
    times: deque[float] = field(init=False)
    values: dict[str, deque[float]] = field(init=False)

    def __post_init__(self) -> None:
        self.times = deque(maxlen=self.samples)
        self.values = {name: deque(maxlen=self.samples) for name in self.names}

    def add(self, at: float, sample: dict[str, float]) -> None:
        """Append one sample (every name's value at ``at``)."""
        self.times.append(round(at, 3))
        for name in self.names:
            self.values[name].append(round(sample[name], 3))

    def as_json(self) -> dict[str, Any]:
        """``{"t": [...], name: [...], ...}``, oldest first."""
        return {"t": list(self.times), **{name: list(ring) for name, ring in self.values.items()}}


@dataclass
class _Watch:
    """A topic a page asked about: its partitions' names (itself when not partitioned) and rings."""

    members: tuple[str, ...]
    rings: _Rings
    asked_at: float


class ChartHistory:
    """Owner of the console's chart history: sampled on the broker's loop, read by the console routes."""

    def __init__(self, admin: BrokerAdmin, interval: float = INTERVAL, samples: int = SAMPLES) -> None:
        self.admin = admin
        self.interval = interval
        self.samples = samples
        self.broker = _Rings(BROKER_SERIES, samples)
        self._watched: OrderedDict[str, _Watch] = OrderedDict()
        self._rounds: tuple[int, float] | None = None
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        """Sample in the background on the running loop (cancelled when the service stops)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="console-history")
            self.admin.service._tasks.append(self._task)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                totals = dict.fromkeys(("rateIn", "rateOut", "throughputIn", "throughputOut"), 0.0)
                topics = list(self.admin.service.topics.values())
                for start in range(0, len(topics), TOPICS_PER_STEP):
                    self._add_rates(totals, topics[start:start + TOPICS_PER_STEP])
                    await asyncio.sleep(0)
                self._record(time.time(), totals)
            except Exception:  # a history bug must not stop sampling
                log.exception("sampling the console's chart history failed")

    def sample(self, at: float | None = None) -> None:
        """Record one sample of the broker's totals and of every watched topic (all at once)."""
        totals = dict.fromkeys(("rateIn", "rateOut", "throughputIn", "throughputOut"), 0.0)
        self._add_rates(totals, list(self.admin.service.topics.values()))
        self._record(time.time() if at is None else at, totals)

    def _add_rates(self, totals: dict[str, float], topics: list[Any]) -> None:
        topic_numbers = self.admin.tracker.topic_numbers
        for topic in topics:
            numbers = topic_numbers(topic)
            totals["rateIn"] += numbers["msgRateIn"]
            totals["rateOut"] += numbers["msgRateOut"]
            totals["throughputIn"] += numbers["msgThroughputIn"]
            totals["throughputOut"] += numbers["msgThroughputOut"]

    def _record(self, at: float, totals: dict[str, float]) -> None:
        service = self.admin.service
        totals["fsyncMs"] = self._fsync_ms()
        totals["connections"] = float(len(service.connections))
        self.broker.add(at, totals)
        self._sample_watched(at)

    def _fsync_ms(self) -> float:
        """The mean fsync round since the previous sample, in ms (the last one when no round ran)."""
        committer = getattr(self.admin.service, "committer", None)
        if committer is None:
            return 0.0
        now = (committer.rounds, committer.sync_seconds_total)
        before, self._rounds = self._rounds, now
        if before is not None and now[0] > before[0]:
            return (now[1] - before[1]) / (now[0] - before[0]) * 1000
        previous = self.broker.values["fsyncMs"]
        return previous[-1] if previous else 0.0

    def _sample_watched(self, at: float) -> None:
        topics = self.admin.service.topics
        tracker = self.admin.tracker
        for name, watch in list(self._watched.items()):
            if at - watch.asked_at > WATCH_SECONDS:
                del self._watched[name]
                continue
            sample = dict.fromkeys(TOPIC_SERIES, 0.0)
            for member in watch.members:
                topic = topics.get(member)
                if topic is None:
                    continue
                numbers = tracker.topic_numbers(topic)
                sample["rateIn"] += numbers["msgRateIn"]
                sample["rateOut"] += numbers["msgRateOut"]
                sample["backlog"] += sum(s.backlog() for s in list(topic.subscriptions.values()))
            watch.rings.add(at, sample)

    def broker_history(self) -> dict[str, Any]:
        """The broker's series, oldest first, with the sampling interval."""
        return {"intervalSeconds": self.interval, **self.broker.as_json()}

    def topic_history(self, name: str, partitions: int = 0) -> dict[str, Any]:
        """A topic's series (summed over its partitions when it has some), oldest first; from now
        on the topic is watched (its history starts with the first call)."""
        watch = self._watched.pop(name, None)
        members = tuple(f"{name}-partition-{i}" for i in range(partitions)) if partitions > 0 else (name,)
        if watch is None or watch.members != members:
            watch = _Watch(members, _Rings(TOPIC_SERIES, self.samples), time.time())
        watch.asked_at = time.time()
        self._watched[name] = watch
        while len(self._watched) > MAX_WATCHED:
            self._watched.popitem(last=False)
        return {"intervalSeconds": self.interval, **watch.rings.as_json()}


_HISTORIES: weakref.WeakKeyDictionary[BrokerAdmin, ChartHistory] = weakref.WeakKeyDictionary()


def chart_history_for(admin: BrokerAdmin) -> ChartHistory:
    """The one history of ``admin``'s broker: started with the broker's statistics sampling (before
    any HTTP request builds the app), read by the console routes."""
    found = _HISTORIES.get(admin)
    if found is None:
        found = _HISTORIES[admin] = ChartHistory(admin)
    return found
