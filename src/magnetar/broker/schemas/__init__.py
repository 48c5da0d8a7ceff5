"""The schema registry: versioned schemas per topic, compatibility strategies, Avro resolution.

- Avro schema parsing and the reader/writer resolution check live in :mod:`magnetar.protocol.avro`;
- :mod:`.compatibility`: strategies and the per-type compatibility checks;
- :mod:`.registry`: schema histories by schema id, persisted in the metadata store;
- :mod:`.topics`: the rules producers, consumers and the admin API follow on a topic.
"""

from __future__ import annotations

from magnetar.broker.schemas.compatibility import (
    IncompatibleSchemaError,
    InvalidSchemaError,
    SchemaData,
    Strategy,
    parse_strategy,
)
from magnetar.broker.schemas.registry import (
    SchemaNotFoundError,
    SchemaRegistry,
    StoredSchema,
    schema_id_of,
    version_from_bytes,
    version_to_bytes,
)
from magnetar.broker.schemas.topics import (
    SchemaPolicy,
    TopicSchemas,
    declared_schema_from_wire,
    schema_from_wire,
)

__all__ = [
    "IncompatibleSchemaError",
    "InvalidSchemaError",
    "SchemaData",
    "SchemaNotFoundError",
    "SchemaPolicy",
    "SchemaRegistry",
    "Strategy",
    "StoredSchema",
    "TopicSchemas",
    "declared_schema_from_wire",
    "parse_strategy",
    "schema_from_wire",
    "schema_id_of",
    "version_from_bytes",
    "version_to_bytes",
]
