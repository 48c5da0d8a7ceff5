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

Every per-topic family is written as text (:class:`TopicFamilies`, by topic_metrics' writer), the topics
gathered 1 ms of the loop at a time: :func:`scrape` is awaited, so a scrape of 10,000 topics holds the loop
~5 ms at most, not 2.3 s at once (benchmarks/PROFILES.md section 47).
"""

from __future__ import annotations

import asyncio
import os
import resource
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

from magnetar.admin.commit_latencies import CommitLatencies, LatencyBuckets, record_commit_latencies
from magnetar.admin.topic_metrics import TextFamilies, TopicStorageFamilies, label_text, storage_family_names
from magnetar.broker.replication.names import is_replicator
from magnetar.broker.replication.stats import replication_stats
from magnetar.broker.resources.admin import BrokerAdmin
from magnetar.storage.health import storage_health

if TYPE_CHECKING:
    # a type only: importing the module loads FastAPI (19 MB), which a light /metrics scrape never needs
    from magnetar.admin.access import AccessGuard
    from magnetar.broker.topics.base import Topic

#: the Content-Type of :func:`scrape`'s text
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


#: the older per-topic and per-subscription families as (name, type, help), in the order written
_TOPIC_FAMILIES = (
    *((name, "gauge", doc) for name, doc, _ in _TOPIC_GAUGES),
    ("pulsar_storage_size", "gauge", "Bytes stored for the topic"),
    ("pulsar_msg_backlog", "gauge", "Unacknowledged entries of the topic's subscriptions"),
    ("pulsar_subscriptions_count", "gauge", "Subscriptions of the topic"),
    ("pulsar_producers_count", "gauge", "Producers of the topic"),
    ("pulsar_consumers_count", "gauge", "Consumers of the topic"),
    ("pulsar_in_messages_total", "counter", "Messages published to the topic"),
    ("pulsar_in_bytes_total", "counter", "Bytes published to the topic"),
    ("pulsar_out_messages_total", "counter", "Messages delivered from the topic"),
    ("pulsar_out_bytes_total", "counter", "Bytes delivered from the topic"),
    ("pulsar_subscription_back_log", "gauge", "Unacknowledged entries of the subscription"),
    ("pulsar_subscription_msg_rate_out", "gauge", "Messages per second delivered by the subscription"),
    ("pulsar_subscription_unacked_messages", "gauge", "Messages delivered and not acknowledged"),
    ("pulsar_subscription_consumers_count", "gauge", "Consumers of the subscription"),
)

#: seconds of the loop a scrape gathers topics for before it lets others run (a topic with its
#: subscriptions takes ~50 us: about 20 topics per turn; benchmarks/PROFILES.md section 47)
SCRAPE_TURN = 0.001
#: bytes of text written per loop turn of a scrape
SCRAPE_TEXT_TURN = 1 << 18
#: CPython's bytes.join lets go of the GIL from this many bytes
_JOIN_WITHOUT_GIL = 1 << 20


class TopicFamilies:
    """Every per-topic, per-subscription and replication family of one scrape, as text (Pulsar's names
    and labels), filled topic by topic: each topic's samples are read at once, so they are of one moment."""

    def __init__(self, admin: BrokerAdmin) -> None:
        self.admin = admin
        self.families = TextFamilies(
            [*_TOPIC_FAMILIES, *storage_family_names(), *((name, "gauge", doc) for name, doc, _ in _REPLICATION_GAUGES)]
        )
        self._storage = TopicStorageFamilies(self.families)
        self._cluster = label_text({"cluster": admin.service.config.cluster_name})

    def add_topic(self, topic: Topic) -> None:
        """One topic's samples in every family, read now."""
        admin = self.admin
        lines = self.families.lines
        labels = f"{self._cluster},{label_text({'namespace': topic.topic_name.namespace, 'topic': topic.name})}"
        head = "{" + labels + "} "
        numbers = admin.tracker.topic_numbers(topic)
        subs = [s for s in topic.subscriptions.values() if not is_replicator(s.name)]
        backlogs = [s.backlog() for s in subs]
        for name, _, field in _TOPIC_GAUGES:
            lines[name].append(f"{head}{numbers[field]}")
        for name, value in (
            ("pulsar_storage_size", topic.stats_storage_size()),
            ("pulsar_msg_backlog", sum(backlogs)),
            ("pulsar_subscriptions_count", len(subs)),
            ("pulsar_producers_count", len(topic.producers)),
            ("pulsar_consumers_count", sum(len(s.consumers) for s in subs)),
            ("pulsar_in_messages_total", numbers["msgInCounter"]),
            ("pulsar_in_bytes_total", numbers["bytesInCounter"]),
            ("pulsar_out_messages_total", numbers["msgOutCounter"]),
            ("pulsar_out_bytes_total", numbers["bytesOutCounter"]),
        ):
            lines[name].append(f"{head}{value}")
        self._storage.add_topic(labels, topic, max(backlogs, default=0), numbers)
        for sub, backlog in zip(subs, backlogs, strict=True):
            sub_labels = f"{labels},{label_text({'subscription': sub.name})}"
            sub_head = "{" + sub_labels + "} "
            sub_numbers = admin.tracker.subscription_numbers(topic, sub)
            lines["pulsar_subscription_back_log"].append(f"{sub_head}{backlog}")
            lines["pulsar_subscription_msg_rate_out"].append(f"{sub_head}{sub_numbers['msgRateOut']}")
            lines["pulsar_subscription_unacked_messages"].append(f"{sub_head}{sub.unacked_messages()}")
            lines["pulsar_subscription_consumers_count"].append(f"{sub_head}{len(sub.consumers)}")
            self._storage.add_subscription(sub_labels, sub, backlog, sub_numbers)
        for remote, stats in replication_stats(topic, admin.service, admin.tracker).items():
            remote_head = "{" + labels + "," + label_text({"remote_cluster": remote}) + "} "
            for name, _, field in _REPLICATION_GAUGES:
                lines[name].append(f"{remote_head}{float(stats[field])}")


async def topic_families_text(admin: BrokerAdmin, head: bytes = b"", turn: float = SCRAPE_TURN) -> bytes:
    """``head`` and every loaded topic's families as text, gathered ``turn`` seconds of the loop at a time
    (a topic unloaded meanwhile is left out, as it would be from a scrape a moment later), then written
    :data:`SCRAPE_TEXT_TURN` bytes or so per loop turn."""
    families = TopicFamilies(admin)
    loaded = admin.service.topics
    clock = time.perf_counter
    until = clock() + turn
    for topic in list(loaded.values()):
        if clock() >= until:
            await asyncio.sleep(0)
            until = clock() + turn
        if loaded.get(topic.name) is topic:
            families.add_topic(topic)
    chunks = [head]
    total, written = 0, len(head)
    for chunk in families.families.chunks():
        chunks.append(chunk)
        written += len(chunk)
        if written >= SCRAPE_TEXT_TURN:
            total += written
            written = 0
            await asyncio.sleep(0)
    if total + written < _JOIN_WITHOUT_GIL:
        return b"".join(chunks)
    # past 1 MiB bytes.join copies without the GIL: 9 MB (1,000 topics) took the loop 5.6 ms
    return await asyncio.to_thread(_join, chunks)


def _join(chunks: list[bytes]) -> bytes:
    """The chunks in one, freed here (in a worker thread: 10,000 topics' 90 MB took 4 ms to free)."""
    text = b"".join(chunks)
    chunks.clear()
    return text


class BrokerCollector:
    """The broker process's own metrics (the per-topic families are :class:`TopicFamilies`' text)."""

    def __init__(self, admin: BrokerAdmin) -> None:
        self.admin = admin

    def collect(self) -> Iterator[Metric]:
        """Connections, loaded topics, memory, tasks, group-commit rounds and storage health, read now."""
        service = self.admin.service
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
    """The broker's registry, which knows its broker (whose per-topic families :func:`scrape` adds)."""

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


async def scrape(registry: CollectorRegistry) -> bytes:
    """The registry in Prometheus text format; a :class:`BrokerRegistry`'s followed by every topic's
    families, gathered a slice of topics per loop turn (:func:`topic_families_text`)."""
    text = generate_latest(registry)
    return await topic_families_text(registry.broker.admin, text) if isinstance(registry, BrokerRegistry) else text
