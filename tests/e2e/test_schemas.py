"""Schemas through the official client: typed round trips, versions, evolution, restarts.

Most tests share one broker of this module (each on a topic of its own); tests that need other
broker settings or a restart start a dedicated broker.
"""

from __future__ import annotations

import json
import struct
import urllib.request
import uuid
from collections.abc import Callable, Iterator

import _pulsar
import pulsar
import pytest
from google.protobuf import duration_pb2, timestamp_pb2
from pulsar.schema import (
    Array,
    AvroSchema,
    BytesSchema,
    CustomEnum,
    Double,
    Integer,
    JsonSchema,
    Long,
    Map,
    ProtobufNativeSchema,
    Record,
    Schema,
    String,
    StringSchema,
)

from magnetar.testing import BrokerProcess

from .helpers import RECEIVE_MS, assert_nothing_more

ZERO_VERSION = b"\x00" * 8


# -- records -------------------------------------------------------------------------------
class Color(CustomEnum):  # type: ignore[misc]
    pass


class Example(Record):
    a = Integer()
    b = Integer()


class BadExample(Record):
    a = String()
    b = Integer()


class Address(Record):
    street = String()
    number = Integer()


class Customer(Record):
    name = String()
    score = Double()
    visits = Long()
    address = Address()
    tags = Array(String())
    counters = Map(Integer())


class UserV1(Record):
    name = String()
    age = Integer()


class UserV2(Record):
    """UserV1 plus a field with a default: a FULL-compatible change."""

    name = String()
    age = Integer()
    email = String(required_default=True)


class UserIncompatible(Record):
    """``age`` changes from int to string."""

    name = String()
    age = String()


class Int64Schema(Schema):
    """A primitive schema as a user would write it (the Python client has none built in)."""

    def __init__(self) -> None:
        super().__init__(int, _pulsar.SchemaType.INT64, None, "INT64")

    def encode(self, obj: int) -> bytes:
        return struct.pack(">q", obj)

    def decode(self, data: bytes) -> int:
        return struct.unpack(">q", data)[0]


# -- fixtures and helpers -------------------------------------------------------------------
@pytest.fixture(scope="module")
def schema_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("schema-broker") / "data").start()
    yield proc
    proc.stop()


@pytest.fixture
def sclient(schema_broker: BrokerProcess, client_factory: Callable[[str], pulsar.Client]) -> pulsar.Client:
    return client_factory(schema_broker.service_url)


def new_topic(prefix: str = "schema") -> str:
    return f"persistent://public/default/{prefix}-{uuid.uuid4().hex[:12]}"


def schema_info(client: pulsar.Client, topic: str, version: int = -1) -> _pulsar.SchemaInfo:
    """GET_SCHEMA through the client (-1: the latest version)."""
    return client._client.get_schema_info(topic, version)


def version_of(msg: pulsar.Message) -> bytes:
    return msg.schema_version().encode("latin-1")


def earliest(client: pulsar.Client, topic: str, schema: Schema, sub: str = "sub") -> pulsar.Consumer:
    return client.subscribe(topic, sub, schema=schema, initial_position=pulsar.InitialPosition.Earliest)


# -- round trips ----------------------------------------------------------------------------
def test_string_schema_round_trip(sclient: pulsar.Client) -> None:
    topic = new_topic()
    producer = sclient.create_producer(topic, schema=StringSchema())
    consumer = earliest(sclient, topic, StringSchema())
    producer.send("héllo wörld")
    msg = consumer.receive(timeout_millis=RECEIVE_MS)
    assert msg.value() == "héllo wörld"
    assert msg.data() == "héllo wörld".encode()
    assert version_of(msg) == ZERO_VERSION
    info = schema_info(sclient, topic)
    assert info.schema_type() == _pulsar.SchemaType.STRING
    # a JSON producer cannot join a STRING topic
    with pytest.raises(pulsar.IncompatibleSchema):
        sclient.create_producer(topic, schema=JsonSchema(Example))


def test_json_schema_round_trip_and_incompatible_consumers(sclient: pulsar.Client) -> None:
    topic = new_topic()
    producer = sclient.create_producer(topic, schema=JsonSchema(Example))
    for bad in (JsonSchema(BadExample), StringSchema(), AvroSchema(Example)):
        with pytest.raises(pulsar.IncompatibleSchema):
            sclient.subscribe(topic, "sub", schema=bad)
    consumer = sclient.subscribe(topic, "sub", schema=JsonSchema(Example))
    producer.send(Example(a=1, b=2))
    msg = consumer.receive(timeout_millis=RECEIVE_MS)
    assert msg.value() == Example(a=1, b=2)
    assert version_of(msg) == ZERO_VERSION
    info = schema_info(sclient, topic)
    assert info.schema_type() == _pulsar.SchemaType.JSON
    assert json.loads(info.schema())["fields"][0]["name"] == "a"


def test_avro_schema_round_trip_with_nested_types(sclient: pulsar.Client) -> None:
    topic = new_topic()
    schema = AvroSchema(Customer)
    producer = sclient.create_producer(topic, schema=schema)
    consumer = earliest(sclient, topic, AvroSchema(Customer))
    values = [
        Customer(
            name=f"c{i}",
            score=i / 3,
            visits=2**40 + i,
            address=Address(street="Main", number=i),
            tags=["x", f"t{i}"],
            counters={"a": i, "b": -i},
        )
        for i in range(5)
    ]
    for v in values:
        producer.send(v)
    for v in values:
        got = consumer.receive(timeout_millis=RECEIVE_MS).value()
        assert (got.name, got.score, got.visits, got.tags, got.counters) == (v.name, v.score, v.visits, v.tags, v.counters)
        assert (got.address.street, got.address.number) == ("Main", v.address.number)
    assert schema_info(sclient, topic).schema_type() == _pulsar.SchemaType.AVRO
    # the JSON producer of the same record is a different schema type
    with pytest.raises(pulsar.IncompatibleSchema):
        sclient.create_producer(topic, schema=JsonSchema(Customer))


def test_protobuf_native_schema_round_trip(sclient: pulsar.Client) -> None:
    topic = new_topic()
    producer = sclient.create_producer(topic, schema=ProtobufNativeSchema(timestamp_pb2.Timestamp))
    consumer = earliest(sclient, topic, ProtobufNativeSchema(timestamp_pb2.Timestamp))
    producer.send(timestamp_pb2.Timestamp(seconds=1_700_000_000, nanos=5))
    got = consumer.receive(timeout_millis=RECEIVE_MS).value()
    assert (got.seconds, got.nanos) == (1_700_000_000, 5)
    info = schema_info(sclient, topic)
    assert info.schema_type() == _pulsar.SchemaType.PROTOBUF_NATIVE
    assert json.loads(info.schema())["rootMessageTypeName"] == "google.protobuf.Timestamp"
    # another root message is refused
    with pytest.raises(pulsar.IncompatibleSchema):
        sclient.create_producer(topic, schema=ProtobufNativeSchema(duration_pb2.Duration))


def test_primitive_schemas_are_client_side_only(sclient: pulsar.Client) -> None:
    # The official client sends no schema for primitive types (nor for BYTES): the topic has
    # no schema and the round trip works through the client's own encoding.
    topic = new_topic()
    producer = sclient.create_producer(topic, schema=Int64Schema())
    consumer = earliest(sclient, topic, Int64Schema())
    for v in (0, -1, 2**62):
        producer.send(v)
    assert [consumer.receive(timeout_millis=RECEIVE_MS).value() for _ in range(3)] == [0, -1, 2**62]
    with pytest.raises(pulsar.TopicNotFound):
        schema_info(sclient, topic)


def test_no_schema_yet_means_topic_not_found(sclient: pulsar.Client) -> None:
    topic = new_topic()
    sclient.create_producer(topic).send(b"raw")
    with pytest.raises(pulsar.TopicNotFound):
        schema_info(sclient, topic)


# -- producers and consumers without schema ---------------------------------------------------
def test_bytes_producer_on_a_schema_topic_is_allowed_by_default(sclient: pulsar.Client) -> None:
    topic = new_topic()
    typed = sclient.create_producer(topic, schema=StringSchema())
    raw = sclient.create_producer(topic, schema=BytesSchema())
    consumer = earliest(sclient, topic, BytesSchema())
    typed.send("typed")
    raw.send(b"raw")
    first = consumer.receive(timeout_millis=RECEIVE_MS)
    second = consumer.receive(timeout_millis=RECEIVE_MS)
    assert (first.data(), version_of(first)) == (b"typed", ZERO_VERSION)
    assert (second.data(), version_of(second)) == (b"raw", b"")


def test_schema_consumer_on_a_topic_with_data_but_no_schema_is_refused(sclient: pulsar.Client) -> None:
    topic = new_topic()
    sclient.create_producer(topic).send(b"raw")
    with pytest.raises(pulsar.IncompatibleSchema):
        sclient.subscribe(topic, "sub", schema=StringSchema())
    # the first schema of an idle topic may come from a consumer
    idle = new_topic()
    consumer = sclient.subscribe(idle, "sub", schema=JsonSchema(Example))
    assert schema_info(sclient, idle).schema_type() == _pulsar.SchemaType.JSON
    producer = sclient.create_producer(idle, schema=JsonSchema(Example))
    producer.send(Example(a=5, b=6))
    assert consumer.receive(timeout_millis=RECEIVE_MS).value() == Example(a=5, b=6)


# -- evolution --------------------------------------------------------------------------------
def test_incompatible_evolution_under_full_is_refused(sclient: pulsar.Client) -> None:
    topic = new_topic()
    producer = sclient.create_producer(topic, schema=AvroSchema(UserV1))
    with pytest.raises(pulsar.IncompatibleSchema):
        sclient.create_producer(topic, schema=AvroSchema(UserIncompatible))
    with pytest.raises(pulsar.IncompatibleSchema):
        sclient.subscribe(topic, "sub", schema=AvroSchema(UserIncompatible))
    # nothing changed for the existing producer and the schema history
    producer.send(UserV1(name="still", age=1))
    with pytest.raises(pulsar.TopicNotFound):
        schema_info(sclient, topic, 1)


def test_compatible_evolution_adds_a_version_readable_by_one_consumer(sclient: pulsar.Client) -> None:
    topic = new_topic()
    p1 = sclient.create_producer(topic, schema=AvroSchema(UserV1))
    consumer = earliest(sclient, topic, AvroSchema(UserV2))
    p2 = sclient.create_producer(topic, schema=AvroSchema(UserV2))
    # the same schema again gets the same version
    p1_again = sclient.create_producer(topic, schema=AvroSchema(UserV1))
    p1.send(UserV1(name="old", age=30))
    p2.send(UserV2(name="new", age=31, email="n@example.com"))
    p1_again.send(UserV1(name="old-again", age=32))
    msgs = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(3)]
    assert [version_of(m) for m in msgs] == [ZERO_VERSION, b"\x00" * 7 + b"\x01", ZERO_VERSION]
    # messages of version 0 are decoded with the writer schema fetched by version (GET_SCHEMA)
    values = [m.value() for m in msgs]
    assert [(v.name, v.age, v.email) for v in values] == [("old", 30, None), ("new", 31, "n@example.com"), ("old-again", 32, None)]
    v0, v1 = schema_info(sclient, topic, 0), schema_info(sclient, topic, 1)
    assert [fld["name"] for fld in json.loads(v0.schema())["fields"]] == ["name", "age"]
    assert [fld["name"] for fld in json.loads(v1.schema())["fields"]] == ["name", "age", "email"]
    assert json.loads(schema_info(sclient, topic).schema()) == json.loads(v1.schema())
    with pytest.raises(pulsar.TopicNotFound):
        schema_info(sclient, topic, 2)
    # an old-schema consumer reads the new data too (FULL: UserV1 reads UserV2)
    old_reader = earliest(sclient, topic, AvroSchema(UserV1), sub="old")
    assert [old_reader.receive(timeout_millis=RECEIVE_MS).value().name for _ in range(3)] == ["old", "new", "old-again"]


def test_schemas_and_versions_survive_a_restart(
    dedicated_broker: Callable[..., BrokerProcess], client_factory: Callable[[str], pulsar.Client]
) -> None:
    broker = dedicated_broker()
    topic = "persistent://public/default/schema-restart"
    client = client_factory(broker.service_url)
    client.create_producer(topic, schema=AvroSchema(UserV1)).send(UserV1(name="a", age=1))
    client.create_producer(topic, schema=AvroSchema(UserV2)).send(UserV2(name="b", age=2, email="b@x"))
    client.close()
    assert broker.stop() == 0, broker.log()

    broker = dedicated_broker(broker.data_dir, port=broker.port, http_port=broker.http_port)
    client = client_factory(broker.service_url)
    assert [fld["name"] for fld in json.loads(schema_info(client, topic, 0).schema())["fields"]] == ["name", "age"]
    assert json.loads(schema_info(client, topic).schema())["fields"][-1]["name"] == "email"
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic, schema=AvroSchema(UserIncompatible))
    # known schemas keep their versions
    client.create_producer(topic, schema=AvroSchema(UserV2)).send(UserV2(name="c", age=3, email="c@x"))
    consumer = earliest(client, topic, AvroSchema(UserV2))
    msgs = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(3)]
    assert [m.value().name for m in msgs] == ["a", "b", "c"]
    assert [version_of(m)[-1] for m in msgs] == [0, 1, 1]
    assert_nothing_more(consumer)


# -- broker settings and namespace policies ------------------------------------------------------
def test_broker_default_strategy_setting(
    dedicated_broker: Callable[..., BrokerProcess], client_factory: Callable[[str], pulsar.Client]
) -> None:
    broker = dedicated_broker(env={"MAGNETAR_SCHEMA_COMPATIBILITY_STRATEGY": "ALWAYS_COMPATIBLE"})
    client = client_factory(broker.service_url)
    topic = new_topic()
    client.create_producer(topic, schema=AvroSchema(UserV1))
    producer = client.create_producer(topic, schema=AvroSchema(UserIncompatible))
    producer.send(UserIncompatible(name="x", age="forty"))
    assert json.loads(schema_info(client, topic, 1).schema())["fields"][1]["type"] == ["null", "string"]
    # even a change of type
    client.create_producer(topic, schema=StringSchema()).send("text")
    assert schema_info(client, topic).schema_type() == _pulsar.SchemaType.STRING


def test_validation_enforced_refuses_producers_without_schema(
    dedicated_broker: Callable[..., BrokerProcess], client_factory: Callable[[str], pulsar.Client]
) -> None:
    broker = dedicated_broker(env={"MAGNETAR_SCHEMA_VALIDATION_ENFORCED": "true"})
    client = client_factory(broker.service_url)
    topic = new_topic()
    client.create_producer(topic).send(b"before any schema")  # no schema yet: allowed
    client.create_producer(new_topic(), schema=StringSchema())
    with_schema = new_topic()
    client.create_producer(with_schema, schema=StringSchema())
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(with_schema)


def _admin_put(broker: BrokerProcess, path: str, body: object) -> int:
    req = urllib.request.Request(
        broker.http_url + path,
        data=json.dumps(body).encode(),
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.status


def test_namespace_strategy_forward_evolution(
    dedicated_broker: Callable[..., BrokerProcess], client_factory: Callable[[str], pulsar.Client]
) -> None:
    # As the official client's own test_schema_evolve: under FORWARD, a record with a field
    # made required (and renamed record, sorted fields) is accepted, and old readers read both.
    broker = dedicated_broker()
    assert _admin_put(broker, "/admin/v2/namespaces/public/default/schemaCompatibilityStrategy", "FORWARD") == 204

    class User1(Record):
        name = String()
        age = Integer()

    class User2(Record):
        _sorted_fields = True
        name = String()
        age = Integer(required=True)

    client = client_factory(broker.service_url)
    topic = new_topic("evolve")
    p1 = client.create_producer(topic, schema=AvroSchema(User1))
    consumer = client.subscribe(topic, "sub", schema=AvroSchema(User1))
    reader = client.create_reader(topic, schema=AvroSchema(User1), start_message_id=pulsar.MessageId.earliest)
    p2 = client.create_producer(topic, schema=AvroSchema(User2))
    for i in range(5):
        p1.send(User1(age=i + 100, name=f"User1 {i}"))
        p2.send(User2(age=i + 200, name=f"User2 {i}"))
    for receive in (lambda: consumer.receive(timeout_millis=RECEIVE_MS), lambda: reader.read_next(RECEIVE_MS)):
        got = [receive().value() for _ in range(10)]
        assert [(v.name, v.age) for v in got] == [
            pair for i in range(5) for pair in ((f"User1 {i}", i + 100), (f"User2 {i}", i + 200))
        ]
    # FORWARD: the latest must read the new schema's data, so dropping a field without default fails
    class User3(Record):
        name = String()

    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic, schema=AvroSchema(User3))
