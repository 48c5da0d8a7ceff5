"""The official client's dead letter policy, end to end: after max redeliveries a message
lands on `<topic>-<subscription>-DLQ`, where the policy's initial subscription already waits."""

from __future__ import annotations

import pulsar

from .helpers import assert_nothing_more, receive_all


def test_nacked_message_ends_on_the_dlq_with_its_initial_subscription(client: pulsar.Client, topic: str) -> None:
    dlq = f"{topic}-sub-DLQ"
    policy = pulsar.ConsumerDeadLetterPolicy(max_redeliver_count=2, initial_subscription_name="dlq-init")
    consumer = client.subscribe(
        topic, "sub", consumer_type=pulsar.ConsumerType.Shared,
        dead_letter_policy=policy, negative_ack_redelivery_delay_ms=100,
    )
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"poison", properties={"k": "v"}, partition_key="key-1")
    producer.send(b"fine")
    counts = []
    fine_seen = False
    for _ in range(4):
        msg = consumer.receive(10_000)
        if msg.data() == b"fine":
            consumer.acknowledge(msg)
            fine_seen = True
            msg = consumer.receive(10_000)
        assert msg.data() == b"poison"
        counts.append(msg.redelivery_count())
        if len(counts) == 3:
            break
        consumer.negative_acknowledge(msg)
    assert counts == [0, 1, 2]
    consumer.negative_acknowledge(msg)  # past max_redeliver_count: the client moves it to the DLQ
    if not fine_seen:
        fine = consumer.receive(10_000)
        assert fine.data() == b"fine"
        consumer.acknowledge(fine)
    assert_nothing_more(consumer, 2000)
    # the initial subscription was created with the DLQ producer, so nothing was lost before we came
    dlq_consumer = client.subscribe(dlq, "dlq-init", consumer_type=pulsar.ConsumerType.Shared)
    [dead] = receive_all(dlq_consumer, 1)
    assert dead.data() == b"poison"
    assert dead.partition_key() == "key-1"
    assert dead.properties()["k"] == "v"
    assert dead.properties()["REAL_TOPIC"] == topic
    assert "ORIGIN_MESSAGE_ID" in dead.properties()
    dlq_consumer.acknowledge(dead)
    # the original subscription no longer holds the message
    consumer.close()
    again = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    assert_nothing_more(again, 1000)
