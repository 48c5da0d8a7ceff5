"""Geo-replication between magnetar brokers, end to end: two or three broker processes, each its own
cluster (data dir, ``clusterName``, ports), registered with each other, one namespace replicated
between them; producers and consumers are the official Python client and magnetar.client."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pulsar
import pytest

import magnetar.client
from magnetar.broker.security.tokens import create_token, generate_secret_key
from magnetar.testing import BrokerProcess
from tests.broker.replication.rest import rest

from .helpers import new_client

NS = "geo/ns"
#: two or three broker processes per test on a loaded machine
pytestmark = pytest.mark.timeout(300)
#: how long replication may take to deliver what was produced
SETTLE_S = 30.0


#: how long a cluster's broker may take to start on a loaded machine
START_S = 90.0


def cluster_broker(base: Path, name: str, fsync: str = "never", **env_extra: str) -> BrokerProcess:
    """A broker process of cluster ``name``, not started (``fsync="always"`` where a crash must lose
    nothing acknowledged)."""
    env = {"MAGNETAR_CLUSTER_NAME": name, **env_extra}
    (base / name).mkdir(parents=True, exist_ok=True)
    return BrokerProcess(base / name / "data", args=("--fsync", fsync), env=env)


def start_side_by_side(brokers: dict[str, BrokerProcess]) -> dict[str, BrokerProcess]:
    """Launch every broker, then wait for each: they start side by side, not one after the other."""
    for broker in brokers.values():
        broker.launch()
    try:
        for broker in brokers.values():
            broker.wait_ready(START_S)
    except BaseException:
        for broker in brokers.values():
            broker.stop()
        raise
    return brokers


def start_clusters(base: Path, names: tuple[str, ...], fsync: str = "never") -> dict[str, BrokerProcess]:
    """Started broker processes of clusters ``names``, by name (launched side by side)."""
    return start_side_by_side({name: cluster_broker(base, name, fsync) for name in names})


def register(brokers: dict[str, BrokerProcess], dedup: bool = True, replicate: bool = True) -> None:
    """Every cluster registered on every broker, tenant ``geo`` allowed on all, ``geo/ns`` replicated to all.

    Each broker in a thread of its own: a broker's first admin request builds its admin app (seconds
    on a loaded machine), and the brokers build theirs side by side."""
    names = sorted(brokers)

    def on(here: BrokerProcess) -> None:
        for name, there in brokers.items():
            body = {"serviceUrl": there.http_url, "brokerServiceUrl": there.service_url}
            assert rest(here.http_url, "PUT", f"/admin/v2/clusters/{name}", body)[0] in (204, 409)
        assert rest(here.http_url, "PUT", "/admin/v2/tenants/geo", {"adminRoles": [], "allowedClusters": names})[0] == 204
        assert rest(here.http_url, "PUT", f"/admin/v2/namespaces/{NS}")[0] == 204
        if dedup:
            assert rest(here.http_url, "POST", f"/admin/v2/namespaces/{NS}/deduplication", True)[0] == 204
        if replicate:
            assert rest(here.http_url, "POST", f"/admin/v2/namespaces/{NS}/replication", names) == (204, None)

    with ThreadPoolExecutor(len(brokers)) as pool:
        for done in [pool.submit(on, here) for here in brokers.values()]:
            done.result()  # an assertion of any broker fails the test


def stats(broker: BrokerProcess, topic: str) -> dict[str, Any]:
    """Topic stats of ``persistent://geo/ns/<topic>`` on a broker."""
    status, body = rest(broker.http_url, "GET", f"/admin/v2/persistent/{NS}/{topic}/stats")
    assert status == 200, body
    return body


def wait_until(check: Callable[[], bool], timeout: float = SETTLE_S, what: str = "condition") -> None:
    """Poll ``check`` until it holds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def read_all(url: str, topic: str, expected: int, timeout_s: float = SETTLE_S) -> list[pulsar.Message]:
    """Every message of a topic from the start, once ``expected`` are there, then check nothing more comes."""
    client = new_client(url)
    try:
        reader = client.create_reader(f"persistent://{NS}/{topic}", pulsar.MessageId.earliest)
        out: list[pulsar.Message] = []
        deadline = time.monotonic() + timeout_s
        while len(out) < expected and time.monotonic() < deadline:
            with contextlib.suppress(pulsar.Timeout):
                out.append(reader.read_next(timeout_millis=1000))
        with contextlib.suppress(pulsar.Timeout):
            out.append(reader.read_next(timeout_millis=1000))  # one more would be a duplicate or a loop
        return out
    finally:
        client.close()


def produce(url: str, topic: str, prefix: str, count: int, **options: Any) -> None:
    """``count`` messages ``<prefix>-<i>`` from one named producer (batched), all acknowledged."""
    client = new_client(url)
    try:
        producer = client.create_producer(f"persistent://{NS}/{topic}", producer_name=prefix,
                                          batching_enabled=True, batching_max_publish_delay_ms=5,
                                          block_if_queue_full=True, **options)
        for i in range(count):
            producer.send_async(f"{prefix}-{i}".encode(), None)
        producer.flush()
        producer.close()
    finally:
        client.close()


def produce_native(url: str, topic: str, prefix: str, count: int) -> None:
    """As :func:`produce`, with magnetar.client."""
    client = magnetar.client.Client(url)
    try:
        producer = client.create_producer(f"persistent://{NS}/{topic}", producer_name=prefix)
        for i in range(count):
            producer.send_async(f"{prefix}-{i}".encode(), None)
        producer.flush()
        producer.close()
    finally:
        client.close()


def consume_native(url: str, topic: str, count: int) -> list[bytes]:
    """``count`` payloads from the start of a topic with a magnetar.client consumer, then check nothing more comes."""
    client = magnetar.client.Client(url)
    try:
        consumer = client.subscribe(f"persistent://{NS}/{topic}", "native",
                                    initial_position=magnetar.client.InitialPosition.Earliest)
        out = [consumer.receive(timeout_millis=20_000).data() for _ in range(count)]
        with pytest.raises(magnetar.client.Timeout):
            consumer.receive(timeout_millis=1000)
        return out
    finally:
        client.close()


def metric_values(broker: BrokerProcess, name: str) -> dict[str, float]:
    """``remote_cluster`` label -> value of one /metrics series of a broker."""
    with urllib.request.urlopen(f"{broker.http_url}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels, value = line[len(name) + 1:].rsplit("} ", 1)
            remote = labels.split('remote_cluster="', 1)[1].split('"', 1)[0]
            out[remote] = out.get(remote, 0.0) + float(value)
    return out


def by_producer(messages: list[pulsar.Message]) -> dict[str, list[int]]:
    """Message numbers per producer prefix, in the order read."""
    out: dict[str, list[int]] = {}
    for m in messages:
        prefix, _, number = m.data().decode().rpartition("-")
        out.setdefault(prefix, []).append(int(number))
    return out


@pytest.fixture
def two(tmp_path: Path) -> Iterator[dict[str, BrokerProcess]]:
    """Clusters east and west, replicating geo/ns both ways with deduplication on."""
    brokers = start_clusters(tmp_path, ("east", "west"))
    try:
        register(brokers)
        yield brokers
    finally:
        for b in brokers.values():
            b.stop()


def test_both_ways_exact_sets_order_and_no_loops(two: dict[str, BrokerProcess]) -> None:
    east, west = two["east"], two["west"]
    produce(east.service_url, "both", "e", 300)
    produce_native(west.service_url, "both", "w", 200)
    for broker in (east, west):
        got = read_all(broker.service_url, "both", 500)
        assert len(got) == 500
        assert by_producer(got) == {"e": list(range(300)), "w": list(range(200))}
    native = consume_native(east.service_url, "both", 500)
    assert sorted(native) == sorted([f"e-{i}".encode() for i in range(300)] + [f"w-{i}".encode() for i in range(200)])
    # each broker stored each message once: its own 300 or 200, the other's by replication
    wait_until(lambda: all(stats(b, "both")["replication"].get(o, {}).get("replicationBacklog", 1) == 0
                           for b, o in ((east, "west"), (west, "east"))), what="backlogs at 0")
    for broker, own, other in ((east, 300, "west"), (west, 200, "east")):
        s = stats(broker, "both")
        assert s["msgInCounter"] == 500
        assert [p["producerName"] for p in s["publishers"]] == []
        assert set(s["replication"]) == {other}
        assert s["replication"][other]["msgOutCounter"] == own
        assert s["replication"][other]["connected"] is True
        assert set(s["subscriptions"]) == ({"native"} if broker is east else set())  # the cursor is not one
    # west dropped from east's policy: east's replicator stops and its cursor goes (it no longer holds data)
    assert rest(east.http_url, "POST", f"/admin/v2/namespaces/{NS}/replication", ["east"]) == (204, None)

    def cursors() -> set[str]:
        return set(rest(east.http_url, "GET", f"/admin/v2/persistent/{NS}/both/internalStats")[1]["cursors"])

    wait_until(lambda: cursors() == {"native"}, what="the replicator's cursor deleted")
    west_side = stats(east, "both")["replication"]["west"]  # west still replicates here: inbound only now
    assert west_side["outboundConnection"] is None and west_side["msgOutCounter"] == 0


def test_remote_down_backlog_grows_then_drains(two: dict[str, BrokerProcess]) -> None:
    east, west = two["east"], two["west"]
    produce(east.service_url, "outage", "a", 50)
    assert len(read_all(west.service_url, "outage", 50)) == 50
    west.stop()
    produce(east.service_url, "outage", "b", 400)
    wait_until(lambda: stats(east, "outage")["replication"]["west"]["connected"] is False, what="disconnected")
    down = stats(east, "outage")["replication"]["west"]
    assert down["replicationBacklog"] > 0 and down["msgOutCounter"] == 50
    assert metric_values(east, "pulsar_replication_connected_count") == {"west": 0.0}
    assert metric_values(east, "pulsar_replication_backlog")["west"] > 0
    west.start(timeout=START_S)
    wait_until(lambda: stats(east, "outage")["replication"]["west"]["replicationBacklog"] == 0, what="backlog drained")
    got = read_all(west.service_url, "outage", 450)
    assert by_producer(got) == {"a": list(range(50)), "b": list(range(400))}
    up = stats(east, "outage")["replication"]["west"]
    assert up["connected"] is True and up["msgOutCounter"] == 450
    assert metric_values(east, "pulsar_replication_connected_count") == {"west": 1.0}
    assert metric_values(east, "pulsar_replication_backlog") == {"west": 0.0}
    assert set(metric_values(east, "pulsar_replication_delay_in_seconds")) == {"west"}
    assert stats(west, "outage")["msgInCounter"] == 400  # what it received after its restart


@pytest.fixture
def durable_two(tmp_path: Path) -> Iterator[dict[str, BrokerProcess]]:
    """Clusters east and west as ``two``, with fsync on: what a producer was acknowledged survives kill -9."""
    brokers = start_clusters(tmp_path, ("east", "west"), fsync="always")
    try:
        register(brokers)
        yield brokers
    finally:
        for b in brokers.values():
            b.stop()


def test_kill_9_of_the_source_loses_nothing_and_stores_nothing_twice(durable_two: dict[str, BrokerProcess]) -> None:
    east, west = durable_two["east"], durable_two["west"]
    for broker in (east, west):  # keep what was replicated, to count it on the source too
        assert rest(broker.http_url, "POST", f"/admin/v2/namespaces/{NS}/retention",
                    {"retentionTimeInMinutes": -1, "retentionSizeInMB": -1})[0] == 204
    client = new_client(east.service_url)
    producer = client.create_producer(f"persistent://{NS}/crash", producer_name="c", batching_enabled=False,
                                      block_if_queue_full=True)
    total = 3000
    for i in range(total):
        producer.send_async(f"c-{i}".encode(), None)
    producer.flush()
    client.close()

    def arrived() -> int:
        return int(stats(west, "crash")["msgInCounter"]) if rest(west.http_url, "GET", f"/admin/v2/persistent/{NS}/crash/stats")[0] == 200 else 0

    wait_until(lambda: arrived() > 0, what="replication under way")
    east.kill()
    sent_before_kill = arrived()
    east.start(timeout=START_S)
    wait_until(lambda: stats(east, "crash")["replication"]["west"]["replicationBacklog"] == 0, what="backlog drained")
    assert len(read_all(east.service_url, "crash", total)) == total  # the source lost nothing it acknowledged
    got = read_all(west.service_url, "crash", total)
    assert by_producer(got) == {"c": list(range(total))}
    assert stats(west, "crash")["msgInCounter"] == total  # resent entries were dropped by deduplication
    assert 0 < sent_before_kill <= total


def test_replicate_to_and_disable_replication_with_three_clusters(tmp_path: Path) -> None:
    brokers = start_clusters(tmp_path, ("a", "b", "c"))
    try:
        register(brokers)
        client = new_client(brokers["a"].service_url)
        producer = client.create_producer(f"persistent://{NS}/routed", batching_enabled=False)
        producer.send(b"everywhere")
        producer.send(b"only-b", replication_clusters=["b"])
        producer.send(b"only-here", disable_replication=True)
        producer.send(b"last")
        client.close()
        expected = {"a": [b"everywhere", b"only-b", b"only-here", b"last"],
                    "b": [b"everywhere", b"only-b", b"last"], "c": [b"everywhere", b"last"]}
        for name, want in expected.items():
            got = read_all(brokers[name].service_url, "routed", len(want))
            assert [m.data() for m in got] == want, name
            assert stats(brokers[name], "routed")["msgInCounter"] == len(want)
        # from b and c too, each message lands once on every cluster (a full mesh, no loops)
        produce(brokers["b"].service_url, "mesh", "b", 100)
        produce(brokers["c"].service_url, "mesh", "c", 100)
        for broker in brokers.values():
            got = read_all(broker.service_url, "mesh", 200)
            assert by_producer(got) == {"b": list(range(100)), "c": list(range(100))}
            assert stats(broker, "mesh")["msgInCounter"] == 200
    finally:
        for b in brokers.values():
            b.stop()


def test_partitioned_topic_is_created_on_the_remote(two: dict[str, BrokerProcess]) -> None:
    east, west = two["east"], two["west"]
    assert rest(east.http_url, "PUT", f"/admin/v2/persistent/{NS}/parts/partitions", 3) == (204, None)
    produce(east.service_url, "parts", "p", 300)
    wait_until(lambda: rest(west.http_url, "GET", f"/admin/v2/persistent/{NS}/parts/partitions")[1] == {"partitions": 3},
               what="partitioned topic on west")
    client = new_client(west.service_url)
    try:
        consumer = client.subscribe(f"persistent://{NS}/parts", "check", initial_position=pulsar.InitialPosition.Earliest)
        got = sorted(int(consumer.receive(timeout_millis=20_000).data().decode().rpartition("-")[2]) for _ in range(300))
        assert got == list(range(300))
        with pytest.raises(pulsar.Timeout):
            consumer.receive(timeout_millis=1000)
    finally:
        client.close()


class Reading(pulsar.schema.Record):
    """An Avro record of the schema test."""

    sensor = pulsar.schema.String()
    value = pulsar.schema.Double()


def test_avro_schema_is_registered_on_the_remote(two: dict[str, BrokerProcess]) -> None:
    east, west = two["east"], two["west"]
    topic = f"persistent://{NS}/avro"
    client = new_client(east.service_url)
    producer = client.create_producer(topic, schema=pulsar.schema.AvroSchema(Reading))
    for i in range(20):
        producer.send(Reading(sensor=f"s{i}", value=i / 2))
    client.close()
    wait_until(lambda: stats(east, "avro")["replication"]["west"]["replicationBacklog"] == 0, what="replicated")
    status, schema = rest(west.http_url, "GET", f"/admin/v2/schemas/{NS}/avro/schema")
    assert status == 200 and schema["type"] == "AVRO" and "Reading" in schema["data"]
    client = new_client(west.service_url)
    try:
        consumer = client.subscribe(topic, "check", schema=pulsar.schema.AvroSchema(Reading),
                                    initial_position=pulsar.InitialPosition.Earliest)
        got = [consumer.receive(timeout_millis=10_000).value() for _ in range(20)]
        assert [(r.sensor, r.value) for r in got] == [(f"s{i}", i / 2) for i in range(20)]
    finally:
        client.close()


def test_scale_out_script_moves_a_namespace_with_its_data(tmp_path: Path) -> None:
    started = start_side_by_side({"edge": cluster_broker(tmp_path, "edge", MAGNETAR_REPLICATION_START_AT="earliest"),
                                  "core": cluster_broker(tmp_path, "core")})
    edge, core = started["edge"], started["core"]
    try:
        assert rest(edge.http_url, "PUT", "/admin/v2/tenants/geo", {"adminRoles": [], "allowedClusters": ["edge"]})[0] == 204
        assert rest(edge.http_url, "PUT", f"/admin/v2/namespaces/{NS}")[0] == 204
        assert rest(edge.http_url, "PUT", f"/admin/v2/persistent/{NS}/orders/partitions", 2)[0] == 204
        produce(edge.service_url, "events", "e", 250)  # stored before replication is set up
        produce(edge.service_url, "orders", "o", 100)
        script = Path(__file__).resolve().parents[2] / "tools" / "scale_out.py"
        done = subprocess.run(
            [sys.executable, str(script), "--magnetar-http", edge.http_url, "--magnetar-cluster", "edge",
             "--target-cluster", "core", "--target-http", core.http_url, "--target-broker", core.service_url,
             "--namespace", NS, "--timeout", "60"], capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "point producers and consumers at" in done.stdout
        assert by_producer(read_all(core.service_url, "events", 250)) == {"e": list(range(250))}
        assert rest(core.http_url, "GET", f"/admin/v2/persistent/{NS}/orders/partitions")[1] == {"partitions": 2}
        assert sorted(consume_native(core.service_url, "orders", 100)) == sorted(f"o-{i}".encode() for i in range(100))
        produce(core.service_url, "events", "after", 10)  # the switched producers: nothing comes back
        time.sleep(1)
        assert stats(edge, "events")["msgInCounter"] == 250
    finally:
        edge.stop()
        core.stop()


def test_replication_to_a_remote_that_authenticates(tmp_path: Path) -> None:
    secret = generate_secret_key()
    (tmp_path / "secret.key").write_bytes(secret)
    admin = create_token(secret, "admin")
    secured = {"MAGNETAR_AUTHENTICATION_ENABLED": "true", "MAGNETAR_AUTHORIZATION_ENABLED": "true",
               "MAGNETAR_AUTHENTICATION_PROVIDERS": "token", "MAGNETAR_SUPER_USER_ROLES": "admin",
               "MAGNETAR_TOKEN_SECRET_KEY": f"file://{tmp_path / 'secret.key'}",
               "MAGNETAR_BROKER_CLIENT_AUTHENTICATION_PLUGIN": "token",
               "MAGNETAR_BROKER_CLIENT_AUTHENTICATION_PARAMETERS": f"token:{admin}"}
    started = start_side_by_side({"west": cluster_broker(tmp_path, "west", **secured),
                                  "east": cluster_broker(tmp_path, "east")})
    west, east = started["west"], started["east"]
    try:
        for url, token in ((east.http_url, None), (west.http_url, admin)):
            for name, there in (("east", east), ("west", west)):
                data = {"serviceUrl": there.http_url, "brokerServiceUrl": there.service_url}
                if name == "west":
                    data |= {"authenticationPlugin": "org.apache.pulsar.client.impl.auth.AuthenticationToken",
                             "authenticationParameters": f"token:{admin}"}
                assert rest(url, "PUT", f"/admin/v2/clusters/{name}", data, token=token)[0] in (204, 409)
            assert rest(url, "PUT", "/admin/v2/tenants/geo", {"adminRoles": [], "allowedClusters": ["east", "west"]},
                        token=token)[0] == 204
            assert rest(url, "PUT", f"/admin/v2/namespaces/{NS}", token=token)[0] == 204
        assert rest(east.http_url, "POST", f"/admin/v2/namespaces/{NS}/replication", ["east", "west"])[0] == 204
        # the secured broker made public and public/default itself: its broker client is a superuser
        assert rest(west.http_url, "GET", "/admin/v2/namespaces/public", token=admin) == (200, ["public/default"])
        produce(east.service_url, "secured", "s", 100)
        wait_until(lambda: stats(east, "secured")["replication"]["west"]["replicationBacklog"] == 0, what="replicated")
        client = pulsar.Client(west.service_url, authentication=pulsar.AuthenticationToken(admin),
                               logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        try:
            reader = client.create_reader(f"persistent://{NS}/secured", pulsar.MessageId.earliest)
            got = [reader.read_next(timeout_millis=10_000).data() for _ in range(100)]
            assert got == [f"s-{i}".encode() for i in range(100)]
        finally:
            client.close()
    finally:
        east.stop()
        west.stop()
