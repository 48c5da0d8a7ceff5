"""CPU of the per-topic storage families of one /metrics scrape (admin/topic_metrics.py), in process.

Fake topics of the shape the collector reads (one subscription each, every histogram filled), the
families written for N topics and rendered, the median of 5 scrapes in thread CPU; then the same
samples through prometheus_client's GaugeMetricFamily / generate_latest, the way the rest of /metrics
is written, for comparison.

usage: PYTHONPATH=src python benchmarks/topic_metrics_scrape.py [--topics 1000]
"""

from __future__ import annotations

import argparse
import statistics
import time
import types
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric

from magnetar.admin.topic_metrics import TopicStorageFamilies, label_text
from magnetar.broker.topics.storage_stats import StorageLatencies, new_entry_sizes


class _Sub:
    name = "sub"
    delayed = None
    msg_expired_counter = 0
    last_expire_time = 0.0
    consumers: list[object] = []
    last_consumed_flow_ms = 1_795_993_422_195
    last_mark_delete_advanced_ms = 1_795_993_422_235

    def blocked_on_unacked(self) -> bool:
        return False


class _Topic:
    persistent = True
    bytes_in_counter = 6609
    last_entry_id = 9
    first_entry_id = 0
    txn_buffer = None
    policies = types.SimpleNamespace(size_quota=None, time_quota=None)

    def __init__(self) -> None:
        self.storage_latencies = StorageLatencies()
        self.storage_latencies.write.add(2_500, 5)
        self.storage_latencies.ledger_write.add(1_500, 5)
        self.entry_sizes = new_entry_sizes()
        self.entry_sizes[1] = 3

    def stats_storage_size(self) -> int:
        return 6649


_NUMBERS = {"msgRateIn": 5.0, "msgThroughputIn": 6609.0, "msgThroughputOut": 6609.0}


def text_scrape(topics: list[_Topic]) -> bytes:
    """The families as /metrics writes them now."""
    families = TopicStorageFamilies()
    sub = _Sub()
    for i, topic in enumerate(topics):
        labels = label_text({"cluster": "standalone", "namespace": "public/default", "topic": f"persistent://public/default/t{i}"})
        families.add_topic(labels, topic, 3, _NUMBERS)
        families.add_subscription(f"{labels},{label_text({'subscription': sub.name})}", sub, 3, _NUMBERS)
    return families.text()


def client_library_scrape(topics: list[_Topic]) -> Callable[[], bytes]:
    """A scrape of the same samples (names, labels, values) through prometheus_client (the samples
    taken from the text once, outside the scrape)."""
    samples: list[tuple[str, list[str], list[str], float]] = []
    for line in text_scrape(topics).decode().splitlines():
        if line.startswith("#"):
            continue
        name, rest = line.split("{", 1)
        labels, value = rest.rsplit("} ", 1)
        pairs = [pair.split("=", 1) for pair in labels.split('",')]
        samples.append((name, [k for k, _ in pairs], [v.strip('"') for _, v in pairs], float(value)))

    class _Collector:
        def collect(self) -> Iterator[Metric]:
            families: dict[str, GaugeMetricFamily] = {}
            for name, keys, values, value in samples:
                family = families.get(name)
                if family is None:
                    family = families[name] = GaugeMetricFamily(name, "doc", labels=keys)
                family.add_metric(values, value)
            yield from families.values()

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector())
    return lambda: generate_latest(registry)


def _median_cpu(scrape: Callable[[], bytes]) -> tuple[float, int]:
    scrape()
    times = []
    for _ in range(5):
        start = time.thread_time()
        out = scrape()
        times.append(time.thread_time() - start)
    return statistics.median(times), len(out)


def main() -> None:
    """Print the CPU per scrape of both ways."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=1000)
    args = parser.parse_args()
    topics = [_Topic() for _ in range(args.topics)]
    cpu, size = _median_cpu(lambda: text_scrape(topics))
    print(f"text writer:       {cpu * 1000:7.1f} ms CPU per scrape of {args.topics} topics ({size // 1024} KiB)")
    cpu, size = _median_cpu(client_library_scrape(topics))
    print(f"prometheus_client: {cpu * 1000:7.1f} ms CPU per scrape of {args.topics} topics ({size // 1024} KiB)")


if __name__ == "__main__":
    main()
