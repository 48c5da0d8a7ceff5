"""What pulsar-admin asks of a topic's stored messages beyond its stats: the managed ledger's info
(info-internal), the internal stats of every partition, the backlog size from a message id, the
message id of a publish time, the offload status, trimming and truncating.

A magnetar topic is one ledger (its id is the topic's ``ledger_id``) cut into segment files; a
sealed segment plays the part of a closed Pulsar ledger, so trimming and truncating release whole
sealed segments, never the one being written (as Pulsar never deletes its current ledger).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, cast

from magnetar.broker.resources.base import ResourceContext
from magnetar.broker.resources.errors import NotAllowedError, NotFoundError
from magnetar.broker.resources.stats import StatsResources
from magnetar.protocol.topic_name import TopicName

if TYPE_CHECKING:
    from magnetar.broker.subscriptions.subscription import Subscription
    from magnetar.broker.topics.persistent import PersistentTopic

#: Pulsar's OffloadProcessStatus of a topic nothing was ever offloaded from (its offloader never ran)
NOT_OFFLOADED = {
    "status": "NOT_RUN",
    "lastError": "",
    "firstUnoffloadedMessage": {"ledgerId": -1, "entryId": -1, "partitionIndex": -1},
}


def iso_date(seconds: float) -> str:
    """A time as Pulsar's DateFormatter prints it (ISO 8601 in UTC, the fraction of a second with the
    digits it needs: ``2026-11-29T04:33:00.54Z``)."""
    ms = int(round(seconds * 1000))
    fraction = f".{ms % 1000:03d}".rstrip("0").rstrip(".")
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + fraction + "Z"


class TopicStorageResources:
    """Storage-level operations on persistent topics (and partitioned ones, partition by partition)."""

    def __init__(self, ctx: ResourceContext, stats: StatsResources) -> None:
        self.ctx = ctx
        self.stats = stats

    async def _persistent(self, tn: TopicName, what: str) -> PersistentTopic:
        self.ctx.persistent_only(tn, what)
        return cast("PersistentTopic", await self.ctx.load_topic(tn))

    async def _each(self, tn: TopicName, what: str) -> list[PersistentTopic]:
        """The topic, or each existing partition of a partitioned topic, loaded."""
        self.ctx.persistent_only(tn, what)
        return [cast("PersistentTopic", t) for t in await self.ctx.targets(tn)]

    # -- reading -------------------------------------------------------------------------
    async def ledger_info(self, tn: TopicName) -> dict[str, Any]:
        """Pulsar's ManagedLedgerInfo of a topic (info-internal); of a partitioned topic, each
        partition's under ``partitions``, as Pulsar's PartitionedManagedLedgerInfo."""
        self.ctx.persistent_only(tn, "info-internal")
        if self.ctx.partitions_of(tn) > 0:
            await self.ctx.namespace_read(tn.namespace)
            partitions = {str(p): await self.ledger_info(p) for p in self.ctx.partitions(tn)
                          if await self.ctx.topic_exists_read(p)}
            return {"version": 0, "ledgers": [], "cursors": {}, "partitions": partitions}
        topic = await self._persistent(tn, "info-internal")
        info = await self.ctx.read(self.ctx.metadata.get_topic_info, topic.name) or {"created_at": time.time()}
        created = iso_date(info["created_at"])
        return {
            "version": 0,
            "creationDate": created,
            "modificationDate": created,
            # the one ledger is the current one: Pulsar gives an open ledger neither entries nor size
            "ledgers": [{"ledgerId": topic.ledger_id, "timestamp": int(info["created_at"] * 1000), "isOffloaded": False}],
            "cursors": {sub.name: _cursor_info(topic, sub, created) for sub in topic.subscriptions.values()
                        if sub.cursor.durable},
        }

    async def partitioned_internal_stats(self, tn: TopicName) -> dict[str, Any]:
        """Pulsar's PartitionedTopicInternalStats: the partitions count and each partition's internal stats."""
        ctx = self.ctx
        ctx.persistent_only(tn, "partitioned-internalStats")
        await ctx.namespace_read(tn.namespace)
        count = ctx.partitions_of(tn)
        if count == 0:
            raise NotFoundError("Partitioned Topic not found")
        partitions = {str(p): await self.stats.internal_stats(p) for p in ctx.partitions(tn) if await ctx.topic_exists_read(p)}
        return {"metadata": {"partitions": count}, "partitions": partitions}

    async def backlog_size(self, tn: TopicName, ledger_id: int, entry_id: int) -> int:
        """Bytes stored from message id ``ledger_id:entry_id`` to the end (every byte for -1:-1), as
        Pulsar's getEstimatedBacklogSize."""
        if self.ctx.partitions_of(tn) > 0:
            raise NotAllowedError("Get backlog size is not allowed for partitioned-topic")
        topic = await self._persistent(tn, "Get backlog size")
        ledger = topic.ledger
        if ledger_id < 0 or ledger_id < topic.ledger_id:
            return ledger.size_bytes
        if ledger_id > topic.ledger_id or entry_id > topic.last_entry_id:
            return 0
        return ledger.bytes_from(max(entry_id, topic.first_entry_id))

    async def message_id_by_time(self, tn: TopicName, timestamp_ms: int) -> dict[str, int]:
        """The id of the first message published at or after ``timestamp_ms``; NotFoundError when none."""
        if self.ctx.partitions_of(tn) > 0:
            raise NotAllowedError(
                "Get message ID by timestamp on a partitioned topic is not allowed, please try do it on specific topic partition"
            )
        topic = await self._persistent(tn, "Get message ID by timestamp")
        entry_id = topic.find_entry_by_time(timestamp_ms)
        if entry_id > topic.last_entry_id:
            raise NotFoundError("Message ID not found")
        return {"ledgerId": topic.ledger_id, "entryId": entry_id, "partitionIndex": tn.partition_index}

    async def offload_status(self, tn: TopicName) -> dict[str, Any]:
        """Pulsar's OffloadProcessStatus: magnetar has no offloader, so it never ran."""
        if self.ctx.partitions_of(tn) > 0:
            raise NotAllowedError("Offload status on a partitioned topic is not allowed")
        await self._persistent(tn, "Offload status")
        return dict(NOT_OFFLOADED)

    # -- releasing -----------------------------------------------------------------------
    async def trim(self, tn: TopicName) -> int:
        """Release now the sealed segments every durable subscription acknowledged, as retention allows
        (Pulsar's trimConsumedLedgersInBackground); the bytes freed."""
        freed = 0
        for topic in await self._each(tn, "Trim topic"):
            before = topic.ledger.size_bytes
            self.ctx.service.maybe_trim(topic)
            freed += before - topic.ledger.size_bytes
        return freed

    async def truncate(self, tn: TopicName) -> int:
        """Pulsar's truncate: move every cursor (subscriptions and replicators) to the end, then release
        every sealed segment below them, whatever the retention; the bytes freed."""
        freed = 0
        for topic in await self._each(tn, "Truncate"):
            end = topic.last_entry_id + 1
            for sub in list(topic.subscriptions.values()):
                if sub.cursor.durable:
                    sub.admin_ack_before(end)
            freed += topic.ledger.trim_before(topic.trim_position())
        return freed


def _cursor_info(topic: PersistentTopic, sub: Subscription, created: str) -> dict[str, Any]:
    """ManagedLedgerInfo.CursorInfo of one durable cursor."""
    lid = topic.ledger_id
    ranges = sub.cursor.individually_acked.ranges()
    out: dict[str, Any] = {
        "version": 0,
        "creationDate": created,
        "modificationDate": created,
        "cursorsLedgerId": -1,
        "markDelete": {"ledgerId": lid, "entryId": sub.cursor.mark_delete},
    }
    if ranges:  # Pulsar leaves out an empty list
        out["individualDeletedMessages"] = [
            {"from": {"ledgerId": lid, "entryId": lo - 1}, "to": {"ledgerId": lid, "entryId": hi}} for lo, hi in ranges
        ]
    return out
