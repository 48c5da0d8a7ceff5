"""A broker accepting replicators of other clusters: producers named ``pulsar.repl.<cluster>-->...``
are not counted in producer limits, show under ``replication`` in topic stats and are deduplicated by
the original producer; ``pulsar.repl`` subscriptions are refused as reserved."""

from __future__ import annotations

from collections.abc import Iterator

import pulsar
import pytest

import magnetar.client
from magnetar.broker.config import BrokerConfig
from magnetar.testing import BrokerThread, free_port

from .rest import rest


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    http_port = free_port()
    config = BrokerConfig(data_dir=tmp_path_factory.mktemp("inbound") / "data", port=free_port(), http_port=http_port,
                          fsync="never", max_producers_per_topic=1, deduplication_enabled=True)
    thread = BrokerThread(config).start()
    thread.http_url = f"http://127.0.0.1:{http_port}"  # type: ignore[attr-defined]
    yield thread
    thread.stop()


@pytest.fixture
def client(broker: BrokerThread) -> Iterator[pulsar.Client]:
    c = pulsar.Client(broker.service_url, operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    yield c
    c.close()


@pytest.mark.parametrize("name", ["pulsar.repl", "pulsar.repl.west", "pulsar.replicator"])
def test_reserved_subscription_names_are_refused(broker: BrokerThread, client: pulsar.Client, name: str) -> None:
    native = magnetar.client.Client(broker.service_url)
    try:
        # Pulsar's NamingException: ServerError ProducerBusy, with Pulsar's text
        with pytest.raises(magnetar.client.ProducerBusy, match="Subscription with reserved subscription name attempted"):
            native.subscribe("persistent://public/default/reserved", name)
    finally:
        native.close()
    with pytest.raises(pulsar.InvalidConfiguration):  # what the official client makes of that code on SUBSCRIBE
        client.subscribe("persistent://public/default/reserved", name)


def test_replicators_are_not_counted_and_show_under_replication(broker: BrokerThread, client: pulsar.Client) -> None:
    topic = "persistent://public/default/inbound"
    local = client.create_producer(topic, producer_name="local")
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic, producer_name="second")  # the limit is 1 producer
    replicator = client.create_producer(topic, producer_name="pulsar.repl.west-->standalone", batching_enabled=False)
    local.send(b"here")
    replicator.send(b"from-west", sequence_id=0)
    status, stats = rest(broker.http_url, "GET", "/admin/v2/persistent/public/default/inbound/stats")  # type: ignore[attr-defined]
    assert status == 200
    assert [p["producerName"] for p in stats["publishers"]] == ["local"]
    assert set(stats["replication"]) == {"west"}
    west = stats["replication"]["west"]
    assert west["msgInCount"] == 1 and west["inboundConnection"] and west["connected"] is False
    assert stats["msgInCounter"] == 2

