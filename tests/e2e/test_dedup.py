"""Broker-side message deduplication by producer name and sequence id."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pulsar
import pytest

from magnetar.testing import BrokerProcess

from .helpers import assert_nothing_more, close_after_kill

DEDUP_ENV = {"MAGNETAR_DEDUPLICATION_ENABLED": "true"}
PRODUCER = "dedup-producer"


def _read_all(client: pulsar.Client, topic: str, quiet_ms: int = 700) -> list[bytes]:
    """Every message stored on ``topic``, from the earliest, through a reader."""
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    out = []
    try:
        while True:
            try:
                out.append(reader.read_next(timeout_millis=quiet_ms).data())
            except pulsar.Timeout:
                return out
    finally:
        reader.close()


def _send(producer: pulsar.Producer, seqs: range | list[int], prefix: str = "seq") -> None:
    # sequence id 0 cannot be given explicitly (the client treats it as "not set"): start at 1
    for seq in seqs:
        assert seq > 0
        producer.send(f"{prefix}-{seq}".encode(), sequence_id=seq)


def _expected(seqs: range) -> list[bytes]:
    return [f"seq-{seq}".encode() for seq in seqs]


@pytest.fixture
def dedup_topic() -> str:
    return f"persistent://public/default/e2e-dedup-{uuid.uuid4().hex}"


def test_dedup_survives_restart_and_crash(
    dedicated_broker: Callable[..., BrokerProcess],
    client_factory: Callable[[str], pulsar.Client],
    dedup_topic: str,
) -> None:
    broker = dedicated_broker(env=DEDUP_ENV)
    client = client_factory(broker.service_url)
    producer = client.create_producer(dedup_topic, producer_name=PRODUCER)
    assert producer.last_sequence_id() == -1
    _send(producer, range(1, 11))
    # resending stored sequence ids (with other payloads) stores nothing new
    _send(producer, range(5, 11), prefix="dup")
    _send(producer, [1, 3], prefix="dup")
    _send(producer, range(11, 13))
    assert _read_all(client, dedup_topic) == _expected(range(1, 13))

    # a re-created producer of the same name learns the last stored sequence id
    producer.close()
    producer = client.create_producer(dedup_topic, producer_name=PRODUCER)
    assert producer.last_sequence_id() == 12
    _send(producer, [12, 7], prefix="dup")
    assert _read_all(client, dedup_topic) == _expected(range(1, 13))
    client.close()

    # clean restart
    broker.stop()
    broker.start()
    client = client_factory(broker.service_url)
    producer = client.create_producer(dedup_topic, producer_name=PRODUCER)
    assert producer.last_sequence_id() == 12
    _send(producer, range(8, 13), prefix="dup")
    _send(producer, range(13, 16))
    assert _read_all(client, dedup_topic) == _expected(range(1, 16))

    # kill -9 right after the sends were acknowledged: nothing of the dedup state is lost
    _send(producer, range(16, 21))
    broker.kill()
    close_after_kill(client)
    broker.start()
    client = client_factory(broker.service_url)
    producer = client.create_producer(dedup_topic, producer_name=PRODUCER)
    assert producer.last_sequence_id() == 20
    _send(producer, range(16, 21), prefix="dup")
    _send(producer, [21])
    assert _read_all(client, dedup_topic) == _expected(range(1, 22))

    # a producer of another name has its own sequence: its low sequence ids are new messages
    other = client.create_producer(dedup_topic, producer_name="another-producer")
    assert other.last_sequence_id() == -1
    other.send(b"other-1", sequence_id=1)
    other.send(b"other-dup", sequence_id=1)
    assert _read_all(client, dedup_topic) == [*_expected(range(1, 22)), b"other-1"]


def test_dedup_consumer_sees_each_message_once(
    dedicated_broker: Callable[..., BrokerProcess],
    client_factory: Callable[[str], pulsar.Client],
    dedup_topic: str,
) -> None:
    broker = dedicated_broker(env=DEDUP_ENV)
    client = client_factory(broker.service_url)
    consumer = client_factory(broker.service_url).subscribe(dedup_topic, "sub")
    producer = client.create_producer(dedup_topic, producer_name=PRODUCER)
    _send(producer, range(1, 6))
    _send(producer, range(1, 6), prefix="dup")
    _send(producer, range(6, 9))
    got = []
    for _ in range(8):
        msg = consumer.receive(timeout_millis=10_000)
        consumer.acknowledge(msg)
        got.append(msg.data())
    assert got == _expected(range(1, 9))
    assert_nothing_more(consumer)


def test_without_dedup_duplicates_are_stored(client: pulsar.Client, dedup_topic: str) -> None:
    producer = client.create_producer(dedup_topic, producer_name=PRODUCER)
    _send(producer, range(1, 6))
    _send(producer, range(1, 6), prefix="dup")
    assert _read_all(client, dedup_topic) == _expected(range(1, 6)) + [
        f"dup-{seq}".encode() for seq in range(1, 6)
    ]
    producer.close()
    again = client.create_producer(dedup_topic, producer_name=PRODUCER)
    assert again.last_sequence_id() == -1
