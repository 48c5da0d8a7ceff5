"""Batch-index acknowledgements count message by message against the unacked limits (issue 12,
defect 8): Pulsar lowers a consumer's unacked count by the acknowledged batch indexes, not only
when the whole batch is acknowledged."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pulsar
import pytest

from magnetar.testing import BrokerProcess

from .helpers import RECEIVE_MS, assert_nothing_more
from .lifecycle_helpers import wait_until

LIMIT = 20


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = Path(tmp_path_factory.mktemp("batch-acks")) / "data"
    with BrokerProcess(data, env={"MAGNETAR_MAX_UNACKED_MESSAGES_PER_CONSUMER": str(LIMIT)}) as broker:
        yield broker


def _consumer_stats(broker: BrokerProcess, topic: str) -> dict:
    url = f"{broker.http_url}/admin/v2/persistent/public/default/{topic}/stats"
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.load(resp)["subscriptions"]["s"]["consumers"][0]


def test_acknowledged_batch_indexes_lower_the_unacked_count(
    limited: BrokerProcess, client_factory: Callable[[str], pulsar.Client]
) -> None:
    client = client_factory(limited.service_url)
    topic = "batch-index-acks"
    consumer = client.subscribe(
        topic, "s", consumer_type=pulsar.ConsumerType.Shared, batch_index_ack_enabled=True, receiver_queue_size=1000
    )
    producer = client.create_producer(
        topic, batching_enabled=True, batching_max_messages=10, batching_max_publish_delay_ms=60_000
    )
    for i in range(100):
        producer.send_async(b"%d" % i, None)
    producer.flush()
    kept = []
    for i in range(100):  # ten batches of ten: acknowledge 9 of every 10 messages
        msg = consumer.receive(timeout_millis=RECEIVE_MS)
        assert msg.data() == b"%d" % i
        if i % 10 == 9:
            kept.append(msg)
        else:
            consumer.acknowledge(msg)
    assert_nothing_more(consumer)
    stats = wait_until(
        lambda: (s := _consumer_stats(limited, topic))["unackedMessages"] == 10 and s,
        5, "10 messages unacknowledged, one per batch",
    )
    assert stats["blockedConsumerOnUnackedMsgs"] is False
    for msg in kept:
        consumer.acknowledge(msg)
    wait_until(lambda: _consumer_stats(limited, topic)["unackedMessages"] == 0, 5, "everything acknowledged")
