"""A partitioned topic's stats summed over its partitions, as Pulsar's PartitionedTopicStats adds them.

Pulsar sums the counters and rates of topics, subscriptions, publishers and consumers; publishers
and the consumers of a subscription are merged position by position (the first of every partition
into one, and so on), keeping only what can be summed (no address, version or connection time),
and the times of a subscription and of its consumers stay 0 in the sum.
(tools/stats_compare.py compares the result with Apache Pulsar's; docs/STATS.md.)
"""

from __future__ import annotations

import copy
from typing import Any

_TOPIC_SUMS = (
    "msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut", "bytesInCounter", "msgInCounter",
    "bytesOutCounter", "msgOutCounter", "storageSize", "backlogSize", "nonContiguousDeletedMessagesRanges",
    "waitingPublishers", "ongoingTxnCount", "abortedTxnCount", "committedTxnCount",
)
_SUBSCRIPTION_SUMS = (
    "msgRateOut", "msgThroughputOut", "bytesOutCounter", "msgOutCounter", "msgBacklog", "backlogSize",
    "msgBacklogNoDelayed", "unackedMessages", "totalMsgExpired", "nonContiguousDeletedMessagesRanges",
    "msgRateRedeliver", "messageAckRate", "chunkedMessageRate", "msgDelayed", "msgRateExpired",
)
#: a subscription's times: 0 in the sum, as in Pulsar's
_SUBSCRIPTION_TIMES = (
    "lastConsumedFlowTimestamp", "lastConsumedTimestamp", "lastAckedTimestamp", "lastMarkDeleteAdvancedTimestamp",
    "lastExpireTimestamp",
)
_PUBLISHER_SUMS = ("msgRateIn", "msgThroughputIn", "averageMsgSize", "chunkedMessageRate")
_CONSUMER_SUMS = (
    "msgRateOut", "msgThroughputOut", "bytesOutCounter", "msgOutCounter", "msgRateRedeliver", "messageAckRate",
    "chunkedMessageRate", "availablePermits", "unackedMessages",
)


def partitioned_sums() -> dict[str, Any]:
    """The sums before any partition is added: a partitioned topic's own fields."""
    return {
        "msgRateIn": 0.0, "msgThroughputIn": 0.0, "msgRateOut": 0.0, "msgThroughputOut": 0.0,
        "bytesInCounter": 0, "msgInCounter": 0, "bytesOutCounter": 0, "msgOutCounter": 0,
        "averageMsgSize": 0.0, "msgChunkPublished": False, "storageSize": 0, "backlogSize": 0,
        "earliestMsgPublishTimeInBacklogs": 0, "offloadedStorageSize": 0, "publishers": [],
        "waitingPublishers": 0, "subscriptions": {}, "replication": {},
        "nonContiguousDeletedMessagesRanges": 0, "nonContiguousDeletedMessagesRangesSerializedSize": 0,
        "ongoingTxnCount": 0, "abortedTxnCount": 0, "committedTxnCount": 0,
        "compaction": {"lastCompactionRemovedEventCount": 0, "lastCompactionSucceedTimestamp": 0,
                       "lastCompactionFailedTimestamp": 0, "lastCompactionDurationTimeInMills": 0},
        "bytesOutInternalCounter": 0, "systemTopicBytesInCounter": 0, "publishRateLimitedTimes": 0,
        "delayedMessageIndexSizeInBytes": 0, "lastOffloadLedgerId": 0, "lastOffloadSuccessTimeStamp": 0,
        "lastOffloadFailureTimeStamp": 0, "oldestBacklogMessageAgeSeconds": 0,
        "backlogQuotaLimitSize": -1, "backlogQuotaLimitTime": -1,
        "lastPublishTimeStamp": 0, "topicCreationTimeStamp": 0,
    }


def add_partition(out: dict[str, Any], stats: dict[str, Any]) -> None:
    """Add one partition's TopicStats to the partitioned topic's sums."""
    for key in _TOPIC_SUMS:
        out[key] += stats[key]
    out["backlogQuotaLimitSize"] = stats["backlogQuotaLimitSize"]
    out["backlogQuotaLimitTime"] = stats["backlogQuotaLimitTime"]
    # as Pulsar's sum: the latest publish of any partition, the creation of the oldest
    out["lastPublishTimeStamp"] = max(out["lastPublishTimeStamp"], stats["lastPublishTimeStamp"])
    created = [t for t in (out["topicCreationTimeStamp"], stats["topicCreationTimeStamp"]) if t]
    out["topicCreationTimeStamp"] = min(created, default=0)
    if stats["earliestMsgPublishTimeInBacklogs"]:
        earliest = [t for t in (out["earliestMsgPublishTimeInBacklogs"], stats["earliestMsgPublishTimeInBacklogs"]) if t]
        out["earliestMsgPublishTimeInBacklogs"] = min(earliest)
    _merge_by_position(out["publishers"], stats["publishers"], _summed_publisher, _PUBLISHER_SUMS)
    for name, s in stats["subscriptions"].items():
        agg = out["subscriptions"].get(name)
        if agg is None:
            agg = out["subscriptions"][name] = copy.deepcopy(s)
            agg.pop("activeConsumerName", None)
            agg["consumers"] = []
            for key in _SUBSCRIPTION_TIMES:
                agg[key] = 0
        else:
            for key in _SUBSCRIPTION_SUMS:
                agg[key] += s[key]
            agg["blockedSubscriptionOnUnackedMsgs"] |= s["blockedSubscriptionOnUnackedMsgs"]
            if s["earliestMsgPublishTimeInBacklog"]:
                times = [t for t in (agg["earliestMsgPublishTimeInBacklog"], s["earliestMsgPublishTimeInBacklog"]) if t]
                agg["earliestMsgPublishTimeInBacklog"] = min(times)
        _merge_by_position(agg["consumers"], s["consumers"], _summed_consumer, _CONSUMER_SUMS)


def finish(out: dict[str, Any]) -> None:
    """What is derived from the sums once every partition is in."""
    out["averageMsgSize"] = out["msgThroughputIn"] / out["msgRateIn"] if out["msgRateIn"] else 0.0


def _merge_by_position(into: list[dict[str, Any]], items: list[dict[str, Any]], start: Any, sums: tuple[str, ...]) -> None:
    for i, item in enumerate(items):
        if i == len(into):
            into.append(start(item))
        else:
            for key in sums:
                into[i][key] += item[key]
            if "blockedConsumerOnUnackedMsgs" in item:
                into[i]["blockedConsumerOnUnackedMsgs"] |= item["blockedConsumerOnUnackedMsgs"]


def _summed_publisher(p: dict[str, Any]) -> dict[str, Any]:
    return {**{key: p[key] for key in _PUBLISHER_SUMS}, "producerId": 0, "supportsPartialProducer": False}


def _summed_consumer(c: dict[str, Any]) -> dict[str, Any]:
    return {
        **{key: c[key] for key in _CONSUMER_SUMS},
        "consumerName": c["consumerName"],
        "avgMessagesPerEntry": 0,
        "blockedConsumerOnUnackedMsgs": c["blockedConsumerOnUnackedMsgs"],
        "drainingHashesCount": 0, "drainingHashesClearedTotal": 0, "drainingHashesUnackedMessages": 0,
        "firstConsumedFlowTimestamp": c["firstConsumedFlowTimestamp"],
        "firstMessagesSentTimestamp": c["firstMessagesSentTimestamp"],
        "lastAckedTimestamp": 0, "lastConsumedTimestamp": 0, "lastConsumedFlowTimestamp": 0,
        "lastAckedTime": "1970-01-01T00:00:00Z", "lastConsumedTime": "1970-01-01T00:00:00Z",
    }
