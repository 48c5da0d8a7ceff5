"""Stored entries as readable messages: unbatched, decompressed and decoded by the topic's schema.

STRING payloads are shown as text, JSON as the parsed value, AVRO decoded to the same JSON shape,
anything else (BYTES, no schema, or a payload its schema does not decode) as hex and text.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from magnetar.broker.schemas import version_from_bytes
from magnetar.client.schema.avro_codec import AvroCodec
from magnetar.protocol.batch import UnsupportedEntryError, open_entry
from magnetar.protocol.compression import CompressionError
from magnetar.protocol.framing import ProtocolError

#: bytes shown as hex and text at most; the rest is summarised by its size
PREVIEW_BYTES = 4096

#: the schema of a version (type and definition), or None when unknown
SchemaLookup = Callable[[int | None], tuple[str, bytes] | None]


def printable_text(data: bytes) -> str:
    """``data`` as UTF-8 with undecodable bytes and control characters shown as a dot."""
    text = data.decode("utf-8", "replace")
    return "".join(ch if ch.isprintable() or ch in "\n\t" else "." for ch in text).replace("\ufffd", ".")


def _json_safe(value: Any) -> Any:
    """Avro values made JSON-encodable: bytes become base64 text."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def decode_value(schema_type: str | None, definition: bytes, payload: bytes) -> dict[str, Any]:
    """The payload decoded by its schema: ``encoding``, ``value`` and, as a fallback, hex and text."""
    kind = (schema_type or "BYTES").upper()
    try:
        if kind == "STRING":
            return {"encoding": "string", "value": payload.decode("utf-8")}
        if kind == "JSON":
            return {"encoding": "json", "value": json.loads(payload)}
        if kind == "AVRO":
            return {"encoding": "avro", "value": _json_safe(AvroCodec(definition.decode()).decode(payload))}
    except Exception as exc:  # noqa: BLE001 - any decoding failure falls back to the raw bytes
        shown = payload[:PREVIEW_BYTES]
        return {"encoding": "bytes", "hex": shown.hex(), "text": printable_text(shown),
                "error": f"does not decode as {kind}: {exc}"}
    shown = payload[:PREVIEW_BYTES]
    return {"encoding": "bytes", "hex": shown.hex(), "text": printable_text(shown)}


def entry_messages(entry: bytes, message_id: str, schema_of: SchemaLookup) -> list[dict[str, Any]]:
    """The messages of one stored entry (one, or each of a batch), decoded for display."""
    try:
        meta, messages = open_entry(entry)
    except (ProtocolError, CompressionError, UnsupportedEntryError) as exc:
        return [{"messageId": message_id, "encoding": "unreadable", "error": str(exc)}]
    version = version_from_bytes(meta.schema_version) if meta.HasField("schema_version") else None
    schema = schema_of(version)
    base = {
        "publishTime": meta.publish_time,
        "producerName": meta.producer_name,
        "sequenceId": meta.sequence_id,
        "schemaVersion": version,
        "schemaType": schema[0] if schema else None,
    }
    out: list[dict[str, Any]] = []
    batched = meta.HasField("num_messages_in_batch")
    for index, (single, payload) in enumerate(messages):
        source = single if single is not None else meta
        message = {
            **base,
            "messageId": message_id,
            "batchIndex": index if batched else None,
            "key": source.partition_key if source.HasField("partition_key") else None,
            "properties": {kv.key: kv.value for kv in source.properties},
            "eventTime": source.event_time if source.HasField("event_time") else 0,
            "size": len(payload),
        }
        if single is not None and single.HasField("sequence_id"):
            message["sequenceId"] = single.sequence_id
        null = source.HasField("null_value") and source.null_value
        if null:
            message.update({"encoding": "null", "value": None})
        else:
            message.update(decode_value(schema[0] if schema else None, schema[1] if schema else b"", payload))
        out.append(message)
    return out
