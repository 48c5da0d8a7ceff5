"""Shared subscriptions: entries go round robin to every consumer with permits."""

from __future__ import annotations

from typing import TYPE_CHECKING

from magnetar.broker.subscriptions.dispatchers.base import DispatchedSubscription, Dispatcher

if TYPE_CHECKING:
    from magnetar.broker.subscriptions.consumer import Consumer
    from magnetar.storage import Entry


class RoundRobinDispatcher(Dispatcher):
    """Each entry to exactly one consumer, taking turns among those that can take it."""

    def __init__(self, subscription: DispatchedSubscription) -> None:
        super().__init__(subscription)
        self._next = 0

    def select(self, entry: Entry, messages: int) -> Consumer | None:
        consumers = self.consumers
        n = len(consumers)
        for i in range(n):
            consumer = consumers[(self._next + i) % n]
            if consumer.can_take(messages) and consumer.connection.writable:
                self._next = (self._next + i + 1) % n
                return consumer
        return None
