"""A non-persistent topic's subscription: each message goes to a consumer there now, or nowhere.

Nothing is stored, so there is nothing to acknowledge, redeliver, seek to or be behind on: a
message arrives (:meth:`NonPersistentSubscription.deliver_now`), the dispatcher of the
subscription type picks one of the consumers, and the message is sent if that consumer has a
permit, else dropped, as Pulsar's non-persistent dispatchers do.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

from magnetar.broker.errors import BrokerError
from magnetar.broker.subscriptions.base import BaseSubscribedTopic, SubscriptionBase
from magnetar.protocol.enums import ServerError

if TYPE_CHECKING:
    from magnetar.broker.subscriptions.consumer import Consumer
    from magnetar.storage import Entry


class NonPersistentSubscription(SubscriptionBase):
    """A subscription of live delivery only; it goes with its last consumer."""

    persistent: ClassVar[bool] = False

    def __init__(self, topic: BaseSubscribedTopic, name: str) -> None:
        super().__init__(topic, name)

    @property
    def durable(self) -> bool:
        """Never: the subscription lives as long as its consumers."""
        return False

    def check_consumer(self, consumer: Consumer) -> None:
        """Every consumer option is accepted (read_compacted has no compacted view to read here)."""

    def dispatcher_created(self) -> None:
        """Live delivery needs no delayed-delivery tracker: nothing waits."""

    def deliver_now(self, entry: Entry, messages: int) -> bool:
        """Hand one message to the consumer the dispatcher selects; False when it is dropped."""
        dispatcher = self.dispatcher
        if dispatcher is None or not dispatcher.consumers:
            return False
        consumer = dispatcher.select(entry, messages)
        if consumer is None:
            return False
        consumer.deliver_live(entry, messages)
        return True

    def flow(self, consumer: Consumer, permits: int) -> None:
        """Permits for the messages still to come (there is no backlog)."""
        consumer.add_permits(permits)

    def schedule_dispatch(self) -> None:
        """Messages are dispatched as they arrive: there is no backlog to go through."""

    def consumer_removed(self) -> None:
        """The subscription goes with its last consumer."""
        if not self.consumers:
            self.topic.remove_subscription(self.name)

    def take_back(self, consumer: Consumer) -> None:
        """Nothing is in flight to take back: delivered messages are not tracked."""

    def acknowledge(self, consumer: Consumer, cumulative: bool, message_ids: Iterable) -> None:
        """Acknowledgements are accepted and have nothing to act on: messages are not kept."""
        consumer.last_acked_ms = int(time.time() * 1000)

    def redeliver_unacknowledged(self, consumer: Consumer, message_ids: Iterable | None) -> None:
        """Nothing can be sent again: messages are not kept."""

    def last_message_id(self, read_compacted: bool) -> tuple[int, int, int]:
        """Not available: nothing is kept."""
        raise BrokerError(ServerError.NotAllowedError, f"{self.topic.name} is non-persistent: it has no last message id")

    def reset_cursor(self, entry_id: int) -> None:
        """Not available: nothing is kept to seek to."""
        raise BrokerError(ServerError.NotAllowedError, f"{self.topic.name} is non-persistent: seek is not supported")

    def backlog(self) -> int:
        """Nothing is kept, so nothing is behind."""
        return 0
