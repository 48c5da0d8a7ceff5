"""AvroCodec over fastavro: what magnetar's codec gave before it stays (logical types as their
underlying type, a renamed top-level record read, every byte of a payload read, clear errors)."""

from __future__ import annotations

import pytest

from magnetar.client import InvalidConfiguration, SchemaSerializationError
from magnetar.client.schema.avro_codec import AvroCodec
from magnetar.protocol.varint import write_varint, zigzag

EVENT = {
    "type": "record", "name": "Event", "namespace": "app",
    "fields": [
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "id", "type": {"type": "fixed", "name": "Id", "size": 4}},
    ],
}


def test_logical_types_are_read_and_written_as_their_underlying_type() -> None:
    codec = AvroCodec(EVENT)
    data = codec.encode({"at": 1_700_000_000_123, "day": 19_000, "id": b"abcd"})
    expected = bytearray()
    write_varint(zigzag(1_700_000_000_123), expected)
    write_varint(zigzag(19_000), expected)
    assert data == bytes(expected) + b"abcd"
    assert codec.decode(data) == {"at": 1_700_000_000_123, "day": 19_000, "id": b"abcd"}


def test_values_and_payloads_that_do_not_fit_are_refused() -> None:
    codec = AvroCodec(EVENT)
    with pytest.raises(SchemaSerializationError, match="does not fit the Avro schema"):
        codec.encode({"at": 1, "day": 2, "id": b"abc"})  # a fixed of 3 bytes out of 4
    with pytest.raises(SchemaSerializationError, match="does not fit the Avro schema"):
        codec.encode({"at": "soon", "day": 2, "id": b"abcd"})
    with pytest.raises(SchemaSerializationError, match="does not fit the Avro schema"):
        codec.encode({"day": 2, "id": b"abcd"})  # no value and no default
    data = codec.encode({"at": 1, "day": 2, "id": b"abcd"})
    with pytest.raises(SchemaSerializationError, match="2 bytes left after the Avro value"):
        codec.decode(data + b"\x00\x00")
    with pytest.raises(SchemaSerializationError, match="does not decode with the Avro schema"):
        codec.decode(data[:-2])
    with pytest.raises(InvalidConfiguration, match="Avro schema"):
        AvroCodec({"type": "record", "name": "R", "fields": [{"name": "x", "type": "Nowhere"}]})


def test_a_renamed_record_is_read_with_fields_promoted_defaulted_and_skipped() -> None:
    writer = {"type": "record", "name": "UserV1", "namespace": "old",
              "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"},
                         {"name": "gone", "type": "string"}]}
    reader = {"type": "record", "name": "User", "namespace": "new",
              "fields": [{"name": "age", "type": "long"}, {"name": "name", "type": "string"},
                         {"name": "city", "type": "string", "default": "nowhere"}]}
    data = AvroCodec(writer).encode({"name": "ada", "age": 36, "gone": "x"})
    assert AvroCodec(reader).resolving(writer).decode(data) == {"age": 36, "name": "ada", "city": "nowhere"}


def test_renamed_nested_records_are_read_in_fields_arrays_and_unions() -> None:
    def order(line: str, customer: str, extra: list[dict]) -> dict:
        line_type = {"type": "record", "name": line, "fields": [{"name": "sku", "type": "string"}, *extra]}
        return {"type": "record", "name": "Order", "fields": [
            {"name": "lines", "type": {"type": "array", "items": line_type}},
            {"name": "customer", "type": ["null", {"type": "record", "name": customer,
                                                    "fields": [{"name": "name", "type": "string"}]}]},
            {"name": "first", "type": ["null", line]},
        ]}

    writer = order("LineV1", "CustomerV1", [{"name": "qty", "type": "int"}])
    reader = order("Line", "Customer", [{"name": "qty", "type": "long"}, {"name": "note", "type": "string", "default": ""}])
    value = {"lines": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}], "customer": {"name": "ada"}, "first": {"sku": "a", "qty": 1}}
    data = AvroCodec(writer).encode(value)
    assert AvroCodec(reader).resolving(writer).decode(data) == {
        "lines": [{"sku": "a", "qty": 1, "note": ""}, {"sku": "b", "qty": 2, "note": ""}],
        "customer": {"name": "ada"},
        "first": {"sku": "a", "qty": 1, "note": ""},
    }


def test_a_recursive_record_round_trips_and_resolves() -> None:
    node = {"type": "record", "name": "Node", "namespace": "list",
            "fields": [{"name": "value", "type": "int"}, {"name": "next", "type": ["null", "Node"], "default": None}]}
    wider = {**node, "name": "Item", "fields": [{"name": "value", "type": "long"}, {"name": "next", "type": ["null", "Item"], "default": None}]}
    value = {"value": 1, "next": {"value": 2, "next": {"value": 3, "next": None}}}
    data = AvroCodec(node).encode(value)
    assert AvroCodec(node).decode(data) == value
    assert AvroCodec(wider).resolving(node).decode(data) == value
