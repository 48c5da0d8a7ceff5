"""Cluster failover (AutoClusterFailover): a client moves to the secondary cluster when the
primary stops answering, and back when the primary answers again, with its producer going on."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from magnetar.client import (
    AutoClusterFailover,
    Client,
    InitialPosition,
    ServiceInfo,
    ServiceInfoProvider,
)
from magnetar.testing import BrokerProcess

from ..conftest import QUIET_MS, RECEIVE_MS


@pytest.fixture
def two_brokers(tmp_path: Path) -> Iterator[tuple[BrokerProcess, BrokerProcess]]:
    """Two brokers of their own (two clusters), stopped afterwards."""
    brokers = [BrokerProcess(tmp_path / name, args=("--log-level", "WARNING")) for name in ("a", "b")]
    for broker in brokers:  # side by side
        broker.launch()
    try:
        for broker in brokers:
            broker.wait_ready(timeout=120.0)
    except BaseException:
        for broker in brokers:
            broker.stop()
        raise
    yield brokers[0], brokers[1]
    for broker in brokers:
        broker.stop()


def _wait_for(condition, timeout: float = 60.0) -> bool:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def _stored(broker: BrokerProcess, topic: str, sub: str) -> list[bytes]:
    with Client(broker.service_url, operation_timeout_seconds=30) as client:
        consumer = client.subscribe(topic, sub, initial_position=InitialPosition.Earliest)
        out = []
        while True:
            try:
                out.append(consumer.receive(QUIET_MS if out else RECEIVE_MS).data())
            except Exception:  # noqa: BLE001 - Timeout: everything read
                return out


def test_moves_to_the_secondary_and_back(two_brokers: tuple[BrokerProcess, BrokerProcess]) -> None:
    primary, secondary = two_brokers
    topic = "persistent://public/default/failover"
    failover = AutoClusterFailover(ServiceInfo(primary.service_url), [ServiceInfo(secondary.service_url)],
                                   check_interval_ms=200, failover_threshold=2, switch_back_threshold=2)
    client = Client(failover, operation_timeout_seconds=30)
    try:
        assert client.get_service_info().service_url == primary.service_url
        producer = client.create_producer(topic, batching_enabled=False)
        producer.send(b"on-primary-1")
        primary.kill()
        assert _wait_for(lambda: client.get_service_info().service_url == secondary.service_url)
        producer.send(b"on-secondary-1")
        primary.start(timeout=120.0)
        assert _wait_for(lambda: client.get_service_info().service_url == primary.service_url)
        producer.send(b"on-primary-2")
    finally:
        client.close()
    assert _stored(secondary, topic, "check") == [b"on-secondary-1"]
    assert _stored(primary, topic, "check") == [b"on-primary-1", b"on-primary-2"]


def test_a_provider_moves_the_client(two_brokers: tuple[BrokerProcess, BrokerProcess]) -> None:
    first, second = two_brokers
    topic = "persistent://public/default/provided"

    class Provider(ServiceInfoProvider):
        def __init__(self) -> None:
            self.update = None
            self.closed = threading.Event()

        def initial_service_info(self) -> ServiceInfo:
            return ServiceInfo(first.service_url)

        def initialize(self, on_service_info_update) -> None:  # noqa: ANN001
            self.update = on_service_info_update

        def close(self) -> None:
            self.closed.set()

    provider = Provider()
    client = Client(provider, operation_timeout_seconds=30)
    try:
        producer = client.create_producer(topic, batching_enabled=False)
        producer.send(b"first")
        provider.update(ServiceInfo(second.service_url))
        assert _wait_for(lambda: client.get_service_info().service_url == second.service_url)
        producer.send(b"second")
    finally:
        client.close()
    assert provider.closed.is_set()
    assert _stored(first, topic, "check") == [b"first"]
    assert _stored(second, topic, "check") == [b"second"]


def test_arguments_are_checked_as_the_official_client() -> None:
    with pytest.raises(ValueError, match="secondary is expected to contain at least one"):
        AutoClusterFailover(ServiceInfo("pulsar://localhost:6650"), [])
    with pytest.raises(ValueError, match="check_interval_ms is expected to be greater than 0"):
        AutoClusterFailover(ServiceInfo("pulsar://localhost:6650"), [ServiceInfo("pulsar://localhost:6651")],
                            check_interval_ms=0)
    with pytest.raises(ValueError, match="service_url is expected to be of type 'str'"):
        ServiceInfo(6650)  # type: ignore[arg-type]
