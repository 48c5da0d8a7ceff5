"""A broker configured with a small max_message_size: clients learn it from CONNECTED."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator

import pulsar
import pytest

from magnetar.testing import BrokerProcess

from .helpers import RECEIVE_MS, assert_nothing_more

LIMIT = 64 * 1024


@pytest.fixture(scope="module")
def small_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data_dir = tmp_path_factory.mktemp("small-broker") / "data"
    proc = BrokerProcess(data_dir, env={"MAGNETAR_MAX_MESSAGE_SIZE": str(LIMIT)}).start()
    yield proc
    proc.stop()


@pytest.fixture
def small_client(
    small_broker: BrokerProcess, client_factory: Callable[[str], pulsar.Client]
) -> pulsar.Client:
    return client_factory(small_broker.service_url)


def _topic() -> str:
    return f"persistent://public/default/limit-{uuid.uuid4().hex}"


def test_client_enforces_the_announced_limit(small_client: pulsar.Client) -> None:
    topic = _topic()
    consumer = small_client.subscribe(topic, "sub")
    producer = small_client.create_producer(topic)
    fits = os.urandom(LIMIT - 1024)
    producer.send(fits)
    with pytest.raises(pulsar.MessageTooBig):
        producer.send(os.urandom(LIMIT + 1))
    producer.send(b"after")
    assert consumer.receive(timeout_millis=RECEIVE_MS).data() == fits
    assert consumer.receive(timeout_millis=RECEIVE_MS).data() == b"after"
    assert_nothing_more(consumer)


def test_chunked_message_above_the_limit(small_client: pulsar.Client) -> None:
    topic = _topic()
    consumer = small_client.subscribe(topic, "sub")
    producer = small_client.create_producer(topic, chunking_enabled=True, batching_enabled=False)
    big = os.urandom(5 * LIMIT + 123)
    producer.send(b"small")
    producer.send(big)
    producer.send(b"tail")
    got = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(3)]
    assert [m.data() for m in got] == [b"small", big, b"tail"]
    for m in got:
        consumer.acknowledge(m)
    assert_nothing_more(consumer)
    # a reader reassembles the stored chunks as well
    reader = small_client.create_reader(topic, pulsar.MessageId.earliest)
    assert [reader.read_next(timeout_millis=RECEIVE_MS).data() for _ in range(3)] == [b"small", big, b"tail"]
