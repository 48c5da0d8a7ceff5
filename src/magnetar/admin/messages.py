"""Stored entries as HTTP responses (peek, examine), with Pulsar's X-Pulsar-* headers.

The body is the entry's payload, decompressed. A batch is returned whole, as Pulsar returns it,
with ``X-Pulsar-num-batch-message``: clients split it (the magnetar CLI does).
"""

from __future__ import annotations

import json
from urllib.parse import quote

from fastapi.responses import Response

from magnetar.admin.errors import HttpError
from magnetar.broker.resources.messages import PeekedEntry
from magnetar.broker.resources.stats import iso_time
from magnetar.protocol.compression import CompressionError, decompress
from magnetar.protocol.enums import CompressionType
from magnetar.protocol.framing import ProtocolError, parse_entry_metadata, split_entry


def _header_value(value: str) -> str:
    try:
        value.encode("latin-1")
        return value
    except UnicodeEncodeError:
        return quote(value, safe="")


def entry_response(peeked: PeekedEntry) -> Response:
    """The HTTP response Pulsar gives for one stored entry."""
    data = peeked.entry.data
    try:
        meta = parse_entry_metadata(data)
        _, payload = split_entry(data)
    except ProtocolError as exc:
        raise HttpError(500, f"Stored entry {peeked.ledger_id}:{peeked.entry.entry_id} is unreadable: {exc}") from None
    headers: list[tuple[str, str]] = [("X-Pulsar-Message-ID", f"{peeked.ledger_id}:{peeked.entry.entry_id}")]
    properties = {kv.key: kv.value for kv in meta.properties}
    for key, value in properties.items():
        headers.append((f"X-Pulsar-PROPERTY-{_header_value(key)}", _header_value(value)))
    if properties:
        headers.append(("X-Pulsar-PROPERTY", json.dumps(properties)))
    if meta.HasField("publish_time"):
        headers.append(("X-Pulsar-publish-time", iso_time(meta.publish_time / 1000)))
    if meta.HasField("event_time") and meta.event_time:
        headers.append(("X-Pulsar-event-time", iso_time(meta.event_time / 1000)))
    if meta.HasField("deliver_at_time"):
        headers.append(("X-Pulsar-deliver-at-time", iso_time(meta.deliver_at_time / 1000)))
    headers.append(("X-Pulsar-producer-name", _header_value(meta.producer_name)))
    headers.append(("X-Pulsar-sequence-id", str(meta.sequence_id)))
    if meta.HasField("partition_key"):
        headers.append(("X-Pulsar-partition-key", _header_value(meta.partition_key)))
    if meta.HasField("num_messages_in_batch"):
        headers.append(("X-Pulsar-num-batch-message", str(meta.num_messages_in_batch)))
        headers.append(("X-Pulsar-batch-size", str(len(payload))))
    if meta.HasField("null_value") and meta.null_value:
        headers.append(("X-Pulsar-null-value", "true"))
    if meta.HasField("num_chunks_from_msg"):
        headers.append(("X-Pulsar-PROPERTY-TOTAL-CHUNKS", str(meta.num_chunks_from_msg)))
        headers.append(("X-Pulsar-PROPERTY-CHUNK-ID", str(meta.chunk_id)))
    encrypted = len(meta.encryption_keys) > 0
    headers.append(("X-Pulsar-Is-Encrypted", "true" if encrypted else "false"))
    body = bytes(payload)
    if meta.compression != CompressionType.NONE:
        try:
            codec = CompressionType(meta.compression).name
        except ValueError:
            codec = str(meta.compression)
        headers.append(("X-Pulsar-compression", codec))
        headers.append(("X-Pulsar-uncompressed-size", str(meta.uncompressed_size)))
        if not encrypted:
            try:
                body = decompress(meta.compression, body, meta.uncompressed_size)
            except CompressionError as exc:
                raise HttpError(500, f"Stored entry {peeked.ledger_id}:{peeked.entry.entry_id} does not decompress: {exc}") from None
    response = Response(content=body, media_type="application/octet-stream")
    for name, value in headers:
        response.headers.append(name, value)
    return response
