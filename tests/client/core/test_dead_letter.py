"""Dead letter and retry letter topics, end to end against magnetar."""

from __future__ import annotations

import time

import pytest

from magnetar.client import (
    AsyncClient,
    Client,
    ConsumerDeadLetterPolicy,
    ConsumerType,
    InitialPosition,
    InvalidConfiguration,
    OperationNotSupported,
)
from magnetar.protocol.batch import build_entry
from magnetar.protocol.enums import CommandType
from magnetar.protocol.schema import KeyValue, MessageMetadata

from ..conftest import RECEIVE_MS, run
from ..fakebroker import FakeBroker
from ..test_roundtrip import nothing_more


def test_policy_validation_and_defaults() -> None:
    with pytest.raises(InvalidConfiguration, match="greater than 0"):
        ConsumerDeadLetterPolicy(0)
    policy = ConsumerDeadLetterPolicy(3)
    assert (policy.dead_letter_topic, policy.initial_subscription_name, policy.retry_letter_topic) == ("", "", "")


def test_messages_past_max_redeliveries_go_to_the_dead_letter_topic(client: Client, topic: str) -> None:
    dlq_topic = f"{topic}-sub-DLQ"
    dlq = client.subscribe(dlq_topic, "inspect", initial_position=InitialPosition.Earliest)
    consumer = client.subscribe(
        topic, "sub", consumer_type=ConsumerType.Shared, consumer_name="worker", negative_ack_redelivery_delay_ms=50,
        dead_letter_policy=ConsumerDeadLetterPolicy(max_redeliver_count=2),
    )
    producer = client.create_producer(topic, batching_enabled=False)
    poison_id = producer.send(b"poison", partition_key="k1", ordering_key=b"o1", properties={"a": "1"}, event_timestamp=123)
    producer.send(b"good")
    counts = []
    good = 0
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and (len(counts) < 3 or not good):
        msg = consumer.receive(RECEIVE_MS)
        if msg.data() == b"good":
            good += 1
            consumer.acknowledge(msg)
        else:
            counts.append(msg.redelivery_count())
            consumer.negative_acknowledge(msg)
    # delivered with counts 0, 1, 2 (max_redeliver_count), then dead-lettered instead of a 4th time
    assert counts == [0, 1, 2] and good == 1
    dead = dlq.receive(RECEIVE_MS)
    assert dead.data() == b"poison"
    assert dead.partition_key() == "k1" and dead.ordering_key() == "o1" and dead.event_timestamp() == 123
    assert dead.properties() == {
        "a": "1", "REAL_TOPIC": topic, "ORIGIN_MESSAGE_ID": f"{poison_id.ledger_id}:{poison_id.entry_id}:-1",
    }
    assert dead.producer_name() == f"{topic}-sub-worker-DLQ"
    # and acknowledged on the original subscription
    nothing_more(consumer, 1000)
    consumer.close()
    again = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared)
    nothing_more(again)


def test_initial_subscription_of_the_dead_letter_topic(client: Client, topic: str) -> None:
    consumer = client.subscribe(
        topic, "sub", consumer_type=ConsumerType.Shared, negative_ack_redelivery_delay_ms=50,
        dead_letter_policy=ConsumerDeadLetterPolicy(1, dead_letter_topic=f"{topic}-dead", initial_subscription_name="keep"),
    )
    client.create_producer(topic).send(b"poison")
    for _ in range(2):
        consumer.negative_acknowledge(consumer.receive(RECEIVE_MS))
    nothing_more(consumer, 1000)
    # the subscription was created with the dead letter producer: it holds the message
    keep = client.subscribe(f"{topic}-dead", "keep")
    assert keep.receive(RECEIVE_MS).data() == b"poison"


def test_already_over_the_limit_goes_straight_to_the_dead_letter_topic() -> None:
    """A message redelivered more than max_redeliver_count times (its last consumer died)
    is not handed to the application at all."""

    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe(
                "persistent://public/default/t", "sub", consumer_type=ConsumerType.Shared,
                dead_letter_policy=ConsumerDeadLetterPolicy(3, dead_letter_topic="persistent://public/default/dead"),
            )
            meta = MessageMetadata(producer_name="p", sequence_id=0, publish_time=1)
            meta.properties.append(KeyValue(key="x", value="y"))
            fake.push_message(fake.connections[0], consumer.consumer_id, build_entry(meta, b"late"), 4, 2, redelivery_count=4)
            fake.push_message(fake.connections[0], consumer.consumer_id, build_entry(meta, b"fine"), 4, 3, redelivery_count=1)
            assert (await consumer.receive(5000)).data() == b"fine"
            await fake.wait_for(lambda: [p for p in fake.commands(CommandType.PRODUCER) if p.topic.endswith("/dead")])
            dlq_producer = [p for p in fake.commands(CommandType.PRODUCER) if p.topic.endswith("/dead")][0]
            assert dlq_producer.producer_name == f"persistent://public/default/t-sub-{consumer.name}-DLQ"
            await fake.wait_for(lambda: fake.commands(CommandType.SEND))
            await fake.wait_for(lambda: fake.commands(CommandType.ACK))
            acked = [(m.ledger_id, m.entry_id) for a in fake.commands(CommandType.ACK) for m in a.message_id]
            assert acked == [(4, 2)]

    run(main())


def test_retry_letter_topic_then_dead_letter(client: Client, topic: str) -> None:
    retry_topic, dlq_topic = f"{topic}-sub-RETRY", f"{topic}-sub-DLQ"
    dlq = client.subscribe(dlq_topic, "inspect", initial_position=InitialPosition.Earliest)
    consumer = client.subscribe(
        topic, "sub", consumer_type=ConsumerType.Shared, retry_enable=True,
        dead_letter_policy=ConsumerDeadLetterPolicy(max_redeliver_count=2),
    )
    assert sorted(consumer.core.topics()) == sorted([topic, retry_topic])
    producer = client.create_producer(topic, batching_enabled=False)
    origin = producer.send(b"retry-me", partition_key="rk", properties={"app": "x"})
    first = consumer.receive(RECEIVE_MS)
    assert first.topic_name() == topic
    seen = [first]
    for _ in range(2):
        sent_at = time.monotonic()
        consumer.reconsume_later(seen[-1], 0.3, {"attempt": str(len(seen))})
        msg = consumer.receive(RECEIVE_MS)
        assert time.monotonic() - sent_at >= 0.3
        seen.append(msg)
    for i, msg in enumerate(seen[1:], start=1):
        assert msg.data() == b"retry-me" and msg.partition_key() == "rk"
        assert msg.topic_name() == retry_topic
        props = msg.properties()
        assert props["RECONSUMETIMES"] == str(i)
        assert props["DELAY_TIME"] == "300"
        assert props["REAL_TOPIC"] == topic
        assert props["ORIGIN_MESSAGE_ID"] == origin.java_str()
        assert props["app"] == "x" and props["attempt"] == str(i)
    # the third retry exceeds max_redeliver_count: to the dead letter topic
    consumer.reconsume_later(seen[-1], 0.3)
    dead = dlq.receive(RECEIVE_MS)
    assert dead.data() == b"retry-me"
    assert dead.properties()["RECONSUMETIMES"] == "3"
    assert dead.properties()["REAL_TOPIC"] == topic
    assert dead.properties()["ORIGIN_MESSAGE_ID"] == origin.java_str()
    nothing_more(consumer, 1500)


def test_reconsume_later_needs_retry_enabled(client: Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    producer.send(b"x")
    msg = consumer.receive(RECEIVE_MS)
    with pytest.raises(OperationNotSupported, match="retry_enable=True"):
        consumer.reconsume_later(msg, 1)
