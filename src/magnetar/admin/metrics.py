"""GET /metrics: Prometheus text with Pulsar's topic metrics and magnetar's own.

Topic metrics (``pulsar_*``) carry the labels cluster, namespace and topic (and subscription for
the ``pulsar_subscription_*`` ones), for every loaded topic. ``magnetar_*`` metrics describe the
process: connections, group-commit fsync rounds, resident memory. Security counters:
``pulsar_authentication_success_total`` / ``pulsar_authentication_failures_total`` (Pulsar's names
and labels: provider_name, auth_method, reason) and ``magnetar_authorization_refusals_total``
(by protocol and operation; Pulsar has no metric of its own for refusals). Transactions: Pulsar's
``pulsar_txn_active_count`` and ``pulsar_txn_{created,committed,aborted,timeout,append_log}_total``
per coordinator. Pulsar's per-topic storage histograms (write latency, ledger write latency, entry
size) and the other storage and subscription gauges: :mod:`magnetar.admin.topic_metrics`.
"""

from __future__ import annotations

import asyncio
import os
import resource
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

from magnetar.admin.commit_latencies import CommitLatencies, LatencyBuckets, record_commit_latencies
from magnetar.admin.topic_metrics import TopicStorageFamilies, label_text
from magnetar.broker.replication.names import is_replicator
from magnetar.broker.replication.stats import replication_stats
from magnetar.broker.resources.admin import BrokerAdmin
from magnetar.storage.health import storage_health

if TYPE_CHECKING:
    # a type only: importing the module loads FastAPI (19 MB), which a light /metrics scrape never needs
    from magnetar.admin.access import AccessGuard

#: the Content-Type of :func:`render`'s text
CONTENT_TYPE = CONTENT_TYPE_LATEST

#: Pulsar's replication metrics, labelled by remote_cluster: (name, help, ReplicatorStats field)
_REPLICATION_GAUGES = (
    ("pulsar_replication_rate_in", "Messages per second received from the remote cluster", "msgRateIn"),
    ("pulsar_replication_rate_out", "Messages per second replicated to the remote cluster", "msgRateOut"),
    ("pulsar_replication_throughput_in", "Bytes per second received from the remote cluster", "msgThroughputIn"),
    ("pulsar_replication_throughput_out", "Bytes per second replicated to the remote cluster", "msgThroughputOut"),
    ("pulsar_replication_backlog", "Entries not yet replicated to the remote cluster", "replicationBacklog"),
    ("pulsar_replication_connected_count", "Replicators connected to the remote cluster", "connected"),
    ("pulsar_replication_rate_expired", "Messages per second expired before replication", "msgRateExpired"),
    ("pulsar_replication_delay_in_seconds", "Age of the oldest message not yet replicated", "replicationDelayInSeconds"),
)

_TOPIC_GAUGES = (
    ("pulsar_rate_in", "Messages per second published to the topic", "msgRateIn"),
    ("pulsar_rate_out", "Messages per second delivered from the topic", "msgRateOut"),
    ("pulsar_throughput_in", "Bytes per second published to the topic", "msgThroughputIn"),
    ("pulsar_throughput_out", "Bytes per second delivered from the topic", "msgThroughputOut"),
)


def rss_bytes() -> int:
    """Resident memory of this process."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def asyncio_task_count() -> int | None:
    """Tasks not yet done on the running event loop (the broker's, when scraped), or None outside a loop."""
    try:
        return len(asyncio.all_tasks())
    except RuntimeError:
        return None


class BrokerCollector:
    """Builds every broker metric at scrape time (Pulsar's per-topic storage families as text, which
    :func:`render` writes after the registry's: :mod:`magnetar.admin.topic_metrics`)."""

    def __init__(self, admin: BrokerAdmin) -> None:
        self.admin = admin
        #: the storage families' text of the last collect
        self.storage_text = b""

    def collect(self) -> Iterator[Metric]:
        """Every topic, subscription and process metric, read now."""
        admin = self.admin
        service = admin.service
        labels = ["cluster", "namespace", "topic"]
        sub_labels = [*labels, "subscription"]
        gauges = {name: GaugeMetricFamily(name, doc, labels=labels) for name, doc, _ in _TOPIC_GAUGES}
        storage = GaugeMetricFamily("pulsar_storage_size", "Bytes stored for the topic", labels=labels)
        backlog = GaugeMetricFamily("pulsar_msg_backlog", "Unacknowledged entries of the topic's subscriptions", labels=labels)
        subs_count = GaugeMetricFamily("pulsar_subscriptions_count", "Subscriptions of the topic", labels=labels)
        producers_count = GaugeMetricFamily("pulsar_producers_count", "Producers of the topic", labels=labels)
        consumers_count = GaugeMetricFamily("pulsar_consumers_count", "Consumers of the topic", labels=labels)
        in_msgs = CounterMetricFamily("pulsar_in_messages", "Messages published to the topic", labels=labels)
        in_bytes = CounterMetricFamily("pulsar_in_bytes", "Bytes published to the topic", labels=labels)
        out_msgs = CounterMetricFamily("pulsar_out_messages", "Messages delivered from the topic", labels=labels)
        out_bytes = CounterMetricFamily("pulsar_out_bytes", "Bytes delivered from the topic", labels=labels)
        sub_backlog = GaugeMetricFamily("pulsar_subscription_back_log", "Unacknowledged entries of the subscription", labels=sub_labels)
        sub_rate = GaugeMetricFamily("pulsar_subscription_msg_rate_out", "Messages per second delivered by the subscription", labels=sub_labels)
        sub_unacked = GaugeMetricFamily("pulsar_subscription_unacked_messages", "Messages delivered and not acknowledged", labels=sub_labels)
        sub_consumers = GaugeMetricFamily("pulsar_subscription_consumers_count", "Consumers of the subscription", labels=sub_labels)
        storage_families = TopicStorageFamilies()
        for topic in list(service.topics.values()):
            values = [service.config.cluster_name, topic.topic_name.namespace, topic.name]
            topic_labels = label_text(dict(zip(labels, values, strict=True)))
            numbers = admin.tracker.topic_numbers(topic)
            for name, _, field in _TOPIC_GAUGES:
                gauges[name].add_metric(values, numbers[field])
            storage.add_metric(values, topic.stats_storage_size())
            subs = [s for s in topic.subscriptions.values() if not is_replicator(s.name)]
            backlogs = [s.backlog() for s in subs]
            backlog.add_metric(values, sum(backlogs))
            storage_families.add_topic(topic_labels, topic, max(backlogs, default=0), numbers)
            subs_count.add_metric(values, len(subs))
            producers_count.add_metric(values, len(topic.producers))
            consumers_count.add_metric(values, sum(len(s.consumers) for s in subs))
            in_msgs.add_metric(values, numbers["msgInCounter"])
            in_bytes.add_metric(values, numbers["bytesInCounter"])
            out_msgs.add_metric(values, numbers["msgOutCounter"])
            out_bytes.add_metric(values, numbers["bytesOutCounter"])
            for sub, sub_backlog_value in zip(subs, backlogs, strict=True):
                sv = [*values, sub.name]
                sub_numbers = admin.tracker.subscription_numbers(topic, sub)
                sub_backlog.add_metric(sv, sub_backlog_value)
                sub_rate.add_metric(sv, sub_numbers["msgRateOut"])
                sub_unacked.add_metric(sv, sub.unacked_messages())
                sub_consumers.add_metric(sv, len(sub.consumers))
                sub_text = f"{topic_labels},{label_text({'subscription': sub.name})}"
                storage_families.add_subscription(sub_text, sub, sub_backlog_value, sub_numbers)
        yield from gauges.values()
        yield from (storage, backlog, subs_count, producers_count, consumers_count, in_msgs, in_bytes, out_msgs, out_bytes)
        yield from (sub_backlog, sub_rate, sub_unacked, sub_consumers)
        self.storage_text = storage_families.text()
        yield from replication_metrics(admin)

        yield GaugeMetricFamily("magnetar_connections", "Open client connections", value=len(service.connections))
        yield GaugeMetricFamily("magnetar_topics_loaded", "Topics loaded in memory", value=len(service.topics))
        yield GaugeMetricFamily("magnetar_process_resident_memory_bytes", "Resident memory of the broker process", value=rss_bytes())
        tasks = asyncio_task_count()
        if tasks is not None:
            yield GaugeMetricFamily("magnetar_asyncio_tasks", "Tasks alive on the broker's event loop", value=tasks)
        committer = getattr(service, "committer", None)
        if committer is not None:
            yield CounterMetricFamily("magnetar_fsync_rounds", "Group-commit sync rounds completed", value=committer.rounds)
            yield CounterMetricFamily(
                "magnetar_fsync_seconds", "Seconds spent in group-commit sync rounds", value=committer.sync_seconds_total
            )
        yield from storage_health_metrics()


def replication_metrics(admin: BrokerAdmin) -> Iterator[Metric]:
    """Pulsar's ``pulsar_replication_*`` metrics of every loaded topic that replicates or is replicated to."""
    service = admin.service
    labels = ["cluster", "namespace", "topic", "remote_cluster"]
    gauges = {name: GaugeMetricFamily(name, doc, labels=labels) for name, doc, _ in _REPLICATION_GAUGES}
    for topic in list(service.topics.values()):
        for remote, numbers in replication_stats(topic, service, admin.tracker).items():
            values = [service.config.cluster_name, topic.topic_name.namespace, topic.name, remote]
            for name, _, field in _REPLICATION_GAUGES:
                gauges[name].add_metric(values, float(numbers[field]))
    yield from gauges.values()


def storage_health_metrics() -> Iterator[Metric]:
    """What storage met: write failures, fenced ledgers, damaged entries skipped, a full disk."""
    health = storage_health
    yield CounterMetricFamily("magnetar_storage_write_errors", "Ledger append and sync failures", value=health.write_errors)
    yield CounterMetricFamily(
        "magnetar_storage_metadata_write_errors", "Metadata (SQLite) writes that failed", value=health.metadata_write_errors
    )
    yield CounterMetricFamily("magnetar_storage_ledgers_fenced", "Ledgers fenced after a failed fsync", value=health.ledgers_fenced)
    yield CounterMetricFamily(
        "magnetar_storage_damaged_entries_skipped", "Entries damaged on disk that dispatch skipped",
        value=health.damaged_entries_skipped,
    )
    yield GaugeMetricFamily("magnetar_storage_disk_full", "1 while storage writes fail for want of space", value=int(health.disk_full))


class SecurityCollector:
    """Authentication outcomes and authorization refusals, read at scrape time."""

    def __init__(self, admin: BrokerAdmin, access: AccessGuard | None) -> None:
        self.admin = admin
        self.access = access

    def collect(self) -> Iterator[Metric]:
        """The counters of the authentication service (when configured) and of the refusals."""
        service = self.admin.service
        authn = getattr(service, "authentication", None)
        families: dict[str, tuple[CounterMetricFamily, list[str]]] = {}
        if authn is not None:
            for name, labels, value in authn.counters.samples():
                if name not in families:
                    doc = "Authentication successes" if "success" in name else "Authentication failures"
                    families[name] = (CounterMetricFamily(name, doc, labels=list(labels)), list(labels))
                family, names = families[name]
                family.add_metric([labels[k] for k in names], value)
        yield from (family for family, _ in families.values())
        refusals = CounterMetricFamily(
            "magnetar_authorization_refusals", "Operations refused by authorization", labels=["protocol", "operation"]
        )
        if self.access is not None:
            for operation, count in sorted(self.access.refusals.items()):
                refusals.add_metric(["http", operation], count)
        binary = getattr(getattr(service, "authorization", None), "refusals", None)
        for operation, count in sorted((binary or {}).items()):
            refusals.add_metric(["binary", str(operation)], count)
        yield refusals


class TransactionCollector:
    """Pulsar's transaction coordinator metrics (``pulsar_txn_*``), per coordinator id."""

    def __init__(self, admin: BrokerAdmin) -> None:
        self.admin = admin

    def collect(self) -> Iterator[Metric]:
        """Active transactions and the counters of created, committed, aborted and timed-out ones."""
        transactions = getattr(self.admin.service, "transactions", None)
        if transactions is None:
            return
        labels = ["cluster", "coordinator_id"]
        active = GaugeMetricFamily("pulsar_txn_active_count", "Transactions not yet ended", labels=labels)
        counters = {
            name: CounterMetricFamily(f"pulsar_txn_{name}", doc, labels=labels)
            for name, doc in (
                ("created", "Transactions created"),
                ("committed", "Transactions committed"),
                ("aborted", "Transactions aborted"),
                ("timeout", "Transactions aborted by their timeout"),
                ("append_log", "Records appended to the transaction log"),
            )
        }
        for tc_id, coordinator in sorted(transactions.coordinators.items()):
            values = [self.admin.service.config.cluster_name, str(tc_id)]
            active.add_metric(values, len(coordinator.txns))
            counters["created"].add_metric(values, coordinator.created_count)
            counters["committed"].add_metric(values, coordinator.committed_count)
            counters["aborted"].add_metric(values, coordinator.aborted_count)
            counters["timeout"].add_metric(values, coordinator.timeout_count)
            counters["append_log"].add_metric(values, coordinator.append_count)
        yield active
        yield from counters.values()


class CommitLatencyCollector:
    """The group committer's histograms, from the buckets recorded since the broker started."""

    def __init__(self, latencies: CommitLatencies) -> None:
        self.latencies = latencies

    def collect(self) -> Iterator[Metric]:
        """``magnetar_fsync_round_seconds`` and ``magnetar_append_latency_seconds``, read now."""
        yield _histogram(
            "magnetar_fsync_round_seconds",
            "Duration of one group-commit sync round (fsync of every topic appended to)",
            self.latencies.rounds,
        )
        yield _histogram(
            "magnetar_append_latency_seconds",
            "Per group-commit round, the wait of its oldest append until durable (the worst append-to-receipt latency)",
            self.latencies.append_waits,
        )


def _histogram(name: str, documentation: str, buckets: LatencyBuckets) -> Metric:
    """One histogram family as prometheus_client's ``Histogram`` writes it (``_created`` included)."""
    cumulative, total = buckets.snapshot()
    family = HistogramMetricFamily(name, documentation)
    family.add_metric([], [(floatToGoString(bound), float(count)) for bound, count in cumulative], total)
    family.samples.append(Sample(name + "_created", {}, buckets.created))
    return family


class BrokerRegistry(CollectorRegistry):
    """The broker's registry, which knows its broker collector (whose storage text :func:`render` adds)."""

    def __init__(self, broker: BrokerCollector) -> None:
        super().__init__(auto_describe=False)
        self.broker = broker
        self.register(broker)


def build_registry(admin: BrokerAdmin, access: AccessGuard | None = None) -> CollectorRegistry:
    """A registry with the broker and security collectors and the fsync-round and append latency histograms
    (what the committer recorded since the broker started, see :mod:`magnetar.admin.commit_latencies`)."""
    registry = BrokerRegistry(BrokerCollector(admin))
    registry.register(SecurityCollector(admin, access))
    registry.register(TransactionCollector(admin))
    registry.register(CommitLatencyCollector(record_commit_latencies(getattr(admin.service, "committer", None))))
    return registry


def render(registry: CollectorRegistry) -> bytes:
    """The registry in Prometheus text format; a :class:`BrokerRegistry`'s with the storage families its
    broker collector wrote during that collect."""
    text = generate_latest(registry)
    if isinstance(registry, BrokerRegistry):
        text += registry.broker.storage_text
        registry.broker.storage_text = b""
    return text
