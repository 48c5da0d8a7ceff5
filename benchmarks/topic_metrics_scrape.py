"""CPU of one /metrics scrape of many topics, and how long it holds the event loop at once, in process.

Fake topics of the shape the collector reads (one subscription each, every histogram filled, the real
stats tracker's rates), N topics loaded:

1. the storage families alone, written as text (admin/topic_metrics.py) and, for comparison, the same
   samples through prometheus_client's GaugeMetricFamily / generate_latest (median of 5, thread CPU);
2. the whole scrape (``metrics.scrape``) on a running loop, while a ticker task turns on the same loop:
   the loop thread's CPU per scrape, and the longest hold (the most CPU, and the most wall time, between
   two turns of the ticker), for: every topic gathered in one turn; turns of 20, 5, 2 and 1 ms (the text
   then written ~512 KiB per turn, joined in a worker thread); slices of 250 and 25 topics with all the
   text written in a worker thread. Run with a tree before session 9's scrape change (``--before``:
   PYTHONPATH at that tree) it times that tree's ``render`` (prometheus_client for the older families).

usage: PYTHONPATH=src python benchmarks/topic_metrics_scrape.py [--topics 1000] [--before]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import types
from collections.abc import Awaitable, Callable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric

from magnetar.admin import metrics, topic_metrics
from magnetar.admin.topic_metrics import TopicStorageFamilies, label_text
from magnetar.broker.resources.stats_tracker import StatsTracker
from magnetar.broker.topics.storage_stats import StorageLatencies, new_entry_sizes
from magnetar.protocol.topic_name import TopicName


class _Sub:
    name = "sub"
    delayed = None
    msg_expired_counter = 0
    last_expire_time = 0.0
    consumers: list[object] = []
    last_consumed_flow_ms = 1_795_993_422_195
    last_mark_delete_advanced_ms = 1_795_993_422_235
    msg_out_counter = 7
    bytes_out_counter = 4_000

    def blocked_on_unacked(self) -> bool:
        return False

    def backlog(self) -> int:
        return 3

    def unacked_messages(self) -> int:
        return 1


class _Topic:
    persistent = True
    bytes_in_counter = 6609
    msg_in_counter = 10
    msg_out_counter = 7
    bytes_out_counter = 4_000
    last_entry_id = 9
    first_entry_id = 0
    txn_buffer = None
    policies = types.SimpleNamespace(size_quota=None, time_quota=None)

    def __init__(self, name: str = "persistent://public/default/t") -> None:
        self.name = name
        self.topic_name = TopicName.parse(name)
        self.producers: dict[int, object] = {}
        self.subscriptions = {"sub": _Sub()}
        self.storage_latencies = StorageLatencies()
        self.storage_latencies.write.add(2_500, 5)
        self.storage_latencies.ledger_write.add(1_500, 5)
        self.entry_sizes = new_entry_sizes()
        self.entry_sizes[1] = 3

    def stats_storage_size(self) -> int:
        return 6649


_NUMBERS = {"msgRateIn": 5.0, "msgThroughputIn": 6609.0, "msgThroughputOut": 6609.0}


def text_scrape(topics: list[_Topic]) -> bytes:
    """The storage families as /metrics writes them now."""
    families = topic_metrics.TextFamilies(topic_metrics.storage_family_names())
    storage = TopicStorageFamilies(families)
    for topic in topics:
        labels = label_text({"cluster": "standalone", "namespace": "public/default", "topic": topic.name})
        storage.add_topic(labels, topic, 3, _NUMBERS)  # type: ignore[arg-type]
        storage.add_subscription(f"{labels},{label_text({'subscription': 'sub'})}", _Sub(), 3, _NUMBERS)  # type: ignore[arg-type]
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


def fake_admin(count: int) -> types.SimpleNamespace:
    """An admin facade over ``count`` fake topics, with a real stats tracker that sampled them twice."""
    topics = {f"persistent://public/default/t{i}": _Topic(f"persistent://public/default/t{i}") for i in range(count)}
    service = types.SimpleNamespace(
        topics=topics, config=types.SimpleNamespace(cluster_name="standalone"), connections=set(), replicators_of=lambda _name: {}
    )
    tracker = StatsTracker(service)  # type: ignore[arg-type]
    tracker.sample()
    tracker.sample()
    return types.SimpleNamespace(service=service, tracker=tracker)


async def _text_in_thread(admin: types.SimpleNamespace, per_turn: int) -> bytes:
    """Slices of ``per_turn`` topics on the loop, the text joined and encoded in a worker thread."""
    families = metrics.TopicFamilies(admin)  # type: ignore[arg-type]
    topics = list(admin.service.topics.values())
    for start in range(0, len(topics), per_turn):
        if start:
            await asyncio.sleep(0)
        for topic in topics[start : start + per_turn]:
            families.add_topic(topic)
    head = generate_latest(metrics.build_registry(admin))  # type: ignore[arg-type]

    def write() -> bytes:
        return b"".join([head, *families.families.chunks()])

    return await asyncio.to_thread(write)


async def _held(scrape: Callable[[], Awaitable[bytes]]) -> tuple[float, float, float]:
    """The loop thread's CPU for one scrape, and the longest CPU and wall time between two ticker turns."""
    gaps: list[tuple[float, float]] = []
    done = False

    async def ticker() -> None:
        last = (time.thread_time(), time.perf_counter())
        while not done:
            await asyncio.sleep(0)
            now = (time.thread_time(), time.perf_counter())
            gaps.append((now[0] - last[0], now[1] - last[1]))
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    start = time.thread_time()
    await scrape()
    cpu = time.thread_time() - start
    done = True
    await task
    return cpu, max(g[0] for g in gaps), max(g[1] for g in gaps)


async def _whole_scrapes(admin: types.SimpleNamespace, count: int, before: bool) -> None:
    if before:
        registry = metrics.build_registry(admin)  # type: ignore[arg-type]

        async def old() -> bytes:
            return metrics.render(registry)

        modes: dict[str, Callable[[], Awaitable[bytes]]] = {"before (one turn)": old}
    else:
        registry = metrics.build_registry(admin)  # type: ignore[arg-type]

        def sliced(turn: float) -> Callable[[], Awaitable[bytes]]:
            async def run() -> bytes:
                return await metrics.topic_families_text(admin, generate_latest(registry), turn)  # type: ignore[arg-type]

            return run

        modes = {"all topics in one turn": sliced(3600.0), **{f"turns of {ms} ms": sliced(ms / 1000) for ms in (20, 5, 2, 1)},
                 "250 topics per turn, text in a thread": lambda: _text_in_thread(admin, 250),
                 "25 topics per turn, text in a thread": lambda: _text_in_thread(admin, 25)}
    for label, scrape in modes.items():
        await _held(scrape)
        runs = [await _held(scrape) for _ in range(5)]
        cpu, hold_cpu, hold_wall = (statistics.median(r[i] for r in runs) for i in range(3))
        print(f"  {label:32} loop CPU {cpu * 1000:7.1f} ms, longest hold {hold_cpu * 1000:6.1f} ms CPU"
              f" / {hold_wall * 1000:6.1f} ms wall (medians of 5)")


def main() -> None:
    """Print the CPU per scrape of both writers, then the whole scrape's loop holds."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--before", action="store_true", help="time this tree's render() (before the change)")
    args = parser.parse_args()
    if not args.before:
        topics = [_Topic(f"persistent://public/default/t{i}") for i in range(args.topics)]
        cpu, size = _median_cpu(lambda: text_scrape(topics))
        print(f"storage families, text writer:       {cpu * 1000:7.1f} ms CPU ({size // 1024} KiB)")
        cpu, size = _median_cpu(client_library_scrape(topics))
        print(f"storage families, prometheus_client: {cpu * 1000:7.1f} ms CPU ({size // 1024} KiB)")
    print(f"whole scrape of {args.topics} topics:")
    asyncio.run(_whole_scrapes(fake_admin(args.topics), args.topics, args.before))


if __name__ == "__main__":
    main()
