"""Pulsar's minimum ledger lifetime (``managedLedgerMinLedgerRolloverTimeMinutes``, here
``segment_min_rollover_minutes``): what a topic without subscriptions received is not released at the
next trim check, so a reader from the earliest message sees all of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from magnetar.broker.config import BrokerConfig
from magnetar.client import Client, MessageId
from magnetar.testing import BrokerThread

TOPIC = "persistent://public/default/lifetime"
#: messages of about 1 KB, one entry each: four to a 4 KiB segment
COUNT = 40


def _produce_check_and_read(tmp_path: Path, **settings: Any) -> tuple[int, list[int]]:
    """Produce COUNT messages with no subscription, run the topic's trim check, then read from the
    earliest message: (the segment files the ledger kept, the indexes read)."""
    config = BrokerConfig(
        data_dir=tmp_path / "data", port=0, http_port=0, fsync="never", segment_max_bytes=4096, **settings
    )
    with BrokerThread(config) as broker:
        client = Client(broker.service_url)
        try:
            producer = client.create_producer(TOPIC, batching_enabled=False)
            for i in range(COUNT):
                producer.send(b"%04d" % i + b"x" * 1000)
            service = broker.server.service
            topic = service.topics[TOPIC]
            broker.call(service.check_lifecycle, topic)
            segments = broker.call(lambda: topic.ledger.segment_count)
            reader = client.create_reader(TOPIC, MessageId.earliest)
            read = []
            while reader.has_message_available():
                read.append(int(reader.read_next(5000).data()[:4]))
            return segments, read
        finally:
            client.close()


def test_by_default_a_topic_without_subscriptions_keeps_what_it_received(tmp_path: Path) -> None:
    assert BrokerConfig().segment_min_rollover_minutes == 10  # Pulsar's default
    segments, read = _produce_check_and_read(tmp_path)
    assert segments == 1  # the segment is ten minutes from rolling over, however full
    assert read == list(range(COUNT))


def test_with_no_minimum_lifetime_the_sealed_segments_go_at_the_check(tmp_path: Path) -> None:
    segments, read = _produce_check_and_read(tmp_path, segment_min_rollover_minutes=0)
    assert segments == 1  # only the active segment is left
    assert 0 < len(read) <= 4
    assert read == list(range(COUNT - len(read), COUNT))
