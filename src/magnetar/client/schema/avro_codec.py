"""The Avro binary encoding of values, over a schema parsed by :mod:`magnetar.protocol.avro`.

Records are dicts, enums their symbol strings, fixed and bytes ``bytes``, unions the value of
whichever branch fits it first. Written here without third-party libraries.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from magnetar.client.exceptions import InvalidConfiguration, SchemaSerializationError
from magnetar.protocol.avro import (
    PROMOTIONS,
    AvroArray,
    AvroEnum,
    AvroField,
    AvroFixed,
    AvroMap,
    AvroPrimitive,
    AvroRecord,
    AvroSchemaError,
    AvroType,
    AvroUnion,
    can_read,
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

    def resolving(self, writer_schema: Any) -> AvroResolvingDecoder:
        """A decoder of payloads written with ``writer_schema`` (another version of this schema)
        that gives values shaped by this one, by the Avro specification's resolution rules.
        As fastavro (the official client's decoder) does, a writer's union is resolved value by
        value: a payload decodes when the branch it was written with can be read.
        InvalidConfiguration when the writer's schema does not parse."""
        try:
            writer = parse(writer_schema)
        except AvroSchemaError as exc:
            raise InvalidConfiguration(f"writer's Avro schema: {exc}") from None
        return AvroResolvingDecoder(self.schema, writer)


class AvroResolvingDecoder:
    """Reads payloads written with one Avro schema as values of another that can read it:
    writer fields the reader lacks are skipped, reader fields the writer lacks take their
    default, fields are matched by name whatever their order, and numbers are promoted."""

    def __init__(self, reader: AvroType, writer: AvroType) -> None:
        self.reader = reader
        self.writer = writer
        #: (id(reader record), id(writer record)) -> each writer field's reader field (None: skipped)
        self._field_plans: dict[tuple[int, int], list[AvroField | None]] = {}
        #: (id(reader union), id(writer type)) -> the reader branch the writer type is read as
        self._branches: dict[tuple[int, int], AvroType] = {}
        #: (id(reader type), id(writer type)) of the pairs of the same kind seen so far
        self._same_kind: set[tuple[int, int]] = set()

    def decode(self, data: bytes) -> Any:
        """The value written as ``data`` (all of it), in the reader's shape."""
        try:
            value, pos = self._read(self.reader, self.writer, memoryview(data), 0)
        except (IndexError, ValueError, KeyError, UnicodeDecodeError, struct.error) as exc:
            raise SchemaSerializationError(f"payload does not decode with the writer's Avro schema: {exc}") from None
        if pos != len(data):
            raise SchemaSerializationError(f"{len(data) - pos} bytes left after the Avro value")
        return value

    def _read(self, r: AvroType, w: AvroType, buf: memoryview, pos: int) -> tuple[Any, int]:
        if isinstance(w, AvroUnion):
            index, pos = _read_long(buf, pos)
            return self._read(r, w.branches[index], buf, pos)
        if isinstance(r, AvroUnion):
            return self._read(self._branch(r, w), w, buf, pos)
        if (id(r), id(w)) not in self._same_kind:
            if not _same_kind(r, w):
                raise ValueError(f"writer type {w.describe()} cannot be read as {r.describe()}")
            self._same_kind.add((id(r), id(w)))
        if isinstance(w, AvroPrimitive):
            value, pos = _read_primitive(w.name, buf, pos)
            return _promoted(r.name, value), pos  # type: ignore[union-attr]
        if isinstance(w, AvroRecord):
            return self._read_record(r, w, buf, pos)  # type: ignore[arg-type]
        if isinstance(w, AvroEnum):
            index, pos = _read_long(buf, pos)
            symbol = w.symbols[index]
            if symbol not in r.index and r.default is None:  # type: ignore[union-attr]
                raise ValueError(f"reader enum {r.describe()} lacks the symbol {symbol} and has no default")
            return (symbol if symbol in r.index else r.default), pos  # type: ignore[union-attr]
        if isinstance(w, (AvroArray, AvroMap)):
            return self._read_blocks(r, w, buf, pos)  # type: ignore[arg-type]
        return _read(w, buf, pos)  # fixed

    def _branch(self, r: AvroUnion, w: AvroType) -> AvroType:
        key = (id(r), id(w))
        branch = self._branches.get(key)
        if branch is None:
            branch = next((b for b in r.branches if can_read(b, w)), None)
            if branch is None:
                branch = next((b for b in r.branches if _same_kind(b, w)), None)
            if branch is None:
                raise ValueError(f"reader {r.describe()} has no branch for writer type {w.describe()}")
            self._branches[key] = branch
        return branch

    def _read_record(self, r: AvroRecord, w: AvroRecord, buf: memoryview, pos: int) -> tuple[dict, int]:
        key = (id(r), id(w))
        plan = self._field_plans.get(key)
        if plan is None:
            by_writer_name = {}
            for rf in r.fields:
                wf = w.field_named(rf.name, rf.aliases)
                if wf is not None:
                    by_writer_name[wf.name] = rf
            plan = self._field_plans[key] = [by_writer_name.get(wf.name) for wf in w.fields]
        record: dict[str, Any] = {}
        for wf, rf in zip(w.fields, plan, strict=True):
            if rf is None:
                _, pos = _read(wf.type, buf, pos)
            else:
                record[rf.name], pos = self._read(rf.type, wf.type, buf, pos)
        for rf in r.fields:
            if rf.name not in record:
                if not rf.has_default:
                    raise ValueError(f"field {rf.name} of {r.describe()} is not written and has no default")
                record[rf.name] = rf.default
        return record, pos

    def _read_blocks(self, r: AvroArray | AvroMap, w: AvroArray | AvroMap, buf: memoryview, pos: int) -> tuple[Any, int]:
        is_array = isinstance(w, AvroArray)
        reader_item = r.items if is_array else r.values  # type: ignore[union-attr]
        writer_item = w.items if is_array else w.values  # type: ignore[union-attr]
        return _read_blocks(is_array, lambda buf, pos: self._read(reader_item, writer_item, buf, pos), buf, pos)


def _same_kind(r: AvroType, w: AvroType) -> bool:
    """Whether values of writer type ``w`` can be read as reader type ``r``, their parts aside."""
    if isinstance(w, AvroPrimitive):
        return isinstance(r, AvroPrimitive) and (r.name == w.name or r.name in PROMOTIONS.get(w.name, ()))
    if isinstance(w, AvroFixed):
        return isinstance(r, AvroFixed) and r.size == w.size
    return r.__class__ is w.__class__


def _promoted(reader_type: str, value: Any) -> Any:
    """A writer's primitive value as the reader's type (int -> float, string <-> bytes)."""
    if reader_type in ("float", "double") and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if reader_type == "bytes" and isinstance(value, str):
        return value.encode("utf-8")
    if reader_type == "string" and isinstance(value, bytes):
        return value.decode("utf-8")
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
        item = s.items if s.__class__ is AvroArray else s.values  # type: ignore[union-attr]
        return _read_blocks(s.__class__ is AvroArray, lambda buf, pos: _read(item, buf, pos), buf, pos)
    if cls is AvroEnum:
        index, pos = _read_long(buf, pos)
        return s.symbols[index], pos  # type: ignore[union-attr]
    size = s.size  # type: ignore[union-attr]  # fixed
    return bytes(buf[pos : pos + size]), pos + size


def _read_blocks(
    is_array: bool, read_item: Callable[[memoryview, int], tuple[Any, int]], buf: memoryview, pos: int
) -> tuple[Any, int]:
    """An array's or a map's blocks, up to the empty one that ends them; ``read_item(buf, pos)``
    reads one item (a map's value, after its key)."""
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
                item, pos = read_item(buf, pos)
                items.append(item)
            else:
                key, pos = _read_primitive("string", buf, pos)
                items[key], pos = read_item(buf, pos)
