"""/metrics: Pulsar's per-topic storage histograms and gauges, scraped after known publishes."""

from __future__ import annotations

import re

import pulsar
from prometheus_client.parser import text_string_to_metric_families

from magnetar.admin.topic_metrics import label_text

from .admin_http import Http
from .helpers import wait_until

LATENCY = ("le_0_5", "le_1", "le_5", "le_10", "le_20", "le_50", "le_100", "le_200", "le_1000", "overflow")
SIZES = ("le_128", "le_512", "le_1_kb", "le_2_kb", "le_4_kb", "le_16_kb", "le_100_kb", "le_1_mb", "le_overflow")


def _samples(text: str, metric: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Every sample of ``metric`` by its labels (sorted (name, value) pairs)."""
    out = {}
    for line in text.splitlines():
        if line.startswith(metric + "{"):
            labels = tuple(sorted(re.findall(r'(\w+)="([^"]*)"', line[line.index("{") : line.index("}")])))
            out[labels] = float(line.rsplit(" ", 1)[1])
    return out


def _of(text: str, metric: str, topic: str, **more: str) -> float:
    """The sample of ``metric`` with exactly Pulsar's labels for ``topic`` (and ``more``)."""
    labels = tuple(sorted({"cluster": "standalone", "namespace": "public/default", "topic": topic, **more}.items()))
    samples = _samples(text, metric)
    assert labels in samples, f"{metric} {labels} not in {sorted(samples)[:5]}"
    return samples[labels]


def test_entry_size_and_latency_histograms_count_each_stored_entry(http: Http, client: pulsar.Client, name: str) -> None:
    topic = f"persistent://public/default/{name}"
    producer = client.create_producer(topic, batching_enabled=False)
    for _ in range(3):
        producer.send(b"s" * 100)
    for _ in range(2):
        producer.send(b"L" * 3072)
    text = http.get("/metrics").body.decode()
    assert re.search(r"^# TYPE pulsar_entry_size_le_512 gauge$", text, re.M)
    sizes = [_of(text, f"pulsar_entry_size_{suffix}", topic) for suffix in SIZES]
    # an entry is the payload and its metadata: 100 B -> (128, 512], 3 KiB -> (2 KiB, 4 KiB]
    assert sizes == [0, 3, 0, 0, 2, 0, 0, 0, 0]
    assert _of(text, "pulsar_entry_size_count", topic) == 5
    stored = _of(text, "pulsar_in_bytes_total", topic)
    assert _of(text, "pulsar_entry_size_sum", topic) == stored
    assert 3 * 100 + 2 * 3072 < stored < 3 * 100 + 2 * 3072 + 5 * 100
    for histogram in ("pulsar_storage_write_latency", "pulsar_storage_ledger_write_latency"):
        buckets = [_of(text, f"{histogram}_{suffix}", topic) for suffix in LATENCY]
        assert sum(buckets) == _of(text, f"{histogram}_count", topic) == 5
        assert _of(text, f"{histogram}_sum", topic) > 0  # microseconds
    # each entry's wait since its append covers its round's write and sync
    assert _of(text, "pulsar_storage_write_latency_sum", topic) >= _of(text, "pulsar_storage_ledger_write_latency_sum", topic)
    producer.send(b"s" * 10)  # (.., 128]
    text = http.get("/metrics").body.decode()
    assert [_of(text, f"pulsar_entry_size_{suffix}", topic) for suffix in SIZES] == [1, 3, 0, 0, 2, 0, 0, 0, 0]
    assert _of(text, "pulsar_storage_write_latency_count", topic) == 6
    producer.close()


def test_batches_count_as_one_entry_each(http: Http, client: pulsar.Client, name: str) -> None:
    topic = f"persistent://public/default/{name}"
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=10, batching_max_publish_delay_ms=60_000)
    futures = []
    for _ in range(10):  # one batch of 10 x 150 B: one entry of (1 KiB, 2 KiB]
        producer.send_async(b"b" * 150, lambda res, _msg, futures=futures: futures.append(res))
    producer.flush()
    assert futures == [pulsar.Result.Ok] * 10
    text = http.get("/metrics").body.decode()
    assert [_of(text, f"pulsar_entry_size_{suffix}", topic) for suffix in SIZES] == [0, 0, 0, 1, 0, 0, 0, 0, 0]
    assert _of(text, "pulsar_in_messages_total", topic) == 10
    assert _of(text, "pulsar_storage_write_latency_count", topic) == 1
    producer.close()


def test_storage_and_subscription_gauges(http: Http, client: pulsar.Client, name: str) -> None:
    topic = f"persistent://public/default/{name}"
    consumer = client.subscribe(topic, "gsub", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic, batching_enabled=False)
    for _ in range(4):
        producer.send(b"x" * 500)
    consumer.acknowledge(consumer.receive(10_000))
    # the client sends its acknowledgments grouped, 100 ms later
    wait_until(lambda: _of(http.get("/metrics").body.decode(), "pulsar_subscription_back_log", topic, subscription="gsub") == 3)
    text = http.get("/metrics").body.decode()
    storage = _of(text, "pulsar_storage_size", topic)
    assert _of(text, "pulsar_storage_logical_size", topic) == storage > 0
    # the slowest subscription's backlog at the topic's average entry size, as the stats' backlogSize
    stats = http.get(f"/admin/v2/persistent/public/default/{name}/stats").json()
    assert _of(text, "pulsar_storage_backlog_size", topic) == stats["backlogSize"] == int(3 * storage / 4)
    assert _of(text, "pulsar_storage_backlog_quota_limit", topic) == stats["backlogQuotaLimitSize"]
    assert _of(text, "pulsar_storage_backlog_quota_limit_time", topic) == stats["backlogQuotaLimitTime"]
    assert _of(text, "pulsar_subscription_back_log_no_delayed", topic, subscription="gsub") == 3
    assert _of(text, "pulsar_subscription_delayed", topic, subscription="gsub") == 0
    assert _of(text, "pulsar_subscription_blocked_on_unacked_messages", topic, subscription="gsub") == 0
    sub = stats["subscriptions"]["gsub"]
    for metric, field in (
        ("pulsar_subscription_last_acked_timestamp", "lastAckedTimestamp"),
        ("pulsar_subscription_last_consumed_timestamp", "lastConsumedTimestamp"),
        ("pulsar_subscription_last_consumed_flow_timestamp", "lastConsumedFlowTimestamp"),
        ("pulsar_subscription_last_mark_delete_advanced_timestamp", "lastMarkDeleteAdvancedTimestamp"),
        ("pulsar_subscription_last_expire_timestamp", "lastExpireTimestamp"),
        ("pulsar_subscription_total_msg_expired", "totalMsgExpired"),
    ):
        assert _of(text, metric, topic, subscription="gsub") == sub[field], metric
    assert _of(text, "pulsar_subscription_last_acked_timestamp", topic, subscription="gsub") > 0
    for metric in ("pulsar_txn_tb_active_total", "pulsar_txn_tb_aborted_total", "pulsar_txn_tb_committed_total"):
        assert _of(text, metric, topic) == 0
    producer.close()
    consumer.close()


def test_the_whole_scrape_parses_with_each_family_once(http: Http, client: pulsar.Client, name: str) -> None:
    topic = f"persistent://public/default/{name}"
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"p")
    text = http.get("/metrics").body.decode()
    names = [family.name for family in text_string_to_metric_families(text)]
    assert len(names) == len(set(names))
    assert re.findall(r"^# TYPE pulsar_storage_write_latency_overflow (\w+)$", text, re.M) == ["gauge"]
    families = {family.name: family for family in text_string_to_metric_families(text)}
    for family in ("pulsar_storage_write_latency_le_0_5", "pulsar_entry_size_le_128", "pulsar_storage_backlog_size"):
        samples = [s for s in families[family].samples if s.labels.get("topic") == topic]
        assert [s.labels for s in samples] == [{"cluster": "standalone", "namespace": "public/default", "topic": topic}]
    assert "magnetar_fsync_round_seconds" in families  # the registry's own families still come first
    producer.close()


def test_label_values_are_escaped_as_the_text_format_wants() -> None:
    assert label_text({"topic": 'a"b\\c\nd', "x": "y"}) == 'topic="a\\"b\\\\c\\nd",x="y"'


def test_a_non_persistent_topic_has_the_names_with_zeros(http: Http, client: pulsar.Client, name: str) -> None:
    topic = f"non-persistent://public/default/{name}"
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"n" * 100)
    text = http.get("/metrics").body.decode()
    assert _of(text, "pulsar_in_messages_total", topic) == 1  # the topic is there, and counted its message
    for histogram, suffixes in (("pulsar_entry_size", SIZES), ("pulsar_storage_write_latency", LATENCY),
                                ("pulsar_storage_ledger_write_latency", LATENCY)):
        for suffix in (*suffixes, "count", "sum"):
            assert _of(text, f"{histogram}_{suffix}", topic) == 0, (histogram, suffix)
    producer.close()
