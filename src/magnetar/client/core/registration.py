"""Registering producers and consumers on a broker, and closing them there.

:func:`register` and :func:`close_on_broker` are the round trips every handle (producer,
consumer, reader, bulk entry reader) makes the same way; :func:`producer_command` is the PRODUCER
command a producer registers (and re-registers after a reconnection) with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from magnetar.client.api.config import ProducerConfig
from magnetar.client.exceptions import PulsarError
from magnetar.protocol.enums import CommandType
from magnetar.protocol.schema import BaseCommand, KeyValue

if TYPE_CHECKING:
    from magnetar.client.core.connection import ClientConnection
    from magnetar.client.core.handler import HandlerState

#: the table of a connection a handle is registered in: its producers or its consumers, by id
HandleTable = Callable[["ClientConnection"], dict[int, Any]]


def producers_of(conn: ClientConnection) -> dict[int, Any]:
    """The producers registered on ``conn``, by producer id."""
    return conn.producers


def consumers_of(conn: ClientConnection) -> dict[int, Any]:
    """The consumers (and readers) registered on ``conn``, by consumer id."""
    return conn.consumers


async def register(
    handle: HandlerState,
    handle_id: int,
    table: HandleTable,
    command: Callable[[int], BaseCommand],
    timeout: float,
) -> tuple[ClientConnection, BaseCommand]:
    """Register ``handle`` on a connection to its topic's broker: (the connection, the broker's answer).

    ``command(request_id)`` (PRODUCER or SUBSCRIBE) is built once the connection is there. The
    handle is in the connection's ``table`` while it waits, so that what the broker sends it
    before the answer finds it; it leaves the table again when the registration fails. On
    success the connection is the handle's ``conn``.
    """
    conn = await handle.client.lookup.connection_for(handle.topic)
    rid = conn.new_request_id()
    cmd = command(rid)
    handles = table(conn)
    handles[handle_id] = handle
    try:
        answer = await conn.request(cmd, rid, timeout)
    except BaseException:
        handles.pop(handle_id, None)
        raise
    handle.conn = conn
    return conn, answer


async def close_on_broker(
    handle: HandlerState, handle_id: int, table: HandleTable, command: Callable[[int, int], BaseCommand]
) -> None:
    """Tell the broker ``handle`` is closed (``command(handle_id, request_id)``: CLOSE_PRODUCER or
    CLOSE_CONSUMER) when its connection is alive: what was queued on the connection goes first,
    and an error answer is ignored (the broker forgets the handle with the connection anyway)."""
    conn = handle.conn
    if conn is None or conn.closed:
        return
    conn.flush()
    table(conn).pop(handle_id, None)
    rid = conn.new_request_id()
    try:
        await conn.request(command(handle_id, rid), rid, handle.client.operation_timeout)
    except PulsarError:
        pass


def producer_command(
    config: ProducerConfig, topic: str, producer_id: int, request_id: int, name: str, user_named: bool,
    topic_epoch: int | None,
) -> BaseCommand:
    """PRODUCER for ``topic``: the name held so far (if any), the access mode, the topic epoch of
    an exclusive producer coming back, its properties, initial subscription and schema."""
    cmd = BaseCommand(type=CommandType.PRODUCER)
    p = cmd.producer
    p.topic = topic
    p.producer_id = producer_id
    p.request_id = request_id
    if name:
        p.producer_name = name
    p.user_provided_producer_name = user_named
    p.producer_access_mode = config.access_mode
    # as the Java client: an encrypting producer says so (encryption-required namespaces check it)
    p.encrypted = bool(config.encryption_key)
    if topic_epoch is not None:
        p.topic_epoch = topic_epoch
    for k, v in config.properties.items():
        p.metadata.append(KeyValue(key=k, value=v))
    if config.initial_subscription_name:
        p.initial_subscription_name = config.initial_subscription_name
    schema = config.schema
    info = schema.wire_schema() if schema is not None and hasattr(schema, "wire_schema") else None
    if info is not None:
        p.schema.CopyFrom(info)
    return cmd
