"""What a topic keeps and for how long: retention, message TTL and backlog quotas.

Each function looks at one persistent topic and acts on it; the service calls them after
acknowledgements (trimming) and on a periodic check (everything). Data is released a whole
sealed segment at a time, oldest first.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from magnetar.broker.policies.resolution import MiB
from magnetar.broker.replication.names import is_replicator

if TYPE_CHECKING:
    from magnetar.broker.policies.resolution import TopicPolicies
    from magnetar.broker.subscriptions.subscription import Subscription
    from magnetar.storage import CompactedView, ManagedLedger

log = logging.getLogger("magnetar.broker.topics.lifecycle")


class ExpiringTopic(Protocol):
    """What subscription and topic expiry look at (any topic)."""

    policies: TopicPolicies
    producers: Mapping[str, object]
    subscriptions: Mapping[str, Subscription]
    #: when a producer or subscription last came or went
    last_active: float


class Topic(ExpiringTopic, Protocol):
    """What retention, TTL and backlog quotas use of a persistent topic."""

    name: str
    ledger: ManagedLedger
    #: highest entry id consumers may read
    last_readable_id: int
    compacted: CompactedView | None

    @property
    def last_entry_id(self) -> int:
        """Newest entry readable by consumers (-1 when none)."""
        ...

    def trim_position(self) -> int:
        """Entries below this id are acknowledged by every durable cursor (and compacted, if compacted)."""
        ...

    def find_entry_by_time(self, publish_time_ms: int) -> int:
        """First entry published at or after ``publish_time_ms``."""
        ...

    def entry_publish_time(self, entry_id: int) -> int:
        """Publish time (ms) of an entry."""
        ...


def trim(topic: Topic, now: float | None = None) -> int:
    """Delete sealed segments every durable subscription acknowledged, as retention allows.

    A fully acknowledged segment goes when retention is over its size limit (counting the
    acknowledged segments still kept) or the segment is older than the retention time; a
    limit of -1 never applies. Returns the bytes freed.
    """
    now = time.time() if now is None else now
    topic.ledger.roll_if_due()
    ack_position = topic.trim_position()
    policies = topic.policies
    minutes, size_mb = policies.retention_minutes, policies.retention_mb
    candidates = [s for s in topic.ledger.sealed_segments() if s.last_entry_id < ack_position]
    if not candidates:
        return 0
    retained = sum(s.size_bytes for s in candidates)
    trim_to = None
    for segment in candidates:
        over_size = size_mb >= 0 and retained > size_mb * MiB
        expired = minutes >= 0 and now - segment.modified > minutes * 60
        if not (over_size or expired):
            break
        retained -= segment.size_bytes
        trim_to = segment.last_entry_id + 1
    if trim_to is None:
        return 0
    freed = topic.ledger.trim_before(trim_to)
    if freed:
        log.debug("released %d bytes of %s (entries below %d)", freed, topic.name, trim_to)
    return freed


def expire_messages(topic: Topic, now: float | None = None) -> int:
    """Acknowledge, on every durable subscription, messages older than the topic's TTL."""
    ttl = topic.policies.message_ttl_seconds
    if ttl <= 0:
        return 0
    now = time.time() if now is None else now
    cutoff = topic.find_entry_by_time(int((now - ttl) * 1000))
    expired = 0
    for sub in list(topic.subscriptions.values()):
        if sub.durable and sub.cursor.is_behind(cutoff):
            expired += sub.expire_before(cutoff)
    return expired


def compaction_due(topic: Topic) -> bool:
    """Whether the entries a compaction has not yet read exceed the topic's compaction threshold."""
    threshold = topic.policies.compaction_threshold
    if threshold <= 0:
        return False
    view = topic.compacted
    start = view.horizon + 1 if view is not None else topic.ledger.first_entry_id
    if start > topic.last_readable_id:
        return False
    return topic.ledger.bytes_from(start) > threshold


def backlog_bytes(topic: Topic, sub: Subscription) -> int:
    """Bytes a subscription has not acknowledged (from its mark-delete position)."""
    return sub.cursor.backlog_bytes()


def oldest_unacked_age(topic: Topic, sub: Subscription, now: float) -> float:
    """Seconds since the oldest message a subscription has not acknowledged was published."""
    first = sub.cursor.first_unacked()
    if first > topic.last_entry_id:
        return 0.0
    published = topic.entry_publish_time(first)
    return max(0.0, now - published / 1000.0) if published else 0.0


def quota_exceeded(topic: Topic, now: float | None = None) -> str | None:
    """The policy of the first backlog quota the topic is over, or None."""
    policies = topic.policies
    if policies.size_quota is None and policies.time_quota is None:
        return None
    now = time.time() if now is None else now
    for sub in topic.subscriptions.values():
        if not sub.durable:
            continue
        if policies.size_quota is not None and backlog_bytes(topic, sub) > policies.size_quota.limit:
            return policies.size_quota.policy
        if policies.time_quota is not None and oldest_unacked_age(topic, sub, now) > policies.time_quota.limit:
            return policies.time_quota.policy
    return None


def evict_backlog(topic: Topic, now: float | None = None) -> int:
    """consumer_backlog_eviction: move the slowest subscriptions forward until under quota."""
    policies = topic.policies
    now = time.time() if now is None else now
    evicted = 0
    for sub in list(topic.subscriptions.values()):
        if not sub.durable:
            continue
        size_quota = policies.size_quota
        if size_quota is not None and size_quota.policy == "consumer_backlog_eviction":
            while backlog_bytes(topic, sub) > size_quota.limit and sub.backlog() > 0:
                step = max(1, sub.backlog() // 10)
                evicted += sub.admin_skip(step)
        time_quota = policies.time_quota
        if time_quota is not None and time_quota.policy == "consumer_backlog_eviction":
            cutoff = topic.find_entry_by_time(int((now - time_quota.limit) * 1000))
            if sub.cursor.is_behind(cutoff):
                evicted += sub.admin_ack_before(cutoff)
    return evicted


def expired_subscriptions(topic: ExpiringTopic, now: float) -> list[str]:
    """Durable subscriptions without consumers for longer than the subscription expiration time."""
    minutes = topic.policies.subscription_expiration_minutes
    if minutes <= 0:
        return []
    return [
        name
        for name, sub in topic.subscriptions.items()
        if sub.durable and not sub.consumers and now - sub.last_active > minutes * 60 and not is_replicator(name)
    ]


def topic_inactive(topic: ExpiringTopic, now: float) -> bool:
    """Whether the topic's inactive-topic policy deletes it now, as Pulsar's ``checkGC``.

    A topic is active while it has producers or consumers, and also, in delete_when_no_subscriptions
    mode, while it has subscriptions, in delete_when_subscriptions_caught_up mode while one of them
    has a backlog; an active topic restarts its inactive time. One inactive for
    ``maxInactiveDurationSeconds`` is deleted unless its retention time keeps it (-1: always).
    """
    policy = topic.policies.rates.inactive
    if not policy.enabled:
        return False
    subscriptions = topic.subscriptions.values()
    if policy.mode == "delete_when_subscriptions_caught_up":
        active = any(sub.backlog() > 0 for sub in subscriptions)
    else:
        active = bool(topic.subscriptions)
    if active or topic.producers or any(sub.consumers for sub in subscriptions):
        topic.last_active = now
        return False
    idle = now - topic.last_active
    if idle < policy.seconds:
        return False
    retention = topic.policies.retention_minutes
    return not (retention < 0 or idle < retention * 60)
