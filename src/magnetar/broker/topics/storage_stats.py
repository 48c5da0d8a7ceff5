"""A persistent topic's storage histograms, as Pulsar's managed ledger keeps them (ManagedLedgerMBeanImpl).

Three histograms per topic, with Pulsar's bounds: the add-entry latency (an append until it is durable,
``pulsar_storage_write_latency_*``), the ledger write latency (the write and fdatasync of the commit
round, ``pulsar_storage_ledger_write_latency_*``), both in microseconds, and the size of each entry
appended (``pulsar_entry_size_*``). As Pulsar's ``StatsBuckets``, a bucket counts the values in its
range only (above the bound before it, up to its own), not every value up to its bound.

The cost stays off the per-message path: the topic counts an entry's size where it already counts
the entry's bytes (one list increment per entry), and the latencies are observed once per commit
round and topic (:func:`observe_round`, the group committer's ``on_topic_round``): every entry a
round made durable gets the round's durations, added to its bucket as one count of that many entries.
The counts run from the topic's load on this broker (Pulsar's are the last stats period's; see docs/STATS.md).
"""

from __future__ import annotations

from bisect import bisect_left
from functools import partial
from typing import Protocol

#: upper bounds (microseconds) of the latency buckets: Pulsar's ENTRY_LATENCY_BUCKETS_USEC (0.5 ms to 1 s)
LATENCY_BOUNDS_US: tuple[int, ...] = (500, 1_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 1_000_000)
#: upper bounds (bytes) of the entry size buckets: Pulsar's ENTRY_SIZE_BUCKETS_BYTES (128 B to 1 MiB)
ENTRY_SIZE_BOUNDS: tuple[int, ...] = (128, 512, 1024, 2048, 4096, 16_384, 102_400, 1_048_576)


#: the index in a topic's entry size counts of an entry of that many bytes
entry_size_bucket = partial(bisect_left, ENTRY_SIZE_BOUNDS)


def new_entry_sizes() -> list[int]:
    """A topic's entry size counts: one per bucket of :data:`ENTRY_SIZE_BOUNDS` and one above the last."""
    return [0] * (len(ENTRY_SIZE_BOUNDS) + 1)


class LatencyCounts:
    """Counts of durations per range of :data:`LATENCY_BOUNDS_US` (the last: above 1 s) and their sum."""

    __slots__ = ("counts", "sum_us")

    def __init__(self) -> None:
        self.counts = [0] * (len(LATENCY_BOUNDS_US) + 1)
        #: the sum of every duration counted, in microseconds (Pulsar's ``_sum``)
        self.sum_us = 0

    def add(self, micros: int, entries: int) -> None:
        """Count ``entries`` durations of ``micros`` microseconds each."""
        self.counts[bisect_left(LATENCY_BOUNDS_US, micros)] += entries
        self.sum_us += micros * entries


class StorageLatencies:
    """A topic's two latency histograms (made by its first commit round observed)."""

    __slots__ = ("ledger_write", "write")

    def __init__(self) -> None:
        #: an append until durable (Pulsar's add-entry latency, queueing included)
        self.write = LatencyCounts()
        #: the commit round's write and fdatasync (Pulsar's ledger add-entry latency)
        self.ledger_write = LatencyCounts()


class ObservedTopic(Protocol):
    """What :func:`observe_round` needs of a topic."""

    closed: bool
    #: highest entry id a completed round made durable (before this round is reported)
    durable_id: int
    storage_latencies: StorageLatencies | None


def observe_round(topic: ObservedTopic, outcome: int | BaseException, wait: float, elapsed: float) -> None:
    """(loop, before the round is reported to ``topic``) The entries this round made durable on ``topic``
    waited ``wait`` seconds at most since their append (the round's oldest append) and were written
    and synced in ``elapsed`` seconds: counted once each in both latency histograms. Other ledgers the
    committer syncs (the transaction log's) have no ``durable_id`` and are passed over."""
    durable_id = getattr(topic, "durable_id", None)
    if durable_id is None or isinstance(outcome, BaseException) or topic.closed:
        return
    entries = outcome - durable_id
    if entries <= 0:
        return
    latencies = topic.storage_latencies
    if latencies is None:
        latencies = topic.storage_latencies = StorageLatencies()
    latencies.write.add(int(wait * 1_000_000), entries)
    latencies.ledger_write.add(int(elapsed * 1_000_000), entries)
