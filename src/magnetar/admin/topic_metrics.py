"""Pulsar's per-topic storage metrics and the subscription gauges a Pulsar dashboard reads, for /metrics.

Names, labels (cluster, namespace, topic; subscription) and units are Pulsar's (``TopicStats.printTopicStats``
with ``exposeTopicLevelMetricsInPrometheus=true``, its default), every one a gauge as Pulsar types them:

- ``pulsar_storage_write_latency_le_0_5`` ... ``_le_1000``, ``_overflow``, ``_count``, ``_sum``: an append
  until durable, buckets in milliseconds, ``_sum`` in microseconds; ``pulsar_storage_ledger_write_latency_*``
  the same for the commit round's write and fdatasync; ``pulsar_entry_size_le_128`` ... ``_le_1_mb``,
  ``_le_overflow``, ``_count``, ``_sum`` (bytes). As Pulsar's, each bucket counts its own range only (not
  cumulative: ``_le_5`` counts what took more than 1 ms and at most 5 ms). Unlike Pulsar's (the last
  minute's counts), they count from the topic's load on this broker (docs/STATS.md says why).
- ``pulsar_storage_logical_size``, ``pulsar_storage_backlog_size``, ``pulsar_storage_backlog_quota_limit``,
  ``pulsar_storage_backlog_quota_limit_time``, ``pulsar_average_msg_size``, ``pulsar_txn_tb_*_total``.
- per subscription: ``pulsar_subscription_back_log_no_delayed``, ``pulsar_subscription_delayed``,
  ``pulsar_subscription_blocked_on_unacked_messages``, ``pulsar_subscription_msg_throughput_out``,
  ``pulsar_subscription_total_msg_expired`` and the ``pulsar_subscription_last_*_timestamp`` times.

The histograms are recorded by the topics (``magnetar.broker.topics.storage_stats``); this module only
reads them at scrape time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily, Metric

from magnetar.broker.topics.storage_stats import LatencyCounts

if TYPE_CHECKING:
    from magnetar.broker.subscriptions.base import SubscriptionBase
    from magnetar.broker.topics.base import Topic

#: the suffixes of the latency buckets' gauges, bucket by bucket (Pulsar's: ms bounds, then ``overflow``)
LATENCY_SUFFIXES = ("le_0_5", "le_1", "le_5", "le_10", "le_20", "le_50", "le_100", "le_200", "le_1000", "overflow")
#: the suffixes of the entry size buckets' gauges, bucket by bucket
SIZE_SUFFIXES = ("le_128", "le_512", "le_1_kb", "le_2_kb", "le_4_kb", "le_16_kb", "le_100_kb", "le_1_mb", "le_overflow")

_HISTOGRAMS = (
    ("pulsar_storage_write_latency", LATENCY_SUFFIXES, "Entries stored by how long from their append until durable (ms buckets, sum in us)"),
    ("pulsar_storage_ledger_write_latency", LATENCY_SUFFIXES, "Entries stored by how long their commit round wrote and synced (ms buckets, sum in us)"),
    ("pulsar_entry_size", SIZE_SUFFIXES, "Entries stored by size (bytes)"),
)

_TOPIC_GAUGES = (
    ("pulsar_storage_logical_size", "Bytes stored for the topic, without replicas"),
    ("pulsar_storage_backlog_size", "Estimated bytes of the slowest subscription's backlog"),
    ("pulsar_storage_backlog_quota_limit", "The topic's backlog size quota in bytes (-1: none)"),
    ("pulsar_storage_backlog_quota_limit_time", "The topic's backlog time quota in seconds (-1: none)"),
    ("pulsar_average_msg_size", "Average size of the messages published over the rate window (bytes)"),
    ("pulsar_txn_tb_active_total", "Transactions open on the topic"),
    ("pulsar_txn_tb_aborted_total", "Transactions aborted on the topic"),
    ("pulsar_txn_tb_committed_total", "Transactions committed on the topic"),
)

_SUBSCRIPTION_GAUGES = (
    ("pulsar_subscription_back_log_no_delayed", "Unacknowledged entries not held back for delayed delivery"),
    ("pulsar_subscription_delayed", "Entries held back for delayed delivery"),
    ("pulsar_subscription_blocked_on_unacked_messages", "1 while the subscription is blocked by its unacknowledged limit"),
    ("pulsar_subscription_msg_throughput_out", "Bytes per second delivered by the subscription"),
    ("pulsar_subscription_total_msg_expired", "Messages expired by TTL or expire-messages"),
    ("pulsar_subscription_last_expire_timestamp", "When messages last expired (epoch ms, 0: never)"),
    ("pulsar_subscription_last_acked_timestamp", "When a consumer last acknowledged (epoch ms)"),
    ("pulsar_subscription_last_consumed_flow_timestamp", "When a consumer last sent FLOW (epoch ms)"),
    ("pulsar_subscription_last_consumed_timestamp", "When a message was last delivered (epoch ms)"),
    ("pulsar_subscription_last_mark_delete_advanced_timestamp", "When the mark-delete position last moved (epoch ms)"),
)

_NO_LATENCIES = LatencyCounts()


class TopicStorageFamilies:
    """The families above, filled topic by topic during one scrape."""

    def __init__(self, labels: list[str]) -> None:
        sub_labels = [*labels, "subscription"]
        self.buckets = {
            name: [GaugeMetricFamily(f"{name}_{suffix}", doc, labels=labels) for suffix in suffixes]
            for name, suffixes, doc in _HISTOGRAMS
        }
        self.totals = {
            name: (GaugeMetricFamily(f"{name}_count", doc, labels=labels), GaugeMetricFamily(f"{name}_sum", doc, labels=labels))
            for name, _, doc in _HISTOGRAMS
        }
        self.gauges = {name: GaugeMetricFamily(name, doc, labels=labels) for name, doc in _TOPIC_GAUGES}
        self.sub_gauges = {name: GaugeMetricFamily(name, doc, labels=sub_labels) for name, doc in _SUBSCRIPTION_GAUGES}

    def add_topic(self, values: list[str], topic: Topic, subs: list[SubscriptionBase], numbers: dict[str, float]) -> None:
        """One topic's histograms and gauges (``subs``: its subscriptions but the replicators',
        ``numbers``: its rates and counters from the stats tracker)."""
        latencies = topic.storage_latencies
        self._histogram("pulsar_storage_write_latency", values, latencies.write if latencies else _NO_LATENCIES)
        self._histogram("pulsar_storage_ledger_write_latency", values, latencies.ledger_write if latencies else _NO_LATENCIES)
        sizes = topic.entry_sizes
        for family, count in zip(self.buckets["pulsar_entry_size"], sizes, strict=True):
            family.add_metric(values, count)
        count_family, sum_family = self.totals["pulsar_entry_size"]
        count_family.add_metric(values, sum(sizes))
        sum_family.add_metric(values, topic.bytes_in_counter if topic.persistent else 0)
        storage = topic.stats_storage_size()
        entries = max(0, topic.last_entry_id - topic.first_entry_id + 1)
        average_entry = storage / entries if entries else 0.0
        quotas = topic.policies
        buffer = getattr(topic, "txn_buffer", None)
        gauges = self.gauges
        gauges["pulsar_storage_logical_size"].add_metric(values, storage)
        # as the stats' backlogSize: the slowest subscription's backlog at the topic's average entry size
        gauges["pulsar_storage_backlog_size"].add_metric(values, int(max((s.backlog() for s in subs), default=0) * average_entry))
        gauges["pulsar_storage_backlog_quota_limit"].add_metric(values, quotas.size_quota.limit if quotas.size_quota else -1)
        gauges["pulsar_storage_backlog_quota_limit_time"].add_metric(values, quotas.time_quota.limit if quotas.time_quota else -1)
        rate_in = numbers["msgRateIn"]
        gauges["pulsar_average_msg_size"].add_metric(values, numbers["msgThroughputIn"] / rate_in if rate_in else 0.0)
        gauges["pulsar_txn_tb_active_total"].add_metric(values, len(buffer.ongoing) if buffer is not None else 0)
        gauges["pulsar_txn_tb_aborted_total"].add_metric(values, buffer.aborted_count if buffer is not None else 0)
        gauges["pulsar_txn_tb_committed_total"].add_metric(values, buffer.committed_count if buffer is not None else 0)

    def add_subscription(self, values: list[str], sub: SubscriptionBase, backlog: int, numbers: dict[str, float]) -> None:
        """One subscription's gauges (``values``: its labels' values, ``numbers``: its tracker numbers)."""
        tracker = getattr(sub, "delayed", None)
        delayed = len(tracker) if tracker is not None else 0
        g = self.sub_gauges
        g["pulsar_subscription_back_log_no_delayed"].add_metric(values, max(0, backlog - delayed))
        g["pulsar_subscription_delayed"].add_metric(values, delayed)
        g["pulsar_subscription_blocked_on_unacked_messages"].add_metric(values, int(sub.blocked_on_unacked()))
        g["pulsar_subscription_msg_throughput_out"].add_metric(values, numbers["msgThroughputOut"])
        g["pulsar_subscription_total_msg_expired"].add_metric(values, getattr(sub, "msg_expired_counter", 0))
        g["pulsar_subscription_last_expire_timestamp"].add_metric(values, int(getattr(sub, "last_expire_time", 0.0) * 1000))
        consumers = sub.consumers
        g["pulsar_subscription_last_acked_timestamp"].add_metric(values, max((c.last_acked_ms for c in consumers), default=0))
        g["pulsar_subscription_last_consumed_flow_timestamp"].add_metric(values, sub.last_consumed_flow_ms)
        g["pulsar_subscription_last_consumed_timestamp"].add_metric(values, max((c.last_consumed_ms for c in consumers), default=0))
        g["pulsar_subscription_last_mark_delete_advanced_timestamp"].add_metric(values, sub.last_mark_delete_advanced_ms)

    def _histogram(self, name: str, values: list[str], latencies: LatencyCounts) -> None:
        for family, count in zip(self.buckets[name], latencies.counts, strict=True):
            family.add_metric(values, count)
        count_family, sum_family = self.totals[name]
        count_family.add_metric(values, sum(latencies.counts))
        sum_family.add_metric(values, latencies.sum_us)

    def collect(self) -> Iterator[Metric]:
        """Every family, once every topic was added."""
        for name, _, _ in _HISTOGRAMS:
            yield from self.buckets[name]
            yield from self.totals[name]
        yield from self.gauges.values()
        yield from self.sub_gauges.values()
