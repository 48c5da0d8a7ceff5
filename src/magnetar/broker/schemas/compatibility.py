"""Schema compatibility strategies and the checks behind them, per schema type.

The rules follow Pulsar's broker:

- a new schema must have the type of the schema(s) it is checked against, except under
  ALWAYS_COMPATIBLE, which accepts anything;
- BACKWARD: the new schema can read data written with the latest one; FORWARD: the latest can
  read data written with the new one; FULL: both. The ``_TRANSITIVE`` variants check against
  every version since the last delete instead of the latest only. ALWAYS_INCOMPATIBLE refuses
  every change.
- AVRO, JSON (whose schema_data is an Avro record definition too) and the components of a
  KEY_VALUE schema are checked with Avro's resolution rules (:mod:`magnetar.protocol.avro`); PROTOBUF_NATIVE
  schemas must keep their root message type; other types (STRING, the primitives, PROTOBUF,
  ...) are compatible whenever the type is equal.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from magnetar.broker.schema_strategy import Strategy, parse_strategy

if TYPE_CHECKING:
    from magnetar.protocol.avro import AvroType

__all__ = [
    "TRANSITIVE",
    "IncompatibleSchemaError",
    "InvalidSchemaError",
    "SchemaData",
    "Strategy",
    "check_compatible",
    "check_consumer_compatible",
    "parse_strategy",
    "same_schema",
    "split_key_value",
    "validate_schema",
]


TRANSITIVE = frozenset({Strategy.BACKWARD_TRANSITIVE, Strategy.FORWARD_TRANSITIVE, Strategy.FULL_TRANSITIVE})
_NEW_READS_OLD = frozenset({Strategy.BACKWARD, Strategy.BACKWARD_TRANSITIVE, Strategy.FULL, Strategy.FULL_TRANSITIVE})
_OLD_READS_NEW = frozenset({Strategy.FORWARD, Strategy.FORWARD_TRANSITIVE, Strategy.FULL, Strategy.FULL_TRANSITIVE})

class IncompatibleSchemaError(Exception):
    """A schema refused by the compatibility check (ServerError IncompatibleSchema on the wire)."""


class InvalidSchemaError(IncompatibleSchemaError):
    """Schema data that is not a valid definition for its type."""


@dataclass(frozen=True)
class SchemaData:
    """A schema as clients and the admin API give it: type name, definition bytes, properties.

    ``type`` is Pulsar's schema type name (``AVRO``, ``JSON``, ``STRING``, ``KEY_VALUE``,
    ``BYTES``, ...).
    """

    type: str
    data: bytes = b""
    properties: Mapping[str, str] = field(default_factory=dict)


#: (label used in messages, e.g. "version 3", schema)
Labeled = tuple[str, SchemaData]
Checker = Callable[[Sequence[Labeled], SchemaData, Strategy], None]

_AVRO_PARSED_TYPES = frozenset({"AVRO", "JSON", "PROTOBUF"})


# -- identity -------------------------------------------------------------------------------
def _json_or_none(data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def same_schema(a: SchemaData, b: SchemaData) -> bool:
    """Whether two schemas are the same definition (as Pulsar decides when reusing a version).

    Avro-based types compare their parsed JSON (whitespace and key order do not matter), others
    their bytes; KEY_VALUE also compares the properties that carry the component types.
    Other properties do not count, as in Pulsar.
    """
    if a.type != b.type:
        return False
    if a.data == b.data:
        same = True
    elif a.type in _AVRO_PARSED_TYPES:
        ja, jb = _json_or_none(a.data), _json_or_none(b.data)
        same = ja is not None and ja == jb
    else:
        same = False
    if same and a.type == "KEY_VALUE":
        same = _kv_props(a) == _kv_props(b)
    return same


def _kv_props(s: SchemaData) -> tuple[str, str, str, str]:
    p = s.properties
    return (
        p.get("key.schema.type", "BYTES"),
        p.get("value.schema.type", "BYTES"),
        p.get("key.schema.properties", ""),
        p.get("value.schema.properties", ""),
    )


# -- validation -----------------------------------------------------------------------------
def _avro() -> ModuleType:
    """:mod:`magnetar.protocol.avro`, loaded with the first AVRO or JSON schema checked: a broker that
    checks none never loads it."""
    # not on the broker's start path: 3.7 ms of python -X importtime (load 4), 1.5% of the start's instructions (callgrind)
    from magnetar.protocol import avro

    return avro


def validate_schema(schema: SchemaData) -> None:
    """InvalidSchemaError when the definition does not fit its type.

    AVRO and PROTOBUF must be Avro schemas; JSON an Avro schema or a JSON object (the legacy
    JSON-schema format); PROTOBUF_NATIVE a JSON object naming its root message; KEY_VALUE a
    valid key/value encoding whose components are valid. Other types are not checked.
    """
    kind = schema.type
    if kind in ("AVRO", "PROTOBUF"):
        try:
            _avro().parse(schema.data)
        except _avro().AvroSchemaError as exc:
            raise InvalidSchemaError(f"Invalid schema definition data for {kind} schema: {exc}") from None
    elif kind == "JSON":
        try:
            _avro().parse(schema.data)
        except _avro().AvroSchemaError as exc:
            if not isinstance(_json_or_none(schema.data), dict):
                raise InvalidSchemaError(f"Invalid schema definition data for JSON schema: {exc}") from None
    elif kind == "PROTOBUF_NATIVE":
        _root_message(schema)
    elif kind == "KEY_VALUE":
        key, value = split_key_value(schema)
        validate_schema(key)
        validate_schema(value)


# -- key/value ------------------------------------------------------------------------------
def split_key_value(schema: SchemaData) -> tuple[SchemaData, SchemaData]:
    """The key and value schemas of a KEY_VALUE schema.

    The data is ``[int32 key length][key schema][int32 value length][value schema]`` (big
    endian, -1 for an empty component); the component types, and their properties as JSON,
    are in the properties ``key.schema.type`` / ``value.schema.type`` (default BYTES) and
    ``key.schema.properties`` / ``value.schema.properties``.
    """
    data = schema.data
    parts: list[bytes] = []
    pos = 0
    for _ in range(2):
        if len(data) < pos + 4:
            raise InvalidSchemaError("Invalid KEY_VALUE schema data: truncated length")
        (length,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if length < 0:
            parts.append(b"")
            continue
        if len(data) < pos + length:
            raise InvalidSchemaError("Invalid KEY_VALUE schema data: truncated component")
        parts.append(data[pos : pos + length])
        pos += length
    props = schema.properties

    def component(prefix: str, blob: bytes) -> SchemaData:
        kind = str(props.get(f"{prefix}.schema.type", "BYTES")).upper()
        raw = props.get(f"{prefix}.schema.properties")
        sub_props: dict[str, str] = {}
        if raw:
            decoded = _json_or_none(raw.encode("utf-8"))
            if isinstance(decoded, dict):
                sub_props = {str(k): str(v) for k, v in decoded.items()}
        return SchemaData(kind, blob, sub_props)

    return component("key", parts[0]), component("value", parts[1])


def encode_key_value(key: SchemaData, value: SchemaData, encoding: str = "INLINE") -> SchemaData:
    """A KEY_VALUE schema of two components (as the clients build it)."""
    data = struct.pack(">i", len(key.data)) + key.data + struct.pack(">i", len(value.data)) + value.data
    props = {
        "key.schema.name": key.type,
        "key.schema.type": key.type,
        "key.schema.properties": json.dumps(dict(key.properties)),
        "value.schema.name": value.type,
        "value.schema.type": value.type,
        "value.schema.properties": json.dumps(dict(value.properties)),
        "kv.encoding.type": encoding,
    }
    return SchemaData("KEY_VALUE", data, props)


# -- the checks -----------------------------------------------------------------------------
def check_compatible(existing: Sequence[Labeled], new: SchemaData, strategy: Strategy) -> None:
    """IncompatibleSchemaError unless ``new`` may follow ``existing`` (oldest first, not empty)
    under ``strategy``.

    Non-transitive strategies look at the latest schema only (and accept a schema identical to
    it); transitive ones at every schema given.
    """
    if strategy == Strategy.ALWAYS_COMPATIBLE or not existing:
        return
    against = list(existing) if strategy in TRANSITIVE else [existing[-1]]
    for label, old in against:
        if old.type != new.type:
            raise IncompatibleSchemaError(
                f"Incompatible schema: exists schema type {old.type} ({label}), new schema type {new.type}"
            )
    if strategy not in TRANSITIVE and same_schema(against[-1][1], new):
        return
    CHECKERS.get(new.type, _default_check)(against, new, strategy)


def check_consumer_compatible(existing: Sequence[Labeled], new: SchemaData, strategy: Strategy) -> None:
    """IncompatibleSchemaError unless a consumer with schema ``new`` may read the topic.

    As Pulsar does: under BACKWARD, FORWARD, FORWARD_TRANSITIVE and FULL the consumer's schema
    must be able to read data of the latest schema; under the other strategies it is checked
    against every schema with the strategy itself. A schema identical to the latest one is
    always accepted.
    """
    if strategy == Strategy.ALWAYS_COMPATIBLE or not existing:
        return
    if same_schema(existing[-1][1], new):
        return
    if strategy in (Strategy.BACKWARD, Strategy.FORWARD, Strategy.FORWARD_TRANSITIVE, Strategy.FULL):
        check_compatible(existing[-1:], new, Strategy.BACKWARD)
    else:
        for label, old in existing:
            if old.type != new.type:
                raise IncompatibleSchemaError(
                    f"Incompatible schema: exists schema type {old.type} ({label}), new schema type {new.type}"
                )
        CHECKERS.get(new.type, _default_check)(list(existing), new, strategy)


def _refuse_always_incompatible(strategy: Strategy) -> None:
    if strategy in (Strategy.ALWAYS_INCOMPATIBLE, Strategy.UNDEFINED):
        raise IncompatibleSchemaError("Schema compatibility strategy is ALWAYS_INCOMPATIBLE")


def _default_check(existing: Sequence[Labeled], new: SchemaData, strategy: Strategy) -> None:
    """Types without a structural check: compatible unless the strategy refuses every change."""
    if strategy != Strategy.ALWAYS_COMPATIBLE:
        _refuse_always_incompatible(strategy)


def _parse_avro(schema: SchemaData, label: str) -> AvroType:
    try:
        return _avro().parse(schema.data)
    except _avro().AvroSchemaError as exc:
        raise IncompatibleSchemaError(f"Invalid {schema.type} schema definition ({label}): {exc}") from None


def _avro_check(existing: Sequence[Labeled], new: SchemaData, strategy: Strategy) -> None:
    if strategy == Strategy.ALWAYS_COMPATIBLE:
        return
    _refuse_always_incompatible(strategy)
    new_type = _parse_avro(new, "new schema")
    for label, old in reversed(existing):
        old_type = _parse_avro(old, label)
        if strategy in _NEW_READS_OLD:
            errors = _avro().resolution_errors(new_type, old_type)
            if errors:
                raise IncompatibleSchemaError(
                    f"Incompatible schema with strategy {strategy}: the new schema cannot read data "
                    f"written with {label}: {'; '.join(errors)}"
                )
        if strategy in _OLD_READS_NEW:
            errors = _avro().resolution_errors(old_type, new_type)
            if errors:
                raise IncompatibleSchemaError(
                    f"Incompatible schema with strategy {strategy}: {label} cannot read data "
                    f"written with the new schema: {'; '.join(errors)}"
                )


def _json_format(schema: SchemaData) -> str:
    try:
        _avro().parse(schema.data)
        return "avro"
    except _avro().AvroSchemaError:
        return "json-schema" if isinstance(_json_or_none(schema.data), dict) else "unknown"


def _json_check(existing: Sequence[Labeled], new: SchemaData, strategy: Strategy) -> None:
    """JSON schemas carry an Avro definition; the legacy JSON-schema format is tolerated."""
    if strategy == Strategy.ALWAYS_COMPATIBLE:
        return
    new_format = _json_format(new)
    avro_pairs: list[Labeled] = []
    for label, old in existing:
        old_format = _json_format(old)
        if old_format == "unknown":
            continue  # a broken stored schema may be replaced
        if new_format == "unknown":
            raise IncompatibleSchemaError("Unknown JSON schema format")
        if old_format == "avro" and new_format == "avro":
            avro_pairs.append((label, old))
        elif old_format == new_format == "json-schema":
            old_id = (_json_or_none(old.data) or {}).get("id")
            new_id = (_json_or_none(new.data) or {}).get("id")
            if old_id != new_id:
                raise IncompatibleSchemaError(f"Incompatible JSON schema: id {new_id!r} differs from {old_id!r} ({label})")
        # avro <-> legacy json-schema: accepted, as Pulsar does when clients change format
    if avro_pairs:
        _avro_check(avro_pairs, new, strategy)


def _root_message(schema: SchemaData) -> str:
    decoded = _json_or_none(schema.data)
    root = decoded.get("rootMessageTypeName") if isinstance(decoded, dict) else None
    if not isinstance(root, str) or not root:
        raise InvalidSchemaError("Invalid schema definition data for PROTOBUF_NATIVE schema: no rootMessageTypeName")
    return root


def _protobuf_native_check(existing: Sequence[Labeled], new: SchemaData, strategy: Strategy) -> None:
    if strategy == Strategy.ALWAYS_COMPATIBLE:
        return
    _refuse_always_incompatible(strategy)
    new_root = _root_message(new)
    for label, old in existing:
        if _root_message(old) != new_root:
            raise IncompatibleSchemaError(
                f"Protobuf root message isn't allowed to change: {label} has {_root_message(old)}, new schema {new_root}"
            )


def _key_value_check(existing: Sequence[Labeled], new: SchemaData, strategy: Strategy) -> None:
    if strategy == Strategy.ALWAYS_COMPATIBLE:
        return
    new_key, new_value = split_key_value(new)
    keys: list[Labeled] = []
    values: list[Labeled] = []
    for label, old in existing:
        old_key, old_value = split_key_value(old)
        if old_key.type != new_key.type or old_value.type != new_value.type:
            raise IncompatibleSchemaError(
                "Key schemas or Value schemas are different schema type, "
                f"from key schema type is {old_key.type} and to key schema is {new_key.type}, "
                f"from value schema is {old_value.type} and to value schema is {new_value.type} ({label})"
            )
        keys.append((f"{label} key", old_key))
        values.append((f"{label} value", old_value))
    CHECKERS.get(new_key.type, _default_check)(keys, new_key, strategy)
    CHECKERS.get(new_value.type, _default_check)(values, new_value, strategy)


CHECKERS: dict[str, Checker] = {
    "AVRO": _avro_check,
    "JSON": _json_check,
    "PROTOBUF_NATIVE": _protobuf_native_check,
    "KEY_VALUE": _key_value_check,
}
