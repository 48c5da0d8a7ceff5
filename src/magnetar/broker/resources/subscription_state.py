"""What pulsar-admin reads and sets of a subscription beyond its cursor: the backlog analysis and the
subscription's properties (the replicated subscription status is resources/policies.py's).

A subscription's properties are :mod:`magnetar.broker.subscriptions.properties`' (the metadata store);
deleting the subscription over the admin API deletes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from magnetar.broker.resources.base import ResourceContext
from magnetar.broker.resources.errors import NotAllowedError, PreconditionFailedError
from magnetar.broker.subscriptions.properties import load_properties, store_properties
from magnetar.protocol.framing import ProtocolError, parse_entry_metadata
from magnetar.protocol.topic_name import TopicName
from magnetar.storage import StorageError

if TYPE_CHECKING:
    from magnetar.broker.topics.persistent import PersistentTopic

#: at most this many entries are read by one backlog analysis (Pulsar's subscriptionBacklogScanMaxEntries)
SCAN_MAX_ENTRIES = 10_000


class SubscriptionStateResources:
    """Backlog analysis and properties of subscriptions."""

    def __init__(self, ctx: ResourceContext) -> None:
        self.ctx = ctx

    async def analyze_backlog(self, tn: TopicName, sub: str, start: tuple[int, int] | None) -> dict[str, Any]:
        """Pulsar's AnalyzeSubscriptionBacklogResult: the entries and messages of the backlog, read from
        the first unacknowledged entry (or ``start``) on; magnetar has no entry filters, so every entry
        is accepted. At most :data:`SCAN_MAX_ENTRIES` entries are read (``aborted`` says so)."""
        ctx = self.ctx
        if ctx.partitions_of(tn) > 0:
            raise NotAllowedError("Analyze backlog on a partitioned topic is not allowed")
        ctx.persistent_only(tn, "Analyze backlog")
        topic: PersistentTopic = await ctx.load_topic(tn)  # type: ignore[assignment]
        cursor = ctx.subscription(topic, sub).cursor
        first = cursor.mark_delete + 1
        if start is not None and start[0] == topic.ledger_id:
            first = start[1]
        first = max(first, topic.first_entry_id)
        last = min(topic.last_entry_id, first + SCAN_MAX_ENTRIES - 1)
        entries = messages = 0
        for entry_id in range(first, last + 1):
            if cursor.is_acked(entry_id):
                continue
            entries += 1
            messages += _messages_in(topic, entry_id)
        out: dict[str, Any] = {
            "entries": entries, "messages": messages,
            "filterRejectedEntries": 0, "filterAcceptedEntries": entries, "filterRescheduledEntries": 0,
            "filterRejectedMessages": 0, "filterAcceptedMessages": messages, "filterRescheduledMessages": 0,
            "aborted": last < topic.last_entry_id,
        }
        if entries:
            out["firstMessageId"] = f"{topic.ledger_id}:{first}"
            out["lastMessageId"] = f"{topic.ledger_id}:{last}"
        return out

    # -- properties ----------------------------------------------------------------------
    async def get_properties(self, tn: TopicName, sub: str) -> dict[str, str]:
        """A subscription's properties (of the first partition that has it, for a partitioned topic)."""
        found = await self.ctx.subscriptions_named(tn, sub)
        return await self.ctx.read(load_properties, self.ctx.metadata, found[0][0].name, sub)

    async def set_properties(self, tn: TopicName, sub: str, properties: dict[str, str]) -> None:
        """Replace a subscription's properties (on every partition of a partitioned topic)."""
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in properties.items()):
            raise PreconditionFailedError("Subscription properties must map names to strings")
        names = [topic.name for topic, _ in await self.ctx.subscriptions_named(tn, sub)]
        await self.ctx.write(self._store, names, sub, properties)

    def _store(self, topics: list[str], sub: str, properties: dict[str, str]) -> None:
        """(a write job) The subscription's properties on each of ``topics``."""
        for topic in topics:
            store_properties(self.ctx.metadata, topic, sub, properties)

    def forget_properties(self, topics: list[str], sub: str) -> None:
        """The subscription is gone: so are its properties (a write job of the REST route)."""
        for topic in topics:
            store_properties(self.ctx.metadata, topic, sub, {})


def _messages_in(topic: PersistentTopic, entry_id: int) -> int:
    """Messages in one stored entry (its batch size; 1 when it cannot be read)."""
    try:
        meta = parse_entry_metadata(topic.ledger.read(entry_id).data)
    except (ProtocolError, StorageError):
        return 1
    return meta.num_messages_in_batch if meta.HasField("num_messages_in_batch") else 1
