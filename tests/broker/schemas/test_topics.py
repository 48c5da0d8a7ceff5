"""Schema rules of topics: where the strategy comes from, what producers and consumers get."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from magnetar.broker.config import BrokerConfig, ConfigError
from magnetar.broker.errors import BrokerError
from magnetar.broker.schemas import SchemaData, SchemaPolicy, Strategy, TopicSchemas
from magnetar.broker.schemas.topics import topic_is_active
from magnetar.protocol.enums import ServerError
from magnetar.protocol.topic_name import TopicName
from magnetar.storage import MetadataStore

TOPIC = TopicName.parse("persistent://public/default/events")
PARTITION = TOPIC.partition(1)


def avro(*names: str, defaults: bool = False) -> SchemaData:
    fields = []
    for n in names:
        fld: dict = {"name": n, "type": "int"}
        if defaults:
            fld["default"] = 0
        fields.append(fld)
    return SchemaData("AVRO", json.dumps({"type": "record", "name": "E", "fields": fields}).encode())


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MetadataStore]:
    s = MetadataStore(tmp_path)
    s.ensure_defaults()
    yield s
    s.close()


def schemas(store: MetadataStore, **settings: object) -> TopicSchemas:
    return TopicSchemas(store, BrokerConfig.from_values(settings))


def set_ns(store: MetadataStore, **policies: object) -> None:
    current = store.get_namespace("public/default") or {}
    current.update(policies)
    store.set_namespace_policies("public/default", current)


def set_topic(store: MetadataStore, topic: TopicName, **policies: object) -> None:
    store.put_kv(f"topic-policies/{topic}", json.dumps(policies).encode())


def test_strategy_precedence(store: MetadataStore) -> None:
    ts = schemas(store)
    assert ts.strategy(TOPIC) == Strategy.FULL
    assert schemas(store, schema_compatibility_strategy="backward").strategy(TOPIC) == Strategy.BACKWARD
    set_ns(store, schema_auto_update_compatibility_strategy="AlwaysCompatible")
    assert ts.strategy(TOPIC) == Strategy.ALWAYS_COMPATIBLE
    set_ns(store, schema_compatibility_strategy="UNDEFINED")
    assert ts.strategy(TOPIC) == Strategy.ALWAYS_COMPATIBLE
    set_ns(store, schema_compatibility_strategy="FORWARD_TRANSITIVE")
    assert ts.strategy(TOPIC) == Strategy.FORWARD_TRANSITIVE
    # the topic's own policy, set on the partitioned parent, applies to its partitions
    set_topic(store, TOPIC, schema_compatibility_strategy="BACKWARD")
    assert ts.strategy(PARTITION) == Strategy.BACKWARD
    set_topic(store, PARTITION, schemaCompatibilityStrategy="ALWAYS_INCOMPATIBLE")
    assert ts.strategy(PARTITION) == Strategy.ALWAYS_INCOMPATIBLE
    set_topic(store, TOPIC, schema_compatibility_strategy="UNDEFINED")
    assert ts.strategy(TOPIC) == Strategy.FORWARD_TRANSITIVE


def test_broker_setting_is_validated() -> None:
    with pytest.raises(ConfigError, match="schema_compatibility_strategy"):
        BrokerConfig.from_values({"schema_compatibility_strategy": "SOMETIMES"})
    assert BrokerConfig.from_values({"schema_compatibility_strategy": "full_transitive"}).schema_compatibility_strategy == (
        "FULL_TRANSITIVE"
    )
    assert BrokerConfig.load(environ={"MAGNETAR_ALLOW_AUTO_UPDATE_SCHEMA": "false"}).allow_auto_update_schema is False


def test_auto_update_and_validation_policies(store: MetadataStore) -> None:
    ts = schemas(store)
    assert ts.policy(TOPIC) == SchemaPolicy(Strategy.FULL, True, False)
    set_ns(store, is_allow_auto_update_schema=False, schema_validation_enforced=True)
    assert ts.policy(TOPIC) == SchemaPolicy(Strategy.FULL, False, True)
    set_topic(store, TOPIC, schemaValidationEnforced=False)
    assert not ts.validation_enforced(TOPIC)
    assert schemas(store, schema_validation_enforced=True).validation_enforced(TOPIC)
    set_ns(store, is_allow_auto_update_schema=None)
    assert not schemas(store, allow_auto_update_schema=False).allow_auto_update(TOPIC)


def test_producers_register_and_evolve(store: MetadataStore) -> None:
    ts = schemas(store)
    assert ts.producer_schema(TOPIC, None) is None
    assert ts.producer_schema(TOPIC, avro("a")) == 0
    assert ts.producer_schema(PARTITION, avro("a")) == 0  # partitions share the history
    assert ts.producer_schema(TOPIC, avro("a", "b", defaults=True)) == 1
    with pytest.raises(BrokerError) as err:
        ts.producer_schema(TOPIC, SchemaData("STRING"))
    assert err.value.code == ServerError.IncompatibleSchema
    assert "new schema type STRING" in err.value.message
    # producers without a schema are welcome unless validation is enforced
    assert ts.producer_schema(TOPIC, None) is None
    set_ns(store, schema_validation_enforced=True)
    with pytest.raises(BrokerError, match="without a schema"):
        ts.producer_schema(TOPIC, None)


def test_producer_refused_new_schema_when_auto_update_is_off(store: MetadataStore) -> None:
    ts = schemas(store)
    set_ns(store, is_allow_auto_update_schema=False)
    with pytest.raises(BrokerError, match="auto updating is disabled"):
        ts.producer_schema(TOPIC, avro("a"))
    ts.post(TOPIC, avro("a"))  # the admin API still registers schemas
    assert ts.producer_schema(TOPIC, avro("a")) == 0


def test_consumers_register_only_on_idle_topics(store: MetadataStore) -> None:
    ts = schemas(store)
    ts.consumer_schema(TOPIC, avro("a"), topic_active=False)
    assert ts.latest(TOPIC).version == 0
    # a consumer that can read the schema is accepted, and registers nothing
    ts.consumer_schema(TOPIC, avro("a", "b", defaults=True), topic_active=True)
    assert [s.version for s in ts.all_versions(TOPIC)] == [0]
    with pytest.raises(BrokerError) as err:
        ts.consumer_schema(TOPIC, avro("a", "b"), topic_active=True)
    assert err.value.code == ServerError.IncompatibleSchema


def test_consumer_on_active_topic_without_schema_is_refused(store: MetadataStore) -> None:
    ts = schemas(store)
    with pytest.raises(BrokerError, match=r"empty\(BYTES\) schema"):
        ts.consumer_schema(TOPIC, avro("a"), topic_active=True)
    set_ns(store, schema_compatibility_strategy="ALWAYS_COMPATIBLE")
    ts.consumer_schema(TOPIC, avro("a"), topic_active=True)
    assert ts.latest(TOPIC) is None


def test_get_for_client(store: MetadataStore) -> None:
    ts = schemas(store)
    with pytest.raises(BrokerError) as err:
        ts.get_for_client(TOPIC, None)
    assert err.value.code == ServerError.TopicNotFound
    ts.producer_schema(TOPIC, avro("a"))
    ts.producer_schema(TOPIC, avro("a", "b", defaults=True))
    assert ts.get_for_client(PARTITION, 0).data == avro("a").data
    assert ts.get_for_client(TOPIC, None).version == 1
    with pytest.raises(BrokerError):
        ts.get_for_client(TOPIC, 5)


def test_admin_operations(store: MetadataStore) -> None:
    ts = schemas(store)
    assert ts.post(TOPIC, avro("a")) == 0
    assert ts.test_compatibility(TOPIC, avro("a", "b"))[:2] == (False, Strategy.FULL)
    assert ts.test_compatibility(TOPIC, avro("a", "b", defaults=True)) == (True, Strategy.FULL, "")
    assert ts.version_of(TOPIC, avro("a")) == 0
    assert ts.version_of(TOPIC, avro("b")) is None
    assert ts.delete(TOPIC) == 1
    assert ts.latest(TOPIC) is None
    assert ts.post(TOPIC, SchemaData("STRING")) == 2
    assert ts.delete(TOPIC, force=True) is None
    assert ts.registry.history("public/default/events") == []


def test_topic_is_active() -> None:
    idle = SimpleNamespace(producers={}, subscriptions={}, last_readable_id=-1, msg_in_counter=0)
    assert not topic_is_active(idle)
    assert topic_is_active(SimpleNamespace(**{**vars(idle), "producers": {"p": object()}}))
    sub = SimpleNamespace(consumers=[object()])
    assert topic_is_active(SimpleNamespace(**{**vars(idle), "subscriptions": {"s": sub}}))
    assert not topic_is_active(SimpleNamespace(**{**vars(idle), "subscriptions": {"s": SimpleNamespace(consumers=[])}}))
    assert topic_is_active(SimpleNamespace(**{**vars(idle), "last_readable_id": 0}))
    assert topic_is_active(SimpleNamespace(**{**vars(idle), "msg_in_counter": 3}))
