"""Acknowledgements and redelivery through magnetar's client against magnetar."""

from __future__ import annotations

import time

from magnetar.client import Client, ConsumerType, InitialPosition, MultiplierRedeliveryBackoff

from ..conftest import RECEIVE_MS
from ..test_roundtrip import nothing_more


def _produce(client: Client, topic: str, n: int, **options: object) -> list[bytes]:
    producer = client.create_producer(topic, **options)
    payloads = [b"m%d" % i for i in range(n)]
    for p in payloads:
        producer.send_async(p, None)
    producer.flush()
    producer.close()
    return payloads


def test_individual_acks_are_not_redelivered(client: Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared)
    payloads = _produce(client, topic, 10, batching_enabled=False)
    received = [consumer.receive(RECEIVE_MS) for _ in range(10)]
    assert [m.data() for m in received] == payloads
    for msg in received[::2]:
        consumer.acknowledge(msg)
    consumer.acknowledge(received[9].message_id())  # by id works as well
    consumer.close()
    again = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared)
    back = [again.receive(RECEIVE_MS) for _ in range(4)]
    assert [m.data() for m in back] == [payloads[i] for i in (1, 3, 5, 7)]
    assert [m.message_id() for m in back] == [received[i].message_id() for i in (1, 3, 5, 7)]
    nothing_more(again)


def test_cumulative_ack_over_individual_acks(client: Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", consumer_type=ConsumerType.Failover)
    payloads = _produce(client, topic, 10, batching_enabled=False)
    received = [consumer.receive(RECEIVE_MS) for _ in range(10)]
    consumer.acknowledge(received[7])
    consumer.acknowledge(received[8])
    consumer.acknowledge_cumulative(received[3])
    consumer.close()
    again = client.subscribe(topic, "sub", consumer_type=ConsumerType.Failover)
    assert [again.receive(RECEIVE_MS).data() for _ in range(4)] == [payloads[i] for i in (4, 5, 6, 9)]
    nothing_more(again)


def test_acks_of_batched_messages(client: Client, topic: str) -> None:
    # without batch index acks an entry is acknowledged once all of its messages are
    consumer = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared)
    payloads = _produce(client, topic, 10, batching_max_publish_delay_ms=500)
    received = [consumer.receive(RECEIVE_MS) for _ in range(10)]
    assert len({m.message_id().ledger_entry() for m in received}) == 1
    for msg in received[:9]:
        consumer.acknowledge(msg)
    consumer.close()
    again = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared)
    assert [again.receive(RECEIVE_MS).data() for _ in range(10)] == payloads  # the entry comes back whole
    again.close()


def test_batch_index_acks(client: Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared, batch_index_ack_enabled=True)
    payloads = _produce(client, topic, 10, batching_max_publish_delay_ms=500)
    received = [consumer.receive(RECEIVE_MS) for _ in range(10)]
    assert [m.message_id().batch_index for m in received] == list(range(10))
    acked = {0, 2, 3, 7}
    for i in sorted(acked):
        consumer.acknowledge(received[i])
    consumer.close()
    again = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared, batch_index_ack_enabled=True)
    expected = [i for i in range(10) if i not in acked]
    back = [again.receive(RECEIVE_MS) for _ in expected]
    assert [m.data() for m in back] == [payloads[i] for i in expected]
    nothing_more(again)
    for msg in back:
        again.acknowledge(msg)
    again.close()
    third = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared, batch_index_ack_enabled=True)
    nothing_more(third)


def test_negative_ack_redelivers_with_incremented_count(client: Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared, negative_ack_redelivery_delay_ms=100)
    _produce(client, topic, 3, batching_enabled=False)
    first = consumer.receive(RECEIVE_MS)
    assert (first.data(), first.redelivery_count()) == (b"m0", 0)
    consumer.negative_acknowledge(first)
    rest = [consumer.receive(RECEIVE_MS) for _ in range(2)]
    assert [m.data() for m in rest] == [b"m1", b"m2"]
    for m in rest:
        consumer.acknowledge(m)
    again = consumer.receive(RECEIVE_MS)
    assert (again.data(), again.redelivery_count(), again.message_id()) == (b"m0", 1, first.message_id())
    consumer.negative_acknowledge(again)
    third = consumer.receive(RECEIVE_MS)
    assert (third.data(), third.redelivery_count()) == (b"m0", 2)
    consumer.acknowledge(third)
    nothing_more(consumer)


def test_negative_ack_backoff_grows_on_the_broker(client: Client, topic: str) -> None:
    backoff = MultiplierRedeliveryBackoff(min_delay_ms=100, max_delay_ms=400, multiplier=2)
    consumer = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared, negative_ack_redelivery_backoff=backoff)
    _produce(client, topic, 1, batching_enabled=False)
    msg = consumer.receive(RECEIVE_MS)
    gaps = []
    for _ in range(4):
        nacked_at = time.monotonic()
        consumer.negative_acknowledge(msg)
        msg = consumer.receive(RECEIVE_MS)
        gaps.append(time.monotonic() - nacked_at)
    assert [msg.redelivery_count()] == [4]
    for gap, want in zip(gaps, [0.1, 0.2, 0.4, 0.4], strict=True):
        assert want - 0.02 <= gap < want + 0.6, gaps
    consumer.acknowledge(msg)


def test_redeliver_unacknowledged_messages(client: Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub")
    payloads = _produce(client, topic, 5, batching_enabled=False)
    received = [consumer.receive(RECEIVE_MS) for _ in range(5)]
    consumer.acknowledge(received[0])
    consumer.acknowledge(received[1])
    time.sleep(0.3)  # acks are grouped for 100 ms
    consumer.redeliver_unacknowledged_messages()
    back = [consumer.receive(RECEIVE_MS) for _ in range(3)]
    assert [m.data() for m in back] == payloads[2:]
    assert all(m.redelivery_count() == 1 for m in back)
    for m in back:
        consumer.acknowledge(m)
    nothing_more(consumer)


def test_unacked_messages_of_a_closed_consumer_go_to_another(client: Client, client2: Client, topic: str) -> None:
    c1 = client.subscribe(topic, "shared", consumer_type=ConsumerType.Shared)
    payloads = _produce(client, topic, 10, batching_enabled=False)
    received = [c1.receive(RECEIVE_MS) for _ in range(4)]
    c2 = client2.subscribe(topic, "shared", consumer_type=ConsumerType.Shared)
    c1.acknowledge(received[0])
    c1.acknowledge(received[1])
    c1.close()
    got = [c2.receive(RECEIVE_MS) for _ in range(8)]
    assert sorted(m.data() for m in got) == sorted(payloads[2:])
    by_payload = {m.data(): m for m in got}
    assert by_payload[b"m2"].redelivery_count() >= 1
    assert by_payload[b"m2"].message_id() == received[2].message_id()


def test_ack_timeout_redelivers_on_the_broker(client: Client, topic: str) -> None:
    consumer = client.subscribe(
        topic, "sub", consumer_type=ConsumerType.Shared, unacked_messages_timeout_ms=1000, tick_duration_ms=100,
        initial_position=InitialPosition.Earliest,
    )
    _produce(client, topic, 2, batching_enabled=False)
    first, second = consumer.receive(RECEIVE_MS), consumer.receive(RECEIVE_MS)
    consumer.acknowledge(second)
    started = time.monotonic()
    again = consumer.receive(RECEIVE_MS)
    waited = time.monotonic() - started
    assert (again.data(), again.redelivery_count()) == (first.data(), 1)
    assert 0.8 <= waited < 2.5
    consumer.acknowledge(again)
    nothing_more(consumer, 1500)


def test_negative_ack_of_one_batched_message_brings_the_batch_back(client: Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared, negative_ack_redelivery_delay_ms=100)
    payloads = _produce(client, topic, 5, batching_max_publish_delay_ms=500)
    first = [consumer.receive(RECEIVE_MS) for _ in range(5)]
    assert len({m.message_id().ledger_entry() for m in first}) == 1
    consumer.negative_acknowledge(first[2])
    for i in (0, 1, 3, 4):  # acknowledging the others does not acknowledge the entry
        consumer.acknowledge(first[i])
    again = [consumer.receive(RECEIVE_MS) for _ in range(5)]
    assert [m.data() for m in again] == payloads and all(m.redelivery_count() == 1 for m in again)
    consumer.acknowledge(again[2])  # the last one missing: now the entry is done
    nothing_more(consumer, 1000)
    consumer.close()
    assert_empty = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared)
    nothing_more(assert_empty)
