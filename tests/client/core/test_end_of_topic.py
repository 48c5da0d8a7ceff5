"""A terminated topic read to its end: the consumer learns it (REACHED_END_OF_TOPIC)."""

from __future__ import annotations

import time
import urllib.request
import uuid

from magnetar.client import Client, ConsumerType, InitialPosition
from magnetar.testing import BrokerProcess


def _terminate(broker: BrokerProcess, topic: str) -> None:
    request = urllib.request.Request(
        f"{broker.http_url}/admin/v2/persistent/public/default/{topic}/terminate", method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def _wait_for(condition, timeout: float = 10.0) -> bool:  # noqa: ANN001 - a callable returning bool
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_consumer_reaches_the_end_of_a_terminated_topic(broker: BrokerProcess, client: Client) -> None:
    topic = f"end-{uuid.uuid4().hex[:8]}"
    consumer = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared,
                                initial_position=InitialPosition.Earliest)
    producer = client.create_producer(topic)
    for i in range(3):
        producer.send(f"m{i}".encode())
    _terminate(broker, topic)
    received = []
    for _ in range(3):
        msg = consumer.receive(timeout_millis=5000)
        received.append(msg.data())
        assert not consumer.has_reached_end_of_topic()
        consumer.acknowledge(msg)
    assert received == [b"m0", b"m1", b"m2"]
    assert _wait_for(consumer.has_reached_end_of_topic)


def test_a_consumer_arriving_after_the_end_learns_it_at_once(broker: BrokerProcess, client: Client) -> None:
    topic = f"end-late-{uuid.uuid4().hex[:8]}"
    client.create_producer(topic).send(b"only")
    _terminate(broker, topic)
    consumer = client.subscribe(topic, "late", initial_position=InitialPosition.Latest)
    assert _wait_for(consumer.has_reached_end_of_topic)
