"""Produce and consume through the official client: payloads, metadata, ids, producer names."""

from __future__ import annotations

import pulsar
import pytest

from .helpers import RECEIVE_MS, assert_nothing_more


def test_payload_key_properties_event_time_and_id_order(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic)
    sent = []
    for i in range(20):
        payload = f"message-{i}".encode() + bytes(range(i % 5))
        mid = producer.send(
            payload,
            partition_key=f"key-{i % 3}",
            properties={"index": str(i), "kind": "e2e"},
            event_timestamp=1_700_000_000_000 + i,
        )
        sent.append((payload, mid))
    received = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(20)]
    for i, (msg, (payload, send_id)) in enumerate(zip(received, sent, strict=True)):
        assert msg.data() == payload
        assert msg.partition_key() == f"key-{i % 3}"
        assert msg.properties() == {"index": str(i), "kind": "e2e"}
        assert msg.event_timestamp() == 1_700_000_000_000 + i
        assert msg.publish_timestamp() > 0
        assert msg.producer_name() == producer.producer_name()
        assert msg.redelivery_count() == 0
        assert msg.message_id() == send_id
        consumer.acknowledge(msg)
    ids = [m.message_id() for m in received]
    assert all(a < b for a, b in zip(ids, ids[1:], strict=False))
    assert all(mid.ledger_id() == ids[0].ledger_id() for mid in ids)
    assert_nothing_more(consumer)


def test_message_without_key_or_properties(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    producer.send(b"")
    producer.send(b"plain")
    first = consumer.receive(timeout_millis=RECEIVE_MS)
    second = consumer.receive(timeout_millis=RECEIVE_MS)
    assert first.data() == b""
    assert second.data() == b"plain"
    assert second.partition_key() == ""
    assert second.properties() == {}
    assert second.event_timestamp() == 0


def test_generated_producer_names_are_unique(client: pulsar.Client, topic: str) -> None:
    p1 = client.create_producer(topic)
    p2 = client.create_producer(topic)
    assert p1.producer_name()
    assert p2.producer_name()
    assert p1.producer_name() != p2.producer_name()
    p1.send(b"one")
    p2.send(b"two")


def test_same_explicit_producer_name_is_refused(
    client: pulsar.Client, client2: pulsar.Client, topic: str
) -> None:
    first = client.create_producer(topic, producer_name="the-producer")
    assert first.producer_name() == "the-producer"
    with pytest.raises(pulsar.ProducerBusy):
        client2.create_producer(topic, producer_name="the-producer")
    # the first producer is unaffected; once it closes the name is free again
    first.send(b"still-works")
    first.close()
    again = client2.create_producer(topic, producer_name="the-producer")
    assert again.producer_name() == "the-producer"
    again.send(b"reused-name")


def test_consumer_on_late_subscription_gets_only_later_messages(client: pulsar.Client, topic: str) -> None:
    producer = client.create_producer(topic)
    producer.send(b"before")
    consumer = client.subscribe(topic, "latest-sub")  # default initial position: latest
    producer.send(b"after")
    assert consumer.receive(timeout_millis=RECEIVE_MS).data() == b"after"
    assert_nothing_more(consumer)
