"""Delayed delivery: deliver_after / deliver_at on Shared subscriptions, immediate elsewhere."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta

import pulsar

from magnetar.testing import BrokerProcess

from .helpers import QUIET_MS, RECEIVE_MS, assert_nothing_more

#: the broker's default release tick (delayed_delivery_tick_seconds)
TICK_S = 1.0
#: scheduling and transport slack on top of the tick
SLACK_S = 1.0


def _now_ms() -> int:
    return int(time.time() * 1000)


def _receive(consumer: pulsar.Consumer, timeout_ms: int = RECEIVE_MS) -> tuple[bytes, int]:
    """(payload, wall-clock ms at which receive returned), acknowledging the message."""
    msg = consumer.receive(timeout_millis=timeout_ms)
    at = _now_ms()
    consumer.acknowledge(msg)
    return msg.data(), at


def test_shared_holds_delayed_messages_while_others_flow(
    client: pulsar.Client, client2: pulsar.Client, topic: str
) -> None:
    consumer = client.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared)
    producer = client2.create_producer(topic)
    sent_after = _now_ms()
    producer.send(b"after-2s", deliver_after=timedelta(seconds=2))
    deliver_at = _now_ms() + 3000
    producer.send(b"at-3s", deliver_at=deliver_at)
    now_msgs = [f"now-{i}".encode() for i in range(5)]
    for payload in now_msgs:
        producer.send(payload)

    # the non-delayed messages published after the delayed ones flow at once
    got = [_receive(consumer) for _ in now_msgs]
    assert [p for p, _ in got] == now_msgs
    assert got[-1][1] - sent_after < 2000, "non-delayed messages were held back until the delayed one was due"

    payload, at = _receive(consumer)
    assert payload == b"after-2s"
    assert at - sent_after >= 2000, f"delivered {at - sent_after} ms after send, before its delay of 2000 ms"
    assert at - sent_after < 2000 + (TICK_S + SLACK_S) * 1000, f"delivered {at - sent_after} ms after send"

    payload, at = _receive(consumer)
    assert payload == b"at-3s"
    assert at >= deliver_at, f"delivered {deliver_at - at} ms before deliver_at"
    assert at - deliver_at < (TICK_S + SLACK_S) * 1000, f"delivered {at - deliver_at} ms after deliver_at"
    assert_nothing_more(consumer, QUIET_MS // 2)


def test_shared_delayed_message_in_the_past_is_delivered_at_once(
    client: pulsar.Client, client2: pulsar.Client, topic: str
) -> None:
    consumer = client.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared)
    producer = client2.create_producer(topic)
    start = _now_ms()
    producer.send(b"past", deliver_at=start - 60_000)
    producer.send(b"plain")
    got = [_receive(consumer) for _ in range(2)]
    assert [p for p, _ in got] == [b"past", b"plain"]
    assert got[-1][1] - start < 3000
    assert_nothing_more(consumer, QUIET_MS // 2)


def _assert_delivered_at_once(consumer: pulsar.Consumer, producer: pulsar.Producer) -> None:
    start = _now_ms()
    producer.send(b"delayed-10s", deliver_after=timedelta(seconds=10))
    producer.send(b"delayed-at", deliver_at=start + 10_000)
    producer.send(b"plain")
    got = [_receive(consumer, 5000) for _ in range(3)]
    assert [p for p, _ in got] == [b"delayed-10s", b"delayed-at", b"plain"]
    assert got[-1][1] - start < 5000, "delayed messages were held back"
    assert_nothing_more(consumer, QUIET_MS // 2)


def test_exclusive_ignores_delay(client: pulsar.Client, client2: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "excl", consumer_type=pulsar.ConsumerType.Exclusive)
    _assert_delivered_at_once(consumer, client2.create_producer(topic))


def test_failover_ignores_delay(client: pulsar.Client, client2: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "fo", consumer_type=pulsar.ConsumerType.Failover)
    _assert_delivered_at_once(consumer, client2.create_producer(topic))


def test_delayed_message_survives_restart(
    dedicated_broker: Callable[..., BrokerProcess],
    client_factory: Callable[[str], pulsar.Client],
    topic: str,
) -> None:
    broker = dedicated_broker()
    client = client_factory(broker.service_url)
    consumer = client.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared)
    producer = client_factory(broker.service_url).create_producer(topic)
    producer.send(b"before")
    deliver_at = _now_ms() + 4000
    producer.send(b"delayed-4s", deliver_at=deliver_at)
    producer.send(b"after")
    assert [_receive(consumer)[0] for _ in range(2)] == [b"before", b"after"]
    time.sleep(0.3)  # let the acknowledgements reach the broker before it stops
    client.close()

    broker.stop()
    broker.start()
    client = client_factory(broker.service_url)
    consumer = client.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared)
    assert _now_ms() < deliver_at - 500, "the restart took too long for this test to mean anything"
    payload, at = _receive(consumer)
    assert payload == b"delayed-4s"
    assert at >= deliver_at, f"delivered {deliver_at - at} ms early after the restart"
    assert at - deliver_at < (TICK_S + SLACK_S) * 1000, f"delivered {at - deliver_at} ms late"
    assert_nothing_more(consumer, QUIET_MS // 2)
