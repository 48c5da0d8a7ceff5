"""Fixtures of the admin API tests: one broker process for the module, official clients per test."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pulsar
import pytest

from magnetar.testing import BrokerProcess

from .admin_http import Http


@pytest.fixture(scope="package")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker process shared by the admin tests."""
    proc = BrokerProcess(tmp_path_factory.mktemp("admin-broker") / "data", args=("--fsync", "never")).start()
    yield proc
    proc.stop()


@pytest.fixture
def http(broker: BrokerProcess) -> Http:
    """Admin API requests to the shared broker."""
    return Http(broker.http_url)


@pytest.fixture
def client_factory() -> Iterator[Callable[[str], pulsar.Client]]:
    """Official clients for any service URL, closed after the test."""
    clients: list[pulsar.Client] = []

    def make(url: str) -> pulsar.Client:
        c = pulsar.Client(url, operation_timeout_seconds=10, connection_timeout_ms=5000,
                          logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        clients.append(c)
        return c

    yield make
    for c in clients:
        try:
            c.close()
        except Exception:  # noqa: BLE001 - closing a client of a stopped broker may fail
            pass


@pytest.fixture
def client(broker: BrokerProcess, client_factory: Callable[[str], pulsar.Client]) -> pulsar.Client:
    """An official client of the shared broker."""
    return client_factory(broker.service_url)


@pytest.fixture
def name() -> str:
    """A topic local name no other test uses."""
    return f"t-{uuid.uuid4().hex[:12]}"
