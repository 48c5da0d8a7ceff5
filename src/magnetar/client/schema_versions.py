"""Other versions of a topic's schema, asked of the broker to decode the messages written with them.

A message carries the version of the schema its producer registered; a consumer whose schema is
another version of it needs the writer's definition to read the payload (Avro fields are written
in the writer's order, with the writer's types). The broker serves any version (GET_SCHEMA); the
consumer core's lookup service asks for it on the client's event loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

from magnetar.client.errors import PulsarError


class WriterSchemaUnavailable(Exception):
    """The writer's schema could not be asked for now (no connection, or the caller is on an event
    loop, where waiting for the broker would block it); a later message may get it."""


def fetch_writer_schema(consumer: Any, topic: str, version: bytes) -> Any:
    """The wire Schema of ``version`` of ``topic``'s schema (None when the broker has none), asked
    through ``consumer``'s client and waited for on this thread.

    Raises WriterSchemaUnavailable when the caller is on an event loop (the asyncio core decodes
    with the consumer's own schema then), when the consumer has no connection, or when the broker
    does not answer in time.
    """
    conn = getattr(consumer, "conn", None)
    if conn is None:
        raise WriterSchemaUnavailable("the consumer has no connection")
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise WriterSchemaUnavailable("cannot wait for the broker on an event loop")
    loop = conn.connected.get_loop()
    if loop.is_closed() or not loop.is_running():
        raise WriterSchemaUnavailable("the client's event loop is not running")
    client = consumer.client
    future = asyncio.run_coroutine_threadsafe(client.lookup.get_schema(topic, version), loop)
    try:
        return future.result(client.operation_timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise WriterSchemaUnavailable(f"no answer for schema version {version.hex()} of {topic}") from None
    except PulsarError as exc:
        raise WriterSchemaUnavailable(f"schema version {version.hex()} of {topic}: {exc}") from None
