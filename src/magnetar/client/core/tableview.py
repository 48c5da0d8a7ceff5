"""Table views: the latest value of every key of a topic, kept up to date in the client.

A table view reads its topic (every partition) from the earliest message with a compacted
reader, as Pulsar's TableView does: the compacted view first, then the topic after it. Each
message with a key sets that key to its payload; a message with an empty payload or a null
value deletes the key; messages without a key are left out. Creating a view returns once
everything published before it was read; after that a background read applies each new
message and tells the listeners.

``AsyncTableView`` is the asyncio core (``AsyncClient.create_table_view``); the sync face's
``TableView`` (:mod:`magnetar.client.sync.tableview`) wraps it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from magnetar.client.api.message import Message
from magnetar.client.core.reader import AsyncReader
from magnetar.client.exceptions import PulsarError

log = logging.getLogger("magnetar.client.tableview")

#: a listener: called with the key and the decoded value (an empty value's decoding on a delete)
TableListener = Callable[[str, Any], None]


class AsyncTableView:
    """The latest value per key of a topic, read by a compacted reader the view owns."""

    def __init__(self, reader: AsyncReader, schema: Any = None, subscription_name: str | None = None) -> None:
        self._reader = reader
        self._schema = schema
        self._subscription_name = subscription_name
        #: key -> the latest payload (decoded when asked for, as the official client does)
        self._payloads: dict[str, bytes] = {}
        self._listeners: list[TableListener] = []
        self._tail: asyncio.Task | None = None

    @property
    def topic(self) -> str:
        """The topic the view reads."""
        return self._reader.topic

    async def start(self) -> None:
        """Read everything published so far, then follow the topic in the background."""
        reader = self._reader
        while await reader.has_message_available():
            self._apply(await reader.read_next())
        self._tail = asyncio.ensure_future(self._follow())

    async def _follow(self) -> None:
        try:
            async for msg in self._reader:
                self._apply(msg)
        except PulsarError as exc:
            log.warning("table view of %s stopped following the topic: %s", self.topic, exc)

    def _apply(self, msg: Message) -> None:
        if not msg.has_key():
            return
        key = msg.partition_key()
        payload = msg.data()
        if not payload or msg.is_null_value():
            self._payloads.pop(key, None)
            payload = b""
        else:
            self._payloads[key] = payload
        for listener in self._listeners:
            try:
                listener(key, self._decoded(payload))
            except Exception:  # one failing listener must not stop the view
                log.exception("table view of %s: listener failed on key %r", self.topic, key)

    def _decoded(self, payload: bytes) -> Any:
        schema = self._schema
        if schema is None:
            return payload
        if not payload:
            try:
                return schema.decode(payload)
            except Exception:  # a deleted key's value, for a schema that cannot decode nothing
                return None
        return schema.decode(payload)

    def get(self, key: str) -> Any:
        """The value of ``key``, None when the view has no such key."""
        payload = self._payloads.get(key)
        return None if payload is None else self._decoded(payload)

    def keys(self) -> list[str]:
        """The keys the view holds now."""
        return list(self._payloads)

    def items(self) -> list[tuple[str, Any]]:
        """Every (key, value) the view holds now."""
        return [(key, self._decoded(payload)) for key, payload in list(self._payloads.items())]

    def for_each(self, callback: TableListener) -> None:
        """Call ``callback(key, value)`` for each entry the view holds now."""
        for key, value in self.items():
            callback(key, value)

    def for_each_and_listen(self, callback: TableListener) -> None:
        """``for_each``, then call ``callback`` for every change after it (no change falls between)."""
        self.for_each(callback)
        self._listeners.append(callback)

    def __len__(self) -> int:
        return len(self._payloads)

    def __contains__(self, key: object) -> bool:
        return key in self._payloads

    async def close(self) -> None:
        """Stop following the topic and close the reader."""
        await self._reader.close()
        if self._tail is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._tail

    def __repr__(self) -> str:
        if self._subscription_name is None:
            return f"TableView(topic={self.topic})"
        return f"TableView(topic={self.topic}, subscription={self._subscription_name})"


__all__ = ["AsyncTableView", "TableListener"]
