"""Compatibility strategies over schema changes, per schema type."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from magnetar.broker.schemas.compatibility import (
    IncompatibleSchemaError,
    InvalidSchemaError,
    SchemaData,
    Strategy,
    check_compatible,
    check_consumer_compatible,
    encode_key_value,
    parse_strategy,
    same_schema,
    split_key_value,
    validate_schema,
)


def avro(*fields: dict, name: str = "User", kind: str = "AVRO") -> SchemaData:
    return SchemaData(kind, json.dumps({"type": "record", "name": name, "fields": list(fields)}).encode())


def f(name: str, type_, **extra) -> dict:  # noqa: ANN001 - any Avro type
    return {"name": name, "type": type_, **extra}


def compatible(existing: list[SchemaData], new: SchemaData, strategy: Strategy) -> bool:
    try:
        check_compatible([(f"version {i}", s) for i, s in enumerate(existing)], new, strategy)
    except IncompatibleSchemaError:
        return False
    return True


BASE = avro(f("name", "string"), f("age", "int"))
ADD_WITH_DEFAULT = avro(f("name", "string"), f("age", "int"), f("email", "string", default=""))
ADD_WITHOUT_DEFAULT = avro(f("name", "string"), f("age", "int"), f("email", "string"))
REMOVE_WITH_DEFAULT_IN_OLD = avro(f("name", "string"))  # "age" has no default in BASE
PROMOTE_AGE = avro(f("name", "string"), f("age", "long"))
CHANGE_TYPE = avro(f("name", "string"), f("age", "string"))

BASE_AGE_DEFAULT = avro(f("name", "string"), f("age", "int", default=0))
REMOVE_DEFAULTED = avro(f("name", "string"))

S = Strategy
# (change, strategy) -> compatible?
MATRIX = [
    # a field added with a default: new reads old (default), old reads new (ignores it)
    (ADD_WITH_DEFAULT, S.BACKWARD, True),
    (ADD_WITH_DEFAULT, S.FORWARD, True),
    (ADD_WITH_DEFAULT, S.FULL, True),
    # added without a default: the new schema cannot read old data
    (ADD_WITHOUT_DEFAULT, S.BACKWARD, False),
    (ADD_WITHOUT_DEFAULT, S.FORWARD, True),
    (ADD_WITHOUT_DEFAULT, S.FULL, False),
    # a field without default removed: old readers miss it
    (REMOVE_WITH_DEFAULT_IN_OLD, S.BACKWARD, True),
    (REMOVE_WITH_DEFAULT_IN_OLD, S.FORWARD, False),
    (REMOVE_WITH_DEFAULT_IN_OLD, S.FULL, False),
    # int -> long: new reads old, old cannot read new
    (PROMOTE_AGE, S.BACKWARD, True),
    (PROMOTE_AGE, S.FORWARD, False),
    (PROMOTE_AGE, S.FULL, False),
    # int -> string: nothing
    (CHANGE_TYPE, S.BACKWARD, False),
    (CHANGE_TYPE, S.FORWARD, False),
    (CHANGE_TYPE, S.FULL, False),
    (CHANGE_TYPE, S.ALWAYS_COMPATIBLE, True),
    # any change under ALWAYS_INCOMPATIBLE
    (ADD_WITH_DEFAULT, S.ALWAYS_INCOMPATIBLE, False),
]


@pytest.mark.parametrize(("new", "strategy", "ok"), MATRIX)
def test_field_changes_per_strategy(new: SchemaData, strategy: Strategy, ok: bool) -> None:
    assert compatible([BASE], new, strategy) is ok
    # the same data types behave the same under JSON schemas
    as_json = SchemaData("JSON", new.data)
    assert compatible([SchemaData("JSON", BASE.data)], as_json, strategy) is ok


def test_removing_a_defaulted_field_is_fully_compatible() -> None:
    assert compatible([BASE_AGE_DEFAULT], REMOVE_DEFAULTED, S.FULL)


def test_identical_schema_passes_every_non_transitive_strategy() -> None:
    for strategy in (S.BACKWARD, S.FORWARD, S.FULL, S.ALWAYS_INCOMPATIBLE):
        assert compatible([BASE], BASE, strategy)
    # whitespace and key order do not make a different schema
    reformatted = SchemaData("AVRO", json.dumps(json.loads(BASE.data), indent=4, sort_keys=True).encode())
    assert same_schema(BASE, reformatted)
    assert compatible([BASE], reformatted, S.ALWAYS_INCOMPATIBLE)


def test_type_change_is_incompatible_unless_always_compatible() -> None:
    string = SchemaData("STRING")
    assert not compatible([BASE], string, S.FULL)
    assert not compatible([BASE], string, S.BACKWARD_TRANSITIVE)
    assert compatible([BASE], string, S.ALWAYS_COMPATIBLE)
    with pytest.raises(IncompatibleSchemaError, match="exists schema type AVRO .*new schema type STRING"):
        check_compatible([("version 0", BASE)], string, S.FULL)


def test_enum_map_array_and_union_changes() -> None:
    v1 = avro(
        f("color", {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}),
        f("tags", {"type": "array", "items": "string"}),
        f("scores", {"type": "map", "values": "int"}),
        f("nick", ["null", "string"], default=None),
    )
    more_symbols = avro(
        f("color", {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}),
        f("tags", {"type": "array", "items": "string"}),
        f("scores", {"type": "map", "values": "int"}),
        f("nick", ["null", "string"], default=None),
    )
    wider_values = avro(
        f("color", {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}),
        f("tags", {"type": "array", "items": "string"}),
        f("scores", {"type": "map", "values": "double"}),
        f("nick", ["null", "string"], default=None),
    )
    wider_union = avro(
        f("color", {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}),
        f("tags", {"type": "array", "items": "string"}),
        f("scores", {"type": "map", "values": "int"}),
        f("nick", ["null", "string", "int"], default=None),
    )
    bytes_tags = avro(
        f("color", {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}),
        f("tags", {"type": "array", "items": "bytes"}),
        f("scores", {"type": "map", "values": "int"}),
        f("nick", ["null", "string"], default=None),
    )
    # new enum symbol: new reads old, old cannot read the new symbol
    assert compatible([v1], more_symbols, S.BACKWARD)
    assert not compatible([v1], more_symbols, S.FORWARD)
    # map values int -> double
    assert compatible([v1], wider_values, S.BACKWARD)
    assert not compatible([v1], wider_values, S.FULL)
    # a union gaining a branch
    assert compatible([v1], wider_union, S.BACKWARD)
    assert not compatible([v1], wider_union, S.FORWARD)
    # string <-> bytes items promote both ways
    assert compatible([v1], bytes_tags, S.FULL)


def test_nested_record_changes() -> None:
    def with_address(*fields: dict) -> SchemaData:
        return avro(f("name", "string"), f("address", {"type": "record", "name": "Address", "fields": list(fields)}))

    v1 = with_address(f("street", "string"))
    v2 = with_address(f("street", "string"), f("zip", ["null", "string"], default=None))
    v3 = with_address(f("street", "string"), f("zip", "string"))
    assert compatible([v1], v2, S.FULL)
    assert not compatible([v1], v3, S.BACKWARD)
    with pytest.raises(IncompatibleSchemaError, match=r"address\.zip"):
        check_compatible([("version 0", v1)], v3, S.FULL)


# -- transitive vs non-transitive with three versions ---------------------------------------
# v1 -> v2 adds "b" with a default; v3 drops the default of "b".
# v3 can read v2 data ("b" is written there) but not v1 data (no "b", no default).
V1 = avro(f("a", "int"))
V2 = avro(f("a", "int"), f("b", "string", default=""))
V3 = avro(f("a", "int"), f("b", "string"))


def test_backward_checks_only_the_latest() -> None:
    assert compatible([V1, V2], V3, S.BACKWARD)
    assert not compatible([V1, V2], V3, S.BACKWARD_TRANSITIVE)
    assert compatible([V1, V2], V3, S.FORWARD)  # v2 reads v3 data, v1 too
    assert compatible([V1, V2], V3, S.FORWARD_TRANSITIVE)
    assert compatible([V1, V2], V3, S.FULL)
    assert not compatible([V1, V2], V3, S.FULL_TRANSITIVE)


def test_forward_transitive_sees_old_readers() -> None:
    # w1 has "c" without default; w2 gives it a default; w3 removes it:
    # w2 can read w3 data (default), w1 cannot.
    w1 = avro(f("a", "int"), f("c", "int"))
    w2 = avro(f("a", "int"), f("c", "int", default=0))
    w3 = avro(f("a", "int"))
    assert compatible([w1, w2], w3, S.FORWARD)
    assert not compatible([w1, w2], w3, S.FORWARD_TRANSITIVE)
    assert compatible([w1, w2], w3, S.BACKWARD_TRANSITIVE)
    assert not compatible([w1, w2], w3, S.FULL_TRANSITIVE)


def test_transitive_type_check_covers_every_version() -> None:
    existing = [SchemaData("STRING"), BASE]
    assert compatible(existing, ADD_WITH_DEFAULT, S.FULL)
    assert not compatible(existing, ADD_WITH_DEFAULT, S.FULL_TRANSITIVE)


def test_invalid_avro_definition_is_incompatible() -> None:
    assert not compatible([BASE], SchemaData("AVRO", b"{not avro"), S.FULL)


# -- consumers ------------------------------------------------------------------------------
def consumer_ok(existing: list[SchemaData], schema: SchemaData, strategy: Strategy) -> bool:
    try:
        check_consumer_compatible([(f"version {i}", s) for i, s in enumerate(existing)], schema, strategy)
    except IncompatibleSchemaError:
        return False
    return True


def test_consumer_must_read_the_latest_schema() -> None:
    # a consumer with an extra defaulted field reads the topic's data
    assert consumer_ok([BASE], ADD_WITH_DEFAULT, S.FULL)
    assert consumer_ok([BASE], ADD_WITH_DEFAULT, S.FORWARD)
    assert not consumer_ok([BASE], ADD_WITHOUT_DEFAULT, S.FULL)
    assert not consumer_ok([BASE], CHANGE_TYPE, S.BACKWARD)
    assert not consumer_ok([BASE], SchemaData("JSON", BASE.data), S.FULL)
    assert consumer_ok([BASE], CHANGE_TYPE, S.ALWAYS_COMPATIBLE)
    # identical schema: always
    assert consumer_ok([BASE], BASE, S.ALWAYS_INCOMPATIBLE)


def test_consumer_under_transitive_strategies_checks_every_version() -> None:
    assert consumer_ok([V1, V2], V3, S.BACKWARD)
    assert not consumer_ok([V1, V2], V3, S.BACKWARD_TRANSITIVE)


# -- other types -----------------------------------------------------------------------------
def test_primitive_and_string_types_are_compatible_when_equal() -> None:
    assert compatible([SchemaData("STRING", b"null")], SchemaData("STRING", b""), S.FULL)
    assert compatible([SchemaData("INT64")], SchemaData("INT64"), S.FULL_TRANSITIVE)
    assert not compatible([SchemaData("INT64")], SchemaData("INT32"), S.FULL)
    assert not compatible([SchemaData("PROTOBUF", b"{}")], SchemaData("PROTOBUF", b"[]"), S.ALWAYS_INCOMPATIBLE)
    assert compatible([SchemaData("PROTOBUF", b'"int"')], SchemaData("PROTOBUF", b'"long"'), S.FULL)


def protobuf_native(root: str) -> SchemaData:
    return SchemaData(
        "PROTOBUF_NATIVE",
        json.dumps({"fileDescriptorSet": "", "rootMessageTypeName": root, "rootFileDescriptorName": "x.proto"}).encode(),
    )


def test_protobuf_native_keeps_its_root_message() -> None:
    a = protobuf_native("pkg.A")
    a2 = SchemaData("PROTOBUF_NATIVE", a.data.replace(b"x.proto", b"y.proto"))
    assert compatible([a], a2, S.FULL)
    assert not compatible([a], protobuf_native("pkg.B"), S.FULL)
    assert compatible([a], protobuf_native("pkg.B"), S.ALWAYS_COMPATIBLE)
    with pytest.raises(InvalidSchemaError):
        validate_schema(SchemaData("PROTOBUF_NATIVE", b"{}"))


def test_key_value_checks_key_and_value_components() -> None:
    key = SchemaData("STRING")
    v1 = encode_key_value(key, BASE)
    v2 = encode_key_value(key, ADD_WITH_DEFAULT)
    v3 = encode_key_value(key, CHANGE_TYPE)
    v4 = encode_key_value(SchemaData("INT64"), BASE)
    assert compatible([v1], v2, S.FULL)
    assert not compatible([v1], v3, S.FULL)
    assert not compatible([v1], v4, S.FULL)
    k, v = split_key_value(v2)
    assert k.type == "STRING" and v.type == "AVRO" and v.data == ADD_WITH_DEFAULT.data
    with pytest.raises(InvalidSchemaError):
        split_key_value(SchemaData("KEY_VALUE", b"\x00\x00\x00\x09abc"))
    # components may be empty (-1 length)
    empty = SchemaData("KEY_VALUE", b"\xff\xff\xff\xff\xff\xff\xff\xff")
    assert split_key_value(empty)[0].data == b""


def test_validation() -> None:
    validate_schema(BASE)
    validate_schema(SchemaData("JSON", b'{"type": "object", "properties": {}}'))  # legacy JSON-schema format
    validate_schema(SchemaData("STRING", b"anything"))
    for bad in (SchemaData("AVRO", b"nope"), SchemaData("JSON", b"[1]"), SchemaData("KEY_VALUE", b"\x00")):
        with pytest.raises(InvalidSchemaError):
            validate_schema(bad)


def test_json_legacy_format_changes_are_tolerated() -> None:
    legacy = SchemaData("JSON", b'{"id": "urn:a", "type": "object"}')
    assert compatible([legacy], SchemaData("JSON", BASE.data), S.FULL)
    assert compatible([SchemaData("JSON", BASE.data)], legacy, S.FULL)
    assert not compatible([legacy], SchemaData("JSON", b'{"id": "urn:b", "type": "object"}'), S.FULL)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("FULL", S.FULL),
        ("full", S.FULL),
        ("Backward", S.BACKWARD),
        ("BACKWARD_TRANSITIVE", S.BACKWARD_TRANSITIVE),
        ("BackwardTransitive", S.BACKWARD_TRANSITIVE),
        ("AutoUpdateDisabled", S.ALWAYS_INCOMPATIBLE),
        ("AlwaysCompatible", S.ALWAYS_COMPATIBLE),
        ("UNDEFINED", None),
        ("nonsense", None),
        (None, None),
        ("", None),
    ],
)
def test_parse_strategy(text: str | None, expected: Strategy | None) -> None:
    assert parse_strategy(text) == expected


def test_the_avro_module_loads_with_the_first_avro_schema_checked() -> None:
    script = """
import sys
import magnetar.broker.schemas  # the package, as the broker imports it
from magnetar.broker.schemas.compatibility import SchemaData, validate_schema
print("imported", "magnetar.protocol.avro" in sys.modules)
validate_schema(SchemaData(type="STRING", data=b""))
print("string", "magnetar.protocol.avro" in sys.modules)
validate_schema(SchemaData(type="AVRO", data=b'{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}'))
print("avro", "magnetar.protocol.avro" in sys.modules)
try:
    validate_schema(SchemaData(type="AVRO", data=b'{"type": "nope"}'))
except Exception as exc:
    print(type(exc).__name__)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.splitlines() == ["imported False", "string False", "avro True", "InvalidSchemaError"], out.stderr
