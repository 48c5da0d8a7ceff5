"""Fixtures for end-to-end tests: one broker process per session, official clients per test.

Most tests share the session broker and use a topic of their own (``topic`` fixture). Tests
that restart or crash a broker start a dedicated one with ``dedicated_broker``.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pulsar
import pytest

from magnetar.testing import BrokerProcess

from .helpers import new_client


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """The broker process shared by the session."""
    data_dir = tmp_path_factory.mktemp("shared-broker") / "data"
    proc = BrokerProcess(data_dir).start()
    yield proc
    proc.stop()


@pytest.fixture
def client_factory() -> Iterator[Callable[[str], pulsar.Client]]:
    """Make clients for any broker URL; all of them are closed after the test."""
    clients: list[pulsar.Client] = []

    def make(service_url: str) -> pulsar.Client:
        c = new_client(service_url)
        clients.append(c)
        return c

    yield make
    for c in clients:
        # closed already by the test, or a client of a broker that is gone
        with contextlib.suppress(Exception):
            c.close()


@pytest.fixture
def client(broker: BrokerProcess, client_factory: Callable[[str], pulsar.Client]) -> pulsar.Client:
    """A client of the shared broker."""
    return client_factory(broker.service_url)


@pytest.fixture
def client2(broker: BrokerProcess, client_factory: Callable[[str], pulsar.Client]) -> pulsar.Client:
    """A second, independent client of the shared broker (its own connection)."""
    return client_factory(broker.service_url)


@pytest.fixture
def topic() -> str:
    """A topic name no other test uses."""
    return f"persistent://public/default/e2e-{uuid.uuid4().hex}"


@pytest.fixture
def dedicated_broker(tmp_path: Path) -> Iterator[Callable[..., BrokerProcess]]:
    """Start brokers of this test only (restart and crash tests); all are stopped afterwards."""
    procs: list[BrokerProcess] = []

    def start(data_dir: Path | None = None, **kwargs: object) -> BrokerProcess:
        proc = BrokerProcess(data_dir or tmp_path / "data", **kwargs).start()  # type: ignore[arg-type]
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.stop()
