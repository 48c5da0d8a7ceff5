"""pulsar-admin's broker-stats verbs: topics, monitoring-metrics, mbeans, allocator-stats and
load-report in Pulsar's shapes, with the broker's real figures."""

from __future__ import annotations

import magnetar.client
from magnetar.testing import BrokerProcess

from .admin_http import Http

FULL = "0x00000000_0xffffffff"


def _loaded_topic(broker: BrokerProcess, http: Http, name: str) -> tuple[magnetar.client.Client, str]:
    topic = f"persistent://public/default/{name}"
    client = magnetar.client.Client(broker.service_url)
    producer = client.create_producer(topic)
    client.subscribe(topic, "s1")
    for i in range(3):
        producer.send(f"m{i}".encode())
    return client, topic


def test_topics_and_metrics_show_the_loaded_topics(http: Http, broker: BrokerProcess, name: str) -> None:
    client, topic = _loaded_topic(broker, http, name)
    try:
        by_ns = http.get("/admin/v2/broker-stats/topics").json()
        stats = by_ns["public/default"][FULL]["persistent"][topic]
        assert stats["msgInCounter"] == 3
        assert set(stats["subscriptions"]) == {"s1"}
        assert stats["subscriptions"]["s1"]["msgBacklog"] in (0, 3)  # delivered, maybe not yet acknowledged
        metrics = http.get("/admin/v2/broker-stats/metrics").json()
        ns = [m for m in metrics if m["dimensions"].get("namespace") == "public/default"]
        assert len(ns) == 1
        assert ns[0]["dimensions"] == {"broker": f"127.0.0.1:{broker.http_port}", "cluster": "standalone",
                                       "namespace": "public/default"}
        assert ns[0]["metrics"]["brk_no_of_producers"] >= 1
        assert ns[0]["metrics"]["brk_no_of_consumers"] >= 1
        assert ns[0]["metrics"]["brk_storage_size"] > 0
        process = [m for m in metrics if m["dimensions"] == {"metric": "process"}]
        assert process[0]["metrics"]["process_resident_memory_bytes"] > 10 << 20
        assert process[0]["metrics"]["python_threads"] >= 2
    finally:
        client.close()


def test_load_report_counts_this_broker(http: Http, broker: BrokerProcess, name: str) -> None:
    client, _ = _loaded_topic(broker, http, name)
    try:
        report = http.get("/admin/v2/broker-stats/load-report").json()
        assert report["webServiceUrl"] == f"http://127.0.0.1:{broker.http_port}"
        assert report["pulsarServiceUrl"] == f"pulsar://127.0.0.1:{broker.port}"
        assert report["numTopics"] >= 1 and report["numProducers"] >= 1 and report["numConsumers"] >= 1
        assert f"public/default/{FULL}" in report["bundles"]
        bundle = report["lastStats"][f"public/default/{FULL}"]
        assert bundle["topics"] >= 1 and bundle["producerCount"] >= 1 and bundle["consumerCount"] >= 1
        assert report["memory"]["usage"] > 10
        assert set(report["cpu"]) == {"usage", "limit"}
    finally:
        client.close()


def test_the_jvm_only_views_have_pulsars_shape(http: Http) -> None:
    assert http.get("/admin/v2/broker-stats/mbeans").json() == []
    stats = http.get("/admin/v2/broker-stats/allocator-stats/default").json()
    assert stats["numDirectArenas"] == 0 and stats["directArenas"] == []
    r = http.get("/admin/v2/broker-stats/allocator-stats/other")
    assert (r.status, r.reason) == (412, "Invalid allocator name : other")
