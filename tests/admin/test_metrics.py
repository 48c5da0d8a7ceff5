"""/metrics as text: the per-topic, per-subscription and replication families are the samples the
prometheus_client families wrote before (a reference collector below, built as admin/metrics.py built them
until session 9), and a scrape of many topics gives the loop back between slices of topics."""

from __future__ import annotations

import asyncio
import types
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families

from magnetar.admin import metrics
from magnetar.admin.topic_metrics import TextFamilies
from magnetar.broker.config import BrokerConfig
from magnetar.broker.replication.names import is_replicator
from magnetar.broker.replication.stats import replication_stats
from magnetar.broker.resources import stats_tracker
from magnetar.broker.resources.admin import BrokerAdmin, admin_for
from magnetar.broker.server import BrokerServer
from magnetar.protocol.topic_name import TopicName
from magnetar.testing.ports import free_port

_LABELS = ["cluster", "namespace", "topic"]
#: the families the reference writes: (name, help, kind, topic_numbers field or None)
_TOPIC = (
    ("pulsar_rate_in", "Messages per second published to the topic", "msgRateIn"),
    ("pulsar_rate_out", "Messages per second delivered from the topic", "msgRateOut"),
    ("pulsar_throughput_in", "Bytes per second published to the topic", "msgThroughputIn"),
    ("pulsar_throughput_out", "Bytes per second delivered from the topic", "msgThroughputOut"),
)
_COUNTERS = (
    ("pulsar_in_messages", "Messages published to the topic", "msgInCounter"),
    ("pulsar_in_bytes", "Bytes published to the topic", "bytesInCounter"),
    ("pulsar_out_messages", "Messages delivered from the topic", "msgOutCounter"),
    ("pulsar_out_bytes", "Bytes delivered from the topic", "bytesOutCounter"),
)
_REPLICATION = (
    ("pulsar_replication_rate_in", "Messages per second received from the remote cluster", "msgRateIn"),
    ("pulsar_replication_rate_out", "Messages per second replicated to the remote cluster", "msgRateOut"),
    ("pulsar_replication_throughput_in", "Bytes per second received from the remote cluster", "msgThroughputIn"),
    ("pulsar_replication_throughput_out", "Bytes per second replicated to the remote cluster", "msgThroughputOut"),
    ("pulsar_replication_backlog", "Entries not yet replicated to the remote cluster", "replicationBacklog"),
    ("pulsar_replication_connected_count", "Replicators connected to the remote cluster", "connected"),
    ("pulsar_replication_rate_expired", "Messages per second expired before replication", "msgRateExpired"),
    ("pulsar_replication_delay_in_seconds", "Age of the oldest message not yet replicated", "replicationDelayInSeconds"),
)


class ReferenceCollector:
    """The per-topic families through prometheus_client, as /metrics wrote them before (the oracle)."""

    def __init__(self, admin: BrokerAdmin) -> None:
        self.admin = admin

    def collect(self) -> Iterator[Metric]:
        """Every loaded topic's older families."""
        admin, service = self.admin, self.admin.service
        sub_labels = [*_LABELS, "subscription"]
        gauge = {n: GaugeMetricFamily(n, d, labels=_LABELS) for n, d, _ in _TOPIC}
        counter = {n: CounterMetricFamily(n, d, labels=_LABELS) for n, d, _ in _COUNTERS}
        for name, doc in (("pulsar_storage_size", "Bytes stored for the topic"),
                          ("pulsar_msg_backlog", "Unacknowledged entries of the topic's subscriptions"),
                          ("pulsar_subscriptions_count", "Subscriptions of the topic"),
                          ("pulsar_producers_count", "Producers of the topic"),
                          ("pulsar_consumers_count", "Consumers of the topic")):
            gauge[name] = GaugeMetricFamily(name, doc, labels=_LABELS)
        for name, doc in (("pulsar_subscription_back_log", "Unacknowledged entries of the subscription"),
                          ("pulsar_subscription_msg_rate_out", "Messages per second delivered by the subscription"),
                          ("pulsar_subscription_unacked_messages", "Messages delivered and not acknowledged"),
                          ("pulsar_subscription_consumers_count", "Consumers of the subscription")):
            gauge[name] = GaugeMetricFamily(name, doc, labels=sub_labels)
        for name, doc, _ in _REPLICATION:
            gauge[name] = GaugeMetricFamily(name, doc, labels=[*_LABELS, "remote_cluster"])
        for topic in service.topics.values():
            values = [service.config.cluster_name, topic.topic_name.namespace, topic.name]
            numbers = admin.tracker.topic_numbers(topic)
            subs = [s for s in topic.subscriptions.values() if not is_replicator(s.name)]
            for name, _, field in _TOPIC:
                gauge[name].add_metric(values, numbers[field])
            for name, _, field in _COUNTERS:
                counter[name].add_metric(values, numbers[field])
            gauge["pulsar_storage_size"].add_metric(values, topic.stats_storage_size())
            gauge["pulsar_msg_backlog"].add_metric(values, sum(s.backlog() for s in subs))
            gauge["pulsar_subscriptions_count"].add_metric(values, len(subs))
            gauge["pulsar_producers_count"].add_metric(values, len(topic.producers))
            gauge["pulsar_consumers_count"].add_metric(values, sum(len(s.consumers) for s in subs))
            for sub in subs:
                sv = [*values, sub.name]
                gauge["pulsar_subscription_back_log"].add_metric(sv, sub.backlog())
                gauge["pulsar_subscription_msg_rate_out"].add_metric(sv, admin.tracker.subscription_numbers(topic, sub)["msgRateOut"])
                gauge["pulsar_subscription_unacked_messages"].add_metric(sv, sub.unacked_messages())
                gauge["pulsar_subscription_consumers_count"].add_metric(sv, len(sub.consumers))
            for remote, stats in replication_stats(topic, service, admin.tracker).items():
                for name, _, field in _REPLICATION:
                    gauge[name].add_metric([*values, remote], float(stats[field]))
        yield from gauge.values()
        yield from counter.values()


Samples = dict[str, set[tuple[str, tuple[tuple[str, str], ...], float]]]


def _families(text: str) -> tuple[list[str], Samples]:
    """Every family's name (as parsed, in order) and its samples (name, sorted labels, value)."""
    names, samples = [], {}
    for family in text_string_to_metric_families(text):
        names.append(family.name)
        samples[family.name] = {(s.name, tuple(sorted(s.labels.items())), s.value) for s in family.samples}
    return names, samples


def _send(url: str, topics: list[str]) -> None:
    """Publish 3, 4, 5... messages to the topics, one acknowledged on a subscription, none on another."""
    client = pulsar.Client(url, operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        for i, topic in enumerate(topics):
            consumer = client.subscribe(topic, f"s{i}", consumer_type=pulsar.ConsumerType.Shared)
            client.subscribe(topic, "idle").close()
            producer = client.create_producer(topic, batching_enabled=False)
            for n in range(3 + i):
                producer.send(b"m" * (10 + n))
            consumer.acknowledge(consumer.receive(10_000))
            producer.close()
            consumer.close()
    finally:
        client.close()


def test_the_scrape_has_the_samples_prometheus_client_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result: dict[str, str] = {}

    async def main() -> None:
        server = BrokerServer(BrokerConfig(data_dir=tmp_path, fsync="never", port=0))
        await server.start()
        try:
            admin = admin_for(server.service)
            admin.clusters.create_cluster("far", {"serviceUrl": "http://127.0.0.1:1", "brokerServiceUrl": f"pulsar://127.0.0.1:{free_port()}"})
            admin.tenants.create_tenant("geo", {"allowedClusters": ["standalone", "far"]})
            admin.namespaces.create_namespace("geo/ns", {"replication_clusters": ["standalone", "far"]})
            admin.topics.create_partitioned_topic(TopicName.parse("persistent://public/default/parted"), 2)
            topics = ["persistent://public/default/a", "persistent://public/default/b", "non-persistent://public/default/np",
                      "persistent://public/default/parted", "persistent://geo/ns/replicated"]
            await asyncio.to_thread(_send, f"pulsar://127.0.0.1:{server.port}", topics)
            # rates are computed at read time: both scrapes read them at one instant
            monkeypatch.setattr(stats_tracker, "time", types.SimpleNamespace(monotonic=lambda: 1e6))
            reference = CollectorRegistry(auto_describe=False)
            reference.register(ReferenceCollector(admin))
            result["before"] = generate_latest(reference).decode()
            result["after"] = (await metrics.scrape(metrics.build_registry(admin))).decode()
        finally:
            await server.stop()

    asyncio.run(main())
    names, after = _families(result["after"])
    assert len(names) == len(set(names))  # each family once
    _, before = _families(result["before"])
    for family, samples in before.items():
        assert after[family] == samples, family
    topics = {dict(labels)["topic"] for _, labels, _ in before["pulsar_rate_in"]}
    assert {"persistent://public/default/parted-partition-0", "persistent://public/default/a",
            "non-persistent://public/default/np", "persistent://geo/ns/replicated"} <= topics
    assert {dict(labels)["remote_cluster"] for _, labels, _ in before["pulsar_replication_backlog"]} == {"far"}
    assert {(dict(labels)["subscription"], value) for _, labels, value in before["pulsar_subscription_back_log"]
            if dict(labels)["topic"] == "persistent://public/default/b"} == {("s1", 3.0), ("idle", 4.0)}
    for line in result["before"].splitlines():  # HELP and TYPE lines as prometheus_client wrote them
        if line.startswith("#"):
            assert line in result["after"].splitlines(), line


def test_a_scrape_gives_the_loop_back_between_slices_of_topics(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = {f"t{i}": types.SimpleNamespace(name=f"t{i}") for i in range(8)}
    admin = types.SimpleNamespace(service=types.SimpleNamespace(topics=loaded))
    turns: list[int] = []
    added: list[int] = []

    class Families:
        def __init__(self, _admin: object) -> None:
            self.families = types.SimpleNamespace(chunks=lambda: iter([b"x"]))

        def add_topic(self, topic: types.SimpleNamespace) -> None:
            added.append(len(turns))
            if topic.name == "t4":
                del loaded["t5"]  # unloaded during the scrape: left out

    async def ticker() -> None:
        while True:
            turns.append(1)
            await asyncio.sleep(0)

    async def main() -> None:
        tick = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        await metrics.topic_families_text(admin, turn=0.0)  # type: ignore[arg-type]
        tick.cancel()

    monkeypatch.setattr(metrics, "TopicFamilies", Families)
    asyncio.run(main())
    # no time for a second topic in a turn: the loop ran another task before each; t5 left out
    assert added == [2, 3, 4, 5, 6, 8, 9]


def test_a_large_text_is_written_over_several_turns_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    families = TextFamilies([(f"f{i}", "gauge", "doc") for i in range(8)])
    for i in range(8):
        families.lines[f"f{i}"].extend(f'{{topic="t{n}"}} {n}' for n in range(20_000))
    expected = b"# head\n" + b"".join(
        f"# HELP f{i} doc\n# TYPE f{i} gauge\n".encode() + b"".join(b'f%d{topic="t%d"} %d\n' % (i, n, n) for n in range(20_000))
        for i in range(8)
    )
    admin = types.SimpleNamespace(service=types.SimpleNamespace(topics={}))
    monkeypatch.setattr(metrics, "TopicFamilies", lambda _admin: types.SimpleNamespace(families=families))
    turns: list[int] = []

    async def main() -> bytes:
        async def ticker() -> None:
            while True:
                turns.append(1)
                await asyncio.sleep(0)

        tick = asyncio.create_task(ticker())
        text = await metrics.topic_families_text(admin, b"# head\n")  # type: ignore[arg-type]
        tick.cancel()
        return text

    text = asyncio.run(main())
    assert text == expected
    assert families.text() == b"".join(f"# HELP f{i} doc\n# TYPE f{i} gauge\n".encode() for i in range(8))  # emptied
    assert len(text) > 4 * metrics.SCRAPE_TEXT_TURN and len(turns) >= 4
    assert text.count(b"\nf3{") == 20_000 and text.endswith(b'f7{topic="t19999"} 19999\n')
