"""The Avro binary encoding of values, over a schema parsed by :mod:`magnetar.protocol.avro`.

Records are dicts, enums their symbol strings, fixed and bytes ``bytes``, unions the value of
whichever branch fits it first. Written here without third-party libraries.
"""

from __future__ import annotations

import struct
from typing import Any

from magnetar.client.errors import InvalidConfiguration, SchemaSerializationError
from magnetar.protocol.avro import (
    AvroArray,
    AvroEnum,
    AvroFixed,
    AvroMap,
    AvroPrimitive,
    AvroRecord,
    AvroSchemaError,
    AvroType,
    AvroUnion,
    parse,
)
from magnetar.protocol.varint import read_varint, unzigzag, write_varint, zigzag

_FLOAT = struct.Struct("<f")
_DOUBLE = struct.Struct("<d")


class AvroCodec:
    """Encoder and decoder of the Avro binary encoding for one schema (JSON text or decoded JSON)."""

    def __init__(self, schema: Any) -> None:
        try:
            self.schema: AvroType = parse(schema)
        except AvroSchemaError as exc:
            raise InvalidConfiguration(f"Avro schema: {exc}") from None

    # -- encoding ------------------------------------------------------------------------------
    def encode(self, value: Any) -> bytes:
        """The Avro binary encoding of ``value``."""
        out = bytearray()
        try:
            _write(self.schema, value, out)
        except (TypeError, ValueError, KeyError, struct.error) as exc:
            raise SchemaSerializationError(f"value does not fit the Avro schema: {exc}") from None
        return bytes(out)

    # -- decoding ------------------------------------------------------------------------------
    def decode(self, data: bytes) -> Any:
        """The value whose Avro binary encoding is ``data`` (all of it)."""
        try:
            value, pos = _read(self.schema, memoryview(data), 0)
        except (IndexError, ValueError, UnicodeDecodeError, struct.error) as exc:
            raise SchemaSerializationError(f"payload does not decode with the Avro schema: {exc}") from None
        if pos != len(data):
            raise SchemaSerializationError(f"{len(data) - pos} bytes left after the Avro value")
        return value


def _write_long(n: int, out: bytearray) -> None:
    write_varint(zigzag(n), out)


def _read_long(buf: memoryview, pos: int) -> tuple[int, int]:
    z, pos = read_varint(buf, pos)
    return unzigzag(z), pos


def _write_primitive(name: str, v: Any, out: bytearray) -> None:
    if name == "null":
        if v is not None:
            raise TypeError(f"null expected, got {type(v).__name__}")
    elif name == "boolean":
        out.append(1 if v else 0)
    elif name in ("int", "long"):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{name} expected, got {type(v).__name__}")
        _write_long(v, out)
    elif name == "float":
        out += _FLOAT.pack(v)
    elif name == "double":
        out += _DOUBLE.pack(v)
    elif name == "bytes":
        _write_long(len(v), out)
        out += v
    else:  # string
        data = v.encode("utf-8")
        _write_long(len(data), out)
        out += data


def _write(s: AvroType, v: Any, out: bytearray) -> None:
    cls = s.__class__
    if cls is AvroPrimitive:
        _write_primitive(s.name, v, out)  # type: ignore[union-attr]
    elif cls is AvroRecord:
        if not isinstance(v, dict):
            raise TypeError(f"record {s.fullname} expected, got {type(v).__name__}")  # type: ignore[union-attr]
        for f in s.fields:  # type: ignore[union-attr]
            if f.name in v:
                _write(f.type, v[f.name], out)
            elif f.has_default:
                _write(f.type, f.default, out)
            else:
                raise KeyError(f"field {f.name!r} of {s.fullname} is missing")  # type: ignore[union-attr]
    elif cls is AvroUnion:
        index = _branch(s.branches, v)  # type: ignore[union-attr]
        _write_long(index, out)
        _write(s.branches[index], v, out)  # type: ignore[union-attr]
    elif cls is AvroArray:
        if v:
            _write_long(len(v), out)
            for item in v:
                _write(s.items, item, out)  # type: ignore[union-attr]
        out.append(0)
    elif cls is AvroMap:
        if v:
            _write_long(len(v), out)
            for key, item in v.items():
                _write_primitive("string", key, out)
                _write(s.values, item, out)  # type: ignore[union-attr]
        out.append(0)
    elif cls is AvroEnum:
        _write_long(s.index[v], out)  # type: ignore[union-attr]
    elif cls is AvroFixed:
        if len(v) != s.size:  # type: ignore[union-attr]
            raise ValueError(f"fixed {s.fullname} needs {s.size} bytes, got {len(v)}")  # type: ignore[union-attr]
        out += v


def _branch(branches: list[AvroType], v: Any) -> int:
    for i, b in enumerate(branches):
        if _matches(b, v):
            return i
    raise TypeError(f"no branch of the union fits a {type(v).__name__}")


_PRIMITIVE_MATCHES = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool) and -(2**31) <= v < 2**31,
    "long": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (float, int)) and not isinstance(v, bool),
    "double": lambda v: isinstance(v, (float, int)) and not isinstance(v, bool),
    "bytes": lambda v: isinstance(v, (bytes, bytearray)),
    "string": lambda v: isinstance(v, str),
}


def _matches(s: AvroType, v: Any) -> bool:
    if isinstance(s, AvroPrimitive):
        return _PRIMITIVE_MATCHES[s.name](v)
    if isinstance(s, AvroRecord):
        return isinstance(v, dict) and all(f.name in v or f.has_default for f in s.fields)
    if isinstance(s, AvroEnum):
        return isinstance(v, str) and v in s.index
    if isinstance(s, AvroArray):
        return isinstance(v, (list, tuple))
    if isinstance(s, AvroMap):
        return isinstance(v, dict)
    if isinstance(s, AvroFixed):
        return isinstance(v, (bytes, bytearray)) and len(v) == s.size
    return False


def _read_primitive(name: str, buf: memoryview, pos: int) -> tuple[Any, int]:
    if name == "null":
        return None, pos
    if name == "boolean":
        return buf[pos] != 0, pos + 1
    if name in ("int", "long"):
        return _read_long(buf, pos)
    if name == "float":
        return _FLOAT.unpack_from(buf, pos)[0], pos + 4
    if name == "double":
        return _DOUBLE.unpack_from(buf, pos)[0], pos + 8
    size, pos = _read_long(buf, pos)
    if size < 0 or pos + size > len(buf):
        raise ValueError("length overruns the payload")
    raw = bytes(buf[pos : pos + size])
    return (raw if name == "bytes" else raw.decode("utf-8")), pos + size


def _read(s: AvroType, buf: memoryview, pos: int) -> tuple[Any, int]:
    cls = s.__class__
    if cls is AvroPrimitive:
        return _read_primitive(s.name, buf, pos)  # type: ignore[union-attr]
    if cls is AvroRecord:
        rec = {}
        for f in s.fields:  # type: ignore[union-attr]
            rec[f.name], pos = _read(f.type, buf, pos)
        return rec, pos
    if cls is AvroUnion:
        index, pos = _read_long(buf, pos)
        return _read(s.branches[index], buf, pos)  # type: ignore[union-attr]
    if cls is AvroArray or cls is AvroMap:
        return _read_blocks(s, buf, pos)  # type: ignore[arg-type]
    if cls is AvroEnum:
        index, pos = _read_long(buf, pos)
        return s.symbols[index], pos  # type: ignore[union-attr]
    size = s.size  # type: ignore[union-attr]  # fixed
    return bytes(buf[pos : pos + size]), pos + size


def _read_blocks(s: AvroArray | AvroMap, buf: memoryview, pos: int) -> tuple[Any, int]:
    """An array's or a map's blocks, up to the empty one that ends them."""
    is_array = s.__class__ is AvroArray
    items: Any = [] if is_array else {}
    while True:
        count, pos = _read_long(buf, pos)
        if count == 0:
            return items, pos
        if count < 0:
            count = -count
            _, pos = _read_long(buf, pos)  # block size in bytes
        for _ in range(count):
            if is_array:
                item, pos = _read(s.items, buf, pos)  # type: ignore[union-attr]
                items.append(item)
            else:
                key, pos = _read_primitive("string", buf, pos)
                items[key], pos = _read(s.values, buf, pos)  # type: ignore[union-attr]
