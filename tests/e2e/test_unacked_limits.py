"""Max unacked messages per consumer: a consumer at its limit gets nothing until it acks."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pulsar
import pytest

from magnetar.testing import BrokerProcess

from .helpers import assert_nothing_more, receive_all


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = Path(tmp_path_factory.mktemp("unacked")) / "data"
    with BrokerProcess(data, env={"MAGNETAR_MAX_UNACKED_MESSAGES_PER_CONSUMER": "10"}) as broker:
        yield broker


def _stats(broker: BrokerProcess, topic: str) -> dict:
    url = f"{broker.http_url}/admin/v2/persistent/public/default/{topic}/stats"
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.load(resp)


def test_consumer_is_blocked_at_its_limit_and_unblocked_at_half(
    limited: BrokerProcess, client_factory: Callable[[str], pulsar.Client]
) -> None:
    client = client_factory(limited.service_url)
    consumer = client.subscribe("unacked-limit", "s", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer("unacked-limit", batching_enabled=False)
    for i in range(30):
        producer.send(b"%d" % i)
    first = receive_all(consumer, 10)
    assert [m.data() for m in first] == [b"%d" % i for i in range(10)]
    assert_nothing_more(consumer)
    sub = _stats(limited, "unacked-limit")["subscriptions"]["s"]
    assert sub["consumers"][0]["blockedConsumerOnUnackedMsgs"] is True
    assert sub["consumers"][0]["unackedMessages"] == 10
    for m in first[:4]:
        consumer.acknowledge(m)
    assert_nothing_more(consumer)  # 6 unacked: still above half the limit
    for m in first[4:6]:
        consumer.acknowledge(m)
    more = receive_all(consumer, 6)  # 4 unacked: unblocked, filled up to the limit again
    assert [m.data() for m in more] == [b"%d" % i for i in range(10, 16)]
    assert_nothing_more(consumer)
    for m in first[6:] + more:
        consumer.acknowledge(m)
    rest = receive_all(consumer, 10)
    assert [m.data() for m in rest] == [b"%d" % i for i in range(16, 26)]


def test_limit_does_not_apply_to_exclusive_consumers_and_readers(
    limited: BrokerProcess, client_factory: Callable[[str], pulsar.Client]
) -> None:
    client = client_factory(limited.service_url)
    consumer = client.subscribe("unlimited-excl", "s", consumer_type=pulsar.ConsumerType.Exclusive)
    producer = client.create_producer("unlimited-excl", batching_enabled=False)
    for i in range(25):
        producer.send(b"%d" % i)
    assert [m.data() for m in receive_all(consumer, 25)] == [b"%d" % i for i in range(25)]
    reader = client.create_reader("unlimited-excl", pulsar.MessageId.earliest)
    assert [reader.read_next(10_000).data() for _ in range(25)] == [b"%d" % i for i in range(25)]
