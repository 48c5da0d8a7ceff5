"""``pulsar.schema``: schemas (how typed values become payloads), the official client's record
classes, and the Avro codec they use.

- :mod:`~magnetar.client.schema.schemas`: ``Schema`` and its kinds (bytes, string, JSON, Avro,
  protobuf-native, key/value);
- :mod:`~magnetar.client.schema.records`: ``Record`` and its field types, as ``pulsar.schema``;
- :mod:`~magnetar.client.schema.avro_codec`: the Avro binary encoding and schema resolution;
- :mod:`~magnetar.client.schema.versions`: asking the broker for a writer's schema version.

Beside the core, not under it: the core carries a schema object without importing this package.
"""

from magnetar.client.exceptions import SchemaSerializationError
from magnetar.client.schema.avro_codec import AvroCodec
from magnetar.client.schema.records import (
    Array,
    Boolean,
    Bytes,
    CustomEnum,
    Double,
    Field,
    Float,
    Integer,
    Long,
    Map,
    Null,
    Record,
    String,
)
from magnetar.client.schema.schemas import (
    AvroSchema,
    BytesSchema,
    JsonSchema,
    KeyValueEncodingType,
    KeyValueSchema,
    ProtobufNativeSchema,
    Schema,
    SchemaInfo,
    SchemaTypeError,
    StringSchema,
    avro_definition,
)

__all__ = [
    "Array",
    "AvroCodec",
    "AvroSchema",
    "Boolean",
    "Bytes",
    "BytesSchema",
    "CustomEnum",
    "Double",
    "Field",
    "Float",
    "Integer",
    "JsonSchema",
    "KeyValueEncodingType",
    "KeyValueSchema",
    "Long",
    "Map",
    "Null",
    "ProtobufNativeSchema",
    "Record",
    "Schema",
    "SchemaInfo",
    "SchemaSerializationError",
    "SchemaTypeError",
    "String",
    "StringSchema",
    "avro_definition",
]
