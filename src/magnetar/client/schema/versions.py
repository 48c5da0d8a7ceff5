"""Other versions of a topic's schema, asked of the broker to decode the messages written with them.

A message carries the version of the schema its producer registered; a consumer whose schema is
another version of it needs the writer's definition to read the payload (Avro fields are written
in the writer's order, with the writer's types). The broker serves any version (GET_SCHEMA); the
consumer core's lookup service asks for it on the client's event loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Coroutine
from typing import Any


class WriterSchemaUnavailable(Exception):
    """The writer's schema could not be asked for now (no connection, or the caller is on an event
    loop, where waiting for the broker would block it); a later message may get it."""


def wait_on_client_loop(consumer: Any, make: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run the coroutine ``make()`` on ``consumer``'s client event loop and wait for it on this
    thread (the sync face's ``value()``: the asyncio core has fetched before handing out).

    Raises WriterSchemaUnavailable when the caller is on an event loop, when the consumer has no
    connection, or when the coroutine does not finish within the client's operation timeout.
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
    future = asyncio.run_coroutine_threadsafe(make(), loop)
    try:
        future.result(consumer.client.operation_timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise WriterSchemaUnavailable("no answer from the broker in time") from None
