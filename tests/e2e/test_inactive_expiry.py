"""Inactive-topic and inactive-subscription expiry: off by default, on by setting."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pulsar
import pytest

from magnetar.testing import BrokerProcess


@pytest.fixture(scope="module")
def expiring(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    env = {
        "MAGNETAR_INACTIVE_TOPIC_EXPIRY_SECONDS": "1",
        "MAGNETAR_SUBSCRIPTION_EXPIRATION_MINUTES": "0.02",  # 1.2 s
        "MAGNETAR_LIFECYCLE_CHECK_INTERVAL_SECONDS": "0.3",
    }
    with BrokerProcess(Path(tmp_path_factory.mktemp("expiry")) / "data", env=env) as broker:
        yield broker


def _get(broker: BrokerProcess, path: str) -> object:
    with urllib.request.urlopen(broker.http_url + path, timeout=10) as resp:
        return json.load(resp)


def _wait(predicate: Callable[[], bool], seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


def test_subscription_without_consumers_expires_and_then_the_idle_topic(
    expiring: BrokerProcess, client_factory: Callable[[str], pulsar.Client]
) -> None:
    client = client_factory(expiring.service_url)
    name = f"persistent://public/default/expiring-{time.time_ns()}"
    keep = client.subscribe(name, "kept")  # stays connected: never expires
    gone = client.subscribe(name, "gone")
    producer = client.create_producer(name)
    producer.send(b"x")
    gone.close()
    subs = lambda: _get(expiring, f"/admin/v2/persistent/public/default/{name.rsplit('/', 1)[1]}/subscriptions")  # noqa: E731
    assert _wait(lambda: subs() == ["kept"]), subs()
    time.sleep(1.5)
    assert subs() == ["kept"]  # a subscription with a consumer stays, and so does its topic
    keep.unsubscribe()
    producer.close()
    topics = lambda: _get(expiring, "/admin/v2/namespaces/public/default/topics")  # noqa: E731
    assert _wait(lambda: name not in topics()), topics()


def test_expiry_is_off_by_default(broker: BrokerProcess, client_factory: Callable[[str], pulsar.Client]) -> None:
    client = client_factory(broker.service_url)
    name = f"persistent://public/default/kept-{time.time_ns()}"
    client.subscribe(name, "s").close()
    time.sleep(1.5)
    assert name in _get(broker, "/admin/v2/namespaces/public/default/topics")
    assert _get(broker, f"/admin/v2/persistent/public/default/{name.rsplit('/', 1)[1]}/subscriptions") == ["s"]
