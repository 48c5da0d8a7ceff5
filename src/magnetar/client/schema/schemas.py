"""Schemas: how typed values become message payloads and what the broker is told about them.

``BytesSchema`` (the default: payloads as they are, no schema sent), ``StringSchema`` (UTF-8),
``JsonSchema`` and ``AvroSchema`` over records, ``ProtobufNativeSchema`` over generated protobuf
message classes, and ``KeyValueSchema`` (a key and a value in one payload, INLINE encoding, or
the key in the message key, SEPARATED). A record is a dataclass (its Avro definition is derived from the
type hints: str, int -> long, float -> double, bool, bytes, Optional[...], list[...],
dict[str, ...], Enum subclasses and nested dataclasses; ``field(metadata={"avro": "int"})``
overrides a field's type), a :class:`~magnetar.client.schema.records.Record` class declared as for the
official client (``pulsar.schema.Record``; its definition is the official client's), or None
with an explicit Avro definition, values then being dicts. JSON and Avro schemas carry the Avro definition in the
wire Schema's ``schema_data``, as every Pulsar client does; the Avro binary encoding is done
here, without third-party libraries.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import struct
import types
import typing
from typing import Any

from google.protobuf.message import DecodeError
from google.protobuf.message import Message as ProtobufMessage

from magnetar.client.exceptions import InvalidConfiguration, PulsarError, SchemaSerializationError
from magnetar.client.schema.avro_codec import AvroCodec, AvroResolvingDecoder
from magnetar.client.schema.records import Record
from magnetar.client.schema.versions import WriterSchemaUnavailable, wait_on_client_loop
from magnetar.protocol.enums import SchemaType
from magnetar.protocol.schema import KeyValue
from magnetar.protocol.schema import Schema as WireSchema


class SchemaTypeError(SchemaSerializationError, TypeError):
    """A value of a type the schema does not encode (a TypeError, as the official client raises)."""


class SchemaInfo:
    """The official client's ``SchemaInfo``: a schema's type, name, definition and properties."""

    def __init__(self, schema: Schema) -> None:
        self._schema = schema

    def schema_type(self) -> SchemaType:
        """The wire type (NONE for bytes: no schema is sent)."""
        return self._schema.schema_type

    def name(self) -> str:
        """The schema's name."""
        return self._schema.name

    def schema(self) -> str:
        """The definition (``schema_data``) as text."""
        return self._schema.definition().decode("utf-8")

    def properties(self) -> dict[str, str]:
        """The schema's properties."""
        return self._schema.properties()

    def __repr__(self) -> str:
        return f"SchemaInfo({self.schema_type().name}, {self.name()!r})"


class Schema:
    """Base of schemas: ``encode`` a value to bytes, ``decode`` bytes to a value."""

    schema_type: SchemaType = SchemaType.NONE
    name = "BYTES"

    def encode(self, value: Any) -> bytes:  # pragma: no cover - abstract
        raise NotImplementedError

    def decode(self, data: bytes) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def definition(self) -> bytes:
        """The ``schema_data`` sent to the broker."""
        return b""

    def properties(self) -> dict[str, str]:
        """The schema's properties sent to the broker."""
        return {}

    def wire_schema(self) -> WireSchema | None:
        """The wire Schema for PRODUCER / SUBSCRIBE, or None (bytes: no schema is sent)."""
        if self.schema_type == SchemaType.NONE:
            return None
        info = WireSchema(name=self.name, schema_data=self.definition(), type=int(self.schema_type))
        for k, v in sorted(self.properties().items()):
            info.properties.append(KeyValue(key=k, value=v))
        return info

    def schema_info(self) -> SchemaInfo:
        """What the broker is told about this schema, read as the official client's SchemaInfo."""
        return SchemaInfo(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class BytesSchema(Schema):
    """Payloads as they are (the default)."""

    def encode(self, value: Any) -> bytes:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise SchemaTypeError(f"BytesSchema needs bytes, not {type(value).__name__}")
        return bytes(value)

    def decode(self, data: bytes) -> bytes:
        return data


class StringSchema(Schema):
    """str values as UTF-8."""

    schema_type = SchemaType.STRING
    name = "STRING"

    def encode(self, value: Any) -> bytes:
        if not isinstance(value, str):
            raise SchemaTypeError(f"StringSchema needs str, not {type(value).__name__}")
        return value.encode("utf-8")

    def decode(self, data: bytes) -> str:
        return data.decode("utf-8")


class ProtobufNativeSchema(Schema):
    """Protobuf messages in their own binary encoding (PROTOBUF_NATIVE), for a generated message class.

    The definition the broker is told is the Java client's: JSON naming the root message type and
    its file, with the FileDescriptorSet of that file and every file it imports (base64).
    """

    schema_type = SchemaType.PROTOBUF_NATIVE
    name = "PROTOBUF_NATIVE"

    def __init__(self, record_cls: type) -> None:
        if not (isinstance(record_cls, type) and issubclass(record_cls, ProtobufMessage)):
            raise SchemaTypeError(f"ProtobufNativeSchema needs a protobuf message class, not {record_cls!r}")
        self.record_cls = record_cls
        descriptor = record_cls.DESCRIPTOR
        # with the first protobuf schema, not in every import of the client (beside the test kit's broker start):
        # descriptor.proto's 30 message classes, 3-12 ms (python -X importtime, load 1-10)
        from google.protobuf import descriptor_pb2

        files = descriptor_pb2.FileDescriptorSet()
        _add_file_with_imports(descriptor.file, set(), files)
        self._definition = json.dumps({
            "fileDescriptorSet": base64.b64encode(files.SerializeToString()).decode("ascii"),
            "rootMessageTypeName": descriptor.full_name,
            "rootFileDescriptorName": descriptor.file.name,
        }).encode()

    def definition(self) -> bytes:
        return self._definition

    def encode(self, value: Any) -> bytes:
        if not isinstance(value, self.record_cls):
            raise SchemaTypeError(
                f"ProtobufNativeSchema of {self.record_cls.__name__} cannot encode a {type(value).__name__}"
            )
        return value.SerializeToString()

    def decode(self, data: bytes) -> Any:
        try:
            return self.record_cls.FromString(data)
        except DecodeError as exc:
            raise SchemaSerializationError(f"payload is not a {self.record_cls.__name__}: {exc}") from None

    def __repr__(self) -> str:
        return f"ProtobufNativeSchema({self.record_cls.__name__})"


def _add_file_with_imports(file: Any, seen: set[str], files: Any) -> None:
    """Add a file descriptor to ``files`` after the files it imports, each once."""
    if file.name in seen:
        return
    seen.add(file.name)
    for imported in file.dependencies:
        _add_file_with_imports(imported, seen, files)
    file.CopyToProto(files.file.add())


# -- records and their Avro definitions ----------------------------------------------------------

_PRIMITIVE_OF = {str: "string", int: "long", float: "double", bool: "boolean", bytes: "bytes", type(None): "null"}


def avro_definition(record_cls: type) -> dict:
    """The Avro record definition of a dataclass, derived from its type hints."""
    return _avro_type(record_cls, set())  # type: ignore[return-value]


def _avro_type(tp: Any, seen: set[str]) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        branches = []
        args = typing.get_args(tp)
        if type(None) in args:  # null first, so the default can be None
            branches.append("null")
        for arg in args:
            if arg is not type(None):
                branches.append(_avro_type(arg, seen))
        return branches
    if origin in (list, tuple, typing.Sequence) or tp in (list, tuple):
        args = typing.get_args(tp)
        return {"type": "array", "items": _avro_type(args[0] if args else str, seen)}
    if origin is dict or tp is dict:
        args = typing.get_args(tp)
        if args and args[0] is not str:
            raise InvalidConfiguration(f"Avro maps need str keys, not {args[0]!r}")
        return {"type": "map", "values": _avro_type(args[1] if args else str, seen)}
    if tp in _PRIMITIVE_OF:
        return _PRIMITIVE_OF[tp]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        if tp.__name__ in seen:
            return tp.__name__
        seen.add(tp.__name__)
        return {"type": "enum", "name": tp.__name__, "symbols": [m.name for m in tp]}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if tp.__name__ in seen:
            return tp.__name__
        seen.add(tp.__name__)
        hints = typing.get_type_hints(tp)
        fields = []
        for f in dataclasses.fields(tp):
            # field(metadata={"avro": ...}) overrides the derived type (e.g. "int" for an int)
            avro = f.metadata.get("avro") if f.metadata else None
            entry: dict[str, Any] = {"name": f.name, "type": avro if avro is not None else _avro_type(hints[f.name], seen)}
            if f.default is not dataclasses.MISSING and _json_default(f.default):
                entry["default"] = f.default.name if isinstance(f.default, enum.Enum) else f.default
            fields.append(entry)
        return {"type": "record", "name": tp.__name__, "fields": fields}
    raise InvalidConfiguration(f"no Avro type for {tp!r}: use str, int, float, bool, bytes, Optional, list, dict, Enum or dataclasses")


def _json_default(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool, enum.Enum))


def _to_plain(value: Any) -> Any:
    """A record (dataclass) as dicts and lists; enums by name."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (list, tuple)):
        return [_to_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_plain(v) for k, v in value.items()}
    return value


def _from_plain(tp: Any, value: Any) -> Any:
    """Rebuild a typed value (dataclasses, enums) from dicts and lists."""
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(tp):
            if arg is type(None):
                continue
            try:
                return _from_plain(arg, value)
            except (TypeError, ValueError, KeyError):
                continue
        return value
    if origin in (list, tuple, typing.Sequence):
        (item,) = typing.get_args(tp)[:1] or (Any,)
        return [_from_plain(item, v) for v in value]
    if origin is dict:
        args = typing.get_args(tp)
        return {k: _from_plain(args[1] if args else Any, v) for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return value if isinstance(value, tp) else tp[value]
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(value, dict):
            raise TypeError(f"{tp.__name__} from {type(value).__name__}")
        hints = typing.get_type_hints(tp)
        kwargs = {f.name: _from_plain(hints[f.name], value[f.name]) for f in dataclasses.fields(tp) if f.name in value}
        return tp(**kwargs)
    if tp is bytes and isinstance(value, str):
        return base64.b64decode(value)
    return value


class _RecordSchema(Schema):
    """Common part of JSON and Avro schemas: a record class or an explicit definition."""

    #: records of a Record class are encoded by this schema as JSON (enums by value, bytes as text)
    _json = False

    def __init__(self, record_cls: type | None = None, definition: dict | str | None = None) -> None:
        if record_cls is None and definition is None:
            raise InvalidConfiguration(f"{type(self).__name__} needs a record class (a dataclass or a Record) or an Avro definition")
        self._official_record = isinstance(record_cls, type) and issubclass(record_cls, Record)
        if record_cls is not None and not self._official_record and not dataclasses.is_dataclass(record_cls):
            raise InvalidConfiguration(f"{type(self).__name__}: {record_cls!r} is not a dataclass or a Record")
        self.record_cls = record_cls
        if isinstance(definition, str):
            definition = json.loads(definition)
        if definition is None:
            definition = record_cls.schema() if self._official_record else avro_definition(record_cls)  # type: ignore[union-attr,arg-type]
        self.avro = definition
        self.name = self.avro.get("name", "record") if isinstance(self.avro, dict) else "record"
        self._definition = json.dumps(self.avro, separators=(",", ":")).encode()

    def definition(self) -> bytes:
        return self._definition

    def _check(self, value: Any) -> Any:
        if self.record_cls is not None and not isinstance(value, self.record_cls):
            raise SchemaTypeError(
                f"{type(self).__name__} of {self.record_cls.__name__} cannot encode a {type(value).__name__}"
            )
        if self._official_record:
            return value.to_plain(json=self._json)
        return _to_plain(value)

    def _typed(self, plain: Any) -> Any:
        if self.record_cls is None:
            return plain
        if self._official_record:
            return self.record_cls(**plain)
        return _from_plain(self.record_cls, plain)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.record_cls.__name__ if self.record_cls else self.name})"


class JsonSchema(_RecordSchema):
    """Records as JSON objects (bytes fields in base64, enums by name)."""

    schema_type = SchemaType.JSON
    _json = True

    def encode(self, value: Any) -> bytes:
        plain = self._check(value)
        return json.dumps(plain, separators=(",", ":"), default=_json_bytes).encode()

    def decode(self, data: bytes) -> Any:
        try:
            return self._typed(json.loads(data))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise SchemaSerializationError(f"payload does not decode as {self!r}: {exc}") from None


def _json_bytes(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


class AvroSchema(_RecordSchema):
    """Records in the Avro binary encoding."""

    schema_type = SchemaType.AVRO

    def __init__(self, record_cls: type | None = None, definition: dict | str | None = None, schema_definition: dict | str | None = None) -> None:
        super().__init__(record_cls, definition if definition is not None else schema_definition)
        self._codec = AvroCodec(self.avro)
        #: (topic, schema version) -> the decoder of payloads written with that version
        self._writer_decoders: dict[tuple[str, bytes], AvroCodec | AvroResolvingDecoder] = {}

    def encode(self, value: Any) -> bytes:
        return self._codec.encode(self._check(value))

    def decode(self, data: bytes) -> Any:
        return self._typed(self._codec.decode(data))

    def decode_message(self, message: Any) -> Any:
        """A received message's value: its payload read with the version of the topic's schema
        that wrote it (asked of the broker once per topic and version), as this schema's values.
        Read with this schema itself when that version cannot be had or read."""
        version = message.schema_version()
        data = message.data()
        if not version:
            return self.decode(data)
        key = (message.topic_name(), bytes(version))
        decoder = self._writer_decoders.get(key)
        if decoder is None:
            try:
                wait_on_client_loop(message._ctx.consumer, lambda: self.prepare_message(message))
            except WriterSchemaUnavailable:
                return self.decode(data)
            decoder = self._writer_decoders.get(key)
        if decoder is None or decoder is self._codec:
            return self.decode(data)
        try:
            return self._typed(decoder.decode(data))
        except SchemaSerializationError:
            return self.decode(data)

    async def prepare_message(self, message: Any) -> None:
        """On the client's event loop, before a message is handed out: fetch the version of the
        schema that wrote it if it is new, so that ``value()`` (which cannot wait for the broker
        there) reads it with that version. A version that cannot be had is left to ``value()``."""
        version = message._metadata().schema_version
        if not version:
            return
        key = (message.topic_name(), bytes(version))
        if key in self._writer_decoders:
            return
        try:
            wire = await message._ctx.consumer.client.lookup.get_schema(key[0], key[1])
        except PulsarError:
            return
        self._writer_decoders[key] = self._decoder_for(wire)

    def _decoder_for(self, wire: Any) -> AvroCodec | AvroResolvingDecoder:
        """The decoder of payloads written with the wire Schema ``wire`` (None: none registered)."""
        if wire is None or wire.type != int(SchemaType.AVRO):
            return self._codec
        try:
            definition = json.loads(wire.schema_data)
        except ValueError:
            return self._codec
        if definition == self.avro:
            return self._codec
        try:
            return self._codec.resolving(definition)
        except InvalidConfiguration:
            return self._codec


class KeyValueEncodingType(enum.IntEnum):
    """Where a KeyValueSchema puts the key: in the payload (INLINE) or the message key (SEPARATED)."""

    INLINE = 0
    SEPARATED = 1


class KeyValueSchema(Schema):
    """(key, value) tuples: INLINE puts both in the payload, ``[i32 key size][key][i32 value
    size][value]`` (-1 for None); SEPARATED, as the Java client, puts the encoded key in the
    message key (base64, marked ``partition_key_b64_encoded``; a None key is a null key) and the
    encoded value in the payload (None: a null value). A SEPARATED schema's key also routes the
    message to its partition and is what Key_Shared and compaction see."""

    schema_type = SchemaType.KEY_VALUE
    name = "KeyValue"
    _I32 = struct.Struct(">i")

    def __init__(self, key_schema: Schema, value_schema: Schema, encoding: KeyValueEncodingType = KeyValueEncodingType.INLINE) -> None:
        if not isinstance(encoding, KeyValueEncodingType):
            try:
                encoding = KeyValueEncodingType(encoding)
            except ValueError:
                raise InvalidConfiguration(f"KeyValueSchema: unknown encoding {encoding!r}") from None
        self.key_schema = key_schema
        self.value_schema = value_schema
        self.encoding = encoding
        #: the core sends (key bytes, payload) of :meth:`split` instead of :meth:`encode`'s payload
        self.separated = encoding == KeyValueEncodingType.SEPARATED

    @staticmethod
    def _pair(value: Any) -> tuple[Any, Any]:
        try:
            key, val = value
        except (TypeError, ValueError):
            raise SchemaSerializationError(f"KeyValueSchema needs a (key, value) pair, not {type(value).__name__}") from None
        return key, val

    def split(self, value: Any) -> tuple[bytes | None, bytes | None]:
        """(encoded key or None, encoded value or None) of a (key, value) pair: SEPARATED's two parts."""
        key, val = self._pair(value)
        return (None if key is None else self.key_schema.encode(key),
                None if val is None else self.value_schema.encode(val))

    def encode(self, value: Any) -> bytes:
        """The INLINE payload of a (key, value) pair (a SEPARATED schema's payload is :meth:`split`'s value)."""
        if self.separated:
            payload = self.split(value)[1]
            return b"" if payload is None else payload
        key, val = self._pair(value)
        out = []
        for schema, part in ((self.key_schema, key), (self.value_schema, val)):
            if part is None:
                out.append(self._I32.pack(-1))
            else:
                data = schema.encode(part)
                out.append(self._I32.pack(len(data)) + data)
        return b"".join(out)

    def decode_message(self, message: Any) -> tuple[Any, Any]:
        """A received message's (key, value): SEPARATED reads the key from the message key."""
        if not self.separated:
            return self.decode(message.data())
        key = message.key_bytes()
        return (None if key is None else self.key_schema.decode(key),
                None if message.is_null_value() else self.value_schema.decode(message.data()))

    def decode(self, data: bytes) -> tuple[Any, Any]:
        """(key, value) of an INLINE payload (SEPARATED: (None, value); :meth:`decode_message` has the key)."""
        if self.separated:
            return None, self.value_schema.decode(data)
        view = memoryview(data)
        parts = []
        pos = 0
        for schema in (self.key_schema, self.value_schema):
            if len(view) - pos < 4:
                raise SchemaSerializationError("truncated KeyValue payload")
            (size,) = self._I32.unpack_from(view, pos)
            pos += 4
            if size < 0:
                parts.append(None)
                continue
            if size > len(view) - pos:
                raise SchemaSerializationError("KeyValue payload part overruns the payload")
            parts.append(schema.decode(bytes(view[pos : pos + size])))
            pos += size
        return parts[0], parts[1]

    def definition(self) -> bytes:
        key = self.key_schema.definition()
        value = self.value_schema.definition()
        return self._I32.pack(len(key)) + key + self._I32.pack(len(value)) + value

    def properties(self) -> dict[str, str]:
        props = {"kv.encoding.type": self.encoding.name}
        for prefix, schema in (("key", self.key_schema), ("value", self.value_schema)):
            kind = "BYTES" if schema.schema_type == SchemaType.NONE else schema.schema_type.name
            props[f"{prefix}.schema.name"] = schema.name
            props[f"{prefix}.schema.type"] = kind
            props[f"{prefix}.schema.properties"] = json.dumps(schema.properties())
        return props

    def __repr__(self) -> str:
        return f"KeyValueSchema({self.key_schema!r}, {self.value_schema!r}, {self.encoding.name})"


__all__ = [
    "AvroSchema",
    "BytesSchema",
    "JsonSchema",
    "KeyValueEncodingType",
    "KeyValueSchema",
    "ProtobufNativeSchema",
    "Schema",
    "SchemaInfo",
    "SchemaTypeError",
    "StringSchema",
    "avro_definition",
]
