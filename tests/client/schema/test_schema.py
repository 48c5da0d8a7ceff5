"""Schemas: the Avro codec (checked against fastavro), JSON, String, KeyValue, typed values through
magnetar, what the broker's schema registry does with them, and values exchanged with the
official client."""

from __future__ import annotations

import dataclasses
import enum
import json

import pytest

from magnetar.client import (
    AsyncClient,
    AvroSchema,
    BytesSchema,
    Client,
    IncompatibleSchema,
    InitialPosition,
    JsonSchema,
    KeyValueSchema,
    SchemaSerializationError,
    StringSchema,
)
from magnetar.client.schema import AvroCodec, avro_definition
from magnetar.protocol.enums import CommandType, SchemaType

from ..conftest import RECEIVE_MS, run
from ..fakebroker import FakeBroker


class Color(enum.Enum):
    RED = 1
    GREEN = 2


@dataclasses.dataclass
class Address:
    street: str
    number: int


@dataclasses.dataclass
class Person:
    name: str
    age: int
    score: float
    active: bool
    photo: bytes
    color: Color
    address: Address
    nickname: str | None = None  # noqa: UP007 - Optional as users write it
    tags: list[str] = dataclasses.field(default_factory=list)
    attributes: dict[str, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Rec:
    """The same record as the official client's ``Rec(Record)`` with String and Integer fields."""

    name: str | None = None  # noqa: UP007
    age: int | None = dataclasses.field(default=None, metadata={"avro": ["null", "int"]})  # noqa: UP007


OfficialLike = Rec

PERSON = Person("Ann", 41, 3.5, True, b"\x00\xff", Color.GREEN, Address("Main", 7), None, ["a", "b"], {"x": 1})


def test_avro_definition_of_a_dataclass() -> None:
    definition = avro_definition(Person)
    assert definition["type"] == "record" and definition["name"] == "Person"
    fields = {f["name"]: f["type"] for f in definition["fields"]}
    assert fields["name"] == "string" and fields["age"] == "long" and fields["score"] == "double"
    assert fields["color"] == {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}
    assert fields["nickname"] == ["null", "string"]
    assert fields["tags"] == {"type": "array", "items": "string"}
    assert fields["attributes"] == {"type": "map", "values": "long"}
    assert fields["address"]["type"] == "record"


def test_avro_codec_agrees_with_fastavro() -> None:
    fastavro = pytest.importorskip("fastavro")
    import io

    definition = avro_definition(Person)
    parsed = fastavro.parse_schema(json.loads(json.dumps(definition)))
    schema = AvroSchema(Person)
    data = schema.encode(PERSON)
    buf = io.BytesIO()
    plain = {
        "name": "Ann", "age": 41, "score": 3.5, "active": True, "photo": b"\x00\xff", "color": "GREEN",
        "address": {"street": "Main", "number": 7}, "nickname": None, "tags": ["a", "b"], "attributes": {"x": 1},
    }
    fastavro.schemaless_writer(buf, parsed, plain)
    assert data == buf.getvalue()
    assert fastavro.schemaless_reader(io.BytesIO(data), parsed) == plain
    assert schema.decode(data) == PERSON
    # edge values of the zigzag varints, unions, empty containers
    codec = AvroCodec({"type": "record", "name": "E", "fields": [
        {"name": "i", "type": "int"}, {"name": "l", "type": "long"}, {"name": "u", "type": ["null", "long", "string"]},
        {"name": "f", "type": "float"}, {"name": "x", "type": {"type": "fixed", "name": "F", "size": 2}},
        {"name": "a", "type": {"type": "array", "items": "long"}},
    ]})
    parsed = fastavro.parse_schema({"type": "record", "name": "E", "fields": [
        {"name": "i", "type": "int"}, {"name": "l", "type": "long"}, {"name": "u", "type": ["null", "long", "string"]},
        {"name": "f", "type": "float"}, {"name": "x", "type": {"type": "fixed", "name": "F", "size": 2}},
        {"name": "a", "type": {"type": "array", "items": "long"}},
    ]})
    for value in (
        {"i": -(2**31), "l": 2**63 - 1, "u": "s", "f": 1.5, "x": b"ab", "a": []},
        {"i": 2**31 - 1, "l": -(2**63), "u": -1, "f": -0.25, "x": b"\x00\x00", "a": [0, -1, 1 << 40]},
        {"i": 0, "l": 0, "u": None, "f": 0.0, "x": b"zz", "a": [5]},
    ):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, value)
        assert codec.encode(value) == buf.getvalue()
        assert codec.decode(buf.getvalue()) == value


def test_schema_errors() -> None:
    with pytest.raises(SchemaSerializationError, match="cannot encode a str"):
        AvroSchema(Person).encode("not a person")
    with pytest.raises(SchemaSerializationError):
        AvroSchema(Person).decode(b"\x01")
    with pytest.raises(SchemaSerializationError, match="StringSchema needs str"):
        StringSchema().encode(b"bytes")
    with pytest.raises(SchemaSerializationError):
        JsonSchema(Person).decode(b"{not json")


def test_values_of_the_wrong_type_raise_type_errors() -> None:
    """As the official client's encoders do (a TypeError), still a SchemaSerializationError."""
    cases = (
        (JsonSchema(Person), Address("S", 1)),
        (JsonSchema(Person), "hello"),
        (AvroSchema(Person), Address("S", 1)),
        (StringSchema(), 1),
        (BytesSchema(), "text"),
    )
    for schema, value in cases:
        with pytest.raises(TypeError) as error:
            schema.encode(value)
        assert isinstance(error.value, SchemaSerializationError)


def test_key_value_inline_encoding() -> None:
    schema = KeyValueSchema(StringSchema(), JsonSchema(Address))
    data = schema.encode(("k", Address("S", 1)))
    assert data[:4] == b"\x00\x00\x00\x01" and data[4:5] == b"k"
    assert schema.decode(data) == ("k", Address("S", 1))
    assert schema.decode(schema.encode((None, Address("S", 2)))) == (None, Address("S", 2))
    info = schema.wire_schema()
    assert info.type == SchemaType.KEY_VALUE
    props = {kv.key: kv.value for kv in info.properties}
    assert props["kv.encoding.type"] == "INLINE" and props["key.schema.type"] == "STRING"
    assert props["value.schema.type"] == "JSON"


def test_schemas_are_sent_with_producer_and_subscribe() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            await client.create_producer("t", schema=AvroSchema(Person))
            await client.subscribe("t", "sub", schema=JsonSchema(Address))
            await client.create_producer("t")  # bytes: no schema sent
            p1, p2 = fake.commands(CommandType.PRODUCER)
            assert p1.schema.type == SchemaType.AVRO and json.loads(p1.schema.schema_data) == avro_definition(Person)
            assert not p2.HasField("schema")
            (sub,) = fake.commands(CommandType.SUBSCRIBE)
            assert sub.schema.type == SchemaType.JSON and json.loads(sub.schema.schema_data)["name"] == "Address"

    run(main())


@pytest.mark.parametrize(
    ("schema", "values"),
    [
        (StringSchema(), ["héllo", "", "wörld"]),
        (JsonSchema(Person), [PERSON, dataclasses.replace(PERSON, nickname="A", tags=[])]),
        (AvroSchema(Person), [PERSON, dataclasses.replace(PERSON, age=-5, address=Address("", 0))]),
        (KeyValueSchema(StringSchema(), AvroSchema(Address)), [("a", Address("x", 1)), ("b", Address("y", 2))]),
    ],
    ids=["string", "json", "avro", "keyvalue"],
)
def test_typed_values_through_magnetar(client: Client, topic: str, schema: object, values: list) -> None:
    consumer = client.subscribe(topic, "sub", schema=schema, initial_position=InitialPosition.Earliest)
    producer = client.create_producer(topic, schema=schema)
    for v in values:
        producer.send(v)
    got = [consumer.receive(RECEIVE_MS) for _ in values]
    assert [m.value() for m in got] == values
    assert all(len(m.schema_version()) == 8 for m in got)  # the version the registry gave the producer


def test_registry_refuses_an_incompatible_schema(client: Client, topic: str) -> None:
    @dataclasses.dataclass
    class V1:
        a: str

    @dataclasses.dataclass
    class V2:
        a: int

    client.create_producer(topic, schema=AvroSchema(V1)).send(V1("x"))
    with pytest.raises(IncompatibleSchema):
        client.create_producer(topic, schema=AvroSchema(V2))


def test_avro_values_with_the_official_client(client: Client, official: object, topic: str) -> None:
    import pulsar
    import pulsar.schema as ps

    class Rec(ps.Record):
        name = ps.String()
        age = ps.Integer()

    Mine = OfficialLike
    ours = AvroSchema(Mine)
    mine_def, their_def = avro_definition(Mine), Rec.schema()
    assert mine_def["name"] == their_def["name"] == "Rec"
    assert [(f["name"], f["type"]) for f in mine_def["fields"]] == [(f["name"], f["type"]) for f in their_def["fields"]]
    consumer = client.subscribe(topic, "mine", schema=ours, initial_position=InitialPosition.Earliest)
    theirs = official.subscribe(topic, "theirs", schema=ps.AvroSchema(Rec), initial_position=pulsar.InitialPosition.Earliest)  # type: ignore[attr-defined]
    official.create_producer(topic, schema=ps.AvroSchema(Rec)).send(Rec(name="from-official", age=7))  # type: ignore[attr-defined]
    client.create_producer(topic, schema=ours).send(Mine("from-magnetar", 9))
    assert [consumer.receive(RECEIVE_MS).value() for _ in range(2)] == [Mine("from-official", 7), Mine("from-magnetar", 9)]
    got = [theirs.receive(RECEIVE_MS).value() for _ in range(2)]
    assert [(r.name, r.age) for r in got] == [("from-official", 7), ("from-magnetar", 9)]
