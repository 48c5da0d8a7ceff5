"""Geo-replication of non-persistent topics between two magnetar brokers, end to end: what a local
producer publishes goes to the consumers connected on the other cluster at that moment, once, in
order, with its producer name and sequence ids; nothing comes back; while the other cluster is down
messages are dropped and counted, and new ones flow again once it is back; a policy that stops naming
a cluster stops its replicator. Consumers are the official Python client and magnetar.client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulsar
import pytest

import magnetar.client
from magnetar.testing import BrokerProcess
from tests.broker.replication.rest import rest

from .helpers import assert_nothing_more, new_client, receive_all
from .test_geo_replication import NS, START_S, by_producer, register, start_clusters, wait_until

#: two broker processes per test on a loaded machine
pytestmark = pytest.mark.timeout(300)
TOPIC = f"non-persistent://{NS}/live"


def np_stats(broker: BrokerProcess) -> dict[str, Any]:
    """Topic stats of :data:`TOPIC` on a broker."""
    status, body = rest(broker.http_url, "GET", f"/admin/v2/non-persistent/{NS}/live/stats")
    assert status == 200, body
    return body


def outbound(broker: BrokerProcess, remote: str) -> dict[str, Any]:
    """The replication stats of a broker's topic towards ``remote`` ({} when there are none)."""
    return np_stats(broker)["replication"].get(remote, {})


def wait_connected(source: BrokerProcess, remote: str) -> None:
    """Until the source's replicator to ``remote`` has its producer open there."""
    wait_until(lambda: outbound(source, remote).get("connected") is True, what=f"replicator to {remote} connected")


def send(producer: pulsar.Producer, prefix: str, count: int) -> None:
    """``count`` messages ``<prefix>-<i>``, each acknowledged before the next."""
    for i in range(count):
        producer.send(f"{prefix}-{i}".encode())


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[dict[str, BrokerProcess]]:
    """Clusters east and west, replicating geo/ns both ways."""
    brokers = start_clusters(tmp_path, ("east", "west"))
    try:
        register(brokers, dedup=False)
        yield brokers
    finally:
        for b in brokers.values():
            b.stop()


def test_both_ways_each_once_in_order_with_the_original_producer(pair: dict[str, BrokerProcess]) -> None:
    east, west = pair["east"], pair["west"]
    official = new_client(west.service_url)
    native = magnetar.client.Client(east.service_url)
    try:
        on_west = official.subscribe(TOPIC, "s")
        on_east = native.subscribe(TOPIC, "s")
        from_east = native.create_producer(TOPIC, producer_name="e", batching_enabled=False)
        from_west = official.create_producer(TOPIC, producer_name="w", batching_enabled=False)
        wait_connected(east, "west")
        wait_connected(west, "east")
        for i in range(150):  # both directions at once, interleaved
            from_east.send(f"e-{i}".encode())
            from_west.send(f"w-{i}".encode())
        for i in range(150, 200):
            from_east.send(f"e-{i}".encode())
        got_west = receive_all(on_west, 350)
        assert_nothing_more(on_west, 1000)
        assert by_producer(got_west) == {"e": list(range(200)), "w": list(range(150))}
        assert {m.producer_name() for m in got_west if m.data().startswith(b"e-")} == {"e"}
        got_east = [on_east.receive(timeout_millis=10_000) for _ in range(350)]
        with pytest.raises(magnetar.client.Timeout):
            on_east.receive(timeout_millis=1000)  # west's own copies of east's messages never come back
        assert by_producer(got_east) == {"e": list(range(200)), "w": list(range(150))}  # type: ignore[arg-type]
        replicated = [m for m in got_east if m.data().startswith(b"w-")]
        assert [(m.producer_name(), m.sequence_id()) for m in replicated] == [("w", i) for i in range(150)]
        wait_until(lambda: outbound(east, "west").get("msgOutCounter") == 200, what="east's 200 receipted")
        for broker, local, remote, out, inbound in ((east, "east", "west", 200, 150), (west, "west", "east", 150, 200)):
            s = np_stats(broker)
            assert s["msgInCounter"] == out + inbound
            assert [p["producerName"] for p in s["publishers"]] == [local[0]]
            stats = s["replication"][remote]
            assert (stats["msgOutCounter"], stats["msgInCount"], stats["connected"]) == (out, inbound, True)
            assert stats["replicationBacklog"] == 0 and stats["msgDropRate"] == 0.0
            assert stats["outboundConnection"] == f"pulsar.repl.{local}-->{remote}"
    finally:
        native.close()
        official.close()


def test_remote_down_drops_and_counts_then_new_messages_flow(pair: dict[str, BrokerProcess]) -> None:
    east, west = pair["east"], pair["west"]
    source = new_client(east.service_url)
    try:
        producer = source.create_producer(TOPIC, producer_name="p", batching_enabled=False)
        wait_connected(east, "west")
        sink = new_client(west.service_url)
        consumer = sink.subscribe(TOPIC, "s")
        send(producer, "a", 50)
        assert by_producer(receive_all(consumer, 50)) == {"a": list(range(50))}
        sink.close()
        west.stop()
        wait_until(lambda: outbound(east, "west").get("connected") is False, what="replicator disconnected")
        send(producer, "b", 100)  # nobody to send them to: dropped
        down = outbound(east, "west")
        assert down["msgOutCounter"] == 50 and down["msgDropRate"] > 0 and down["replicationBacklog"] == 0
        west.start(timeout=START_S)
        sink = new_client(west.service_url)
        consumer = sink.subscribe(TOPIC, "s")
        wait_connected(east, "west")
        send(producer, "c", 100)
        assert by_producer(receive_all(consumer, 100)) == {"c": list(range(100))}
        assert_nothing_more(consumer, 1000)
        wait_until(lambda: outbound(east, "west").get("msgOutCounter") == 150, what="150 receipted in all")
        sink.close()
    finally:
        source.close()


def test_policy_without_the_remote_stops_the_replicator(pair: dict[str, BrokerProcess]) -> None:
    east, west = pair["east"], pair["west"]
    source = new_client(east.service_url)
    sink = new_client(west.service_url)
    try:
        consumer = sink.subscribe(TOPIC, "s")
        producer = source.create_producer(TOPIC, producer_name="p", batching_enabled=False)
        wait_connected(east, "west")
        wait_until(lambda: np_stats(west)["replication"].get("east", {}).get("inboundConnection") is not None,
                   what="east's replicator producer on west")
        send(producer, "a", 20)
        assert by_producer(receive_all(consumer, 20)) == {"a": list(range(20))}
        assert rest(east.http_url, "POST", f"/admin/v2/namespaces/{NS}/replication", ["east"]) == (204, None)
        # west still replicates to east (its own policy): east shows that inbound side only
        wait_until(lambda: outbound(east, "west").get("outboundConnection", "") is None, what="replicator stopped")
        wait_until(lambda: np_stats(west)["replication"].get("east", {}).get("inboundConnection") is None,
                   what="the producer on west closed")
        send(producer, "b", 20)
        assert_nothing_more(consumer, 1000)
        assert np_stats(west)["msgInCounter"] == 20
    finally:
        sink.close()
        source.close()
