"""The Avro binary encoding of values: fastavro's, over a schema checked by :mod:`magnetar.protocol.avro`.

Records are dicts, enums their symbol strings, fixed and bytes ``bytes``, unions the value of
whichever branch fits it first. Logical types are read and written as their underlying type.
"""

# fastavro rather than the hand-written codec this module was (issue 22; benchmarks/avro_codec.py,
# results/avro_codec.json, us per record, thread CPU time, median of 5 alternated rounds): a flat
# 8-field record encoded in 9.4 against 14.1 and decoded in 7.2 against 16.1; a nested record with
# an array and a map 21.5 / 18.6 against 29.2 / 53.4; a resolving decode 17.0 against 27.5 (1.1-1.5x
# on encode, 1.6-2.9x on decode); through this module within the noise of bare fastavro (0.78-1.06)
# (results/avro_codec_adopted.json). Command: python benchmarks/avro_codec.py.

from __future__ import annotations

import io
from types import ModuleType
from typing import Any

from magnetar.client.exceptions import InvalidConfiguration, SchemaSerializationError
from magnetar.protocol.avro import (
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
    resolution_errors,
)

#: what fastavro raises for a value that does not fit its schema or bytes that do not decode
_FASTAVRO_ERRORS = (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError, EOFError)


def _fastavro() -> ModuleType:
    """fastavro, imported with the first Avro schema: 50-70 ms of ``python -X importtime`` that a
    client sending no Avro does not pay at ``import magnetar.client``."""
    import fastavro

    return fastavro


class AvroCodec:
    """Encoder and decoder of the Avro binary encoding for one schema (JSON text or decoded JSON)."""

    def __init__(self, schema: Any) -> None:
        try:
            self.schema: AvroType = parse(schema)
        except AvroSchemaError as exc:
            raise InvalidConfiguration(f"Avro schema: {exc}") from None
        self._parsed = _fastavro_schema(_as_json(self.schema, {}))
        fastavro = _fastavro()
        self._write = fastavro.schemaless_writer
        self._read = fastavro.schemaless_reader

    # -- encoding ------------------------------------------------------------------------------
    def encode(self, value: Any) -> bytes:
        """The Avro binary encoding of ``value``."""
        out = io.BytesIO()
        try:
            self._write(out, self._parsed, value)
        except _FASTAVRO_ERRORS as exc:
            raise SchemaSerializationError(f"value does not fit the Avro schema: {exc}") from None
        return out.getvalue()

    # -- decoding ------------------------------------------------------------------------------
    def decode(self, data: bytes) -> Any:
        """The value whose Avro binary encoding is ``data`` (all of it)."""
        buf = io.BytesIO(data)
        try:
            value = self._read(buf, self._parsed)
        except _FASTAVRO_ERRORS as exc:
            raise SchemaSerializationError(f"payload does not decode with the Avro schema: {exc}") from None
        _check_all_read(buf, data)
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
    default, fields are matched by name whatever their order, and numbers are promoted.
    The reader may rename its records, as Pulsar's compatibility check allows."""

    def __init__(self, reader: AvroType, writer: AvroType) -> None:
        self.reader = reader
        self.writer = writer
        renames: dict[int, str] = {}
        _reader_names(reader, writer, renames, set())
        self._reader = _fastavro_schema(_as_json(reader, {}))
        # fastavro resolves records by name: the writer's records take the names of the reader's
        # they are read as (the official client renames the top-level one the same way)
        self._writer = _fastavro_schema(_as_json(writer, {}, renames))
        fastavro = _fastavro()
        self._read = fastavro.schemaless_reader
        self._resolution_error = fastavro.read.SchemaResolutionError

    def decode(self, data: bytes) -> Any:
        """The value written as ``data`` (all of it), in the reader's shape."""
        buf = io.BytesIO(data)
        try:
            value = self._read(buf, self._writer, self._reader)
        except self._resolution_error as exc:
            why = "; ".join(resolution_errors(self.reader, self.writer)) or str(exc)
            raise SchemaSerializationError(f"payload does not decode with the writer's Avro schema: {why}") from None
        except _FASTAVRO_ERRORS as exc:
            raise SchemaSerializationError(f"payload does not decode with the writer's Avro schema: {exc}") from None
        _check_all_read(buf, data)
        return value


def _check_all_read(buf: io.BytesIO, data: bytes) -> None:
    left = len(data) - buf.tell()
    if left:
        raise SchemaSerializationError(f"{left} bytes left after the Avro value")


def _fastavro_schema(definition: Any) -> Any:
    """fastavro's parsed form of a schema definition magnetar's parser accepted (defaults are not
    checked against their field's type: Pulsar does not check them either)."""
    try:
        return _fastavro().parse_schema(definition, _ignore_default_error=True)
    except (ValueError, TypeError, KeyError) as exc:  # fastavro's SchemaParseException is a ValueError
        raise InvalidConfiguration(f"Avro schema: {exc}") from None


def _reader_names(r: AvroType, w: AvroType, out: dict[int, str], seen: set[tuple[int, int]]) -> None:
    """Into ``out``: id of each writer record -> the full name of the reader record it is read as."""
    if isinstance(w, AvroUnion):
        for branch in w.branches:
            _reader_names(r, branch, out, seen)
        return
    if isinstance(r, AvroUnion):
        branch = next((b for b in r.branches if can_read(b, w)), None)
        if branch is not None:
            _reader_names(branch, w, out, seen)
        return
    if (id(r), id(w)) in seen:
        return
    seen.add((id(r), id(w)))
    if isinstance(r, AvroRecord) and isinstance(w, AvroRecord):
        out.setdefault(id(w), r.fullname)
        for rf in r.fields:
            wf = w.field_named(rf.name, rf.aliases)
            if wf is not None:
                _reader_names(rf.type, wf.type, out, seen)
    elif isinstance(r, AvroArray) and isinstance(w, AvroArray):
        _reader_names(r.items, w.items, out, seen)
    elif isinstance(r, AvroMap) and isinstance(w, AvroMap):
        _reader_names(r.values, w.values, out, seen)


def _as_json(t: AvroType, named: dict[int, str], renames: dict[int, str] | None = None) -> Any:
    """``t`` as the JSON fastavro parses: named types by full name, defined where first met
    (``named``: id -> the name given), records renamed by ``renames`` (id -> full name) unless
    that name is taken, logical types left out (values keep their underlying type, as before)."""
    if isinstance(t, AvroPrimitive):
        return t.name
    if isinstance(t, AvroArray):
        return {"type": "array", "items": _as_json(t.items, named, renames)}
    if isinstance(t, AvroMap):
        return {"type": "map", "values": _as_json(t.values, named, renames)}
    if isinstance(t, AvroUnion):
        return [_as_json(b, named, renames) for b in t.branches]
    if id(t) in named:
        return named[id(t)]
    name = (renames or {}).get(id(t), t.fullname)
    named[id(t)] = name if name not in named.values() else t.fullname
    out: dict[str, Any] = {"name": named[id(t)], "aliases": list(t.aliases)}
    if isinstance(t, AvroEnum):
        out.update(type="enum", symbols=list(t.symbols))
        if t.default is not None:
            out["default"] = t.default
    elif isinstance(t, AvroFixed):
        out.update(type="fixed", size=t.size)
    else:
        out.update(type="record", fields=[_field_json(f, named, renames) for f in t.fields])
    return out


def _field_json(f: AvroField, named: dict[int, str], renames: dict[int, str] | None) -> dict[str, Any]:
    out = {"name": f.name, "type": _as_json(f.type, named, renames), "aliases": list(f.aliases)}
    if f.has_default:
        out["default"] = f.default
    return out
