"""Subscriptions: list, create at a message id, delete, skip, expire, reset the cursor."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from magnetar.broker.replication.names import is_replicator
from magnetar.broker.resources.base import LATEST_LEDGER, U64, ResourceContext
from magnetar.broker.resources.errors import (
    ConflictError,
    NotAllowedError,
    NotFoundError,
    PreconditionFailedError,
)
from magnetar.protocol.enums import InitialPosition
from magnetar.protocol.topic_name import TopicName

if TYPE_CHECKING:
    from magnetar.broker.subscriptions.subscription import Subscription
    from magnetar.broker.topics.base import Topic


class SubscriptionResources:
    """Subscriptions of topics (of every partition of a partitioned topic)."""

    def __init__(self, ctx: ResourceContext) -> None:
        self.ctx = ctx

    async def list_subscriptions(self, tn: TopicName) -> list[str]:
        """The subscriptions of a topic (of all its partitions)."""
        names: dict[str, None] = {}
        for topic in await self.ctx.targets(tn):
            names.update((s, None) for s in topic.subscriptions if not is_replicator(s))
        return list(names)

    async def create_subscription(self, tn: TopicName, sub: str, position: tuple[int, int] | None) -> None:
        """Create a durable subscription at a message id (latest when None); ConflictError when it exists.

        ``position`` is (ledger id, entry id) as signed longs: (-1, -1) is earliest and
        (Long.MAX_VALUE, Long.MAX_VALUE) latest, as in Pulsar's MessageId.
        """
        ctx = self.ctx
        if not sub:
            raise PreconditionFailedError("Subscription name is not valid")
        ctx.persistent_only(tn, "Creating a subscription over the admin API")
        await ctx.namespace_read(tn.namespace)
        if ctx.partitions_of(tn) > 0:
            topics = [await ctx.load_or_create(p) for p in ctx.partitions(tn)]
        else:
            topics = [await ctx.load_or_create(tn)]
        if any(sub in t.subscriptions for t in topics):
            raise ConflictError("Subscription already exists for topic")
        start = (LATEST_LEDGER, LATEST_LEDGER) if position is None else (position[0] & U64, position[1] & U64)
        for topic in topics:
            topic.subscribe(sub, durable=True, initial_position=InitialPosition.Latest, start_message_id=start)

    async def delete_subscription(self, tn: TopicName, sub: str, force: bool = False) -> None:
        """Delete a subscription; refused while it has consumers, unless forced (they are disconnected)."""
        found = [t for t in await self.ctx.targets(tn) if sub in t.subscriptions]
        if not found:
            raise NotFoundError(f"Subscription {sub} not found for topic {tn}")
        if not force and any(t.subscriptions[sub].consumers for t in found):
            raise PreconditionFailedError("Subscription has active connected consumers")
        for topic in found:
            subscription = topic.subscriptions[sub]
            for consumer in list(subscription.consumers):
                consumer.close_by_broker()
            topic.remove_subscription(sub)

    async def skip_messages(self, tn: TopicName, sub: str, count: int) -> int:
        """Skip the next ``count`` messages of a subscription; the number skipped."""
        ctx = self.ctx
        if ctx.partitions_of(tn) > 0:
            raise NotAllowedError("Skip messages on a partitioned topic is not allowed")
        if count < 0:
            raise PreconditionFailedError("Number of messages to skip must not be negative")
        ctx.persistent_only(tn, "Skipping messages")
        topic = await ctx.load_topic(tn)
        return ctx.subscription(topic, sub).admin_skip(count)

    async def skip_all(self, tn: TopicName, sub: str) -> int:
        """Clear a subscription's backlog; the number of messages acknowledged."""
        self.ctx.persistent_only(tn, "Clearing a backlog")
        return sum(s.admin_ack_before(t.last_entry_id + 1) for t, s in await self.ctx.subscriptions_named(tn, sub))

    async def expire_messages(self, tn: TopicName, sub: str, seconds: int) -> int:
        """Acknowledge the messages of a subscription older than ``seconds``."""
        if seconds < 0:
            raise PreconditionFailedError("Expire time must not be negative")
        return sum(self._expire(t, s, seconds) for t, s in await self.ctx.subscriptions_named(tn, sub))

    async def expire_all_subscriptions(self, tn: TopicName, seconds: int) -> int:
        """Acknowledge the messages older than ``seconds`` on every subscription."""
        if seconds < 0:
            raise PreconditionFailedError("Expire time must not be negative")
        return sum(self._expire(t, s, seconds) for t in await self.ctx.targets(tn) for s in list(t.subscriptions.values()))

    def _expire(self, topic: Topic, sub: Subscription, seconds: int) -> int:
        threshold = int(time.time() * 1000) - seconds * 1000
        return sub.expire_before(topic.find_entry_by_time(threshold))

    async def reset_cursor_to_time(self, tn: TopicName, sub: str, timestamp_ms: int) -> None:
        """Move a subscription to the first message published at or after ``timestamp_ms``."""
        for topic, subscription in await self.ctx.subscriptions_named(tn, sub):
            subscription.reset_cursor(topic.find_entry_by_time(timestamp_ms))

    async def reset_cursor_to_position(
        self, tn: TopicName, sub: str, ledger_id: int, entry_id: int, excluded: bool = False, partition: int = -1
    ) -> None:
        """Move a subscription to a message id (just after it when ``excluded``)."""
        ctx = self.ctx
        if ctx.partitions_of(tn) > 0:
            if partition < 0:
                raise NotAllowedError("Reset-cursor at position is not allowed for partitioned-topic without a partitionIndex")
            tn = tn.partition(partition)
        topic = await ctx.load_topic(tn)
        subscription = ctx.subscription(topic, sub)
        target = topic.start_position(ledger_id & U64, entry_id & U64)
        if excluded and ledger_id == topic.ledger_id:
            target += 1
        subscription.reset_cursor(target)
