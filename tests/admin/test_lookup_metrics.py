"""HTTP lookup with the official client, /metrics, schemas, OpenAPI and health."""

from __future__ import annotations

import re
import time

import pulsar

from .admin_http import Http
from .helpers import wait_until


def test_official_client_over_http_service_url(http: Http, broker, client_factory, name: str) -> None:
    client = client_factory(broker.http_url)
    topic = f"persistent://public/default/{name}"
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic)
    for i in range(10):
        producer.send(f"h{i}".encode())
    got = []
    for _ in range(10):
        msg = consumer.receive(10_000)
        got.append(msg.data())
        consumer.acknowledge(msg)
    assert got == [f"h{i}".encode() for i in range(10)]
    # partitioned topics over HTTP lookup too
    assert http.put(f"/admin/v2/persistent/public/default/{name}-p/partitions", 3).status == 204
    assert len(client.get_topic_partitions(f"{topic}-p")) == 3
    p2 = client.create_producer(f"{topic}-p")
    p2.send(b"x")
    p2.close()
    producer.close()
    consumer.close()


def test_lookup_answer(http: Http, broker, name: str) -> None:
    data = http.get(f"/lookup/v2/topic/persistent/public/default/{name}").json()
    assert data["brokerUrl"] == broker.service_url
    assert data["httpUrl"] == broker.http_url
    assert data["nativeUrl"] == broker.service_url
    assert http.get(f"/lookup/v2/topic/persistent/public/nope/{name}").status == 404
    assert http.get(f"/lookup/v2/topic/bogus/public/default/{name}").status == 412


def test_auto_created_partitioned_topic_via_http_metadata(http: Http, name: str) -> None:
    ns = f"public/{name}"
    assert http.put(f"/admin/v2/namespaces/{ns}").status == 204
    body = {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 2}
    assert http.post(f"/admin/v2/namespaces/{ns}/autoTopicCreation", body).status == 204
    r = http.get(f"/admin/v2/persistent/{ns}/auto/partitions?checkAllowAutoCreation=true")
    assert r.json() == {"partitions": 2}
    assert http.get(f"/admin/v2/persistent/{ns}/auto/partitions").json() == {"partitions": 2}
    http.delete(f"/admin/v2/namespaces/{ns}?force=true")


def test_schema_routes_answer_not_found_for_a_topic_without_schema(http: Http, name: str) -> None:
    r = http.get(f"/admin/v2/schemas/public/default/{name}/schema")
    assert (r.status, r.reason) == (404, "Schema not found")
    r = http.get(f"/admin/v2/schemas/public/default/{name}/schema/0")
    assert (r.status, r.reason) == (404, "Schema not found")


def _metric(text: str, metric: str, **labels: str) -> float | None:
    for line in text.splitlines():
        if not line.startswith(metric + "{"):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line[line.index("{"): line.index("}")]))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_metrics_after_traffic(http: Http, client: pulsar.Client, name: str) -> None:
    topic = f"persistent://public/default/{name}"
    consumer = client.subscribe(topic, "msub", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic)
    for i in range(50):
        producer.send(f"m{i}".encode())
    for _ in range(20):
        consumer.acknowledge(consumer.receive(10_000))
    time.sleep(1.2)
    r = http.get("/metrics")
    assert r.status == 200
    assert r.header("Content-Type").startswith("text/plain")
    text = r.body.decode()
    labels = {"cluster": "standalone", "namespace": "public/default", "topic": topic}
    assert _metric(text, "pulsar_rate_in", **labels) > 0
    assert _metric(text, "pulsar_rate_out", **labels) > 0
    assert _metric(text, "pulsar_throughput_in", **labels) > 0
    assert _metric(text, "pulsar_throughput_out", **labels) > 0
    assert _metric(text, "pulsar_storage_size", **labels) > 0
    assert _metric(text, "pulsar_producers_count", **labels) == 1
    assert _metric(text, "pulsar_consumers_count", **labels) == 1
    assert _metric(text, "pulsar_subscriptions_count", **labels) == 1
    wait_until(lambda: _metric(http.get("/metrics").body.decode(), "pulsar_msg_backlog", **labels) == 30)
    text = http.get("/metrics").body.decode()
    assert _metric(text, "pulsar_subscription_back_log", subscription="msub", **labels) == 30
    assert _metric(text, "pulsar_in_messages_total", **labels) == 50
    assert re.search(r"^magnetar_connections \d+", text, re.M)
    assert re.search(r"^magnetar_process_resident_memory_bytes [0-9.e+]+", text, re.M)
    assert "magnetar_fsync_rounds_total" in text
    assert "magnetar_fsync_round_seconds_bucket" in text
    # this module's broker runs with --fsync never: no sync rounds, but appends are still timed
    rounds = re.search(r"^magnetar_fsync_round_seconds_count ([0-9.e+]+)", text, re.M)
    appends = re.search(r"^magnetar_append_latency_seconds_count ([0-9.e+]+)", text, re.M)
    assert rounds and float(rounds.group(1)) == 0
    assert appends and float(appends.group(1)) > 0
    producer.close()
    consumer.close()


def test_openapi_and_docs(http: Http) -> None:
    spec = http.get("/openapi.json").json()
    paths = spec["paths"]
    for path in (
        "/admin/v2/tenants/{tenant}",
        "/admin/v2/namespaces/{tenant}/{namespace}/retention",
        "/admin/v2/persistent/{tenant}/{namespace}/{topic}/partitions",
        "/admin/v2/non-persistent/{tenant}/{namespace}/{topic}/stats",
        "/admin/v2/persistent/{tenant}/{namespace}/{topic}/subscription/{subName}/resetcursor/{timestamp}",
        "/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}",
        "/metrics",
    ):
        assert path in paths, path
    assert http.get("/docs").status == 200
    assert http.get("/admin/v2/brokers/health").body == b"ok"


def test_unknown_route_and_method(http: Http) -> None:
    r = http.get("/admin/v2/nothing/here/at/all/really/now")
    assert r.status == 404 and r.reason
    r = http.request("PATCH", "/admin/v2/tenants")
    assert r.status == 405 and r.reason
