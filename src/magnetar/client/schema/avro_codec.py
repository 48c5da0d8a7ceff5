"""The Avro binary encoding of values: fastavro's, over a schema checked by :mod:`magnetar.protocol.avro`.

Records are dicts, enums their symbol strings, fixed and bytes ``bytes``, unions the value of
whichever branch fits it first. Logical types are read and written as their underlying type.
"""

# fastavro rather than the hand-written codec this module was (issue 22; benchmarks/avro_codec.py,
# results/avro_codec.json, us per record, thread CPU time, median of 5 alternated rounds): a flat
# 8-field record encoded in 9.4 against 14.1 and decoded in 7.2 against 16.1; a nested record with
# an array and a map 21.5 / 18.6 against 29.2 / 53.4; a resolving decode 17.0 against 27.5 (1.1-1.5x
# on encode, 1.6-2.9x on decode). Command: python benchmarks/avro_codec.py.

from __future__ import annotations

import io
import json
from types import ModuleType
from typing import Any

from magnetar.client.exceptions import InvalidConfiguration, SchemaSerializationError
from magnetar.protocol.avro import AvroSchemaError, AvroType, parse, resolution_errors

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
        self._definition = _plain(schema)
        self._parsed = _fastavro_schema(self._definition)
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
        return AvroResolvingDecoder((self.schema, self._definition), (writer, _plain(writer_schema)))


class AvroResolvingDecoder:
    """Reads payloads written with one Avro schema as values of another that can read it:
    writer fields the reader lacks are skipped, reader fields the writer lacks take their
    default, fields are matched by name whatever their order, and numbers are promoted.
    The reader may rename its top-level record, as Pulsar's compatibility check allows."""

    def __init__(self, reader: tuple[AvroType, Any], writer: tuple[AvroType, Any]) -> None:
        """``reader`` and ``writer``: each schema as parsed by magnetar and as its decoded JSON."""
        (self.reader, reader_json), (self.writer, writer_json) = reader, writer
        if isinstance(reader_json, dict) and isinstance(writer_json, dict) and reader_json.get("type") == "record" == writer_json.get("type"):
            # fastavro resolves records by name; the official client renames the writer's the same way
            writer_json = {**writer_json, "name": reader_json.get("name"), "namespace": reader_json.get("namespace", "")}
        self._reader = _fastavro_schema(reader_json)
        self._writer = _fastavro_schema(writer_json)
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


def _plain(schema: Any) -> Any:
    """The decoded JSON of a schema (text or decoded, already parsed by magnetar) without its
    logical types: their values keep their underlying type, as magnetar's codec always gave them."""
    if isinstance(schema, (bytes, bytearray, memoryview)):
        schema = bytes(schema).decode("utf-8")
    return _without_logical_types(json.loads(schema) if isinstance(schema, str) else schema)


def _without_logical_types(definition: Any) -> Any:
    if isinstance(definition, dict):
        return {k: _without_logical_types(v) for k, v in definition.items() if k != "logicalType"}
    if isinstance(definition, list):
        return [_without_logical_types(v) for v in definition]
    return definition
