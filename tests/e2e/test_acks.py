"""Acknowledgements survive re-subscribing: individual, cumulative and batch-index acks."""

from __future__ import annotations

import pulsar
import pytest

from .helpers import RECEIVE_MS, assert_nothing_more


def _produce(client: pulsar.Client, topic: str, n: int) -> list[bytes]:
    producer = client.create_producer(topic)
    payloads = [f"m{i}".encode() for i in range(n)]
    for p in payloads:
        producer.send(p)
    producer.close()
    return payloads


def test_individual_acks_are_not_redelivered(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    payloads = _produce(client, topic, 10)
    received = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(10)]
    assert [m.data() for m in received] == payloads
    for msg in received[::2]:
        consumer.acknowledge(msg)
    consumer.acknowledge(received[9].message_id())  # by message id works as well
    consumer.close()

    again = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    back = [again.receive(timeout_millis=RECEIVE_MS) for _ in range(4)]
    assert [m.data() for m in back] == [payloads[i] for i in (1, 3, 5, 7)]
    assert [m.message_id() for m in back] == [received[i].message_id() for i in (1, 3, 5, 7)]
    assert_nothing_more(again)


def test_cumulative_ack(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Exclusive)
    payloads = _produce(client, topic, 10)
    received = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(10)]
    consumer.acknowledge_cumulative(received[5])
    consumer.close()

    again = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Exclusive)
    back = [again.receive(timeout_millis=RECEIVE_MS).data() for _ in range(4)]
    assert back == payloads[6:]
    assert_nothing_more(again)


def test_cumulative_ack_over_individual_acks(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Failover)
    payloads = _produce(client, topic, 10)
    received = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(10)]
    consumer.acknowledge(received[7])
    consumer.acknowledge(received[8])
    consumer.acknowledge_cumulative(received[3])
    consumer.close()

    again = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Failover)
    back = [again.receive(timeout_millis=RECEIVE_MS).data() for _ in range(4)]
    assert back == [payloads[i] for i in (4, 5, 6, 9)]
    assert_nothing_more(again)


def test_unsubscribe_forgets_acks(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    payloads = _produce(client, topic, 3)
    for _ in range(3):
        consumer.acknowledge(consumer.receive(timeout_millis=RECEIVE_MS))
    consumer.unsubscribe()
    again = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    assert [again.receive(timeout_millis=RECEIVE_MS).data() for _ in range(3)] == payloads


def test_batch_index_ack(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(
        topic, "sub", consumer_type=pulsar.ConsumerType.Shared, batch_index_ack_enabled=True
    )
    producer = client.create_producer(
        topic, batching_enabled=True, batching_max_messages=10, batching_max_publish_delay_ms=1000
    )
    payloads = [f"b{i}".encode() for i in range(10)]
    for p in payloads:
        producer.send_async(p, None)
    producer.flush()

    received = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(10)]
    assert [m.data() for m in received] == payloads
    ids = [m.message_id() for m in received]
    # one entry holding the whole batch
    assert len({(i.ledger_id(), i.entry_id()) for i in ids}) == 1
    assert [i.batch_index() for i in ids] == list(range(10))

    acked = {0, 2, 3, 7}
    for i in sorted(acked):
        consumer.acknowledge(received[i])
    consumer.close()

    again = client.subscribe(
        topic, "sub", consumer_type=pulsar.ConsumerType.Shared, batch_index_ack_enabled=True
    )
    expected = [i for i in range(10) if i not in acked]
    back = [again.receive(timeout_millis=RECEIVE_MS) for _ in expected]
    assert [m.data() for m in back] == [payloads[i] for i in expected]
    assert [m.message_id().batch_index() for m in back] == expected
    assert_nothing_more(again)

    # acking the rest completes the entry: nothing comes back after another re-subscribe
    for msg in back:
        again.acknowledge(msg)
    again.close()
    third = client.subscribe(
        topic, "sub", consumer_type=pulsar.ConsumerType.Shared, batch_index_ack_enabled=True
    )
    assert_nothing_more(third)


def test_unsubscribe_refused_while_other_consumers_are_attached(
    client: pulsar.Client, client2: pulsar.Client, topic: str
) -> None:
    c1 = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    c2 = client2.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    with pytest.raises(pulsar.ConsumerBusy):
        c1.unsubscribe()
    # both stay attached and keep receiving
    producer = client.create_producer(topic)
    for i in range(10):
        producer.send(f"m{i}".encode())
    got = []
    for _ in range(40):
        for c in (c1, c2):
            try:
                got.append(c.receive(timeout_millis=100).data())
            except pulsar.Timeout:
                pass
        if len(got) == 10:
            break
    assert sorted(got) == sorted(f"m{i}".encode() for i in range(10))
    c2.close()
    c1.unsubscribe()
