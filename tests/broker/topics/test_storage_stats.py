"""A topic's storage histograms: per-range buckets, one count per entry a round made durable."""

from __future__ import annotations

from magnetar.broker.topics.storage_stats import (
    ENTRY_SIZE_BOUNDS,
    LATENCY_BOUNDS_US,
    LatencyCounts,
    StorageLatencies,
    entry_size_bucket,
    new_entry_sizes,
    observe_round,
)


class _Topic:
    def __init__(self, durable_id: int = -1) -> None:
        self.closed = False
        self.durable_id = durable_id
        self.storage_latencies: StorageLatencies | None = None


def test_buckets_count_their_own_range_with_the_bound_included() -> None:
    assert len(new_entry_sizes()) == len(ENTRY_SIZE_BOUNDS) + 1
    sizes = new_entry_sizes()
    for size in (0, 128, 129, 512, 513, 1024, 3072, 4096, 4097, 1_048_576, 1_048_577, 5_000_000):
        sizes[entry_size_bucket(size)] += 1
    assert sizes == [2, 2, 2, 0, 2, 1, 0, 1, 2]
    latencies = LatencyCounts()
    latencies.add(500, 1)  # 0.5 ms: the first bucket
    latencies.add(501, 2)
    latencies.add(1_000_001, 3)  # above 1 s: overflow
    assert latencies.counts == [1, 2, 0, 0, 0, 0, 0, 0, 0, 3]
    assert latencies.sum_us == 500 + 2 * 501 + 3 * 1_000_001
    assert len(latencies.counts) == len(LATENCY_BOUNDS_US) + 1


def test_a_round_counts_each_entry_it_made_durable_once() -> None:
    topic = _Topic(durable_id=4)
    observe_round(topic, 9, 0.012, 0.003)  # entries 5..9
    latencies = topic.storage_latencies
    assert latencies is not None
    assert latencies.write.counts == [0, 0, 0, 0, 5, 0, 0, 0, 0, 0]  # 12 ms: (10, 20]
    assert latencies.write.sum_us == 5 * 12_000
    assert latencies.ledger_write.counts == [0, 0, 5, 0, 0, 0, 0, 0, 0, 0]  # 3 ms: (1, 5]
    assert latencies.ledger_write.sum_us == 5 * 3_000
    topic.durable_id = 9
    observe_round(topic, 10, 0.0004, 0.0002)
    assert latencies.write.counts[0] == latencies.ledger_write.counts[0] == 1
    assert sum(latencies.write.counts) == sum(latencies.ledger_write.counts) == 6


def test_failed_empty_and_closed_rounds_count_nothing() -> None:
    topic = _Topic(durable_id=4)
    observe_round(topic, OSError("EIO"), 0.01, 0.01)
    observe_round(topic, 4, 0.01, 0.01)  # nothing new durable
    assert topic.storage_latencies is None
    topic.closed = True
    observe_round(topic, 8, 0.01, 0.01)
    assert topic.storage_latencies is None

    class _Log:  # the transaction log: a ledger the committer syncs, not a topic
        closed = False

    observe_round(_Log(), 3, 0.01, 0.01)  # type: ignore[arg-type]
