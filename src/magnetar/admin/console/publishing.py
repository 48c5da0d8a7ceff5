"""Pulsar's REST producer (``POST /topics/{domain}/{tenant}/{namespace}/{topic}``) for the console.

The messages are published by magnetar's own client over the broker's binary port, so they take the
path every producer takes: authentication (the request's bearer token is passed on), authorization,
schema checks, deduplication and the group commit. Nothing is written around the broker.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from magnetar.admin.errors import HttpError
from magnetar.client import AsyncClient, AuthenticationToken, AvroSchema, JsonSchema, StringSchema
from magnetar.client.exceptions import (
    AuthenticationError,
    AuthorizationError,
    IncompatibleSchema,
    PulsarError,
    SchemaSerializationError,
    TopicNotFound,
    TopicTerminated,
)


class ProducerMessage(BaseModel):
    """One message of a REST produce request (Pulsar's ProducerMessage)."""

    payload: str = Field(description="the value: text for STRING and BYTES topics, JSON text for JSON and AVRO topics")
    key: str | None = None
    properties: dict[str, str] = Field(default_factory=dict)
    eventTime: int | None = Field(default=None, description="event time, ms since the epoch")  # noqa: N815


class ProducerMessages(BaseModel):
    """A REST produce request (Pulsar's ProducerMessages)."""

    producerName: str | None = None  # noqa: N815
    messages: list[ProducerMessage] = Field(min_length=1, max_length=1000)


#: refusals of the broker as HTTP statuses
_STATUS: tuple[tuple[type[PulsarError], int], ...] = (
    (AuthenticationError, 401),
    (AuthorizationError, 403),
    (TopicNotFound, 404),
    (IncompatibleSchema, 409),
    (TopicTerminated, 409),
    (SchemaSerializationError, 400),
)


def client_schema(schema_type: str | None, definition: bytes) -> Any:
    """The client schema a producer of a topic with this schema uses (None: bytes, no schema)."""
    kind = (schema_type or "").upper()
    if kind == "STRING":
        return StringSchema()
    if kind == "JSON":
        return JsonSchema(definition=definition.decode())
    if kind == "AVRO":
        return AvroSchema(definition=definition.decode())
    return None


def message_value(schema: Any, payload: str) -> Any:
    """The value to send: JSON and Avro payloads are parsed from JSON text, the rest sent as text."""
    if isinstance(schema, JsonSchema | AvroSchema):
        try:
            return json.loads(payload)
        except ValueError as exc:
            raise HttpError(400, f"Invalid payload: the topic's schema needs JSON text: {exc}") from None
    if schema is None:
        return payload.encode("utf-8")
    return payload


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer ...`` header."""
    if authorization and authorization[:7].lower() == "bearer ":
        return authorization[7:].strip()
    return None


async def publish(
    service_url: str, topic: str, request: ProducerMessages, schema: tuple[str, bytes] | None, token: str | None
) -> list[dict[str, Any]]:
    """Publish the request's messages in order; returns Pulsar's messagePublishResults."""
    client_side = client_schema(*schema) if schema else None
    values = [message_value(client_side, m.payload) for m in request.messages]
    auth = AuthenticationToken(token) if token else None
    client = AsyncClient(service_url, authentication=auth, operation_timeout_seconds=10)
    try:
        options: dict[str, Any] = {"schema": client_side} if client_side is not None else {}
        producer = await client.create_producer(topic, request.producerName, batching_enabled=False, **options)
        results = []
        for message, value in zip(request.messages, values, strict=True):
            msg_id = await producer.send(
                value, partition_key=message.key, properties=message.properties or None,
                event_timestamp=message.eventTime,
            )
            message_id = f"{msg_id.ledger_id}:{msg_id.entry_id}:{msg_id.partition}"
            results.append({"messageId": message_id, "errorCode": 0, "schemaVersion": 0})
        return results
    except PulsarError as exc:
        for kind, status in _STATUS:
            if isinstance(exc, kind):
                raise HttpError(status, str(exc)) from None
        raise HttpError(500, f"Publishing failed: {exc}") from None
    finally:
        await client.close()
