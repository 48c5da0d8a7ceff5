"""How soon producers find a restarted broker (issue 29, defect 4).

A broker killed and started again on the same port and data directory: a producer that lived
across the kill, and a producer created while the broker was down, both have a send confirmed
within a bound of the broker's port accepting connections again. Creating a producer while the
broker cannot be reached retries within the operation timeout, as the official clients do (it
used to fail at once with ConnectError, and an application starting again with a new client each
time came back later than the official client).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from magnetar.client import Client, ConnectError
from magnetar.testing import BrokerProcess, free_port

#: the broker is down this long before it starts again
DOWN = 1.0
#: seconds from the port accepting connections to the first confirmed send: generous for a loaded
#: machine (the restarted broker may take seconds to serve after its port opens), and
#: well under the operation timeout: the old code failed creating a producer at once
BOUND = 10.0


def accepting_at(port: int, timeout: float = 120.0) -> float:
    """When ``port`` first accepts a connection (polled every 5 ms)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return time.monotonic()
        except OSError:
            time.sleep(0.005)
    raise TimeoutError(f"port {port} did not open")


def restart_watched(broker: BrokerProcess) -> float:
    """Start ``broker`` again (from this thread: it dies with the thread that starts it) and
    return when its port first accepted a connection."""
    opened: list[float] = []
    watcher = threading.Thread(target=lambda: opened.append(accepting_at(broker.port)))
    watcher.start()
    broker.start(timeout=120.0)
    watcher.join()
    return opened[0]


def test_producer_across_a_kill_sends_soon_after_the_broker_is_back(
    dedicated_broker: Callable[..., BrokerProcess], client_factory: Callable[..., Client], topic: str
) -> None:
    broker = dedicated_broker(port=free_port(), http_port=free_port())
    producer = client_factory(broker.service_url).create_producer(topic, batching_enabled=False)
    producer.send(b"before")
    broker.kill()
    confirmed: list[float] = []
    errors: list[Any] = []

    def send() -> None:
        try:
            producer.send(b"across")
            confirmed.append(time.monotonic())
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    sender = threading.Thread(target=send)
    sender.start()
    time.sleep(DOWN)
    back = restart_watched(broker)
    sender.join(60)
    assert errors == []
    assert confirmed, "the send did not complete"
    assert confirmed[0] - back < BOUND


def test_producer_created_while_the_broker_is_down_waits_for_it(
    dedicated_broker: Callable[..., BrokerProcess], client_factory: Callable[..., Client], topic: str
) -> None:
    broker = dedicated_broker(port=free_port(), http_port=free_port())
    broker.kill()
    client = client_factory(broker.service_url, operation_timeout_seconds=60)
    outcome: list[Any] = []

    def create_and_send() -> None:
        try:
            producer = client.create_producer(topic, batching_enabled=False)
            producer.send(b"first")
            outcome.append(time.monotonic())
        except Exception as exc:  # noqa: BLE001 - reported below
            outcome.append(exc)

    creator = threading.Thread(target=create_and_send)
    creator.start()
    time.sleep(DOWN)
    assert creator.is_alive(), f"creating the producer did not wait for the broker: {outcome}"
    back = restart_watched(broker)
    creator.join(90)
    assert len(outcome) == 1 and isinstance(outcome[0], float), outcome
    assert outcome[0] - back < BOUND


def test_creating_a_producer_gives_up_when_the_operation_timeout_runs_out(
    client_factory: Callable[..., Client], topic: str
) -> None:
    port = free_port()
    client = client_factory(f"pulsar://127.0.0.1:{port}", operation_timeout_seconds=1.5)
    started = time.monotonic()
    with pytest.raises(ConnectError, match=rf"127\.0\.0\.1:{port}"):
        client.create_producer(topic)
    took = time.monotonic() - started
    assert 0.5 < took < 1.5 + 2.0, took  # retried (attempts at 0, 0.1, 0.3, 0.7 s), then gave up in time
