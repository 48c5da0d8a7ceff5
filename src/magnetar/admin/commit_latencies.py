"""The group committer's latency histograms, recorded from the broker's start.

A broker serves its HTTP app (and so its Prometheus registry) only once the first HTTP connection
comes, but /metrics must then count every group-commit round since start. :func:`record_commit_latencies`
hooks plain bucket counters onto the committer when the broker starts (no prometheus_client import);
:mod:`magnetar.admin.metrics` exposes them as the histograms ``magnetar_fsync_round_seconds`` and
``magnetar_append_latency_seconds`` at scrape time. It hooks each topic's storage latencies too
(``on_topic_round``: :func:`magnetar.broker.topics.storage_stats.observe_round`, Pulsar's per-topic
``pulsar_storage_write_latency_*`` and ``pulsar_storage_ledger_write_latency_*``).
"""

from __future__ import annotations

import bisect
import math
import threading
import time
import weakref
from typing import Any

from magnetar.broker.topics.storage_stats import observe_round

#: upper bounds (seconds) of both histograms' buckets, +Inf implied
BUCKETS: tuple[float, ...] = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class LatencyBuckets:
    """Counts of observed durations per bucket, and their sum (observed from any thread)."""

    def __init__(self, bounds: tuple[float, ...] = BUCKETS) -> None:
        self.bounds = bounds
        #: unix time of creation (the histogram's ``_created``)
        self.created = time.time()
        self._counts = [0] * (len(bounds) + 1)
        self._sum = 0.0
        self._lock = threading.Lock()

    def observe(self, seconds: float) -> None:
        """Count one duration in the first bucket whose bound is >= it."""
        index = bisect.bisect_left(self.bounds, seconds)
        with self._lock:
            self._counts[index] += 1
            self._sum += seconds

    def snapshot(self) -> tuple[list[tuple[float, int]], float]:
        """Cumulative counts by upper bound (``math.inf`` last) and the sum, read together."""
        with self._lock:
            counts = list(self._counts)
            total = self._sum
        cumulative: list[tuple[float, int]] = []
        running = 0
        for bound, count in zip((*self.bounds, math.inf), counts, strict=True):
            running += count
            cumulative.append((bound, running))
        return cumulative, total


class CommitLatencies:
    """The two histograms of one group committer: sync-round durations and each round's oldest append wait."""

    def __init__(self) -> None:
        self.rounds = LatencyBuckets()
        self.append_waits = LatencyBuckets()


_RECORDED: weakref.WeakKeyDictionary[Any, CommitLatencies] = weakref.WeakKeyDictionary()


def record_commit_latencies(committer: Any) -> CommitLatencies:
    """The latencies recorded for ``committer`` (a ``GroupCommitter`` or None), hooked onto it now unless
    they are already; a committer whose observers someone else set keeps them (its histograms stay empty).
    The topics' storage latencies are hooked the same way (``on_topic_round``), unless already."""
    if committer is None:
        return CommitLatencies()
    if getattr(committer, "on_topic_round", observe_round) is None:
        committer.on_topic_round = observe_round
    latencies = _RECORDED.get(committer)
    if latencies is None:
        latencies = CommitLatencies()
        if committer.on_round is None:
            committer.on_round = latencies.rounds.observe
            committer.on_append_latency = latencies.append_waits.observe
            _RECORDED[committer] = latencies
    return latencies
