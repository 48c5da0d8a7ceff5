"""Records declared as for the official client (``pulsar.schema.Record``): the same Avro
definitions and bytes as the official client, both ways, and through a broker."""

from __future__ import annotations

import enum
import json
from typing import Any

import pytest

import magnetar.client as ours
from magnetar.client import schema as our_schema

from ..conftest import RECEIVE_MS

official_pulsar = pytest.importorskip("pulsar")
official_schema = pytest.importorskip("pulsar.schema")


class Color(enum.Enum):
    red = 1
    green = 2


def declare(ns: Any) -> tuple[type, type]:
    """The same record classes, declared with the official module or with magnetar's."""

    class Address(ns.Record):
        street = ns.String(required=True)
        zip = ns.Integer()

    class User(ns.Record):
        _avro_namespace = "com.example"
        name = ns.String(required=True)
        age = ns.Integer(default=3, required_default=True)
        score = ns.Double()
        big = ns.Long()
        ratio = ns.Float()
        ok = ns.Boolean()
        data = ns.Bytes()
        tags = ns.Array(ns.String())
        attrs = ns.Map(ns.Long())
        color = Color
        color2 = ns.CustomEnum(Color, default=Color.green, required_default=True)
        home = Address()
        others = ns.Array(Address())

    return User, Address


def sample(user_cls: type, address_cls: type) -> Any:
    return user_cls(
        name="ann", age=41, score=1.5, big=1 << 40, ratio=2.0, ok=True, data=b"\x00\x01", tags=["a", "b"],
        attrs={"x": 1}, color=Color.red, home=address_cls(street="s", zip=5), others=[address_cls(street="t")],
    )


def fields_of(record: Any) -> dict[str, Any]:
    out = {}
    for name in type(record)._fields:
        value = getattr(record, name)
        if isinstance(value, list):
            value = [fields_of(v) if hasattr(type(v), "_fields") else v for v in value]
        elif hasattr(type(value), "_fields"):
            value = fields_of(value)
        out[name] = value
    return out


def test_definitions_are_the_official_clients() -> None:
    (theirs, _), (mine, _) = declare(official_schema), declare(our_schema)
    assert json.dumps(mine.schema()) == json.dumps(theirs.schema())

    class Sorted(our_schema.Record):
        _sorted_fields = True
        b = our_schema.String()
        a = our_schema.Integer()

    class SortedToo(official_schema.Record):
        _sorted_fields = True
        b = official_schema.String()
        a = official_schema.Integer()

    assert [f["name"] for f in Sorted.schema()["fields"]] == [f["name"] for f in SortedToo.schema()["fields"]] == ["a", "b"]


def test_avro_and_json_bytes_cross_both_ways() -> None:
    (ou, oa), (mu, ma) = declare(official_schema), declare(our_schema)
    theirs, mine = sample(ou, oa), sample(mu, ma)
    assert our_schema.AvroSchema(mu).encode(mine) == official_schema.AvroSchema(ou).encode(theirs)
    for their_cls, our_cls in ((official_schema.AvroSchema, our_schema.AvroSchema), (official_schema.JsonSchema, our_schema.JsonSchema)):
        assert fields_of(our_cls(mu).decode(their_cls(ou).encode(theirs))) == fields_of(mine)
        assert fields_of(their_cls(ou).decode(our_cls(mu).encode(mine))) == fields_of(theirs)


def test_fields_validate_and_default_as_the_official_client() -> None:
    user_cls, address_cls = declare(our_schema)
    empty = user_cls()
    assert (empty.age, empty.ok, empty.color2, empty.tags) == (3, False, Color.green, None)
    assert user_cls(color="green").color is Color.green and user_cls(color=1).color is Color.red
    assert user_cls(data="text").data == b"text" and user_cls(name=b"bytes").name == "bytes"
    assert user_cls(home={"street": "x"}).home == address_cls(street="x")
    with pytest.raises(TypeError):
        user_cls(age="old")
    with pytest.raises(TypeError):
        user_cls(tags=[1])
    with pytest.raises(AttributeError):
        empty.undeclared = 1


def test_official_producer_to_magnetar_consumer_and_back(url: str, topic: str, official: Any) -> None:
    (ou, oa), (mu, ma) = declare(official_schema), declare(our_schema)
    client = ours.Client(url, operation_timeout_seconds=10)
    try:
        mine = client.subscribe(topic, "ours", schema=our_schema.AvroSchema(mu), initial_position=ours.InitialPosition.Earliest)
        theirs = official.subscribe(
            topic, "theirs", schema=official_schema.AvroSchema(ou), initial_position=official_pulsar.InitialPosition.Earliest
        )
        official.create_producer(topic, schema=official_schema.AvroSchema(ou)).send(sample(ou, oa))
        client.create_producer(topic, schema=our_schema.AvroSchema(mu)).send(sample(mu, ma))
        for _ in range(2):
            assert fields_of(mine.receive(RECEIVE_MS).value()) == fields_of(sample(mu, ma))
            assert fields_of(theirs.receive(RECEIVE_MS).value()) == fields_of(sample(ou, oa))
    finally:
        client.close()


def test_bad_values_are_refused_with_the_official_clients_errors() -> None:
    class Scores(our_schema.Record):
        points = our_schema.Array(our_schema.Integer(), required=False, default=[])
        by_name = our_schema.Map(our_schema.Integer())

    with pytest.raises(TypeError) as array_error:
        Scores(points=["not", "integer"])
    assert str(array_error.value) == "Array field points items should all be of type int"
    with pytest.raises(TypeError) as map_value_error:
        Scores(by_name={"a": "1"})
    assert str(map_value_error.value) == "Map values for field by_name should all be of type int"
    with pytest.raises(TypeError) as map_key_error:
        Scores(by_name={1: 1})
    assert str(map_key_error.value) == "Map keys for field by_name should all be strings"
    scores = Scores(points=[1])
    with pytest.raises(AttributeError):
        scores.undeclared = 3
    assert not hasattr(scores, "undeclared")


def test_the_record_base_itself_cannot_be_made() -> None:
    with pytest.raises(TypeError, match="declares no fields"):
        our_schema.Record(a=1, c=8)
    with pytest.raises(TypeError):
        our_schema.Record()
