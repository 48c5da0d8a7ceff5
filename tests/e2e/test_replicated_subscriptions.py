"""Replicated subscriptions between two magnetar brokers, end to end with the official Python client
(``replicate_subscription_state_enabled=True``): what a subscription acknowledged on one cluster is
not received again by a consumer that fails over to the other, at the granularity of the snapshots
(Pulsar's: a snapshot is taken every second while messages come in)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from magnetar.testing import BrokerProcess

from .helpers import QUIET_MS, RECEIVE_MS, new_client
from .test_geo_replication import NS, register, start_clusters, stats, wait_until

#: two broker processes on a loaded machine, snapshots every second
pytestmark = pytest.mark.timeout(300)
TOPIC = f"persistent://{NS}/orders"
#: longer than a snapshot's round trip (taken every second)
SNAPSHOT_WAIT_S = 4.0


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


def _produce(client: pulsar.Client, values: range) -> None:
    producer = client.create_producer(TOPIC, batching_enabled=False)
    for i in values:
        producer.send(f"m-{i}".encode())
    producer.close()


def _stored(broker: BrokerProcess, count: int) -> None:
    wait_until(lambda: stats(broker, "orders")["msgInCounter"] >= count, what=f"{count} messages on {broker.http_url}")


def _drain(url: str) -> list[str]:
    """Everything subscription ``orders`` delivers now (nothing acknowledged: it comes again next time):
    the first message within RECEIVE_MS, the rest until QUIET_MS of silence (a backlog comes at once)."""
    client = new_client(url)
    try:
        consumer = client.subscribe(TOPIC, "orders", replicate_subscription_state_enabled=True)
        out: list[str] = []
        with contextlib.suppress(pulsar.Timeout):
            while True:
                out.append(consumer.receive(timeout_millis=QUIET_MS if out else RECEIVE_MS).data().decode())
        return out
    finally:
        client.close()


def test_acknowledged_on_east_is_not_received_again_on_west(two: dict[str, BrokerProcess]) -> None:
    east, west = two["east"], two["west"]
    for broker in (west, east):  # the subscription on both clusters, before anything is produced
        client = new_client(broker.service_url)
        client.subscribe(TOPIC, "orders", initial_position=pulsar.InitialPosition.Earliest,
                         replicate_subscription_state_enabled=True).close()
        client.close()
    client = new_client(east.service_url)
    try:
        _produce(client, range(60))
        _stored(west, 60)
        time.sleep(SNAPSHOT_WAIT_S)  # a snapshot after m-59
        _produce(client, range(60, 100))
        _stored(west, 100)
        time.sleep(SNAPSHOT_WAIT_S)  # and one after m-99
        consumer = client.subscribe(TOPIC, "orders", replicate_subscription_state_enabled=True)
        received = [consumer.receive(timeout_millis=10_000) for _ in range(60)]
        assert [m.data().decode() for m in received] == [f"m-{i}" for i in range(60)]
        for m in received:
            consumer.acknowledge(m)
        time.sleep(SNAPSHOT_WAIT_S)  # the update marker goes to west
        consumer.close()
    finally:
        client.close()

    expected = [f"m-{i}" for i in range(60, 100)]
    deadline = time.monotonic() + 30
    got = _drain(west.service_url)
    while got != expected and time.monotonic() < deadline:
        time.sleep(1)
        got = _drain(west.service_url)
    assert got == expected  # m-0..m-59 acknowledged on east; no marker is delivered
    # east still has m-60..m-99 for the subscription, markers hidden there too
    assert _drain(east.service_url) == expected


def test_acknowledgements_follow_the_consumer_back_and_forth(two: dict[str, BrokerProcess]) -> None:
    east, west = two["east"], two["west"]
    for broker in (west, east):
        client = new_client(broker.service_url)
        client.subscribe(TOPIC, "orders", initial_position=pulsar.InitialPosition.Earliest,
                         replicate_subscription_state_enabled=True).close()
        client.close()
    producer_client = new_client(east.service_url)
    try:
        _produce(producer_client, range(30))
        _stored(west, 30)
        time.sleep(SNAPSHOT_WAIT_S)
        _produce(producer_client, range(30, 50))
        _stored(west, 50)
        time.sleep(SNAPSHOT_WAIT_S)
    finally:
        producer_client.close()
    # the consumer on west this time: its acknowledgements go to east
    client = new_client(west.service_url)
    try:
        consumer = client.subscribe(TOPIC, "orders", replicate_subscription_state_enabled=True)
        received = [consumer.receive(timeout_millis=10_000) for _ in range(30)]
        assert [m.data().decode() for m in received] == [f"m-{i}" for i in range(30)]
        for m in received:
            consumer.acknowledge(m)
        time.sleep(SNAPSHOT_WAIT_S)
        consumer.close()
    finally:
        client.close()
    expected = [f"m-{i}" for i in range(30, 50)]
    deadline = time.monotonic() + 30
    got = _drain(east.service_url)
    while got != expected and time.monotonic() < deadline:
        time.sleep(1)
        got = _drain(east.service_url)
    assert got == expected
