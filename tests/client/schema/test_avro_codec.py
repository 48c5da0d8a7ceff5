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
