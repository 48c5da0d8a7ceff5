"""Spark schemas of topics, and the conversions between payloads and Arrow columns.

Rows read from a topic are its value columns followed by the metadata columns. The value
columns follow the topic's schema in the registry, read when the query is planned:

- no schema (or BYTES): one ``value`` column, binary;
- STRING: ``value`` string; BOOLEAN, INT8/16/32/64, FLOAT, DOUBLE: ``value`` of that type;
  TIMESTAMP and DATE (milliseconds): ``value`` timestamp;
- JSON and AVRO: the fields of the record, one column each, typed from the schema's Avro
  definition (records become structs, arrays arrays, maps maps with string keys; the logical
  types timestamp-millis/micros, date and decimal become timestamp, date and decimal columns;
  enums strings; a union of several non-null types a string holding its JSON text);
- anything else (KEY_VALUE, PROTOBUF, ...): ``value`` binary, the payload as it is.

The sink goes the other way: a DataFrame without a ``value`` column is written record by record
as JSON (registering a JSON schema derived from the DataFrame on a topic without one) or as Avro
when the topic's schema is AVRO.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from magnetar.protocol.enums import SchemaType

#: the metadata columns, after the value columns
META_FIELDS = [
    StructField("__key", StringType()),
    StructField("__topic", StringType()),
    StructField("__partition", IntegerType()),
    StructField("__messageId", BinaryType()),
    StructField("__publishTime", TimestampType()),
    StructField("__eventTime", TimestampType()),
    StructField("__messageProperties", MapType(StringType(), StringType())),
]
META_NAMES = [f.name for f in META_FIELDS]


class PulsarSchemaError(ValueError):
    """A topic's schema cannot be mapped to Spark (or a DataFrame to the topic's schema)."""


@dataclass
class ValueFormat:
    """How the payloads of the topics read are decoded (picklable)."""

    schema_type: int = SchemaType.NONE
    #: the Avro definition (JSON text) of JSON and AVRO schemas
    definition: str | None = None
    #: schema name and version as the registry reports them (for messages)
    description: str = "no schema"

    @property
    def is_record(self) -> bool:
        """Whether values are records spread over several columns."""
        return self.schema_type in (SchemaType.JSON, SchemaType.AVRO) and self.definition is not None

    def value_fields(self) -> list[StructField]:
        """The value columns."""
        kind = self.schema_type
        if kind in (SchemaType.JSON, SchemaType.AVRO) and self.definition is not None:
            avro = json.loads(self.definition)
            if isinstance(avro, dict) and avro.get("type") == "record":
                fields = []
                named: dict[str, Any] = {}
                _collect_named(avro, named, None)
                for f in avro["fields"]:
                    dtype, _ = avro_to_spark(f["type"], named, set())
                    if f["name"] in META_NAMES:
                        raise PulsarSchemaError(f"field {f['name']!r} of the topic's schema clashes with the metadata column of that name")
                    fields.append(StructField(f["name"], dtype, True))
                return fields
            dtype, _ = avro_to_spark(avro, {}, set())
            return [StructField("value", dtype, True)]
        return [StructField("value", _PRIMITIVE_SPARK.get(kind, BinaryType()), True)]

    def spark_schema(self) -> StructType:
        """Value columns, then metadata columns."""
        return StructType(self.value_fields() + META_FIELDS)


def format_of(info: Any) -> ValueFormat:
    """The ValueFormat of a wire Schema from the registry (None: no schema)."""
    if info is None:
        return ValueFormat()
    kind = int(info.type)
    if kind in (SchemaType.JSON, SchemaType.AVRO):
        text = bytes(info.schema_data).decode("utf-8") if info.schema_data else None
        if text:
            try:
                json.loads(text)
            except ValueError:
                raise PulsarSchemaError(f"the topic's {SchemaType(kind).name} schema definition is not JSON") from None
        return ValueFormat(kind, text, f"{SchemaType(kind).name} schema {info.name!r}")
    try:
        name = SchemaType(kind).name
    except ValueError:
        name = str(kind)
    return ValueFormat(kind, None, f"{name} schema")


# -- Avro -> Spark --------------------------------------------------------------------------------

_AVRO_PRIMITIVE: dict[str, DataType] = {
    "boolean": BooleanType(), "int": IntegerType(), "long": LongType(), "float": FloatType(),
    "double": DoubleType(), "bytes": BinaryType(), "string": StringType(),
}
_PRIMITIVE_SPARK: dict[int, DataType] = {
    SchemaType.STRING: StringType(), SchemaType.BOOLEAN: BooleanType(), SchemaType.INT8: ByteType(),
    SchemaType.INT16: ShortType(), SchemaType.INT32: IntegerType(), SchemaType.INT64: LongType(),
    SchemaType.FLOAT: FloatType(), SchemaType.DOUBLE: DoubleType(), SchemaType.TIMESTAMP: TimestampType(),
    SchemaType.DATE: TimestampType(),
}

Converter = Callable[[Any], Any] | None


def _collect_named(s: Any, named: dict[str, Any], namespace: str | None) -> None:
    if isinstance(s, list):
        for b in s:
            _collect_named(b, named, namespace)
    elif isinstance(s, dict):
        kind = s.get("type")
        if kind in ("record", "error", "enum", "fixed"):
            ns = s.get("namespace", namespace)
            name = s["name"]
            full = name if "." in name or not ns else f"{ns}.{name}"
            named[full] = s
            named.setdefault(name.rsplit(".", 1)[-1], s)
            for f in s.get("fields", []):
                _collect_named(f["type"], named, ns)
        elif kind == "array":
            _collect_named(s["items"], named, namespace)
        elif kind == "map":
            _collect_named(s["values"], named, namespace)


def avro_to_spark(s: Any, named: dict[str, Any], seen: set[str]) -> tuple[DataType, Converter]:
    """(Spark type, converter from a decoded value to what Arrow takes) of an Avro type."""
    if isinstance(s, str):
        if s in _AVRO_PRIMITIVE:
            return _AVRO_PRIMITIVE[s], (_to_bytes if s == "bytes" else None)
        if s == "null":
            return StringType(), None
        target = named.get(s)
        if target is None:
            raise PulsarSchemaError(f"Avro schema: unknown type {s!r}")
        return avro_to_spark(target, named, seen)
    if isinstance(s, list):
        branches = [b for b in s if b != "null"]
        if len(branches) == 1:
            return avro_to_spark(branches[0], named, seen)
        if not branches:
            return StringType(), None
        return StringType(), _to_json_text
    if not isinstance(s, dict):
        raise PulsarSchemaError(f"Avro schema: invalid type {s!r}")
    kind = s.get("type")
    logical = s.get("logicalType")
    if logical in ("timestamp-millis", "local-timestamp-millis") and kind == "long":
        return TimestampType(), _millis_to_micros
    if logical in ("timestamp-micros", "local-timestamp-micros") and kind == "long":
        return TimestampType(), None
    if logical == "date" and kind == "int":
        return DateType(), None
    if logical == "decimal" and kind in ("bytes", "fixed"):
        precision = int(s.get("precision", 38))
        scale = int(s.get("scale", 0))
        if precision > 38:
            return StringType(), _decimal_text(scale)
        return DecimalType(precision, scale), _decimal(scale)
    if kind == "record":
        name = s.get("name", "")
        if name in seen:
            raise PulsarSchemaError(f"Avro record {name!r} is recursive; Spark has no recursive types")
        inner = seen | {name}
        fields = []
        convs: list[tuple[str, Converter]] = []
        for f in s["fields"]:
            dtype, conv = avro_to_spark(f["type"], named, inner)
            fields.append(StructField(f["name"], dtype, True))
            convs.append((f["name"], conv))
        return StructType(fields), _record(convs)
    if kind == "enum":
        return StringType(), None
    if kind == "fixed":
        return BinaryType(), _to_bytes
    if kind == "array":
        dtype, conv = avro_to_spark(s["items"], named, seen)
        return ArrayType(dtype, True), (None if conv is None else _array(conv))
    if kind == "map":
        dtype, conv = avro_to_spark(s["values"], named, seen)
        return MapType(StringType(), dtype, True), (None if conv is None else _map(conv))
    if isinstance(kind, (str, list, dict)):
        return avro_to_spark(kind, named, seen)
    raise PulsarSchemaError(f"Avro schema: invalid type {s!r}")


def _to_bytes(v: Any) -> Any:
    if isinstance(v, str):
        return base64.b64decode(v)
    return v


def _to_json_text(v: Any) -> Any:
    if v is None or isinstance(v, str):
        return v
    return json.dumps(v, default=lambda o: base64.b64encode(o).decode() if isinstance(o, (bytes, bytearray)) else str(o))


def _millis_to_micros(v: Any) -> Any:
    return None if v is None else int(v) * 1000


def _decimal(scale: int) -> Callable[[Any], Any]:
    def conv(v: Any) -> Any:
        if v is None:
            return None
        if isinstance(v, (bytes, bytearray)):
            return decimal.Decimal(int.from_bytes(v, "big", signed=True)).scaleb(-scale)
        if isinstance(v, str):
            try:
                return decimal.Decimal(int.from_bytes(base64.b64decode(v), "big", signed=True)).scaleb(-scale)
            except ValueError:
                return decimal.Decimal(v)
        return decimal.Decimal(str(v))

    return conv


def _decimal_text(scale: int) -> Callable[[Any], Any]:
    inner = _decimal(scale)

    def conv(v: Any) -> Any:
        d = inner(v)
        return None if d is None else str(d)

    return conv


def _record(convs: list[tuple[str, Converter]]) -> Converter:
    if all(c is None for _, c in convs):
        return None

    def conv(v: Any) -> Any:
        if v is None:
            return None
        return {name: (c(v.get(name)) if c is not None else v.get(name)) for name, c in convs}

    return conv


def _array(inner: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def conv(v: Any) -> Any:
        return None if v is None else [inner(x) for x in v]

    return conv


def _map(inner: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def conv(v: Any) -> Any:
        return None if v is None else {k: inner(x) for k, x in v.items()}

    return conv


# -- payloads -> Arrow value columns ----------------------------------------------------------------

_UNPACK: dict[int, Callable[[bytes], Any]] = {
    SchemaType.BOOLEAN: lambda b: b[0] != 0,
    SchemaType.INT8: lambda b: struct.unpack(">b", b)[0],
    SchemaType.INT16: lambda b: struct.unpack(">h", b)[0],
    SchemaType.INT32: lambda b: struct.unpack(">i", b)[0],
    SchemaType.INT64: lambda b: struct.unpack(">q", b)[0],
    SchemaType.FLOAT: lambda b: struct.unpack(">f", b)[0],
    SchemaType.DOUBLE: lambda b: struct.unpack(">d", b)[0],
    SchemaType.TIMESTAMP: lambda b: struct.unpack(">q", b)[0] * 1000,
    SchemaType.DATE: lambda b: struct.unpack(">q", b)[0] * 1000,
}


class ValueDecoder:
    """Turns the payloads of a run of messages into the value columns (Arrow arrays).

    ``fetch_schema(version)`` returns the wire schema of another version of the topic's schema:
    Avro payloads written with an older version are decoded with that writer schema and their
    fields picked by name (fields the writer did not have are null).
    """

    def __init__(self, fmt: ValueFormat, arrow_types: list[Any], fetch_schema: Callable[[bytes], Any] | None = None) -> None:
        self.fmt = fmt
        self.arrow_types = arrow_types
        self.fetch_schema = fetch_schema
        self.kind = fmt.schema_type
        self._codecs: dict[bytes, Any] = {}
        self._latest_codec: Any = None
        self._field_convs: list[tuple[str, Converter]] = []
        self._single_conv: Converter = None
        if fmt.is_record:
            avro = json.loads(fmt.definition)  # type: ignore[arg-type]
            named: dict[str, Any] = {}
            _collect_named(avro, named, None)
            if isinstance(avro, dict) and avro.get("type") == "record":
                for f in avro["fields"]:
                    _, conv = avro_to_spark(f["type"], named, set())
                    self._field_convs.append((f["name"], conv))
            else:
                _, self._single_conv = avro_to_spark(avro, named, set())
            if self.kind == SchemaType.AVRO:
                # the client, when a query runs, not when the module loads: 200-350 ms CPU (python -X importtime)
                from magnetar.client.schema import AvroCodec

                self._latest_codec = AvroCodec(avro)

    def _codec_for(self, version: bytes) -> Any:
        if not version or self.fetch_schema is None:
            return self._latest_codec
        codec = self._codecs.get(version)
        if codec is None:
            info = self.fetch_schema(version)
            if info is None or int(info.type) != SchemaType.AVRO or not info.schema_data:
                codec = self._latest_codec
            else:
                # the client, when a query runs, not when the module loads: 200-350 ms CPU (python -X importtime)
                from magnetar.client.schema import AvroCodec

                codec = AvroCodec(json.loads(bytes(info.schema_data)))
            self._codecs[version] = codec
        return codec

    def columns(self, payloads: list[bytes | None], versions: list[bytes] | None, where: Callable[[int], str]) -> list[Any]:
        """The value column(s) of these payloads (None: a null value)."""
        import pyarrow as pa

        kind = self.kind
        if not self.fmt.is_record:
            if kind == SchemaType.STRING:
                return [pa.array(payloads, pa.binary()).cast(pa.string())]
            unpack = _UNPACK.get(kind)
            if unpack is None:
                return [pa.array(payloads, pa.binary())]
            values = []
            for i, p in enumerate(payloads):
                try:
                    values.append(None if p is None else unpack(p))
                except (struct.error, IndexError):
                    raise PulsarSchemaError(f"{where(i)}: payload of {len(p or b'')} bytes is not a {SchemaType(kind).name}") from None
            return [pa.array(values, self.arrow_types[0])]
        records = self._decode_records(payloads, versions, where)
        if not self._field_convs:
            conv = self._single_conv
            return [pa.array(records if conv is None else [conv(r) for r in records], self.arrow_types[0])]
        out = []
        for (name, conv), atype in zip(self._field_convs, self.arrow_types, strict=True):
            if conv is None:
                col = [None if r is None else r.get(name) for r in records]
            else:
                col = [None if r is None else conv(r.get(name)) for r in records]
            try:
                out.append(pa.array(col, atype))
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
                raise PulsarSchemaError(f"field {name!r} does not fit its schema type {atype}: {exc}") from None
        return out

    def _decode_records(self, payloads: list[bytes | None], versions: list[bytes] | None, where: Callable[[int], str]) -> list[Any]:
        records: list[Any] = []
        if self.kind == SchemaType.JSON:
            loads = json.loads
            for i, p in enumerate(payloads):
                if p is None:
                    records.append(None)
                    continue
                try:
                    records.append(loads(p))
                except ValueError as exc:
                    raise PulsarSchemaError(f"{where(i)}: payload is not JSON ({exc})") from None
            return records
        # the client, when a query runs, not when the module loads: 200-350 ms CPU (python -X importtime)
        from magnetar.client.schema import SchemaSerializationError

        latest = self._latest_codec
        for i, p in enumerate(payloads):
            if p is None:
                records.append(None)
                continue
            codec = latest if versions is None else self._codec_for(versions[i])
            try:
                records.append(codec.decode(p))
            except SchemaSerializationError as exc:
                raise PulsarSchemaError(f"{where(i)}: {exc}") from None
        return records


# -- Spark -> Avro (the sink) ---------------------------------------------------------------------

def spark_to_avro(dtype: DataType, name: str = "Row", counter: list[int] | None = None) -> Any:
    """The Avro type of a Spark type (records for structs; every field nullable)."""
    counter = counter if counter is not None else [0]
    if isinstance(dtype, StructType):
        fields = []
        for f in dtype.fields:
            inner = spark_to_avro(f.dataType, _record_name(f.name, counter), counter)
            fields.append({"name": f.name, "type": ["null", inner], "default": None})
        return {"type": "record", "name": name, "fields": fields}
    if isinstance(dtype, StringType):
        return "string"
    if isinstance(dtype, BooleanType):
        return "boolean"
    if isinstance(dtype, (ByteType, ShortType, IntegerType)):
        return "int"
    if isinstance(dtype, LongType):
        return "long"
    if isinstance(dtype, FloatType):
        return "float"
    if isinstance(dtype, DoubleType):
        return "double"
    if isinstance(dtype, BinaryType):
        return "bytes"
    if isinstance(dtype, TimestampType):
        return {"type": "long", "logicalType": "timestamp-millis"}
    if isinstance(dtype, DateType):
        return {"type": "int", "logicalType": "date"}
    if isinstance(dtype, DecimalType):
        return "string"
    if isinstance(dtype, ArrayType):
        return {"type": "array", "items": ["null", spark_to_avro(dtype.elementType, name, counter)]}
    if isinstance(dtype, MapType):
        if not isinstance(dtype.keyType, StringType):
            raise PulsarSchemaError(f"map keys must be strings to be written as JSON or Avro, not {dtype.keyType.simpleString()}")
        return {"type": "map", "values": ["null", spark_to_avro(dtype.valueType, name, counter)]}
    raise PulsarSchemaError(f"cannot write a column of type {dtype.simpleString()} as JSON or Avro")


def _record_name(field: str, counter: list[int]) -> str:
    counter[0] += 1
    clean = "".join(c if c.isalnum() or c == "_" else "_" for c in field) or "field"
    if clean[0].isdigit():
        clean = "_" + clean
    return f"{clean}_record{counter[0]}"


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_EPOCH_DATE = datetime.date(1970, 1, 1)


def to_plain(v: Any) -> Any:
    """A Python value of a Spark row as JSON/Avro wants it (timestamps in ms, dates in days)."""
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.UTC)
        delta = v - _EPOCH
        return (delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds) // 1000
    if isinstance(v, datetime.date):
        return (v - _EPOCH_DATE).days
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, dict):
        return {k: to_plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [to_plain(x) for x in v]
    if isinstance(v, tuple):  # maps arrive as lists of (key, value) pairs
        return [to_plain(x) for x in v]
    return v


def plain_converter(dtype: DataType) -> Callable[[Any], Any]:
    """Converts a value of a Spark type, as Arrow hands it to Python, to what JSON/Avro take."""
    if isinstance(dtype, (TimestampType, DateType, DecimalType)):
        return lambda v: None if v is None else to_plain(v)
    if isinstance(dtype, MapType):
        inner = plain_converter(dtype.valueType)

        def conv_map(v: Any) -> Any:
            if v is None:
                return None
            items = v.items() if isinstance(v, dict) else v  # Arrow: a list of (key, value) pairs
            return {k: inner(x) for k, x in items}

        return conv_map
    if isinstance(dtype, ArrayType):
        inner = plain_converter(dtype.elementType)
        return lambda v: None if v is None else [inner(x) for x in v]
    if isinstance(dtype, StructType):
        convs = [(f.name, plain_converter(f.dataType)) for f in dtype.fields]
        return lambda v: None if v is None else {name: c(v.get(name)) for name, c in convs}
    return _identity


def _identity(v: Any) -> Any:
    return v


def json_default(o: Any) -> Any:
    """json.dumps fallback: bytes as base64."""
    if isinstance(o, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(o)).decode()
    raise TypeError(f"{type(o).__name__} is not JSON serializable")


def check_record_fits(avro: Any, columns: StructType) -> None:
    """Refuse a DataFrame whose columns do not match the fields of the topic's record schema."""
    if not (isinstance(avro, dict) and avro.get("type") == "record"):
        raise PulsarSchemaError("the topic's schema is not a record: write a value column instead")
    fields = {f["name"]: f for f in avro["fields"]}
    for col in columns.fieldNames():
        if col not in fields:
            raise PulsarSchemaError(f"column {col!r} is not a field of the topic's schema (fields: {', '.join(fields)})")
    for name, f in fields.items():
        if name in columns.fieldNames():
            continue
        t = f["type"]
        nullable = isinstance(t, list) and "null" in t
        if "default" not in f and not nullable:
            raise PulsarSchemaError(f"the DataFrame has no column for the field {name!r} of the topic's schema, which has no default")


def json_encoder(convs: list[tuple[str, Any]]) -> Any:
    """A row (dict) -> JSON bytes encoder of these (column, converter) pairs."""
    dumps = json.dumps

    def encode(row: dict) -> bytes:
        return dumps({c: conv(row.get(c)) for c, conv in convs}, separators=(",", ":"), default=json_default).encode()

    return encode


def avro_encoder(codec: Any, avro: dict, convs: list[tuple[str, Any]]) -> Any:
    """A row (dict) -> Avro bytes encoder for the record schema ``avro`` (nullable fields without a column: null)."""
    names = {f["name"] for f in avro["fields"]}
    present = [(c, conv) for c, conv in convs if c in names]
    columns = {c for c, _ in convs}
    # fields without a column: null when nullable (the codec uses the default of the others)
    nulls = {
        f["name"]: None for f in avro["fields"]
        if f["name"] not in columns and isinstance(f["type"], list) and "null" in f["type"]
    }

    def encode(row: dict) -> bytes:
        return codec.encode({**nulls, **{c: conv(row[c]) for c, conv in present}})

    return encode
