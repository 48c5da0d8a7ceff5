"""Stored messages read by the admin API: peek (a subscription's next), examine (n-th from an end)
and by id (ledger:entry)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

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
        return _read(topic, entry_id, tn.partition_index)

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
        return _read(topic, entry_id, tn.partition_index)

    async def by_id(self, tn: TopicName, ledger_id: int, entry_id: int) -> PeekedEntry:
        """The stored entry ``ledger_id:entry_id`` of a topic (or partition), as Pulsar's getMessageById."""
        ctx = self.ctx
        if ctx.partitions_of(tn) > 0:
            raise NotAllowedError("GetMessageById is not allowed on partitioned-topic")
        ctx.persistent_only(tn, "Getting a message by id")
        topic = await ctx.load_topic(tn)
        if ledger_id != topic.ledger_id:
            raise NotFoundError(f"Message ID {ledger_id}:{entry_id} not found")
        return _read(topic, entry_id, tn.partition_index)


def _read(topic: Topic, entry_id: int, partition: int) -> PeekedEntry:
    if entry_id < topic.first_entry_id or entry_id > topic.last_entry_id:
        raise NotFoundError("Message not found")
    entries = topic.read_entries(entry_id, entry_id)
    if not entries:
        raise NotFoundError("Message not found")
    return PeekedEntry(topic.ledger_id, entries[0], partition)
