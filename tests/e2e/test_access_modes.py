"""Producer access modes: Shared, Exclusive, ExclusiveWithFencing and WaitForExclusive."""

from __future__ import annotations

import threading
import time

import pulsar
import pytest

from .helpers import RECEIVE_MS, assert_nothing_more

Mode = pulsar.ProducerAccessMode


def _receive_payloads(consumer: pulsar.Consumer, count: int) -> list[bytes]:
    out = []
    for _ in range(count):
        msg = consumer.receive(timeout_millis=RECEIVE_MS)
        consumer.acknowledge(msg)
        out.append(msg.data())
    return out


def test_shared_producers_coexist(client: pulsar.Client, client2: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    p1 = client.create_producer(topic, producer_name="shared-a", access_mode=Mode.Shared)
    p2 = client2.create_producer(topic, producer_name="shared-b", access_mode=Mode.Shared)
    p3 = client2.create_producer(topic, access_mode=Mode.Shared)
    p1.send(b"a1")
    p2.send(b"b1")
    p3.send(b"c1")
    p1.send(b"a2")
    assert _receive_payloads(consumer, 4) == [b"a1", b"b1", b"c1", b"a2"]
    assert_nothing_more(consumer)


def test_exclusive_refuses_other_producers_while_first_keeps_sending(
    client: pulsar.Client, client2: pulsar.Client, topic: str
) -> None:
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    holder = client.create_producer(topic, access_mode=Mode.Exclusive)
    holder.send(b"x0")
    with pytest.raises(pulsar.ProducerFenced):
        client2.create_producer(topic, access_mode=Mode.Exclusive)
    holder.send(b"x1")
    with pytest.raises(pulsar.ProducerBusy):
        client2.create_producer(topic, access_mode=Mode.Shared)
    holder.send(b"x2")
    assert _receive_payloads(consumer, 3) == [b"x0", b"x1", b"x2"]
    assert_nothing_more(consumer)
    # once the holder is gone, exclusive access is free again
    holder.close()
    second = client2.create_producer(topic, access_mode=Mode.Exclusive)
    second.send(b"y0")
    assert _receive_payloads(consumer, 1) == [b"y0"]


def test_exclusive_refused_while_shared_producer_exists(
    client: pulsar.Client, client2: pulsar.Client, topic: str
) -> None:
    shared = client.create_producer(topic, access_mode=Mode.Shared)
    with pytest.raises(pulsar.ProducerFenced):
        client2.create_producer(topic, access_mode=Mode.Exclusive)
    shared.send(b"still-works")


def test_exclusive_with_fencing_takes_over(client: pulsar.Client, client2: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    old = client.create_producer(topic, access_mode=Mode.Exclusive, send_timeout_millis=5_000)
    old.send(b"old-0")
    new = client2.create_producer(topic, access_mode=Mode.ExclusiveWithFencing)
    with pytest.raises(pulsar.ProducerFenced):
        old.send(b"old-1")
    new.send(b"new-0")
    new.send(b"new-1")
    assert _receive_payloads(consumer, 3) == [b"old-0", b"new-0", b"new-1"]
    assert_nothing_more(consumer)
    # the fenced producer stays fenced
    with pytest.raises(pulsar.ProducerFenced):
        old.send(b"old-2")
    assert_nothing_more(consumer, 300)


def test_wait_for_exclusive_blocks_until_holder_closes(
    client: pulsar.Client, client2: pulsar.Client, topic: str
) -> None:
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    holder = client.create_producer(topic, access_mode=Mode.Exclusive)
    holder.send(b"h0")
    result: dict[str, object] = {}

    def create() -> None:
        try:
            result["producer"] = client2.create_producer(topic, access_mode=Mode.WaitForExclusive)
        except Exception as exc:  # noqa: BLE001 - reported by the assertions below
            result["error"] = exc
        result["at"] = time.monotonic()

    waiter = threading.Thread(target=create, daemon=True)
    waiter.start()
    waiter.join(1.5)
    assert waiter.is_alive(), f"WaitForExclusive did not wait: {result}"
    holder.send(b"h1")
    closed_at = time.monotonic()
    holder.close()
    waiter.join(8)
    assert not waiter.is_alive(), "WaitForExclusive producer was not created after the holder closed"
    assert "error" not in result, result
    assert result["at"] - closed_at < 3.0
    producer = result["producer"]
    assert isinstance(producer, pulsar.Producer)
    producer.send(b"w0")
    producer.send(b"w1")
    assert _receive_payloads(consumer, 4) == [b"h0", b"h1", b"w0", b"w1"]
    assert_nothing_more(consumer)
    # while it holds the topic, others are refused
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic, access_mode=Mode.Shared)
