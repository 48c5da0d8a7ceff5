"""Geo-replication between magnetar brokers, end to end: two or three broker processes, each its own
cluster (data dir, ``clusterName``, ports), registered with each other, one namespace replicated
between them; producers and consumers are the official Python client and magnetar.client."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pulsar
import pytest

from magnetar.testing import BrokerProcess
from tests.broker.replication.rest import rest

from .helpers import new_client

NS = "geo/ns"
#: how long replication may take to deliver what was produced
SETTLE_S = 30.0


def start_cluster(base: Path, name: str, *extra: str) -> BrokerProcess:
    """A broker process of cluster ``name``."""
    env = {"MAGNETAR_CLUSTER_NAME": name}
    (base / name).mkdir(parents=True, exist_ok=True)
    return BrokerProcess(base / name / "data", args=("--fsync", "never", *extra), env=env).start()


def register(brokers: dict[str, BrokerProcess], dedup: bool = True, replicate: bool = True) -> None:
    """Every cluster registered on every broker, tenant ``geo`` allowed on all, ``geo/ns`` replicated to all."""
    names = sorted(brokers)
    for here in brokers.values():
        for name, there in brokers.items():
            body = {"serviceUrl": there.http_url, "brokerServiceUrl": there.service_url}
            assert rest(here.http_url, "PUT", f"/admin/v2/clusters/{name}", body)[0] in (204, 409)
        assert rest(here.http_url, "PUT", "/admin/v2/tenants/geo", {"adminRoles": [], "allowedClusters": names})[0] == 204
        assert rest(here.http_url, "PUT", f"/admin/v2/namespaces/{NS}")[0] == 204
        if dedup:
            assert rest(here.http_url, "POST", f"/admin/v2/namespaces/{NS}/deduplication", True)[0] == 204
        if replicate:
            assert rest(here.http_url, "POST", f"/admin/v2/namespaces/{NS}/replication", names) == (204, None)


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
                                          batching_enabled=True, batching_max_publish_delay_ms=5, **options)
        for i in range(count):
            producer.send_async(f"{prefix}-{i}".encode(), None)
        producer.flush()
        producer.close()
    finally:
        client.close()


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
    brokers = {name: start_cluster(tmp_path, name) for name in ("east", "west")}
    try:
        register(brokers)
        yield brokers
    finally:
        for b in brokers.values():
            b.stop()


def test_both_ways_exact_sets_order_and_no_loops(two: dict[str, BrokerProcess]) -> None:
    east, west = two["east"], two["west"]
    produce(east.service_url, "both", "e", 300)
    produce(west.service_url, "both", "w", 200)
    for broker in (east, west):
        got = read_all(broker.service_url, "both", 500)
        assert len(got) == 500
        assert by_producer(got) == {"e": list(range(300)), "w": list(range(200))}
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
        assert s["subscriptions"] == {}
