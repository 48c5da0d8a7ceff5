"""Fixtures of the client tests: one magnetar broker per session, clients closed after each test.

Tests of the asyncio API are plain functions running a coroutine with :func:`run` (a bounded
``asyncio.run``); tests of the sync facade use the ``client`` fixtures. Behaviour a real broker
cannot be made to show (refused credentials, silence) is tested against
:class:`~tests.client.fakebroker.FakeBroker`.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
import uuid
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from magnetar.client import Client
from magnetar.testing import BrokerProcess

#: receive timeout for messages that must arrive
RECEIVE_MS = 10_000
#: receive timeout when checking that nothing (more) arrives
QUIET_MS = 500


def run(coro: Coroutine[Any, Any, Any], timeout: float = 60) -> Any:
    """Run a coroutine on a fresh event loop, bounded by ``timeout`` seconds."""

    async def bounded() -> Any:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """The broker process shared by the session."""
    data_dir = tmp_path_factory.mktemp("client-broker") / "data"
    proc = BrokerProcess(data_dir, args=("--log-level", "WARNING")).start()
    yield proc
    proc.stop()


@pytest.fixture
def url(broker: BrokerProcess) -> str:
    """Service URL of the shared broker."""
    return broker.service_url


@pytest.fixture
def client_factory() -> Iterator[Callable[..., Client]]:
    """Sync clients of any broker; all are closed after the test."""
    clients: list[Client] = []

    def make(service_url: str, **options: Any) -> Client:
        options.setdefault("operation_timeout_seconds", 10)
        options.setdefault("connection_timeout_ms", 5000)
        c = Client(service_url, **options)
        clients.append(c)
        return c

    yield make
    for c in clients:
        try:
            c.close()
        except Exception:  # noqa: BLE001 - a client of a dead broker may fail to close
            pass


@pytest.fixture
def client(url: str, client_factory: Callable[..., Client]) -> Client:
    """A sync client of the shared broker."""
    return client_factory(url)


@pytest.fixture
def client2(url: str, client_factory: Callable[..., Client]) -> Client:
    """A second, independent sync client (its own connection)."""
    return client_factory(url)


@pytest.fixture
def official(broker: BrokerProcess) -> Iterator[Any]:
    """An official pulsar.Client of the shared broker."""
    import pulsar

    c = pulsar.Client(
        broker.service_url, operation_timeout_seconds=10, connection_timeout_ms=5000,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )
    yield c
    c.close()


@pytest.fixture
def topic() -> str:
    """A topic name no other test uses."""
    return f"persistent://public/default/client-{uuid.uuid4().hex[:12]}"


def create_partitioned_topic(broker: BrokerProcess, topic: str, partitions: int) -> None:
    """Create a partitioned topic through the admin REST API."""
    from magnetar.protocol.topic_name import TopicName

    t = TopicName.parse(topic)
    req = urllib.request.Request(
        f"{broker.http_url}/admin/v2/{t.domain}/{t.tenant}/{t.namespace_part}/{t.local_name}/partitions",
        data=json.dumps(partitions).encode(), method="PUT", headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status in (200, 204), resp.status


@pytest.fixture
def dedicated_broker(tmp_path: Path) -> Iterator[Callable[..., BrokerProcess]]:
    """Brokers of this test only (restarts); all are stopped afterwards."""
    procs: list[BrokerProcess] = []

    def start(**kwargs: Any) -> BrokerProcess:
        kwargs.setdefault("args", ("--log-level", "WARNING"))
        proc = BrokerProcess(tmp_path / "data", **kwargs).start()
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.stop()


class ThreadedFake:
    """A FakeBroker on its own loop thread, for tests of the sync facade."""

    def __init__(self) -> None:
        import threading

        from .fakebroker import FakeBroker

        self.loop = asyncio.new_event_loop()
        self.fake = self.loop.run_until_complete(FakeBroker().start())
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` on the fake broker's loop and return its result."""

        async def do() -> Any:
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(do(), self.loop).result(10)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.fake.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


@pytest.fixture
def threaded_fake() -> Iterator[ThreadedFake]:
    """A fake broker in a background thread (request it before client_factory: it outlives the clients)."""
    fake = ThreadedFake()
    yield fake
    fake.stop()
