"""Topic statistics in the shape of Pulsar's TopicStats, PartitionedTopicStats and
PersistentTopicInternalStats (camelCase field names), as plain dicts.

The broker builds them, as Pulsar's broker builds its stats objects: they read topics,
subscriptions, cursors and the rate tracker, which the HTTP layer has no business reaching into.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, cast

from magnetar.broker.policies.registry import DEDUPLICATION
from magnetar.broker.replication.names import is_replicator
from magnetar.broker.replication.stats import replication_stats
from magnetar.broker.resources.base import ResourceContext
from magnetar.broker.resources.errors import NotFoundError
from magnetar.broker.resources.policies import PolicyResources
from magnetar.broker.resources.stats_partitioned import add_partition, finish, partitioned_sums
from magnetar.broker.resources.stats_tracker import StatsTracker
from magnetar.broker.subscriptions.properties import load_properties
from magnetar.protocol.enums import SubType
from magnetar.protocol.topic_name import TopicName

if TYPE_CHECKING:
    from magnetar.broker.subscriptions.consumer import Consumer
    from magnetar.broker.subscriptions.subscription import Subscription
    from magnetar.broker.topics.base import Topic
    from magnetar.broker.topics.persistent import PersistentTopic
    from magnetar.broker.topics.producer import Producer
    from magnetar.storage import MetadataStore

#: TopicStats fields of what magnetar does not have or never counts (offload, delayed-message index,
#: publish rate limiting, system topics, internal bytes): Pulsar's values when they are unused
_TOPIC_ZEROS: dict[str, Any] = {
    "bytesOutInternalCounter": 0,
    "systemTopicBytesInCounter": 0,
    "publishRateLimitedTimes": 0,
    "delayedMessageIndexSizeInBytes": 0,
    "lastOffloadLedgerId": 0,
    "lastOffloadSuccessTimeStamp": 0,
    "lastOffloadFailureTimeStamp": 0,
}
#: SubscriptionStats fields of what magnetar does not have (dispatch throttling events, entry filters,
#: Key_Shared draining hashes, the delayed-message index, the replay queue): zero, as Pulsar's when unused
_SUBSCRIPTION_ZEROS: dict[str, Any] = {
    "delayedMessageIndexSizeInBytes": 0,
    "msgInReplay": 0,
    "msgExpired": 0,
    "dispatchThrottledMsgEventsBySubscriptionLimit": 0,
    "dispatchThrottledBytesEventsBySubscriptionLimit": 0,
    "dispatchThrottledMsgEventsByTopicLimit": 0,
    "dispatchThrottledBytesEventsByTopicLimit": 0,
    "dispatchThrottledMsgEventsByBrokerLimit": 0,
    "dispatchThrottledBytesEventsByBrokerLimit": 0,
    "filterProcessedMsgCount": 0,
    "filterAcceptedMsgCount": 0,
    "filterRejectedMsgCount": 0,
    "filterRescheduledMsgCount": 0,
    "drainingHashesCount": 0,
    "drainingHashesClearedTotal": 0,
    "drainingHashesUnackedMessages": 0,
}
#: ConsumerStats fields of Key_Shared's draining hashes (magnetar has none) and the ack rate
_CONSUMER_ZEROS: dict[str, Any] = {
    "messageAckRate": 0.0,
    "drainingHashesCount": 0,
    "drainingHashesClearedTotal": 0,
    "drainingHashesUnackedMessages": 0,
}
#: subscription types whose consumers count unacknowledged messages: Pulsar keeps pending acks (and
#: so ``unackedMessages``) only where messages are acknowledged one by one
_INDIVIDUAL_ACK = frozenset({SubType.Shared, SubType.Key_Shared})
#: the cursor property of a replicated subscription (Pulsar's PersistentSubscription.REPLICATED_SUBSCRIPTION_PROPERTY)
REPLICATED_PROPERTY = "pulsar.replicated.subscription"


def instant(ms: int) -> str:
    """Epoch milliseconds as Java's ``Instant.toString()`` prints them (Pulsar's ``lastAckedTime``):
    no fraction on a whole second, ``1970-01-01T00:00:00Z`` for 0."""
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000))
    return f"{text}.{ms % 1000:03d}Z" if ms % 1000 else f"{text}Z"


def date_time(ms: int) -> str:
    """Epoch milliseconds as Pulsar's DateFormatter prints internal-stats times (ISO-8601 with the
    zone's offset, UTC here): the fraction without its trailing zeros, none on a whole second."""
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000))
    fraction = f".{ms % 1000:03d}".rstrip("0") if ms % 1000 else ""
    return f"{text}{fraction}Z"


def _stored_properties(metadata: MetadataStore, topic: str, names: list[str]) -> dict[str, dict[str, str]]:
    """(blocking: a store read per name) The stored properties of a topic's durable subscriptions."""
    return {name: load_properties(metadata, topic, name) for name in names}


def iso_time(seconds: float) -> str:
    """An ISO 8601 UTC timestamp with milliseconds, as Pulsar prints dates in stats."""
    ms = int(round(seconds * 1000))
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def empty_stats() -> dict[str, Any]:
    """The numeric fields of a TopicStats, all zero."""
    return {
        "msgRateIn": 0.0,
        "msgThroughputIn": 0.0,
        "msgRateOut": 0.0,
        "msgThroughputOut": 0.0,
        "bytesInCounter": 0,
        "msgInCounter": 0,
        "bytesOutCounter": 0,
        "msgOutCounter": 0,
        "averageMsgSize": 0.0,
        "msgChunkPublished": False,
        "storageSize": 0,
        "backlogSize": 0,
        "earliestMsgPublishTimeInBacklogs": 0,
        "offloadedStorageSize": 0,
        "publishers": [],
        "waitingPublishers": 0,
        "subscriptions": {},
        "replication": {},
        "deduplicationStatus": "Disabled",
        "nonContiguousDeletedMessagesRanges": 0,
        "nonContiguousDeletedMessagesRangesSerializedSize": 0,
    }


class StatsResources:
    """Statistics of topics, partitioned topics and their storage."""

    def __init__(self, ctx: ResourceContext, policies: PolicyResources, tracker: StatsTracker) -> None:
        self.ctx = ctx
        self.policies = policies
        self.tracker = tracker

    async def topic_stats(self, tn: TopicName, earliest: bool = False) -> dict[str, Any]:
        """A topic's TopicStats; ``earliest``: with earliestMsgPublishTimeInBacklog(s) (Pulsar's
        ``getEarliestTimeInBacklog``: it reads the oldest unacknowledged entry of each subscription)."""
        topic = await self.ctx.load_topic(tn)
        return self._stats_of(topic, earliest, await self._properties(topic))

    async def _properties(self, topic: Topic) -> dict[str, dict[str, str]]:
        """The subscription properties of a topic's durable subscriptions, read off the loop."""
        names = [sub.name for sub in topic.subscriptions.values() if sub.durable and not is_replicator(sub.name)]
        if not names:
            return {}
        return await asyncio.to_thread(_stored_properties, self.ctx.metadata, topic.name, names)

    def _stats_of(self, topic: Topic, earliest: bool = False,
                  properties: dict[str, dict[str, str]] | None = None) -> dict[str, Any]:
        numbers = self.tracker.topic_numbers(topic)
        out = empty_stats()
        out.update(numbers)
        out.update(_TOPIC_ZEROS)
        quotas = topic.policies
        out["backlogQuotaLimitSize"] = quotas.size_quota.limit if quotas.size_quota is not None else -1
        out["backlogQuotaLimitTime"] = quotas.time_quota.limit if quotas.time_quota is not None else -1
        out["oldestBacklogMessageAgeSeconds"] = -1  # as Pulsar's, unless a time quota is checked
        entries = max(0, topic.last_entry_id - topic.first_entry_id + 1)
        storage = topic.stats_storage_size()
        avg_entry = storage / entries if entries else 0.0
        out["storageSize"] = storage
        out["averageMsgSize"] = numbers["msgThroughputIn"] / numbers["msgRateIn"] if numbers["msgRateIn"] else 0.0
        out["publishers"] = [self._publisher_stats(topic, producer) for producer in topic.producers.values()
                             if producer.remote_cluster is None]
        out["replication"] = replication_stats(topic, self.ctx.service, self.tracker)
        out["lastPublishTimeStamp"] = topic.last_publish_ms
        out["topicCreationTimeStamp"] = topic.created_ms
        subs: dict[str, Any] = {}
        backlog_total = 0
        ranges_total = 0
        replication = self.ctx.service.replication if topic.persistent else None
        for sub in topic.subscriptions.values():
            if is_replicator(sub.name):
                continue
            s = self._subscription_stats(topic, sub, avg_entry, earliest)
            s["subscriptionProperties"] = dict((properties or {}).get(sub.name, {}))
            replicated = replication is not None and replication.is_subscription_replicated(topic, sub.name)
            s["isReplicated"] = s["replicated"] = replicated
            subs[sub.name] = s
            backlog_total = max(backlog_total, s["backlogSize"])
            ranges_total += s["nonContiguousDeletedMessagesRanges"]
        out["subscriptions"] = subs
        out["backlogSize"] = backlog_total
        earliest = [s["earliestMsgPublishTimeInBacklog"] for s in subs.values() if s["earliestMsgPublishTimeInBacklog"]]
        out["earliestMsgPublishTimeInBacklogs"] = min(earliest, default=0)
        out["nonContiguousDeletedMessagesRanges"] = ranges_total
        dedup = self.policies.effective_policy(topic.topic_name, DEDUPLICATION.name)
        out["deduplicationStatus"] = "Enabled" if dedup else "Disabled"
        config = self.ctx.config
        out["ownerBroker"] = f"{config.service_host}:{config.http_port}"
        out["compaction"] = {
            "lastCompactionRemovedEventCount": 0,
            "lastCompactionSucceedTimestamp": 0,
            "lastCompactionFailedTimestamp": 0,
            "lastCompactionDurationTimeInMills": 0,
            **self.ctx.service.compactor.stats.get(topic.name, {}),
        }
        buffer = getattr(topic, "txn_buffer", None)  # Pulsar's transaction counts of a topic
        out["ongoingTxnCount"] = len(buffer.ongoing) if buffer is not None else 0
        out["abortedTxnCount"] = buffer.aborted_count if buffer is not None else 0
        out["committedTxnCount"] = buffer.committed_count if buffer is not None else 0
        return out

    def _publisher_stats(self, topic: Topic, producer: Producer) -> dict[str, Any]:
        p = self.tracker.producer_numbers(topic, producer)
        return {
            "accessMode": producer.access_mode.name,
            "msgRateIn": p["msgRateIn"],
            "msgThroughputIn": p["msgThroughputIn"],
            "averageMsgSize": p["msgThroughputIn"] / p["msgRateIn"] if p["msgRateIn"] else 0.0,
            "chunkedMessageRate": 0.0,
            "producerId": producer.producer_id,
            "supportsPartialProducer": False,
            "producerName": producer.name,
            "address": producer.connection.peer,
            "connectedSince": iso_time(producer.connected_since),
            "clientVersion": producer.connection.client_version,
            "metadata": dict(producer.metadata),
        }

    def _consumer_stats(self, topic: Topic, sub: Subscription, c: Consumer) -> dict[str, Any]:
        cn = self.tracker.consumer_numbers(topic, sub, c)
        # the subscription's dispatcher keeps the moving average Pulsar keeps per consumer
        per_entry = getattr(sub.dispatcher, "avg_messages_per_entry", None) or 0
        return {
            **_CONSUMER_ZEROS,
            "msgRateOut": cn["msgRateOut"],
            "msgThroughputOut": cn["msgThroughputOut"],
            "bytesOutCounter": cn["bytesOutCounter"],
            "msgOutCounter": cn["msgOutCounter"],
            "msgRateRedeliver": 0.0,
            "chunkedMessageRate": 0.0,
            "consumerName": c.name,
            "availablePermits": max(0, c.permits),
            "unackedMessages": c.unacked_messages if sub.sub_type in _INDIVIDUAL_ACK else 0,
            "avgMessagesPerEntry": round(per_entry),
            "blockedConsumerOnUnackedMsgs": c.blocked,
            "address": c.connection.peer,
            "connectedSince": iso_time(c.connected_since),
            "clientVersion": c.connection.client_version,
            "lastAckedTimestamp": c.last_acked_ms,
            "lastConsumedTimestamp": c.last_consumed_ms,
            "lastAckedTime": instant(c.last_acked_ms),
            "lastConsumedTime": instant(c.last_consumed_ms),
            "firstConsumedFlowTimestamp": c.first_flow_ms,
            "lastConsumedFlowTimestamp": c.last_flow_ms,
            "firstMessagesSentTimestamp": c.first_sent_ms,
            "metadata": dict(c.metadata),
        }

    def _subscription_stats(self, topic: Topic, sub: Subscription, avg_entry: float,
                            earliest_wanted: bool = False) -> dict[str, Any]:
        numbers = self.tracker.subscription_numbers(topic, sub)
        backlog = sub.backlog()
        expired, last_expire, earliest = 0, 0.0, 0
        if sub.persistent:  # expiry (TTL and expire-messages) is counted by the subscription itself
            expired, last_expire = sub.msg_expired_counter, sub.last_expire_time
            earliest = sub.earliest_publish_time_in_backlog() if backlog and earliest_wanted else 0
        individual = sub.sub_type in _INDIVIDUAL_ACK
        out = {
            "msgRateOut": numbers["msgRateOut"],
            "msgThroughputOut": numbers["msgThroughputOut"],
            "bytesOutCounter": numbers["bytesOutCounter"],
            "msgOutCounter": numbers["msgOutCounter"],
            "msgRateRedeliver": 0.0,
            "messageAckRate": 0.0,
            "chunkedMessageRate": 0,
            "msgBacklog": backlog,
            "backlogSize": int(backlog * avg_entry),
            "earliestMsgPublishTimeInBacklog": earliest,
            "msgBacklogNoDelayed": backlog,
            "blockedSubscriptionOnUnackedMsgs": sub.blocked_on_unacked(),
            "msgDelayed": 0,
            "unackedMessages": sub.unacked_messages() if individual else 0,
            "type": sub.sub_type.name if sub.sub_type is not None else "Exclusive",
            "msgRateExpired": 0.0,
            "totalMsgExpired": expired,
            "lastExpireTimestamp": int(last_expire * 1000),
            # as Pulsar: the consumers' latest (0 once they are gone), and the subscription's own
            "lastConsumedFlowTimestamp": sub.last_consumed_flow_ms,
            "lastConsumedTimestamp": max((c.last_consumed_ms for c in sub.consumers), default=0),
            "lastAckedTimestamp": max((c.last_acked_ms for c in sub.consumers), default=0),
            "lastMarkDeleteAdvancedTimestamp": sub.last_mark_delete_advanced_ms,
            "consumers": [self._consumer_stats(topic, sub, c) for c in sub.consumers],
            "isDurable": sub.durable,
            "durable": sub.durable,
            "isReplicated": False,
            "replicated": False,
            "allowOutOfOrderDelivery": False,
            "consumersAfterMarkDeletePosition": {},
            "nonContiguousDeletedMessagesRanges": sub.cursor.individually_acked.range_count() if sub.persistent else 0,
            "nonContiguousDeletedMessagesRangesSerializedSize": 0,
            "subscriptionProperties": {},
            **_SUBSCRIPTION_ZEROS,
        }
        if not individual:  # a single active consumer: Pulsar names it (and only then)
            active = getattr(sub.dispatcher, "active", None)
            if active is None and sub.consumers:
                active = sub.consumers[0]
            if active is not None:
                out["activeConsumerName"] = active.name
        return out

    async def partitioned_stats(self, tn: TopicName, per_partition: bool = True, earliest: bool = False) -> dict[str, Any]:
        """A partitioned topic's stats: its partitions' summed (and each, with ``per_partition``)."""
        ctx = self.ctx
        await ctx.namespace_read(tn.namespace)
        n = ctx.partitions_of(tn)
        if n <= 0:
            raise NotFoundError(f"Partitioned Topic {tn} not found")
        out = partitioned_sums()
        out["metadata"] = {"partitions": n, "deleted": False}
        out["partitions"] = {}
        for p in ctx.partitions(tn):
            if not await ctx.topic_exists_read(p):
                continue
            topic = await ctx.load_topic(p)
            stats = self._stats_of(topic, earliest, await self._properties(topic))
            add_partition(out, stats)
            if per_partition:
                out["partitions"][str(p)] = stats
        finish(out)
        return out

    async def internal_stats(self, tn: TopicName) -> dict[str, Any]:
        """A topic's PersistentTopicInternalStats: its ledger and cursors."""
        self.ctx.persistent_only(tn, "internalStats")
        topic = cast("PersistentTopic", await self.ctx.load_topic(tn))
        ledger = topic.ledger
        lid = topic.ledger_id
        entries = max(0, topic.last_entry_id - topic.first_entry_id + 1)
        size = topic.stats_storage_size()
        replication = self.ctx.service.replication
        cursors = {sub.name: _cursor_stats(topic, sub, replication.is_subscription_replicated(topic, sub.name))
                   for sub in topic.subscriptions.values()}
        return {
            "entriesAddedCounter": ledger.next_entry_id,
            "numberOfEntries": entries,
            "totalSize": size,
            "currentLedgerEntries": entries,
            "currentLedgerSize": size,
            "lastLedgerCreatedTimestamp": date_time(await _current_ledger_created_ms(topic)),
            "waitingCursorsCount": sum(1 for c in cursors.values() if c["waitingReadOp"]),
            "pendingAddEntriesCount": max(0, ledger.last_entry_id - topic.last_entry_id),
            "lastConfirmedEntry": f"{lid}:{topic.last_entry_id}",
            "state": "LedgerOpened",
            # as Pulsar lists the ledger being written: its entries and size are counted once it is closed
            "ledgers": [{"ledgerId": lid, "entries": 0, "size": 0, "offloaded": False, "underReplicated": False}],
            "cursors": cursors,
            "schemaLedgers": [],
            "compactedLedger": _compacted_ledger(topic),
            "properties": {},
        }

    async def last_message_id(self, tn: TopicName) -> dict[str, Any]:
        """The id of a topic's last message."""
        topic = await self.ctx.load_topic(tn)
        ledger_id, entry_id, batch_index = topic.last_message_id()
        out: dict[str, Any] = {"ledgerId": ledger_id, "entryId": entry_id, "partitionIndex": tn.partition_index}
        if batch_index >= 0:
            out["batchIndex"] = batch_index
        return out


def _cursor_stats(topic: Topic, sub: Subscription, replicated: bool) -> dict[str, Any]:
    """internal-stats of one cursor; ``replicated``: its subscription's state is carried to other clusters."""
    lid = topic.ledger_id
    cursor = sub.cursor
    ranges = cursor.individually_acked.ranges()
    deleted = ",".join(f"({lid}:{lo - 1}..{lid}:{hi}]" for lo, hi in ranges)
    # caught up, with a consumer that asked for more: Pulsar's cursor has a read waiting for new entries
    waiting = sub.read_position > topic.last_entry_id and any(c.permits > 0 for c in sub.consumers)
    # a durable cursor that never moved has, in Pulsar, no ledger of its own yet
    untouched = sub.durable and not sub.last_mark_delete_advanced_ms and not ranges
    return {
        "markDeletePosition": f"{lid}:{cursor.mark_delete}",
        "readPosition": f"{lid}:{sub.read_position}",
        "waitingReadOp": waiting,
        "pendingReadOps": 0,
        "messagesConsumedCounter": max(0, cursor.mark_delete - topic.first_entry_id + 1),
        "cursorLedger": -1,
        "cursorLedgerLastEntry": -1,
        "individuallyDeletedMessages": f"[{deleted}]",
        "lastLedgerSwitchTimestamp": date_time(sub.cursor_opened_ms),
        "state": "NoLedger" if untouched else "Open",
        "active": bool(sub.consumers),
        # Pulsar counts the positions in (mark-delete, read position], the read position included
        "numberOfEntriesSinceFirstNotAckedMessage": max(0, sub.read_position - cursor.mark_delete),
        "totalNonContiguousDeletedMessagesRange": len(ranges),
        "subscriptionHavePendingRead": waiting,
        "subscriptionHavePendingReplayRead": False,
        # Pulsar marks a replicated subscription's cursor with this property
        "properties": {REPLICATED_PROPERTY: 1} if replicated else {},
    }


async def _current_ledger_created_ms(topic: PersistentTopic) -> int:
    """When the ledger being written started (epoch ms), as Pulsar's lastLedgerCreatedTimestamp: the
    active segment's start, the later of the ledger's opening here (Pulsar starts a ledger at every
    load) and the last roll-over (when the newest sealed segment was last written: sealing writes it
    last). The segment files are looked at off the loop."""
    sealed = await asyncio.to_thread(topic.ledger.sealed_segments)
    rolled = int(sealed[-1].modified * 1000) if sealed else 0
    return max(topic.ledger_opened_ms, rolled)


def _compacted_ledger(topic: PersistentTopic) -> dict[str, Any]:
    """internal-stats ``compactedLedger``: the compacted view (its number stands for a ledger id)."""
    view = topic.compacted
    if view is None:
        return {"ledgerId": -1, "entries": -1, "size": -1, "offloaded": False, "underReplicated": False}
    size = view.ledger.size_bytes if not view.ledger.closed else 0
    return {"ledgerId": int(view.name), "entries": len(view), "size": size, "offloaded": False, "underReplicated": False}
