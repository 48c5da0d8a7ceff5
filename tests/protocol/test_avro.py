"""Avro schema parsing and the reader/writer resolution check."""

from __future__ import annotations

import json

import pytest

from magnetar.protocol.avro import (
    AvroArray,
    AvroEnum,
    AvroRecord,
    AvroSchemaError,
    AvroUnion,
    can_read,
    parse,
    resolution_errors,
)


def record(name: str, *fields: dict, namespace: str | None = None) -> dict:
    out = {"type": "record", "name": name, "fields": list(fields)}
    if namespace:
        out["namespace"] = namespace
    return out


def f(name: str, type_, **extra) -> dict:  # noqa: ANN001 - any Avro type
    return {"name": name, "type": type_, **extra}


def reads(reader: object, writer: object) -> bool:
    return can_read(parse(json.dumps(reader)), parse(json.dumps(writer)))


# -- parsing -----------------------------------------------------------------------------
def test_parse_primitives_records_and_logical_types() -> None:
    t = parse(json.dumps(record("R", f("a", "int"), f("b", {"type": "long", "logicalType": "timestamp-millis"}))))
    assert isinstance(t, AvroRecord)
    assert t.fullname == "R"
    assert [fld.type.name for fld in t.fields] == ["int", "long"]
    assert parse(b'"string"').name == "string"


def test_parse_namespaces_and_references() -> None:
    schema = record(
        "Outer",
        f("inner", record("Inner", f("x", "int"))),
        f("again", "Inner"),
        f("full", "com.example.Inner"),
        f("color", {"type": "enum", "name": "Color", "namespace": "other", "symbols": ["R", "G"]}),
        f("color2", "other.Color"),
        namespace="com.example",
    )
    t = parse(json.dumps(schema))
    inner = t.fields[0].type
    assert isinstance(inner, AvroRecord) and inner.fullname == "com.example.Inner"
    assert t.fields[1].type is inner
    assert t.fields[2].type is inner
    assert isinstance(t.fields[3].type, AvroEnum) and t.fields[3].type.fullname == "other.Color"
    assert t.fields[4].type is t.fields[3].type


def test_parse_recursive_record() -> None:
    t = parse(json.dumps(record("Node", f("value", "int"), f("next", ["null", "Node"]))))
    nxt = t.fields[1].type
    assert isinstance(nxt, AvroUnion)
    assert nxt.branches[1] is t


@pytest.mark.parametrize(
    "bad",
    [
        "not json",
        '"NoSuchType"',
        '{"type": "record", "name": "R"}',
        '{"type": "record", "name": "R", "fields": [{"name": "a"}]}',
        '{"type": "enum", "name": "E", "symbols": ["A", "A"]}',
        '{"type": "array"}',
        '{"type": "fixed", "name": "F"}',
        "[]",
        '[["int"]]',
        '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "R"}, {"name": "a", "type": "int"}]}',
        '{"type": "record", "name": "R", "fields": [{"name": "r", "type": {"type": "record", "name": "R", "fields": []}}]}',
    ],
)
def test_parse_rejects_invalid_schemas(bad: str) -> None:
    with pytest.raises(AvroSchemaError):
        parse(bad)


def test_defaults_are_not_validated() -> None:
    t = parse(json.dumps(record("R", f("a", "int", default="not an int"))))
    assert t.fields[0].has_default


# -- resolution: primitives and promotions -------------------------------------------------
@pytest.mark.parametrize(
    ("writer", "reader", "ok"),
    [
        ("int", "int", True),
        ("int", "long", True),
        ("int", "float", True),
        ("int", "double", True),
        ("long", "float", True),
        ("long", "double", True),
        ("float", "double", True),
        ("string", "bytes", True),
        ("bytes", "string", True),
        ("long", "int", False),
        ("double", "float", False),
        ("float", "long", False),
        ("int", "string", False),
        ("boolean", "int", False),
        ("null", "int", False),
        ("null", "null", True),
    ],
)
def test_primitive_resolution(writer: str, reader: str, ok: bool) -> None:
    assert reads(reader, writer) is ok


# -- records --------------------------------------------------------------------------------
def test_reader_field_missing_in_writer_needs_a_default() -> None:
    old = record("R", f("a", "int"))
    with_default = record("R", f("a", "int"), f("b", "string", default="x"))
    without_default = record("R", f("a", "int"), f("b", "string"))
    assert reads(with_default, old)
    assert not reads(without_default, old)
    errors = resolution_errors(parse(json.dumps(without_default)), parse(json.dumps(old)))
    assert errors == ["b: field is missing in the writer's schema and has no default"]


def test_null_default_counts_as_a_default() -> None:
    assert reads(record("R", f("a", "int"), f("b", ["null", "string"], default=None)), record("R", f("a", "int")))


def test_writer_fields_missing_in_reader_are_ignored() -> None:
    assert reads(record("R", f("a", "int")), record("R", f("a", "int"), f("extra", "string")))


def test_field_order_does_not_matter_and_record_names_need_not_match() -> None:
    assert reads(record("User2", f("b", "string"), f("a", "int")), record("User1", f("a", "int"), f("b", "string")))


def test_field_aliases_match_renamed_fields() -> None:
    reader = record("R", f("new_name", "int", aliases=["old_name"]))
    assert reads(reader, record("R", f("old_name", "int")))
    assert not reads(record("R", f("new_name", "int")), record("R", f("old_name", "int")))


def test_field_type_change_is_checked_with_promotion() -> None:
    assert reads(record("R", f("a", "long")), record("R", f("a", "int")))
    assert not reads(record("R", f("a", "int")), record("R", f("a", "long")))


def test_nested_records_are_resolved_with_their_paths() -> None:
    w = record("R", f("inner", record("I", f("x", "int"), f("y", "string"))))
    r_ok = record("R", f("inner", record("I", f("x", "double"))))
    r_bad = record("R", f("inner", record("I", f("x", "int"), f("z", "string"))))
    assert reads(r_ok, w)
    errors = resolution_errors(parse(json.dumps(r_bad)), parse(json.dumps(w)))
    assert errors == ["inner.z: field is missing in the writer's schema and has no default"]


def test_recursive_records_resolve() -> None:
    w = record("Node", f("value", "int"), f("next", ["null", "Node"]))
    r = record("Node", f("value", "long"), f("next", ["null", "Node"]), f("label", "string", default=""))
    assert reads(r, w)
    assert not reads(w, record("Node", f("value", "long"), f("next", ["null", "Node"])))


# -- enums ---------------------------------------------------------------------------------
def enum(symbols: list[str], name: str = "Color", **extra) -> dict:
    return {"type": "enum", "name": name, "symbols": symbols, **extra}


def test_enum_reader_needs_every_writer_symbol() -> None:
    assert reads(enum(["R", "G", "B"]), enum(["R", "G"]))
    assert not reads(enum(["R", "G"]), enum(["R", "G", "B"]))


def test_enum_reader_default_covers_unknown_symbols() -> None:
    assert reads(enum(["R", "G", "UNKNOWN"], default="UNKNOWN"), enum(["R", "G", "B"]))


def test_enum_names_must_match_unless_aliased() -> None:
    assert not reads(enum(["R"], name="Colour"), enum(["R"]))
    assert reads(enum(["R"], name="Colour", aliases=["Color"]), enum(["R"]))


# -- arrays, maps, fixed ---------------------------------------------------------------------
def test_arrays_resolve_their_items() -> None:
    assert reads({"type": "array", "items": "long"}, {"type": "array", "items": "int"})
    assert not reads({"type": "array", "items": "int"}, {"type": "array", "items": "string"})
    assert not reads({"type": "array", "items": "int"}, {"type": "map", "values": "int"})


def test_maps_resolve_their_values() -> None:
    assert reads({"type": "map", "values": "double"}, {"type": "map", "values": "float"})
    assert not reads({"type": "map", "values": "float"}, {"type": "map", "values": "double"})
    w = {"type": "map", "values": record("V", f("a", "int"))}
    assert not reads({"type": "map", "values": record("V", f("a", "int"), f("b", "int"))}, w)
    errors = resolution_errors(
        parse(json.dumps({"type": "map", "values": record("V", f("a", "int"), f("b", "int"))})), parse(json.dumps(w))
    )
    assert errors[0].startswith("{}.b:")


def test_fixed_needs_same_name_and_size() -> None:
    fixed = {"type": "fixed", "name": "Hash", "size": 16}
    assert reads(fixed, fixed)
    assert not reads({"type": "fixed", "name": "Hash", "size": 32}, fixed)
    assert not reads({"type": "fixed", "name": "Other", "size": 16}, fixed)


# -- unions -------------------------------------------------------------------------------
def test_non_union_writer_must_match_a_reader_branch() -> None:
    assert reads(["null", "string"], "string")
    assert reads(["null", "long"], "int")
    assert not reads(["null", "string"], "int")


def test_every_writer_branch_must_resolve() -> None:
    assert reads(["null", "string", "int"], ["null", "string"])
    assert not reads(["null", "string"], ["null", "string", "int"])
    assert reads("long", ["int", "long"])
    assert not reads("int", ["int", "long"])
    assert reads(["null", "double"], ["null", "int", "float"])


def test_making_a_field_optional_and_back() -> None:
    required = record("R", f("a", "int"))
    optional = record("R", f("a", ["null", "int"], default=None))
    assert reads(optional, required)
    assert not reads(required, optional)


def test_union_of_records_matches_structurally() -> None:
    w = record("A", f("x", "int"))
    r = ["null", record("B", f("x", "long"))]
    assert reads(r, w)
    assert not reads(["null", record("B", f("y", "long"))], w)


def test_first_only_stops_at_one_error() -> None:
    r = parse(json.dumps(record("R", f("a", "string"), f("b", "string"))))
    w = parse(json.dumps(record("R", f("a", "int"), f("b", "int"))))
    assert len(resolution_errors(r, w)) == 2
    assert len(resolution_errors(r, w, first_only=True)) == 1


def test_arrays_of_records_nested_in_unions() -> None:
    item_v1 = record("Item", f("id", "int"))
    item_v2 = record("Item", f("id", "long"), f("tags", {"type": "array", "items": "string"}, default=[]))
    w = record("Order", f("items", ["null", {"type": "array", "items": item_v1}]))
    r = record("Order", f("items", ["null", {"type": "array", "items": item_v2}]))
    assert reads(r, w)
    assert not reads(w, r)
    assert isinstance(parse(json.dumps(r)).fields[0].type.branches[1], AvroArray)


def test_parsed_fields_keep_their_defaults_and_enums_their_symbol_index() -> None:
    schema = parse(record("R", f("a", "long", default=7), f("b", "string"), f("c", {"type": "enum", "name": "E", "symbols": ["X", "Y"]})))
    assert isinstance(schema, AvroRecord)
    a, b, c = schema.fields
    assert (a.has_default, a.default) == (True, 7)
    assert (b.has_default, b.default) == (False, None)
    assert isinstance(c.type, AvroEnum) and c.type.index == {"X": 0, "Y": 1}
