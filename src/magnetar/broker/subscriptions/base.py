"""What every subscription has, stored messages or not: consumers, a dispatcher, limits, counters.

:class:`SubscriptionBase` is shared by the two kinds of subscription, which are siblings:
:class:`~magnetar.broker.subscriptions.subscription.Subscription` (a persistent topic's: a
managed cursor, acknowledgements, redelivery, seek) and
:class:`~magnetar.broker.subscriptions.live.NonPersistentSubscription` (a non-persistent
topic's: live delivery to the consumers there now).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar, Protocol

from magnetar.broker.errors import BrokerError
from magnetar.broker.policies.rate_limits import (
    DispatchThrottle,
    RateLimiter,
    TopicRateLimits,
    dispatch_throttle,
    refreshed,
)
from magnetar.broker.subscriptions.dispatchers.base import Dispatcher
from magnetar.broker.subscriptions.dispatchers.key_shared import KeySharedDispatcher
from magnetar.broker.subscriptions.dispatchers.round_robin import RoundRobinDispatcher
from magnetar.broker.subscriptions.dispatchers.single_active import SingleActiveDispatcher
from magnetar.protocol.enums import ServerError, SubType

if TYPE_CHECKING:
    from magnetar.broker.config import BrokerConfig
    from magnetar.broker.policies.resolution import TopicPolicies
    from magnetar.broker.subscriptions.consumer import Consumer
    from magnetar.protocol.topic_name import TopicName

DISPATCHERS: dict[SubType, type[Dispatcher]] = {
    SubType.Exclusive: SingleActiveDispatcher,
    SubType.Failover: SingleActiveDispatcher,
    SubType.Shared: RoundRobinDispatcher,
    SubType.Key_Shared: KeySharedDispatcher,
}

#: subscription types whose consumers and subscription are bound by the unacked-message limits
LIMITED_TYPES = frozenset({SubType.Shared, SubType.Key_Shared})


class BaseSubscribedTopic(Protocol):
    """What every subscription uses of its topic."""

    name: str
    topic_name: TopicName
    #: the id message ids of the topic carry
    ledger_id: int
    #: index of the partition (-1 when the topic is not a partition)
    partition_index: int
    config: BrokerConfig
    policies: TopicPolicies
    rate_limits: TopicRateLimits
    subscriptions: dict

    def remove_subscription(self, name: str) -> None:
        """Forget a subscription."""
        ...


class SubscriptionBase(ABC):
    """Consumers, dispatcher, unacked-message limits and delivery counters of one subscription."""

    #: whether the subscription reads stored entries (a persistent topic's) or gets them live
    persistent: ClassVar[bool]

    def __init__(self, topic: BaseSubscribedTopic, name: str, *, sub_type: SubType | None = None) -> None:
        self.topic = topic
        self.name = name
        self.sub_type = sub_type
        self.dispatcher: Dispatcher | None = None
        #: when a consumer last joined or left (subscription expiration)
        self.last_active = time.time()
        #: what consumers that left had been sent (Pulsar's msgOutFromRemovedConsumer)
        self.msg_out_from_removed_consumers = 0
        self.bytes_out_from_removed_consumers = 0
        #: epoch ms of the last FLOW of any consumer, and of the last ack that moved the mark-delete
        #: position (Pulsar's lastConsumedFlowTimestamp, lastMarkDeleteAdvancedTimestamp)
        self.last_consumed_flow_ms = 0
        self.last_mark_delete_advanced_ms = 0
        config = topic.config
        override = topic.policies.max_unacked_per_consumer
        self.max_unacked_per_consumer = override if override is not None else config.max_unacked_messages_per_consumer
        self._max_unacked = self._subscription_unacked_limit()
        self._blocked = False
        #: this subscription's dispatch rate limiter, and the throttle the dispatcher asks (None: no limit)
        self.dispatch_limiter: RateLimiter | None = None
        self.dispatch_throttle: DispatchThrottle | None = None
        self.rates_changed()

    @property
    @abstractmethod
    def durable(self) -> bool:
        """Whether the subscription survives its consumers and restarts."""

    # -- consumers -----------------------------------------------------------------------
    @property
    def consumers(self) -> list[Consumer]:
        """The consumers attached now."""
        return self.dispatcher.consumers if self.dispatcher else []

    @property
    def msg_out_counter(self) -> int:
        """Messages sent to consumers, those that left included."""
        return self.msg_out_from_removed_consumers + sum(c.msg_out_counter for c in self.consumers)

    @property
    def bytes_out_counter(self) -> int:
        """Bytes sent to consumers, those that left included."""
        return self.bytes_out_from_removed_consumers + sum(c.bytes_out_counter for c in self.consumers)

    def policies_changed(self) -> None:
        """Pick up the topic's policies (unacked limit per consumer)."""
        override = self.topic.policies.max_unacked_per_consumer
        config = self.topic.config
        self.max_unacked_per_consumer = override if override is not None else config.max_unacked_messages_per_consumer
        self._max_unacked = self._subscription_unacked_limit()
        self.update_blocked()
        self.rates_changed()

    def rates_changed(self) -> None:
        """Pick up the dispatch rates: the topic's (shared by its subscriptions) and each subscription's."""
        rates = self.topic.policies.rates
        if rates.dispatch is None and rates.subscription_dispatch is None and self.dispatch_throttle is None:
            return
        limits = self.topic.rate_limits
        self.dispatch_limiter = refreshed(self.dispatch_limiter, limits.policies.subscription_dispatch)
        self.dispatch_throttle = dispatch_throttle(self.dispatch_throttle, (limits.dispatch, self.dispatch_limiter))

    def _subscription_unacked_limit(self) -> int:
        """The topic's max-unacked-messages-per-subscription policy, else the broker setting."""
        limit = self.topic.policies.max_unacked_per_subscription
        return self.topic.config.max_unacked_messages_per_subscription if limit is None else limit

    def check_can_add(self, sub_type: SubType) -> None:
        """Raise BrokerError when a consumer of ``sub_type`` may not join now."""
        limit = self.topic.policies.max_consumers_per_subscription
        if limit > 0 and len(self.consumers) >= limit:
            raise BrokerError(ServerError.ConsumerBusy, f"subscription {self.name} reached its maximum of {limit} consumers")
        topic_limit = self.topic.policies.max_consumers_per_topic
        if topic_limit is None:
            topic_limit = self.topic.config.max_consumers_per_topic
        if topic_limit > 0 and sum(len(s.consumers) for s in self.topic.subscriptions.values()) >= topic_limit:
            raise BrokerError(ServerError.ConsumerBusy, "Topic reached max consumers limit")
        if sub_type not in DISPATCHERS:
            raise BrokerError(ServerError.NotAllowedError, f"subscription type {sub_type.name} is not supported yet")
        if self.consumers:
            if sub_type != self.sub_type:
                raise BrokerError(
                    ServerError.ConsumerBusy,
                    f"subscription {self.name} is of type {self.sub_type.name}, not {sub_type.name}",
                )
            if sub_type == SubType.Exclusive:
                raise BrokerError(ServerError.ConsumerBusy, f"exclusive consumer is already connected to {self.name}")

    def add_consumer(self, consumer: Consumer) -> None:
        """Attach a consumer (BrokerError when it may not join)."""
        self.check_can_add(consumer.sub_type)
        self.check_consumer(consumer)
        if self.dispatcher is None or self.sub_type != consumer.sub_type:
            self.sub_type = consumer.sub_type
            self.dispatcher = DISPATCHERS[consumer.sub_type](self)  # type: ignore[arg-type]
            self.dispatcher_created()
        self.last_active = time.time()
        self.dispatcher.add_consumer(consumer)

    @abstractmethod
    def check_consumer(self, consumer: Consumer) -> None:
        """Raise BrokerError when this kind of subscription refuses the consumer's options."""

    @abstractmethod
    def dispatcher_created(self) -> None:
        """Hook run when the subscription (re)gets a dispatcher for a new subscription type."""

    def remove_consumer(self, consumer: Consumer) -> None:
        """Detach a consumer; what it had not acknowledged goes back to the others."""
        if self.dispatcher is None or consumer not in self.dispatcher.consumers:
            return
        consumer.closed = True
        self.last_active = time.time()
        self.msg_out_from_removed_consumers += consumer.msg_out_counter
        self.bytes_out_from_removed_consumers += consumer.bytes_out_counter
        self.take_back(consumer)
        self.dispatcher.remove_consumer(consumer)
        self.consumer_removed()

    @abstractmethod
    def consumer_removed(self) -> None:
        """After a consumer left: forget the subscription or let the others make progress."""

    @abstractmethod
    def take_back(self, consumer: Consumer) -> None:
        """Take back what is in flight to ``consumer`` (it left, or lost the active role)."""

    def notify_active(self, consumers: list[Consumer], active: Consumer, only: Consumer | None = None) -> None:
        """Tell Failover consumers which of them is active (all of them, or just ``only``)."""
        if self.sub_type != SubType.Failover:
            return
        for consumer in [only] if only is not None else consumers:
            consumer.connection.send_active_consumer_change(consumer.consumer_id, consumer is active)

    # -- flow and dispatch ---------------------------------------------------------------
    @abstractmethod
    def flow(self, consumer: Consumer, permits: int) -> None:
        """A consumer granted ``permits`` more messages."""

    @abstractmethod
    def schedule_dispatch(self) -> None:
        """Let the dispatcher try to make progress."""

    # -- acknowledgements and positions ----------------------------------------------------
    @abstractmethod
    def acknowledge(self, consumer: Consumer, cumulative: bool, message_ids: Iterable) -> None:
        """Apply an ACK command's message ids."""

    @abstractmethod
    def redeliver_unacknowledged(self, consumer: Consumer, message_ids: Iterable | None) -> None:
        """Send again the given messages (or all in flight to ``consumer``)."""

    @abstractmethod
    def last_message_id(self, read_compacted: bool) -> tuple[int, int, int]:
        """GET_LAST_MESSAGE_ID: (ledger id, entry id, batch index) of the last message."""

    @abstractmethod
    def reset_cursor(self, entry_id: int) -> None:
        """Seek to ``entry_id``."""

    @abstractmethod
    def backlog(self) -> int:
        """Messages (entries) not yet acknowledged by this subscription."""

    # -- unacked-message limits ----------------------------------------------------------
    def blocked_on_unacked(self) -> bool:
        """Whether the subscription as a whole has too many unacknowledged messages."""
        return self._blocked

    @property
    def consumer_unacked_limit(self) -> int:
        """Unacked messages at which a consumer is blocked; as in Pulsar, the limits apply only to
        Shared and Key_Shared subscriptions (0 = no limit)."""
        return self.max_unacked_per_consumer if self.sub_type in LIMITED_TYPES else 0

    def update_blocked(self) -> None:
        """Recompute the unacked-message limits of the subscription and its consumers."""
        if self.sub_type not in LIMITED_TYPES:
            unblocked = self._blocked or any(c.blocked for c in self.consumers)
            self._blocked = False
            for consumer in self.consumers:
                consumer.blocked = False
            if unblocked:
                self.schedule_dispatch()
            return
        per_consumer = self.max_unacked_per_consumer
        total = 0
        unblocked = False
        for consumer in self.consumers:
            total += consumer.unacked_messages
            if per_consumer > 0:
                if consumer.blocked:
                    if consumer.unacked_messages <= per_consumer // 2:
                        consumer.blocked = False
                        unblocked = True
                elif consumer.unacked_messages >= per_consumer:
                    consumer.blocked = True
        if self._max_unacked > 0:
            if self._blocked and total <= self._max_unacked // 2:
                self._blocked = False
                unblocked = True
            elif total >= self._max_unacked:
                self._blocked = True
        if unblocked:
            self.schedule_dispatch()

    def after_delivery(self) -> None:
        """Check the limits after a dispatch run."""
        if self.max_unacked_per_consumer > 0 or self._max_unacked > 0:
            self.update_blocked()

    def unacked_messages(self) -> int:
        """Messages delivered to consumers and not yet acknowledged."""
        return sum(c.unacked_messages for c in self.consumers)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.topic.name}/{self.name})"
