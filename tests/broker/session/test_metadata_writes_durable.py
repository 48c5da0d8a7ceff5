"""Binary-protocol commands that write the metadata store (PARTITIONED_METADATA auto-creating a
partitioned topic, PRODUCER / SUBSCRIBE / GET_OR_CREATE_SCHEMA registering a new schema version: each
written by the metadata thread) commit without an fsync and are answered once the metadata thread's
sync made the write durable (issue 22), as the admin API's writes are; a command that writes nothing
is answered at once; a failed commit is refused and kept nowhere."""

from __future__ import annotations

import sqlite3
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.broker.schemas import SchemaData
from magnetar.protocol.enums import CommandType, PartitionedMetadataResult, ServerError
from magnetar.protocol.schema import BaseCommand
from magnetar.protocol.topic_name import TopicName
from magnetar.storage.metadata import MetadataStore
from magnetar.testing import Admin, BrokerThread, free_port

from ..schemas.test_wire import V0, fill_schema
from .test_wire_errors import WireClient


class HeldSync:
    """MetadataStore.sync_wal held until released, counting the syncs that ran."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.synced = 0
        original = MetadataStore.sync_wal

        def held(store: MetadataStore) -> int:
            self.entered.set()
            self.release.wait(30)
            self.synced += 1
            return original(store)

        monkeypatch.setattr(MetadataStore, "sync_wal", held)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=free_port(), fsync="never",
                          default_num_partitions=3)
    with BrokerThread(config) as thread:
        yield thread


def _client(broker: BrokerThread) -> WireClient:
    assert broker.server is not None and broker.server.port is not None
    client = WireClient(broker.server.port)
    client.connect()
    return client


def _partitioned_metadata(client: WireClient, topic: str) -> int:
    cmd = BaseCommand(type=CommandType.PARTITIONED_METADATA)
    cmd.partition_metadata.topic = topic
    cmd.partition_metadata.request_id = client.next_request_id()
    client.send(cmd)
    return cmd.partition_metadata.request_id


def test_an_auto_created_partitioned_topic_is_answered_once_durable(broker: BrokerThread,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    held = HeldSync(monkeypatch)
    metadata = broker.server.service.metadata  # type: ignore[union-attr]
    deferred = metadata.deferred_commits
    client = _client(broker)
    try:
        topic = f"persistent://public/default/auto-{uuid.uuid4().hex}"
        request_id = _partitioned_metadata(client, topic)
        assert held.entered.wait(10)  # the write committed (without its fsync), the sync waits
        assert metadata.deferred_commits == deferred + 1
        with pytest.raises(TimeoutError):
            client.recv(0.5)  # not answered before the write is durable
        held.release.set()
        meta = client.expect(CommandType.PARTITIONED_METADATA_RESPONSE).command.partition_metadata_response
        assert (meta.request_id, meta.response, meta.partitions) == (request_id, PartitionedMetadataResult.Success, 3)
        assert held.synced >= 1
        # known now: answered at once, nothing written
        request_id = _partitioned_metadata(client, topic)
        meta = client.expect(CommandType.PARTITIONED_METADATA_RESPONSE).command.partition_metadata_response
        assert (meta.request_id, meta.partitions) == (request_id, 3)
        assert metadata.deferred_commits == deferred + 1
    finally:
        held.release.set()
        client.close()


def test_a_new_schema_version_is_answered_once_durable(broker: BrokerThread, monkeypatch: pytest.MonkeyPatch) -> None:
    client = _client(broker)
    try:
        topic = f"persistent://public/default/schema-{uuid.uuid4().hex}"
        producer = BaseCommand(type=CommandType.PRODUCER)  # the topic must exist for GET_OR_CREATE_SCHEMA
        producer.producer.topic = topic + "-partition-0"
        producer.producer.producer_id = 1
        producer.producer.request_id = client.next_request_id()
        client.send(producer)
        client.expect(CommandType.PRODUCER_SUCCESS)
        held = HeldSync(monkeypatch)
        cmd = BaseCommand(type=CommandType.GET_OR_CREATE_SCHEMA)
        cmd.get_or_create_schema.topic = topic + "-partition-0"
        request_id = cmd.get_or_create_schema.request_id = client.next_request_id()
        fill_schema(cmd.get_or_create_schema.schema, SchemaData("AVRO", V0))
        client.send(cmd)
        assert held.entered.wait(10)
        with pytest.raises(TimeoutError):
            client.recv(0.5)
        held.release.set()
        resp = client.expect(CommandType.GET_OR_CREATE_SCHEMA_RESPONSE).command.get_or_create_schema_response
        assert (resp.request_id, resp.HasField("error_code"), resp.schema_version) == (request_id, False, b"\x00" * 8)
        # the same schema again: found, nothing written, answered at once
        cmd.get_or_create_schema.request_id = client.next_request_id()
        held.release.clear()
        client.send(cmd)
        resp = client.expect(CommandType.GET_OR_CREATE_SCHEMA_RESPONSE, timeout=5).command.get_or_create_schema_response
        assert (resp.request_id, resp.schema_version) == (cmd.get_or_create_schema.request_id, b"\x00" * 8)
    finally:
        client.close()


def _producer(client: WireClient, topic: str, producer_id: int, schema: SchemaData | None) -> BaseCommand:
    cmd = BaseCommand(type=CommandType.PRODUCER)
    cmd.producer.topic = topic
    cmd.producer.producer_id = producer_id
    cmd.producer.request_id = client.next_request_id()
    if schema is not None:
        fill_schema(cmd.producer.schema, schema)
    client.send(cmd)
    return cmd


def test_a_producer_with_a_new_schema_is_answered_once_durable(broker: BrokerThread,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    client = _client(broker)
    try:
        topic = f"persistent://public/default/schema-{uuid.uuid4().hex}-partition-0"
        _producer(client, topic, 1, None)
        client.expect(CommandType.PRODUCER_SUCCESS)  # the topic is loaded
        held = HeldSync(monkeypatch)
        cmd = _producer(client, topic, 2, SchemaData("AVRO", V0))
        assert held.entered.wait(10)
        with pytest.raises(TimeoutError):
            client.recv(0.5)
        again = _producer(client, topic, 2, SchemaData("AVRO", V0))  # the same id while it waits: refused
        error = client.expect(CommandType.ERROR).command.error
        assert error.request_id == again.producer.request_id
        held.release.set()
        ok = client.expect(CommandType.PRODUCER_SUCCESS).command.producer_success
        assert (ok.request_id, ok.schema_version) == (cmd.producer.request_id, b"\x00" * 8)
        held.release.clear()  # the same schema: found, nothing written, answered at once
        cmd = _producer(client, topic, 3, SchemaData("AVRO", V0))
        ok = client.expect(CommandType.PRODUCER_SUCCESS, timeout=5).command.producer_success
        assert (ok.request_id, ok.schema_version) == (cmd.producer.request_id, b"\x00" * 8)
    finally:
        client.close()


def test_an_auto_creation_past_the_topic_limit_is_refused_in_the_response(broker: BrokerThread) -> None:
    config = broker.config
    Admin(f"http://127.0.0.1:{config.http_port}").set_namespace_policy("public/default", "maxTopicsPerNamespace", 2)
    metadata = broker.server.service.metadata  # type: ignore[union-attr]
    client = _client(broker)
    try:
        topic = f"persistent://public/default/over-{uuid.uuid4().hex}"
        request_id = _partitioned_metadata(client, topic)  # 3 partitions would make 3 topics
        meta = client.expect(CommandType.PARTITIONED_METADATA_RESPONSE).command.partition_metadata_response
        assert (meta.request_id, meta.response, meta.error, meta.message) == (
            request_id, PartitionedMetadataResult.Failed, ServerError.NotAllowedError,
            "Exceed maximum number of topics in namespace.")
        assert metadata.get_partitioned_topic(topic) is None
    finally:
        client.close()


def test_a_consumer_registering_a_schema_is_answered_once_durable(broker: BrokerThread,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A SUBSCRIBE with a schema on an idle topic without one registers it: committed by the metadata
    thread, the consumer subscribed and answered once the version is durable."""
    client = _client(broker)
    schemas = broker.server.service.schemas  # type: ignore[union-attr]
    try:
        topic = f"persistent://public/default/typed-{uuid.uuid4().hex}"
        _producer(client, topic, 1, None)
        client.expect(CommandType.PRODUCER_SUCCESS)  # loaded; no message: the topic stays idle once closed
        close = BaseCommand(type=CommandType.CLOSE_PRODUCER)
        close.close_producer.producer_id = 1
        close.close_producer.request_id = client.next_request_id()
        client.send(close)
        client.expect(CommandType.SUCCESS)
        held = HeldSync(monkeypatch)
        cmd = BaseCommand(type=CommandType.SUBSCRIBE)
        cmd.subscribe.topic = topic
        cmd.subscribe.subscription = "typed"
        cmd.subscribe.consumer_id = 1
        cmd.subscribe.request_id = client.next_request_id()
        fill_schema(cmd.subscribe.schema, SchemaData("AVRO", V0))
        client.send(cmd)
        assert held.entered.wait(10)
        with pytest.raises(TimeoutError):
            client.recv(0.5)
        assert "typed" not in broker.server.service.topics[topic].subscriptions  # type: ignore[union-attr]
        held.release.set()
        ok = client.expect(CommandType.SUCCESS).command.success
        assert ok.request_id == cmd.subscribe.request_id
        assert schemas.latest(TopicName.parse(topic)).version == 0
    finally:
        held.release.set()
        client.close()


def test_a_new_schema_whose_commit_fails_is_refused_and_not_kept(broker: BrokerThread,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The metadata thread's commit of a PRODUCER's new version fails (a full disk): PersistenceError, no
    version in memory nor stored; the next PRODUCER registers it as version 0."""
    original = MetadataStore.put_kv
    failing = {"on": True}

    def full_disk(store: MetadataStore, key: str, value: bytes) -> None:
        if failing["on"] and key.startswith("schemas/"):
            raise sqlite3.OperationalError("database or disk is full")
        original(store, key, value)

    monkeypatch.setattr(MetadataStore, "put_kv", full_disk)
    client = _client(broker)
    schemas = broker.server.service.schemas  # type: ignore[union-attr]
    try:
        topic = f"persistent://public/default/full-{uuid.uuid4().hex}-partition-0"
        _producer(client, topic, 1, None)
        client.expect(CommandType.PRODUCER_SUCCESS)
        cmd = _producer(client, topic, 2, SchemaData("AVRO", V0))
        error = client.expect(CommandType.ERROR).command.error
        assert (error.request_id, error.error) == (cmd.producer.request_id, ServerError.PersistenceError)
        assert schemas.latest(TopicName.parse(topic)) is None
        failing["on"] = False
        cmd = _producer(client, topic, 3, SchemaData("AVRO", V0))
        ok = client.expect(CommandType.PRODUCER_SUCCESS).command.producer_success
        assert (ok.request_id, ok.schema_version) == (cmd.producer.request_id, b"\x00" * 8)
    finally:
        client.close()
