"""Replication of a non-persistent topic: what each remote is offered (rewritten once, filtered by
``replicate_to``, never what arrived by replication), what a replicator drops and counts, the
topic's hook, called only for messages of local producers, and the manager setting and clearing it
as the policy names the remote or not."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

from magnetar.broker.config import BrokerConfig
from magnetar.broker.replication.credentials import ClientCredentials
from magnetar.broker.replication.link import RemoteCluster
from magnetar.broker.replication.live import LiveReplication, NonPersistentReplicator
from magnetar.broker.replication.manager import ReplicationManager
from magnetar.broker.topics.nonpersistent import NonPersistentTopic
from magnetar.broker.topics.producer import Producer
from magnetar.protocol.enums import ProducerAccessMode
from magnetar.protocol.framing import split_entry
from magnetar.protocol.schema import MessageMetadata
from magnetar.protocol.topic_name import TopicName
from tests.broker.topics.topic_harness import RecordingContext, RecordingSession


class FakeProducer:
    """An outbound producer that records its SENDs."""

    def __init__(self) -> None:
        self.closed = False
        self.sent: list[tuple[bytes, int, int, int, object]] = []

    @property
    def in_flight(self) -> int:
        return len(self.sent)

    def send(self, entry: bytes, sequence_id: int, highest: int, messages: int, token: object) -> None:
        self.sent.append((entry, sequence_id, highest, messages, token))


def replicator(remote: str, queue_size: int = 1000, connected: bool = True) -> NonPersistentReplicator:
    topic = SimpleNamespace(name="non-persistent://geo/ns/t")
    out = NonPersistentReplicator(topic, "east", RemoteCluster(remote, "pulsar://x:1", "", ClientCredentials()),  # type: ignore[arg-type]
                                  queue_size)
    if connected:
        out.producer = FakeProducer()  # type: ignore[assignment]
    return out


def entry(**fields: object) -> bytes:
    data = MessageMetadata(producer_name="p", publish_time=1, **fields).SerializeToString()  # type: ignore[arg-type]
    return struct.pack(">I", len(data)) + data + b"payload"


def sends(r: NonPersistentReplicator) -> list[tuple[MessageMetadata, bytes, int, int, int]]:
    """(metadata, payload, sequence id, highest, messages) of what a replicator sent."""
    out = []
    for data, sequence_id, highest, messages, _ in r.producer.sent:  # type: ignore[union-attr]
        meta, payload = split_entry(data)
        out.append((MessageMetadata.FromString(bytes(meta)), bytes(payload), sequence_id, highest, messages))
    return out


def test_each_remote_is_offered_the_rewritten_entry_with_the_original_ids() -> None:
    west, north = replicator("west"), replicator("north")
    hook = LiveReplication("east", {"west": west, "north": north})
    hook(entry(sequence_id=7))
    hook(entry(sequence_id=10, num_messages_in_batch=5))
    for r in (west, north):
        got = sends(r)
        assert [(m.producer_name, m.sequence_id, m.replicated_from) for m, *_ in got] == [("p", 7, "east"), ("p", 10, "east")]
        assert [tuple(rest) for _, *rest in got] == [(b"payload", 7, 7, 1), (b"payload", 10, 14, 5)]


def test_replicate_to_loops_and_garbage() -> None:
    west, north = replicator("west"), replicator("north")
    hook = LiveReplication("east", {"west": west, "north": north})
    hook(entry(sequence_id=1, replicate_to=["west"]))
    hook(entry(sequence_id=2, replicate_to=["__local__"]))
    hook(entry(sequence_id=3, replicated_from="north"))  # arrived by replication: never sent on
    hook(b"\x00\x00\x00\x09short")  # unreadable: goes nowhere, raises nothing
    assert [m.sequence_id for m, *_ in sends(west)] == [1]
    assert sends(north) == []


def test_dropped_while_not_connected_or_past_the_queue_and_counted() -> None:
    down = replicator("west", connected=False)
    full = replicator("north", queue_size=2)
    hook = LiveReplication("east", {"west": down, "north": full})
    for i in range(5):
        hook(entry(sequence_id=i))
    assert (down.msg_drop_counter, full.msg_drop_counter) == (5, 3)
    assert [m.sequence_id for m, *_ in sends(full)] == [0, 1]
    assert down.extra_stats()["msgDropRate"] > 0 and full.extra_stats()["msgDropRate"] > 0
    assert replicator("south").extra_stats()["msgDropRate"] == 0.0
    token = full.producer.sent[0][4]  # type: ignore[union-attr]
    full._receipt(token, False)
    assert (full.msg_out_counter, full.bytes_out_counter) == (1, len(full.producer.sent[0][0]))  # type: ignore[union-attr]
    assert (full.backlog(), full.delay_seconds()) == (0, 0.0)


def test_the_topic_hands_only_local_messages_to_its_hook(tmp_path: Path) -> None:
    topic = NonPersistentTopic(TopicName.parse("non-persistent://geo/ns/t"), 1 << 40,
                               config=BrokerConfig(data_dir=tmp_path), producer_name_prefix="unit")
    local = Producer(RecordingSession(), 1, "p", topic, ProducerAccessMode.Shared, True)
    remote = Producer(RecordingSession(), 2, "pulsar.repl.west-->east", topic, ProducerAccessMode.Shared, True)
    assert topic.add_producer(local) and topic.add_producer(remote)
    log: list[tuple] = []
    topic.publish(local, b"before", 0, RecordingContext(log, 0))  # no hook: nothing to call
    seen: list[bytes] = []
    topic.replication = seen.append
    topic.publish(local, b"mine", 0, RecordingContext(log, 1))
    topic.publish(remote, b"theirs", 0, RecordingContext(log, 2))
    assert seen == [b"mine"]
    assert [r[0] for r in log] == ["receipt"] * 3


class FakeMetadata:
    """The metadata the manager reads: one namespace's policies, the registered clusters."""

    def __init__(self, namespace: dict, clusters: dict) -> None:
        self.namespace = namespace
        self.clusters = clusters

    def get_kv(self, key: str) -> None:
        return None

    def get_namespace(self, name: str) -> dict | None:
        return self.namespace if name == "geo/ns" else None

    def get_cluster(self, name: str) -> dict | None:
        return self.clusters.get(name)

    def get_partitioned_topic(self, name: str) -> None:
        return None


async def until(check: Callable[[], bool]) -> None:
    for _ in range(500):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("timed out")


def test_the_manager_feeds_the_topic_while_its_policy_names_a_remote(tmp_path: Path) -> None:
    async def scenario() -> None:
        with socket.socket() as closed_port:  # bound, never listening: every connection is refused
            closed_port.bind(("127.0.0.1", 0))
            url = f"pulsar://127.0.0.1:{closed_port.getsockname()[1]}"
            metadata = FakeMetadata({"replication_clusters": ["east", "west"]}, {"west": {"brokerServiceUrl": url}})
            topic = NonPersistentTopic(TopicName.parse("non-persistent://geo/ns/t"), 1 << 40,
                                       config=BrokerConfig(data_dir=tmp_path), producer_name_prefix="unit")
            manager = ReplicationManager(BrokerConfig(data_dir=tmp_path, cluster_name="east"), metadata,  # type: ignore[arg-type]
                                         None, None, {topic.name: topic})
            manager.topic_loaded(topic)
            await until(lambda: topic.replication is not None)
            replicator = manager.replicators_of(topic.name)["west"]
            assert isinstance(replicator, NonPersistentReplicator) and not replicator.connected
            producer = Producer(RecordingSession(), 1, "p", topic, ProducerAccessMode.Shared, True)
            assert topic.add_producer(producer)
            topic.publish(producer, entry(sequence_id=1), 0, RecordingContext([], 1))
            assert replicator.msg_drop_counter == 1  # the remote refuses connections: dropped, counted
            metadata.namespace["replication_clusters"] = ["east"]
            manager.policies_changed("geo/ns")
            await until(lambda: topic.replication is None)
            assert manager.replicators_of(topic.name) == {} and replicator._task is None
            topic.publish(producer, entry(sequence_id=2), 0, RecordingContext([], 2))
            assert replicator.msg_drop_counter == 1  # no longer offered anything
            await manager.stop()

    asyncio.run(scenario())
