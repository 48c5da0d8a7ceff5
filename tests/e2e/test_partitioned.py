"""Partitioned topics: auto-created with default_num_partitions, routing modes, per-partition consumers."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterator

import pulsar
import pytest

from magnetar.testing import BrokerProcess

from .helpers import QUIET_MS, RECEIVE_MS, assert_nothing_more, new_client

PARTITIONS = 4


@pytest.fixture(scope="module")
def partitioned_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker whose auto-created topics have 4 partitions."""
    data_dir = tmp_path_factory.mktemp("partitioned-broker") / "data"
    proc = BrokerProcess(data_dir, env={"MAGNETAR_DEFAULT_NUM_PARTITIONS": str(PARTITIONS)}).start()
    yield proc
    proc.stop()


@pytest.fixture
def pclient(partitioned_broker: BrokerProcess) -> Iterator[pulsar.Client]:
    c = new_client(partitioned_broker.service_url)
    yield c
    c.close()


@pytest.fixture
def pclient2(partitioned_broker: BrokerProcess) -> Iterator[pulsar.Client]:
    c = new_client(partitioned_broker.service_url)
    yield c
    c.close()


@pytest.fixture
def ptopic() -> str:
    return f"persistent://public/default/e2e-part-{uuid.uuid4().hex}"


def _partition_names(topic: str) -> list[str]:
    return [f"{topic}-partition-{i}" for i in range(PARTITIONS)]


def _receive_by_partition(consumer: pulsar.Consumer, count: int) -> dict[str, list[bytes]]:
    """Receive ``count`` messages and group their payloads by partition topic name (in arrival order)."""
    out: dict[str, list[bytes]] = defaultdict(list)
    for _ in range(count):
        msg = consumer.receive(timeout_millis=RECEIVE_MS)
        consumer.acknowledge(msg)
        out[msg.topic_name()].append(msg.data())
    return dict(out)


def test_new_topic_has_default_partitions(pclient: pulsar.Client, ptopic: str) -> None:
    assert pclient.get_topic_partitions(ptopic) == _partition_names(ptopic)
    # asking again gives the same answer (the partition count is stored, not re-decided)
    assert pclient.get_topic_partitions(ptopic) == _partition_names(ptopic)
    # a partition's own name is not partitioned again
    assert pclient.get_topic_partitions(f"{ptopic}-partition-1") == [f"{ptopic}-partition-1"]


def test_round_robin_spreads_over_all_partitions(
    pclient: pulsar.Client, pclient2: pulsar.Client, ptopic: str
) -> None:
    consumer = pclient.subscribe(ptopic, "all")
    producer = pclient2.create_producer(
        ptopic,
        batching_enabled=False,
        message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution,
    )
    n = 40
    expected = [f"rr-{i}".encode() for i in range(n)]
    for payload in expected:
        producer.send(payload)
    by_partition = _receive_by_partition(consumer, n)
    assert sorted(by_partition) == _partition_names(ptopic)
    assert {name: len(msgs) for name, msgs in by_partition.items()} == dict.fromkeys(
        _partition_names(ptopic), n // 4
    )
    assert sorted(p for msgs in by_partition.values() for p in msgs) == sorted(expected)
    # each partition keeps publish order
    for msgs in by_partition.values():
        assert msgs == sorted(msgs, key=expected.index)
    assert_nothing_more(consumer)


def test_use_single_partition_puts_everything_on_one(
    pclient: pulsar.Client, pclient2: pulsar.Client, ptopic: str
) -> None:
    consumer = pclient.subscribe(ptopic, "all")
    producer = pclient2.create_producer(
        ptopic, batching_enabled=False, message_routing_mode=pulsar.PartitionsRoutingMode.UseSinglePartition
    )
    expected = [f"single-{i}".encode() for i in range(20)]
    for payload in expected:
        producer.send(payload)
    by_partition = _receive_by_partition(consumer, len(expected))
    assert len(by_partition) == 1, sorted(by_partition)
    [(name, msgs)] = by_partition.items()
    assert name in _partition_names(ptopic)
    assert msgs == expected
    assert_nothing_more(consumer)


def test_keyed_messages_stick_to_one_partition_per_key(
    pclient: pulsar.Client, pclient2: pulsar.Client, ptopic: str
) -> None:
    consumer = pclient.subscribe(ptopic, "all")
    producer_a = pclient2.create_producer(ptopic, batching_enabled=False)
    producer_b = pclient.create_producer(ptopic, batching_enabled=False)
    keys = [f"key-{k}" for k in range(12)]
    n = 0
    for round_no in range(4):
        for key in keys:
            producer = producer_a if round_no % 2 == 0 else producer_b
            producer.send(f"{key}/{round_no}".encode(), partition_key=key)
            n += 1
    partition_of: dict[str, set[str]] = defaultdict(set)
    rounds_of: dict[str, list[int]] = defaultdict(list)
    for _ in range(n):
        msg = consumer.receive(timeout_millis=RECEIVE_MS)
        consumer.acknowledge(msg)
        assert msg.partition_key() in keys
        key, round_no = msg.data().decode().split("/")
        assert key == msg.partition_key()
        partition_of[key].add(msg.topic_name())
        rounds_of[key].append(int(round_no))
    # every key always lands on the same partition, whichever producer sent it
    assert {k: len(v) for k, v in partition_of.items()} == dict.fromkeys(keys, 1)
    # and a key's messages keep their order
    assert rounds_of == {k: [0, 1, 2, 3] for k in keys}
    # twelve keys use more than one partition
    assert len(set().union(*partition_of.values())) > 1
    assert_nothing_more(consumer)


def test_consumer_of_one_partition_sees_only_that_partition(
    pclient: pulsar.Client, pclient2: pulsar.Client, ptopic: str
) -> None:
    everything = pclient.subscribe(ptopic, "all")
    only_two = pclient2.subscribe(f"{ptopic}-partition-2", "one")
    producer = pclient2.create_producer(
        ptopic,
        batching_enabled=False,
        message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution,
    )
    n = 20
    for i in range(n):
        producer.send(f"p-{i}".encode())
    by_partition = _receive_by_partition(everything, n)
    expected_two = by_partition[f"{ptopic}-partition-2"]
    assert len(expected_two) == n // PARTITIONS
    got = []
    for _ in expected_two:
        msg = only_two.receive(timeout_millis=RECEIVE_MS)
        only_two.acknowledge(msg)
        assert msg.topic_name() == f"{ptopic}-partition-2"
        got.append(msg.data())
    assert got == expected_two
    assert_nothing_more(only_two, QUIET_MS)


def test_message_ids_carry_the_partition_index(
    pclient: pulsar.Client, pclient2: pulsar.Client, ptopic: str
) -> None:
    consumer = pclient.subscribe(ptopic, "all")
    producer = pclient2.create_producer(
        ptopic,
        batching_enabled=False,
        message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution,
    )
    sent = {}
    for i in range(8):
        msg_id = producer.send(f"id-{i}".encode())
        sent[f"id-{i}".encode()] = (msg_id.ledger_id(), msg_id.entry_id(), msg_id.partition())
    assert {p for _, _, p in sent.values()} == set(range(PARTITIONS))
    for _ in range(8):
        msg = consumer.receive(timeout_millis=RECEIVE_MS)
        consumer.acknowledge(msg)
        msg_id = msg.message_id()
        partition = int(msg.topic_name().rsplit("-", 1)[1])
        assert sent[msg.data()][2] == partition
        # the id a consumer gets is the id the producer got: same ledger, entry and partition
        assert (msg_id.ledger_id(), msg_id.entry_id(), msg_id.partition()) == sent[msg.data()]
