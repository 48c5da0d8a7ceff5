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
reads them at scrape time. :class:`TextFamilies` is /metrics' one writer of the text format for every
per-topic family (these and :mod:`magnetar.admin.metrics`' older ones): through prometheus_client's
families (a dict and a Sample per sample, the labels escaped again for each) these ~50 samples per topic
took 353 ms of the loop per 1,000 topics more, written here 11 ms (benchmarks/PROFILES.md §45, §47).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

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

#: samples per chunk of :meth:`TextFamilies.chunks` (~250 KiB, under a millisecond to write)
CHUNK_LINES = 2000


def label_text(values: dict[str, str]) -> str:
    """Labels as the text format writes them, between braces (values escaped as prometheus_client does)."""
    return ",".join(f'{name}="{_escape(value)}"' for name, value in values.items())


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class TextFamilies:
    """Families in the Prometheus text format, their samples added as text lines: /metrics' one writer
    of per-topic samples (prometheus_client's families build a dict and a Sample per sample, and escape
    the labels again for each: 8x the CPU, benchmarks/PROFILES.md section 45)."""

    def __init__(self, families: Iterable[tuple[str, str, str]]) -> None:
        #: every family as name -> (type, help, lines after the name), in the order written
        self._families: dict[str, tuple[str, str, list[str]]] = {}
        for name, kind, doc in families:
            self._families[name] = (kind, doc, [])
        #: each family's sample lines (labels and value, after its name), to append to
        self.lines = {name: lines for name, (_, _, lines) in self._families.items()}

    def chunks(self) -> Iterator[bytes]:
        """Every family in the text format (HELP, TYPE, its samples) in chunks of up to
        :data:`CHUNK_LINES` samples, each family emptied once written. The samples are joined in one C
        call per chunk, not line by line, and freed family by family, not all at the end (10,000
        topics' 800,000 lines took the loop 40 ms to free at once, one family of them 2-8 ms to join)."""
        for name, (kind, doc, lines) in self._families.items():
            head = f"# HELP {name} {doc}\n# TYPE {name} {kind}\n"
            if not lines:
                yield head.encode()
            separator = "\n" + name
            for start in range(0, len(lines), CHUNK_LINES):
                yield f"{head}{name}{separator.join(lines[start : start + CHUNK_LINES])}\n".encode()
                head = ""
            lines.clear()

    def text(self) -> bytes:
        """Every family in the text format, at once (emptying them)."""
        return b"".join(self.chunks())


def storage_family_names() -> Iterator[tuple[str, str, str]]:
    """The families above as (name, type, help), in the order written."""
    for name, suffixes, doc in _HISTOGRAMS:
        for suffix in (*suffixes, "count", "sum"):
            yield f"{name}_{suffix}", "gauge", doc
    for name, doc in (*_TOPIC_GAUGES, *_SUBSCRIPTION_GAUGES):
        yield name, "gauge", doc


class TopicStorageFamilies:
    """The families above, filled topic by topic during one scrape into a :class:`TextFamilies`."""

    def __init__(self, families: TextFamilies) -> None:
        self._lines = families.lines

    def add_topic(self, labels: str, topic: Topic, subs_backlog: int, numbers: dict[str, float]) -> None:
        """One topic's histograms and gauges (``labels``: its :func:`label_text`, ``subs_backlog``: the
        largest backlog of its subscriptions, ``numbers``: its rates and counters from the stats tracker)."""
        head = "{" + labels + "} "
        latencies = topic.storage_latencies
        self._histogram("pulsar_storage_write_latency", head, latencies.write if latencies else _NO_LATENCIES)
        self._histogram("pulsar_storage_ledger_write_latency", head, latencies.ledger_write if latencies else _NO_LATENCIES)
        lines = self._lines
        sizes = topic.entry_sizes
        for suffix, count in zip(SIZE_SUFFIXES, sizes, strict=True):
            lines["pulsar_entry_size_" + suffix].append(f"{head}{count}")
        lines["pulsar_entry_size_count"].append(f"{head}{sum(sizes)}")
        lines["pulsar_entry_size_sum"].append(f"{head}{topic.bytes_in_counter if topic.persistent else 0}")
        storage = topic.stats_storage_size()
        entries = max(0, topic.last_entry_id - topic.first_entry_id + 1)
        quotas = topic.policies
        buffer = getattr(topic, "txn_buffer", None)
        rate_in = numbers["msgRateIn"]
        for name, value in (
            ("pulsar_storage_logical_size", storage),
            # as the stats' backlogSize: the slowest subscription's backlog at the topic's average entry size
            ("pulsar_storage_backlog_size", int(subs_backlog * storage / entries) if entries else 0),
            ("pulsar_storage_backlog_quota_limit", quotas.size_quota.limit if quotas.size_quota else -1),
            ("pulsar_storage_backlog_quota_limit_time", quotas.time_quota.limit if quotas.time_quota else -1),
            ("pulsar_average_msg_size", numbers["msgThroughputIn"] / rate_in if rate_in else 0.0),
            ("pulsar_txn_tb_active_total", len(buffer.ongoing) if buffer is not None else 0),
            ("pulsar_txn_tb_aborted_total", buffer.aborted_count if buffer is not None else 0),
            ("pulsar_txn_tb_committed_total", buffer.committed_count if buffer is not None else 0),
        ):
            lines[name].append(f"{head}{value}")

    def add_subscription(self, labels: str, sub: SubscriptionBase, backlog: int, numbers: dict[str, float]) -> None:
        """One subscription's gauges (``labels``: its :func:`label_text`, ``numbers``: its tracker numbers)."""
        head = "{" + labels + "} "
        tracker = getattr(sub, "delayed", None)
        delayed = len(tracker) if tracker is not None else 0
        consumers = sub.consumers
        lines = self._lines
        for name, value in (
            ("pulsar_subscription_back_log_no_delayed", max(0, backlog - delayed)),
            ("pulsar_subscription_delayed", delayed),
            ("pulsar_subscription_blocked_on_unacked_messages", int(sub.blocked_on_unacked())),
            ("pulsar_subscription_msg_throughput_out", numbers["msgThroughputOut"]),
            ("pulsar_subscription_total_msg_expired", getattr(sub, "msg_expired_counter", 0)),
            ("pulsar_subscription_last_expire_timestamp", int(getattr(sub, "last_expire_time", 0.0) * 1000)),
            ("pulsar_subscription_last_acked_timestamp", max((c.last_acked_ms for c in consumers), default=0)),
            ("pulsar_subscription_last_consumed_flow_timestamp", sub.last_consumed_flow_ms),
            ("pulsar_subscription_last_consumed_timestamp", max((c.last_consumed_ms for c in consumers), default=0)),
            ("pulsar_subscription_last_mark_delete_advanced_timestamp", sub.last_mark_delete_advanced_ms),
        ):
            lines[name].append(f"{head}{value}")

    def _histogram(self, name: str, head: str, latencies: LatencyCounts) -> None:
        lines = self._lines
        for suffix, count in zip(LATENCY_SUFFIXES, latencies.counts, strict=True):
            lines[f"{name}_{suffix}"].append(f"{head}{count}")
        lines[name + "_count"].append(f"{head}{sum(latencies.counts)}")
        lines[name + "_sum"].append(f"{head}{latencies.sum_us}")
