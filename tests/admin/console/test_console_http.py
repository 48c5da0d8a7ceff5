"""The console's HTTP side without a browser: pages, assets, decoded messages and the REST producer."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

import pulsar
from pulsar.schema import AvroSchema, Integer, JsonSchema, Record, String

from magnetar.testing import BrokerProcess

from ..admin_http import Http

STATIC = Path(__file__).resolve().parents[3] / "src" / "magnetar" / "admin" / "console" / "static"


class Reading(Record):
    sensor = String()
    value = Integer()


def _get(url: str, accept: str) -> tuple[int, str, bytes]:
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    request = urllib.request.Request(url, headers={"Accept": accept})
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, response.headers.get("Location", ""), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Location", ""), exc.read()


def test_root_redirects_browsers_only(console_broker: BrokerProcess) -> None:
    status, location, _ = _get(console_broker.http_url + "/", "text/html,application/xhtml+xml,*/*;q=0.8")
    assert (status, location) == (307, "/console")
    status, _, body = _get(console_broker.http_url + "/", "application/json")
    assert status == 404
    assert json.loads(body) == {"reason": "Not Found"}


def test_every_console_path_answers_the_app_shell(console_broker: BrokerProcess) -> None:
    for path in ("/console", "/console/tenants/public", "/console/topics/persistent/public/default/x?tab=messages"):
        status, _, body = _get(console_broker.http_url + path, "text/html")
        assert status == 200
        assert b'<script type="module" src="/console/static/js/app.js">' in body
    status, _, body = _get(console_broker.http_url + "/console/static/vendor/uPlot.esm.js", "*/*")
    assert status == 200 and b"uPlot" in body
    assert (STATIC / "vendor" / "uPlot.LICENSE").read_text().startswith("The MIT License")


def test_metrics_and_admin_json_are_untouched(rest: Http) -> None:
    metrics = rest.get("/metrics")
    assert metrics.status == 200 and b"magnetar_connections" in metrics.body
    assert "public" in rest.get("/admin/v2/tenants").json()


def test_openapi_documents_the_console_routes(rest: Http) -> None:
    paths = rest.get("/openapi.json").json()["paths"]
    assert "/magnetar/v1/messages/{domain}/{tenant}/{namespace}/{topic}" in paths
    assert "/magnetar/v1/broker" in paths
    assert "post" in paths["/topics/{domain}/{tenant}/{namespace}/{topic}"]
    assert not any(p.startswith("/console") for p in paths)


def test_broker_info(rest: Http) -> None:
    info = rest.get("/magnetar/v1/broker").json()
    assert info["version"] and info["uptimeSeconds"] >= 0 and info["brokerServiceUrl"].startswith("pulsar://")


def _messages(rest: Http, topic: str, query: str) -> list[dict]:
    reply = rest.get(f"/magnetar/v1/messages/persistent/public/default/{topic}?{query}")
    assert reply.status == 200, reply.body
    return reply.json()


def test_peek_decodes_bytes_as_hex_and_text(rest: Http, pulsar_client: pulsar.Client, unique: str) -> None:
    topic = f"bytes-{unique}"
    consumer = pulsar_client.subscribe(f"persistent://public/default/{topic}", "s")
    producer = pulsar_client.create_producer(f"persistent://public/default/{topic}", batching_enabled=False)
    producer.send(b"\x00\x01hi", partition_key="k1", properties={"p": "v"}, event_timestamp=1234)
    [message] = _messages(rest, topic, "subscription=s&count=5")
    assert message["encoding"] == "bytes"
    assert message["hex"] == "00016869" and message["text"] == "..hi"
    assert (message["key"], message["properties"], message["eventTime"]) == ("k1", {"p": "v"}, 1234)
    consumer.close()


def test_string_json_and_avro_are_decoded_by_schema(rest: Http, pulsar_client: pulsar.Client, unique: str) -> None:
    for kind, schema, value, expected in (
        ("string", pulsar.schema.StringSchema(), "héllo", "héllo"),
        ("json", JsonSchema(Reading), Reading(sensor="a", value=3), {"sensor": "a", "value": 3}),
        ("avro", AvroSchema(Reading), Reading(sensor="b", value=4), {"sensor": "b", "value": 4}),
    ):
        topic = f"{kind}-{unique}"
        producer = pulsar_client.create_producer(f"persistent://public/default/{topic}", schema=schema)
        producer.send(value)
        [message] = _messages(rest, topic, "start=earliest&count=5")
        assert message["encoding"] == kind
        assert message["value"] == expected
        assert message["schemaVersion"] == 0 and message["schemaType"] == kind.upper()


def test_batches_are_split_and_browsed_by_position_and_time(rest: Http, pulsar_client: pulsar.Client, unique: str) -> None:
    topic = f"batch-{unique}"
    producer = pulsar_client.create_producer(
        f"persistent://public/default/{topic}", batching_enabled=True, batching_max_publish_delay_ms=50
    )
    for i in range(3):
        producer.send_async(f"m{i}".encode(), None)
    producer.flush()
    time.sleep(0.02)
    before_second = int(time.time() * 1000)
    time.sleep(0.02)
    producer.send(b"later")
    messages = _messages(rest, topic, "start=earliest&count=10")
    assert [m["text"] for m in messages] == ["m0", "m1", "m2", "later"]
    assert [m["batchIndex"] for m in messages[:3]] == [0, 1, 2]
    later_id = messages[3]["messageId"]
    assert [m["text"] for m in _messages(rest, topic, f"start={later_id}&count=10")] == ["later"]
    assert [m["text"] for m in _messages(rest, topic, f"start={before_second}&count=10")] == ["later"]
    assert [m["text"] for m in _messages(rest, topic, "start=latest&count=1")] == ["later"]
    assert rest.get(f"/magnetar/v1/messages/persistent/public/default/{topic}?start=nonsense").status == 412


def test_rest_producer_publishes_with_the_topic_schema(rest: Http, pulsar_client: pulsar.Client, unique: str) -> None:
    topic = f"produce-{unique}"
    consumer = pulsar_client.subscribe(f"persistent://public/default/{topic}", "s", schema=JsonSchema(Reading))
    reply = rest.post(f"/topics/persistent/public/default/{topic}", {
        "messages": [{"payload": json.dumps({"sensor": "z", "value": 9}), "key": "k", "properties": {"a": "b"}}],
    })
    assert reply.status == 200, reply.body
    assert reply.json()["messagePublishResults"][0]["errorCode"] == 0
    received = consumer.receive(5000)
    assert (received.value().sensor, received.value().value) == ("z", 9)
    assert (received.partition_key(), received.properties()) == ("k", {"a": "b"})
    bad = rest.post(f"/topics/persistent/public/default/{topic}", {"messages": [{"payload": "not json"}]})
    assert bad.status == 400
    assert rest.post(f"/topics/persistent/public/default/{topic}", {"messages": []}).status == 400
