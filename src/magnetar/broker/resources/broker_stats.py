"""pulsar-admin's ``broker-stats``: this broker's topics by namespace and bundle, its monitoring
metrics, its load report, and the JVM-only views (MBeans, Netty allocators) in Pulsar's shapes with
what a Python process has.

- ``topics``: Pulsar's ``{namespace: {bundle: {domain: {topic: stats}}}}``, each topic's TopicStats
  (a namespace is one bundle, the full hash range).
- ``metrics``: Pulsar's ``Metrics`` list: one entry per namespace (``brk_*`` figures, dimensions
  broker / cluster / namespace) and one for the process (CPU seconds, resident memory, garbage
  collections, threads: what the JVM entry holds, for CPython).
- ``mbeans``: an empty list (a Python process has no JMX).
- ``allocator_stats``: Pulsar's AllocatorStats with no arenas and no caches (magnetar has no Netty
  pooled allocator: memory comes from Python's allocator).
- ``load_report``: the modular load manager's LocalBrokerData with this process's CPU and memory.
"""

from __future__ import annotations

import gc
import os
import resource
import threading
import time
from typing import TYPE_CHECKING, Any

from magnetar import __version__
from magnetar.broker.replication.names import is_replicator
from magnetar.broker.resources.base import ResourceContext
from magnetar.broker.resources.errors import PreconditionFailedError
from magnetar.broker.resources.stats import StatsResources
from magnetar.broker.resources.stats_tracker import StatsTracker
from magnetar.protocol.topic_name import TopicName

if TYPE_CHECKING:
    from magnetar.broker.topics.base import Topic

#: a namespace's one bundle (magnetar never splits namespaces)
FULL_BUNDLE = "0x00000000_0xffffffff"
ALLOCATORS = ("default", "ml-cache")


def _rss_bytes() -> int:
    """Resident memory of this process (bytes), from /proc when there is one."""
    try:
        with open("/proc/self/statm", "rb") as f:  # a pseudo-file of the kernel: no disk behind it
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class BrokerStatsResources:
    """The broker-wide statistics of pulsar-admin's broker-stats verbs."""

    def __init__(self, ctx: ResourceContext, stats: StatsResources, tracker: StatsTracker) -> None:
        self.ctx = ctx
        self.stats = stats
        self.tracker = tracker
        self._cpu_at: tuple[float, float] = (time.monotonic(), _cpu_seconds())

    def _loaded(self) -> list[Topic]:
        return [t for t in list(self.ctx.service.topics.values()) if not t.closed]

    def _broker(self) -> str:
        config = self.ctx.config
        return f"{config.service_host}:{config.http_port}"

    async def topics(self) -> dict[str, Any]:
        """Every loaded topic's stats, by namespace, bundle and domain."""
        out: dict[str, Any] = {}
        for topic in self._loaded():
            tn = TopicName.parse(topic.name)
            domain = "persistent" if tn.persistent else "non-persistent"
            by_domain = out.setdefault(tn.namespace, {}).setdefault(FULL_BUNDLE, {}).setdefault(domain, {})
            by_domain[topic.name] = await self.stats.topic_stats(tn)
        return out

    def metrics(self) -> list[dict[str, Any]]:
        """Pulsar's Metrics list: one entry per namespace with loaded topics, then the process's."""
        config = self.ctx.config
        by_namespace: dict[str, list[Topic]] = {}
        for topic in self._loaded():
            by_namespace.setdefault(TopicName.parse(topic.name).namespace, []).append(topic)
        out = []
        for ns, topics in sorted(by_namespace.items()):
            dims = {"broker": self._broker(), "cluster": config.cluster_name, "namespace": ns}
            out.append({"metrics": self._namespace_metrics(topics), "dimensions": dims})
        out.append({"metrics": self._process_metrics(), "dimensions": {"metric": "process"}})
        return out

    def _namespace_metrics(self, topics: list[Topic]) -> dict[str, float]:
        m = dict.fromkeys((
            "brk_in_rate", "brk_in_tp_rate", "brk_out_rate", "brk_out_tp_rate", "brk_storage_size", "brk_msg_backlog",
            "brk_no_of_producers", "brk_no_of_consumers", "brk_no_of_subscriptions", "brk_no_of_replicators",
        ), 0.0)
        for topic in topics:
            numbers = self.tracker.topic_numbers(topic)
            m["brk_in_rate"] += numbers["msgRateIn"]
            m["brk_in_tp_rate"] += numbers["msgThroughputIn"]
            m["brk_out_rate"] += numbers["msgRateOut"]
            m["brk_out_tp_rate"] += numbers["msgThroughputOut"]
            m["brk_storage_size"] += topic.stats_storage_size()
            m["brk_no_of_producers"] += len(topic.producers)
            for sub in topic.subscriptions.values():
                if is_replicator(sub.name):
                    m["brk_no_of_replicators"] += 1
                    continue
                m["brk_no_of_subscriptions"] += 1
                m["brk_no_of_consumers"] += len(sub.consumers)
                m["brk_msg_backlog"] += sub.backlog()
        return m

    def _process_metrics(self) -> dict[str, float]:
        return {
            "process_cpu_seconds_total": round(_cpu_seconds(), 3),
            "process_resident_memory_bytes": _rss_bytes(),
            "python_threads": threading.active_count(),
            "python_gc_collections": sum(s["collections"] for s in gc.get_stats()),
            "python_gc_pending_objects": sum(gc.get_count()),
        }

    def _bundle_stats(self, topics: list[Topic]) -> dict[str, dict[str, Any]]:
        """The load report's ``lastStats``: Pulsar's NamespaceBundleStats of each namespace's one bundle."""
        out: dict[str, dict[str, Any]] = {}
        for topic in topics:
            ns = TopicName.parse(topic.name).namespace
            b = out.setdefault(f"{ns}/{FULL_BUNDLE}", {
                "msgRateIn": 0.0, "msgThroughputIn": 0.0, "msgRateOut": 0.0, "msgThroughputOut": 0.0,
                "consumerCount": 0, "producerCount": 0, "topics": 0, "cacheSize": 0,
            })
            numbers = self.tracker.topic_numbers(topic)
            for key in ("msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut"):
                b[key] += numbers[key]
            b["consumerCount"] += sum(len(s.consumers) for s in topic.subscriptions.values())
            b["producerCount"] += len(topic.producers)
            b["topics"] += 1
        return out

    @staticmethod
    def mbeans() -> list[dict[str, Any]]:
        """Pulsar's JMX MBeans as Metrics: none in a Python process."""
        return []

    @staticmethod
    def allocator_stats(allocator: str) -> dict[str, Any]:
        """Pulsar's AllocatorStats of ``default`` or ``ml-cache``: no Netty arenas, no caches."""
        if allocator not in ALLOCATORS:
            raise PreconditionFailedError(f"Invalid allocator name : {allocator}")
        return {
            "numDirectArenas": 0, "numHeapArenas": 0, "numThreadLocalCaches": 0,
            "normalCacheSize": 0, "smallCacheSize": 0, "usedDirectMemory": 0, "usedHeapMemory": 0,
            "directArenas": [], "heapArenas": [],
        }

    def load_report(self) -> dict[str, Any]:
        """The modular load manager's LocalBrokerData, with this process's CPU and memory."""
        config = self.ctx.config
        topics = self._loaded()
        numbers = [self.tracker.topic_numbers(t) for t in topics]
        now, cpu = time.monotonic(), _cpu_seconds()
        then, cpu_then = self._cpu_at
        self._cpu_at = (now, cpu)
        cores = os.cpu_count() or 1
        cpu_percent = 100.0 * (cpu - cpu_then) / (now - then) if now > then else 0.0
        rss_mb = _rss_bytes() / (1 << 20)
        consumers = sum(len(s.consumers) for t in topics for s in t.subscriptions.values())
        namespaces = sorted({TopicName.parse(t.name).namespace for t in topics})

        def usage(used: float, limit: float) -> dict[str, float]:
            return {"usage": used, "limit": limit}

        return {
            "webServiceUrl": config.web_service_url,
            "webServiceUrlTls": config.web_service_url_tls,
            "pulsarServiceUrl": config.broker_service_url,
            "pulsarServiceUrlTls": config.broker_service_url_tls,
            "persistentTopicsEnabled": True,
            "nonPersistentTopicsEnabled": True,
            "cpu": usage(round(cpu_percent, 2), 100.0 * cores),
            "memory": usage(round(rss_mb, 2), -1.0),
            "directMemory": usage(0.0, -1.0),
            "bandwidthIn": usage(0.0, -1.0),
            "bandwidthOut": usage(0.0, -1.0),
            "msgThroughputIn": sum(n["msgThroughputIn"] for n in numbers),
            "msgThroughputOut": sum(n["msgThroughputOut"] for n in numbers),
            "msgRateIn": sum(n["msgRateIn"] for n in numbers),
            "msgRateOut": sum(n["msgRateOut"] for n in numbers),
            "lastUpdate": int(time.time() * 1000),
            "numTopics": len(topics),
            "numBundles": len(namespaces),
            "numConsumers": consumers,
            "numProducers": sum(len(t.producers) for t in topics),
            "bundles": [f"{ns}/{FULL_BUNDLE}" for ns in namespaces],
            "lastStats": self._bundle_stats(topics),
            "lastBundleGains": [],
            "lastBundleLosses": [],
            "brokerVersionString": __version__,
            "protocols": {},
            "advertisedListeners": {},
            "loadManagerClassName": "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",
        }
