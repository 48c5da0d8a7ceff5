"""Partitioned topics that change or are read from a position: producers and consumers follow a
partition increase (the Java client's autoUpdatePartitions), readers start at a message id or a
time on every partition (the Java client's MultiTopicsReader)."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable

import pytest

from magnetar.client import (
    Client,
    ConsumerType,
    InitialPosition,
    InvalidConfiguration,
    MessageId,
    Timeout,
    partition_for_key,
)
from magnetar.testing import BrokerProcess

from ..conftest import QUIET_MS, RECEIVE_MS, create_partitioned_topic


def _increase_partitions(broker: BrokerProcess, topic: str, partitions: int) -> None:
    path = topic.replace("persistent://", "persistent/")
    req = urllib.request.Request(
        f"{broker.http_url}/admin/v2/{path}/partitions", data=json.dumps(partitions).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status in (200, 204), resp.status


def _key_for(partition: int, partitions: int) -> str:
    return next(k for k in (f"k{i}" for i in range(10_000)) if partition_for_key(k, partitions) == partition)


def _wait_for(condition: Callable[[], bool], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def _partition_of(msg) -> int:  # noqa: ANN001 - a received message
    return int(msg.topic_name().rsplit("-partition-", 1)[1])


def test_producer_and_consumer_follow_a_partition_increase(
    broker: BrokerProcess, client_factory: Callable[..., Client], topic: str
) -> None:
    create_partitioned_topic(broker, topic, 2)
    fast = client_factory(broker.service_url, partitions_update_interval_seconds=0.3)
    slow = client_factory(broker.service_url, partitions_update_interval_seconds=2)
    consumer = slow.subscribe(topic, "grow", consumer_type=ConsumerType.Shared)
    producer = fast.create_producer(topic, batching_enabled=False)
    producer.send(b"before", partition_key=_key_for(1, 2))
    assert consumer.receive(RECEIVE_MS).data() == b"before"

    _increase_partitions(broker, topic, 4)
    _wait_for(lambda: len(producer.core.producers) == 4)
    # the producer knows partition 3 before the consumer does: what it sends there is not lost
    key3 = _key_for(3, 4)
    producer.send(b"early-3", partition_key=key3)
    msg = consumer.receive(RECEIVE_MS)
    assert (msg.data(), _partition_of(msg)) == (b"early-3", 3)
    consumer.acknowledge(msg)
    assert len(consumer.core.consumers) == 4
    for i in range(8):
        producer.send(b"after-%d" % i)
    got = [consumer.receive(RECEIVE_MS) for _ in range(8)]
    assert sorted(m.data() for m in got) == [b"after-%d" % i for i in range(8)]
    assert {_partition_of(m) for m in got} == {0, 1, 2, 3}  # round robin over all four


def test_updates_can_be_turned_off(broker: BrokerProcess, client_factory: Callable[..., Client], topic: str) -> None:
    create_partitioned_topic(broker, topic, 1)
    client = client_factory(broker.service_url, partitions_update_interval_seconds=0)
    producer = client.create_producer(topic)
    _increase_partitions(broker, topic, 2)
    time.sleep(0.5)
    assert len(producer.core.producers) == 1


def _send_keyed(client: Client, topic: str, partitions: int, per_partition: int) -> dict[int, list[MessageId]]:
    producer = client.create_producer(topic, batching_enabled=False)
    ids: dict[int, list[MessageId]] = {p: [] for p in range(partitions)}
    for p in range(partitions):
        key = _key_for(p, partitions)
        for i in range(per_partition):
            ids[p].append(producer.send(b"p%d-%d" % (p, i), partition_key=key))
    return ids


def _read_all(reader) -> list[bytes]:  # noqa: ANN001 - a sync reader
    out = []
    while reader.has_message_available():
        out.append(reader.read_next(RECEIVE_MS).data())
    return sorted(out)


def test_reader_of_a_partitioned_topic_starts_at_a_message_id(broker: BrokerProcess, client: Client, topic: str) -> None:
    create_partitioned_topic(broker, topic, 3)
    ids = _send_keyed(client, topic, 3, 4)
    start = ids[1][1]
    assert start.partition() == 1
    others = [b"p%d-%d" % (p, i) for p in (0, 2) for i in range(4)]

    reader = client.create_reader(topic, start)
    assert _read_all(reader) == sorted([b"p1-2", b"p1-3", *others])
    reader.close()

    inclusive = client.create_reader(topic, start, start_message_id_inclusive=True)
    assert _read_all(inclusive) == sorted([b"p1-1", b"p1-2", b"p1-3", *others])
    inclusive.close()

    latest = client.create_reader(topic, MessageId.latest)
    assert not latest.has_message_available()


def test_reader_of_a_partitioned_topic_seeks_one_partition(broker: BrokerProcess, client: Client, topic: str) -> None:
    create_partitioned_topic(broker, topic, 2)
    ids = _send_keyed(client, topic, 2, 3)
    reader = client.create_reader(topic, MessageId.earliest)
    assert len(_read_all(reader)) == 6
    reader.seek(ids[0][0])  # partition 0 goes back; partition 1 stays where it was
    assert _read_all(reader) == [b"p0-1", b"p0-2"]
    reader.seek(MessageId.deserialize(ids[1][1].serialize()))  # a restored id: found by its partition
    assert _read_all(reader) == [b"p1-2"]


def test_reader_starts_by_time_on_every_partition(broker: BrokerProcess, client: Client, topic: str) -> None:
    create_partitioned_topic(broker, topic, 2)
    _send_keyed(client, topic, 2, 2)
    time.sleep(2.5)
    newer_from = time.time()
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"new-0", partition_key=_key_for(0, 2))  # partition 1 has nothing that recent
    rollback = time.time() - newer_from + 0.5
    assert rollback < 2.4, "the machine is too slow for this test's margins"
    reader = client.create_reader(topic, MessageId.earliest, start_message_from_rollback_duration_seconds=rollback)
    assert _read_all(reader) == [b"new-0"]
    # on a topic that is not partitioned too
    plain = topic + "-plain"
    p2 = client.create_producer(plain, batching_enabled=False)
    p2.send(b"old")
    time.sleep(2.5)
    p2.send(b"new")
    reader2 = client.create_reader(plain, MessageId.earliest, start_message_from_rollback_duration_seconds=1.5)
    assert _read_all(reader2) == [b"new"]


def test_redeliver_unacknowledged_sends_pending_acks_first(client: Client, topic: str) -> None:
    consumer = client.subscribe(
        topic, "redeliver", consumer_type=ConsumerType.Shared, initial_position=InitialPosition.Earliest,
        ack_group_time_ms=60_000,  # acknowledgements would wait a minute on their own
    )
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(5):
        producer.send(b"m%d" % i)
    got = [consumer.receive(RECEIVE_MS) for _ in range(5)]
    for msg in got[:2]:
        consumer.acknowledge(msg)
    consumer.redeliver_unacknowledged_messages()
    again = sorted(consumer.receive(RECEIVE_MS).data() for _ in range(3))
    assert again == [b"m2", b"m3", b"m4"]
    with pytest.raises(Timeout):  # an acknowledged message does not come back
        consumer.receive(QUIET_MS)


def test_reader_start_id_must_say_its_partition(broker: BrokerProcess, client: Client, topic: str) -> None:
    create_partitioned_topic(broker, topic, 2)
    ids = _send_keyed(client, topic, 2, 1)
    bare = MessageId(ids[1][0].ledger_id, ids[1][0].entry_id)  # no partition, no topic
    with pytest.raises(InvalidConfiguration, match="partition"):
        client.create_reader(topic, bare)
    restored = MessageId.deserialize(ids[1][0].serialize())  # serialized ids keep their partition
    reader = client.create_reader(topic, restored, start_message_id_inclusive=True)
    assert _read_all(reader) == [b"p0-0", b"p1-0"]
