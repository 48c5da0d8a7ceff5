"""A non-persistent topic: a publish completes at once and reaches only the consumers there now."""

from __future__ import annotations

from pathlib import Path

import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.broker.errors import BrokerError
from magnetar.broker.subscriptions.consumer import Consumer
from magnetar.broker.topics.nonpersistent import NonPersistentTopic
from magnetar.broker.topics.producer import Producer
from magnetar.protocol.enums import InitialPosition, ProducerAccessMode, ServerError, SubType
from magnetar.protocol.topic_name import TopicName
from magnetar.storage import Entry
from tests.broker.topics.topic_harness import RecordingContext, RecordingSession

LEDGER_ID = 1 << 40


class RecordingConsumerSession:
    """A consumer's session that records the MESSAGE frames it was asked to send."""

    peer = "127.0.0.1:2"
    client_version = "test"
    writable = True

    def __init__(self) -> None:
        self.messages: list[tuple[int, int, int]] = []  # (ledger id, partition, entry id)

    def send_message(
        self, consumer_id: int, ledger_id: int, partition: int, entry: Entry, redelivery_count: int, ack_set: list[int] | None
    ) -> None:
        self.messages.append((ledger_id, partition, entry.entry_id))

    def send_active_consumer_change(self, consumer_id: int, active: bool) -> None:
        pass

    def consumer_closed_by_broker(self, consumer_id: int) -> None:
        pass


def test_publish_completes_at_once_and_reaches_consumers_with_permits(tmp_path: Path) -> None:
    topic = NonPersistentTopic(
        TopicName.parse("non-persistent://public/default/live-partition-3"),
        LEDGER_ID,
        config=BrokerConfig(data_dir=tmp_path),
        producer_name_prefix="unit",
    )
    producer = Producer(RecordingSession(), 1, "p", topic, ProducerAccessMode.Shared, True)
    assert topic.add_producer(producer)
    log: list[tuple] = []
    assert topic.publish(producer, b"nobody-listens", 0, RecordingContext(log, 0)) is False
    assert log == [("receipt", 0, LEDGER_ID, 0)] and topic.msg_dropped_counter == 0  # no subscription
    sub = topic.subscribe("s", durable=False, initial_position=InitialPosition.Latest, start_message_id=None)
    session = RecordingConsumerSession()
    consumer: Consumer = Consumer(session, 7, "c", sub, SubType.Exclusive)
    sub.add_consumer(consumer)
    topic.publish(producer, b"no-permits", 0, RecordingContext(log, 1))
    sub.flow(consumer, 1)
    topic.publish(producer, b"delivered", 0, RecordingContext(log, 2))
    assert session.messages == [(LEDGER_ID, 3, 2)]
    assert [entry[1] for entry in log] == [0, 1, 2] and topic.msg_dropped_counter == 1  # the one without permits
    assert topic.last_sequence_id("p") == -1 and topic.stats_storage_size() == 0


def test_nothing_is_kept_to_seek_or_read_back(tmp_path: Path) -> None:
    topic = NonPersistentTopic(
        TopicName.parse("non-persistent://public/default/live"), LEDGER_ID, config=BrokerConfig(data_dir=tmp_path),
        producer_name_prefix="unit",
    )
    for call in (topic.last_message_id, lambda: topic.find_entry_by_time(0), lambda: topic.start_position(0, 0)):
        with pytest.raises(BrokerError) as refused:
            call()
        assert refused.value.code == ServerError.NotAllowedError
