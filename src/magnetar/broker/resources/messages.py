"""Stored messages read by the admin API: peek (a subscription's next), examine (n-th from an end)
and by id (ledger:entry).

An entry no longer in memory is read on the ledger's read thread (the ``magnetar-read`` thread that
reads for dispatch), the request waiting for it: the event loop never waits on the segment files.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from magnetar.broker.resources.base import ResourceContext
from magnetar.broker.resources.errors import NotAllowedError, NotFoundError, PreconditionFailedError
from magnetar.protocol.topic_name import TopicName
from magnetar.storage import Entry

if TYPE_CHECKING:
    from magnetar.broker.topics.base import Topic


@dataclass
class PeekedEntry:
    """A stored entry returned by peek / examine, with where it lives."""

    ledger_id: int
    entry: Entry
    partition: int = -1


class MessageResources:
    """Reading stored entries without consuming them."""

    def __init__(self, ctx: ResourceContext) -> None:
        self.ctx = ctx

    async def peek(self, tn: TopicName, sub: str, position: int) -> PeekedEntry:
        """The ``position``-th (from 1) unacknowledged entry of a subscription."""
        ctx = self.ctx
        if ctx.partitions_of(tn) > 0:
            raise NotAllowedError("Peek messages on a partitioned topic is not allowed")
        if position < 1:
            raise PreconditionFailedError("Invalid message position: it must be 1 or more")
        ctx.persistent_only(tn, "Peeking messages")
        topic = await ctx.load_topic(tn)
        cursor = ctx.subscription(topic, sub).cursor
        last = topic.last_entry_id
        buffer = getattr(topic, "txn_buffer", None)

        def next_visible(start: int) -> int:
            entry_id = cursor.next_unacked(start)
            while buffer is not None and entry_id <= last and buffer.hidden(entry_id):
                entry_id = cursor.next_unacked(entry_id + 1)  # a marker or an aborted message
            return entry_id

        entry_id = next_visible(max(cursor.mark_delete + 1, topic.first_entry_id))
        for _ in range(position - 1):
            if entry_id > last:
                break
            entry_id = next_visible(entry_id + 1)
        return await _read(topic, entry_id, tn.partition_index)

    async def examine(self, tn: TopicName, initial_position: str, position: int) -> PeekedEntry:
        """The ``position``-th (from 1) entry from the earliest or the latest one."""
        ctx = self.ctx
        if ctx.partitions_of(tn) > 0:
            raise NotAllowedError("Examine messages on a partitioned topic is not allowed")
        if position < 1:
            raise PreconditionFailedError("Invalid message position: it must be 1 or more")
        ctx.persistent_only(tn, "Examining messages")
        where = (initial_position or "latest").lower()
        if where not in ("earliest", "latest"):
            raise PreconditionFailedError("initialPosition must be 'earliest' or 'latest'")
        topic = await ctx.load_topic(tn)
        if topic.last_entry_id < topic.first_entry_id:
            raise PreconditionFailedError("Could not examine messages due to the total message is zero")
        if where == "earliest":
            entry_id = topic.first_entry_id + position - 1
        else:
            entry_id = topic.last_entry_id - position + 1
        return await _read(topic, entry_id, tn.partition_index)

    async def by_id(self, tn: TopicName, ledger_id: int, entry_id: int) -> PeekedEntry:
        """The stored entry ``ledger_id:entry_id`` of a topic (or partition), as Pulsar's getMessageById."""
        ctx = self.ctx
        if ctx.partitions_of(tn) > 0:
            raise NotAllowedError("GetMessageById is not allowed on partitioned-topic")
        ctx.persistent_only(tn, "Getting a message by id")
        topic = await ctx.load_topic(tn)
        if ledger_id != topic.ledger_id:
            raise NotFoundError(f"Message ID {ledger_id}:{entry_id} not found")
        return await _read(topic, entry_id, tn.partition_index)


async def _read(topic: Topic, entry_id: int, partition: int) -> PeekedEntry:
    if entry_id < topic.first_entry_id or entry_id > topic.last_entry_id:
        raise NotFoundError("Message not found")
    entries = await read_off_loop(topic.ledger, entry_id)  # type: ignore[attr-defined]
    if not entries:
        raise NotFoundError("Message not found")
    return PeekedEntry(topic.ledger_id, entries[0], partition)


class DetachedLedger(Protocol):
    """What :func:`read_off_loop` uses of a managed ledger."""

    @property
    def first_entry_id(self) -> int:
        """Oldest entry still stored."""
        ...

    def in_memory(self, first: int) -> bool:
        """Whether a read from ``first`` on is served from memory."""
        ...

    def read_later(
        self, first: int, last: int, max_bytes: int | None, done: Callable[[list[Entry] | BaseException], None]
    ) -> bool:
        """Read ``first..last`` on the read thread, ``done`` on this one; False when it cannot."""
        ...

    def read_range(self, first: int, last: int, max_bytes: int | None = None) -> list[Entry]:
        """Entries ``first..last`` read now."""
        ...


async def read_off_loop(ledger: DetachedLedger, entry_id: int) -> list[Entry]:
    """The entry ``entry_id`` if still stored ([] when trimmed), read on the ledger's read thread
    unless it is in memory. A read that fails there (trimmed or closed meanwhile, damage) is done once
    more on the spot, for the error (or the entry) a read here gives."""
    if entry_id < ledger.first_entry_id:
        return []
    if not ledger.in_memory(entry_id):
        future: asyncio.Future[list[Entry] | BaseException] = asyncio.get_running_loop().create_future()

        def done(result: list[Entry] | BaseException) -> None:
            if not future.done():
                future.set_result(result)

        if ledger.read_later(entry_id, entry_id, None, done):
            result = await future
            if isinstance(result, list) and result:
                return result
    if entry_id < ledger.first_entry_id:
        return []
    return ledger.read_range(entry_id, entry_id)
