"""The replicator dispatch rate: two broker processes, each its own cluster, one namespace replicated
from ``east`` to ``west``; the replicator of ``east`` sends no more than the rate allows."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import magnetar.client
from magnetar.testing import BrokerProcess

from .rest import rest

NS = "georate/ns"
RATE = 100  # messages a second
pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, BrokerProcess]]:
    base: Path = tmp_path_factory.mktemp("georate")
    for name in ("east", "west"):
        (base / name).mkdir()
    brokers: dict[str, BrokerProcess] = {}
    try:
        for name in ("east", "west"):
            brokers[name] = BrokerProcess(base / name / "data", args=("--fsync", "never"),
                                          env={"MAGNETAR_CLUSTER_NAME": name}).start(timeout=90)
        for here in brokers.values():
            for name, there in brokers.items():
                body = {"serviceUrl": there.http_url, "brokerServiceUrl": there.service_url}
                assert rest(here.http_url, "PUT", f"/admin/v2/clusters/{name}", body)[0] in (204, 409)
            assert rest(here.http_url, "PUT", "/admin/v2/tenants/georate",
                        {"adminRoles": [], "allowedClusters": ["east", "west"]})[0] == 204
            assert rest(here.http_url, "PUT", f"/admin/v2/namespaces/{NS}")[0] == 204
            assert rest(here.http_url, "POST", f"/admin/v2/namespaces/{NS}/replication", ["east", "west"])[0] == 204
        yield brokers
    finally:
        for broker in brokers.values():
            broker.stop()


def test_replicator_dispatch_rate_limits_what_reaches_the_remote(clusters: dict[str, BrokerProcess]) -> None:
    east, west = clusters["east"], clusters["west"]
    rate = {"dispatchThrottlingRateInMsg": RATE, "dispatchThrottlingRateInByte": -1, "relativeToPublishRate": False,
            "ratePeriodInSecond": 1}
    assert rest(east.http_url, "POST", f"/admin/v2/namespaces/{NS}/replicatorDispatchRate", rate)[0] == 204
    assert rest(east.http_url, "GET", f"/admin/v2/namespaces/{NS}/replicatorDispatchRate") == (200, rate)
    topic = f"persistent://{NS}/limited"
    there = magnetar.client.Client(west.service_url)
    here = magnetar.client.Client(east.service_url)
    try:
        consumer = there.subscribe(topic, "s", initial_position=magnetar.client.InitialPosition.Earliest)
        producer = here.create_producer(topic, batching_enabled=False)
        for i in range(400):
            producer.send_async(str(i).encode(), None)
        producer.flush()
        stamps: list[float] = []
        deadline = time.monotonic() + 15
        while len(stamps) < 400 and time.monotonic() < deadline:
            try:
                consumer.acknowledge(consumer.receive(timeout_millis=500))
            except magnetar.client.Timeout:
                continue
            stamps.append(time.monotonic())
    finally:
        here.close()
        there.close()
    assert len(stamps) == 400  # all replicated, at the rate
    first = stamps[0]
    steady = sum(1 for t in stamps if first + 1.0 <= t < first + 3.0) / 2.0  # past the first full bucket
    assert RATE * 0.8 <= steady <= RATE * 1.2, steady
    assert stamps[-1] - first >= 2.5  # 400 at 100/s after a bucket of 100: about 3 s
