"""Shared dispatch by priority level through a real broker and client: a level-1 consumer gets
only what the level-0 consumers have no permits for (the official Python client cannot set a
priority level, magnetar's client can)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

import magnetar.client as pulsar
from magnetar.broker.config import BrokerConfig
from magnetar.testing import BrokerThread


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pulsar.Client]:
    config = BrokerConfig(data_dir=tmp_path_factory.mktemp("priority") / "data", port=0, http_port=0, fsync="never")
    with BrokerThread(config) as broker:
        c = pulsar.Client(f"pulsar://127.0.0.1:{broker.server.port}")
        yield c
        c.close()


def _drain(consumer: pulsar.Consumer) -> list[bytes]:
    """Everything that arrives until nothing comes for a second."""
    got = []
    while True:
        try:
            got.append(consumer.receive(timeout_millis=1000).data())
        except pulsar.Timeout:
            return got


def test_low_priority_consumer_gets_only_the_overflow(client: pulsar.Client) -> None:
    topic = f"persistent://public/default/priority-{uuid.uuid4().hex[:10]}"

    def subscribe(level: int) -> pulsar.Consumer:
        return client.subscribe(
            topic, "priority", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=10, priority_level=level
        )

    low = subscribe(1)  # subscribes first: the order of the consumer list must not matter
    high_a, high_b = subscribe(0), subscribe(0)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(10):
        producer.send(f"first-{i}".encode())
    # the two level-0 consumers hold 20 permits: every message goes to them
    assert _drain(low) == []
    for i in range(15):
        producer.send(f"second-{i}".encode())
    # they take the 10 their queues still hold; level 1 gets the other 5
    overflow = _drain(low)
    assert len(overflow) == 5 and all(m.startswith(b"second-") for m in overflow)
    assert len(_drain(high_a)) + len(_drain(high_b)) == 20
