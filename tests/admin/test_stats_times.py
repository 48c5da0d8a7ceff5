"""The times topic and internal stats carry (lastPublishTimeStamp, topicCreationTimeStamp,
lastLedgerCreatedTimestamp, a cursor's lastLedgerSwitchTimestamp) and the subscriptions' real
properties and replicated state, as Apache Pulsar 4.2 fills them (tools/stats_compare.py; docs/STATS.md)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pulsar

from magnetar.broker.config import BrokerConfig
from magnetar.broker.resources.stats import date_time
from magnetar.testing import BrokerThread
from magnetar.testing.ports import free_port

from .admin_http import Http

NS = "public/default"
#: file times come from the kernel's coarse clock: up to a few ms behind time.time()
COARSE_MS = 20


def _path(name: str) -> str:
    return f"/admin/v2/persistent/{NS}/{name}"


def _now_ms() -> int:
    return int(time.time() * 1000)


def _ms(text: str) -> int:
    """Epoch ms of a time as Pulsar's DateFormatter prints it."""
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def test_date_time_prints_as_pulsars_date_formatter() -> None:
    assert date_time(0) == "1970-01-01T00:00:00Z"
    assert date_time(1795926854613) == "2026-11-29T04:34:14.613Z"  # Pulsar's lastLedgerCreatedTimestamp
    assert date_time(1795926858970) == "2026-11-29T04:34:18.97Z"  # a cursor's lastLedgerSwitchTimestamp
    assert date_time(1795926858900) == "2026-11-29T04:34:18.9Z"
    assert date_time(1795926858000) == "2026-11-29T04:34:18Z"
    assert _ms(date_time(1795926858970)) == 1795926858970


def test_publish_creation_ledger_and_cursor_times(http: Http, client: pulsar.Client, name: str) -> None:
    before_create = _now_ms()
    assert http.put(_path(name)).status == 204
    after_create = _now_ms()
    stats = http.get(_path(name) + "/stats").json()
    # the creation time is the metadata row's: the same as info-internal's ledger timestamp
    created = stats["topicCreationTimeStamp"]
    assert before_create <= created <= after_create
    assert http.get(_path(name) + "/internal-info").json()["ledgers"][0]["timestamp"] == created
    assert stats["lastPublishTimeStamp"] == 0  # nothing published yet
    before_sub = _now_ms()
    consumer = client.subscribe(f"persistent://{NS}/{name}", "s")
    after_sub = _now_ms()
    producer = client.create_producer(f"persistent://{NS}/{name}", batching_enabled=False)
    times = []
    for _ in range(2):
        before_send = _now_ms()
        producer.send(b"x")
        after_send = _now_ms()
        published = http.get(_path(name) + "/stats").json()["lastPublishTimeStamp"]
        assert before_send <= published <= after_send  # durable before the receipt
        times.append(published)
        time.sleep(0.02)
    assert times[0] < times[1]
    assert http.get(_path(name) + "/stats").json()["topicCreationTimeStamp"] == created
    internal = http.get(_path(name) + "/internalStats").json()
    # one segment, opened when the topic loaded (at its creation here)
    assert before_create <= _ms(internal["lastLedgerCreatedTimestamp"]) <= before_sub
    assert before_sub <= _ms(internal["cursors"]["s"]["lastLedgerSwitchTimestamp"]) <= after_sub
    consumer.close()


def test_subscription_properties_and_replicated_state(http: Http, client: pulsar.Client, name: str) -> None:
    topic = f"persistent://{NS}/{name}"
    consumer = client.subscribe(topic, "s")
    other = client.subscribe(topic, "other")
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert http.put(_path(name) + "/subscription/s/properties", {"a": "1", "b": "2"}).status == 204
    assert http.post(_path(name) + "/subscription/s/replicatedSubscriptionStatus", True).status == 204
    subs = http.get(_path(name) + "/stats").json()["subscriptions"]
    assert len(subs) == 3
    reader_sub = next(s for n, s in subs.items() if n not in ("s", "other"))
    assert [(s["subscriptionProperties"], s["isReplicated"], s["replicated"]) for s in (
        subs["s"], subs["other"], reader_sub)] == [({"a": "1", "b": "2"}, True, True), ({}, False, False), ({}, False, False)]
    # Pulsar marks the replicated subscription's cursor
    cursors = http.get(_path(name) + "/internalStats").json()["cursors"]
    assert (cursors["s"]["properties"], cursors["other"]["properties"]) == ({"pulsar.replicated.subscription": 1}, {})
    assert http.put(_path(name) + "/subscription/s/properties", {}).status == 204
    assert http.post(_path(name) + "/subscription/s/replicatedSubscriptionStatus", False).status == 204
    s = http.get(_path(name) + "/stats").json()["subscriptions"]["s"]
    assert (s["subscriptionProperties"], s["isReplicated"], s["replicated"]) == ({}, False, False)
    assert http.get(_path(name) + "/internalStats").json()["cursors"]["s"]["properties"] == {}
    for c in (consumer, other, reader):
        c.close()


def test_partitioned_stats_times_and_properties(
        http: Http, client_factory: Callable[[str], pulsar.Client], broker: object, name: str) -> None:
    assert http.put(_path(name) + "/partitions", 2).status == 204
    client = client_factory(broker.service_url)  # type: ignore[attr-defined]
    topic = f"persistent://{NS}/{name}"
    consumer = client.subscribe(topic, "psub", consumer_type=pulsar.ConsumerType.Shared)
    assert http.put(_path(name) + "/subscription/psub/properties", {"k": "v"}).status == 204
    producer = client.create_producer(topic, batching_enabled=False,
                                      message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution)
    for _ in range(4):
        producer.send(b"x")
        time.sleep(0.01)
    stats = http.get(_path(name) + "/partitioned-stats?perPartition=true").json()
    parts = [stats["partitions"][f"{topic}-partition-{i}"] for i in range(2)]
    assert all(p["lastPublishTimeStamp"] > 0 and p["topicCreationTimeStamp"] > 0 for p in parts)
    # Pulsar's sum: the latest publish, the oldest creation
    assert stats["lastPublishTimeStamp"] == max(p["lastPublishTimeStamp"] for p in parts)
    assert stats["topicCreationTimeStamp"] == min(p["topicCreationTimeStamp"] for p in parts)
    assert [p["subscriptions"]["psub"]["subscriptionProperties"] for p in parts] == [{"k": "v"}, {"k": "v"}]
    assert stats["subscriptions"]["psub"]["subscriptionProperties"] == {"k": "v"}
    consumer.close()


def _config(data: Path) -> BrokerConfig:
    """Small segments that roll over as soon as they are full."""
    return BrokerConfig(data_dir=data, port=free_port(), http_port=free_port(), fsync="never",
                        segment_max_bytes=4096, segment_min_rollover_minutes=0)


def test_times_after_a_roll_over_and_a_restart(tmp_path: Path) -> None:
    topic = f"persistent://{NS}/rolled"
    with BrokerThread(_config(tmp_path / "data")) as broker:
        http = Http(f"http://127.0.0.1:{broker.config.http_port}")
        client = pulsar.Client(broker.service_url, operation_timeout_seconds=10)
        try:
            consumer = client.subscribe(topic, "s")
            producer = client.create_producer(topic, batching_enabled=False)
            producer.send(b"x" * 1000)
            created = http.get(_path("rolled") + "/stats").json()["topicCreationTimeStamp"]
            opened = broker.server.service.topics[topic].ledger_opened_ms
            time.sleep(0.1)
            before_roll = _now_ms()
            for _ in range(8):  # 4096-byte segments: at least one roll-over
                producer.send(b"x" * 1000)
            after_roll = _now_ms()
            assert broker.server.service.topics[topic].ledger.segment_count >= 2
            internal = http.get(_path("rolled") + "/internalStats").json()
            rolled = _ms(internal["lastLedgerCreatedTimestamp"])
            assert opened < before_roll - COARSE_MS <= rolled <= after_roll
            consumer.close()
        finally:
            client.close()
    restarted = _now_ms()
    with BrokerThread(_config(tmp_path / "data")) as broker:
        http = Http(f"http://127.0.0.1:{broker.config.http_port}")
        stats = http.get(_path("rolled") + "/stats").json()
        # the creation time is stored with the topic; the last publish is kept in memory, as Pulsar's
        assert (stats["topicCreationTimeStamp"], stats["lastPublishTimeStamp"]) == (created, 0)
        internal = http.get(_path("rolled") + "/internalStats").json()
        # a load opens the ledger again (Pulsar starts a new one), and the cursors with it
        assert restarted <= _ms(internal["lastLedgerCreatedTimestamp"]) <= _now_ms()
        assert restarted <= _ms(internal["cursors"]["s"]["lastLedgerSwitchTimestamp"]) <= _now_ms()
