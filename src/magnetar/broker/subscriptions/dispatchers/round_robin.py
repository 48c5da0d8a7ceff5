"""Shared subscriptions: entries go round robin to every consumer with permits.

Every chunk of a chunked message goes to one consumer, as Pulsar does on Shared subscriptions
(since 2.11): the consumer that gets a message's first chunk gets the others; only a consumer
that leaves hands the message over (its chunks are redelivered together).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magnetar.broker.subscriptions.dispatchers.base import DispatchedSubscription, Dispatcher

if TYPE_CHECKING:
    from magnetar.broker.subscriptions.consumer import Consumer
    from magnetar.protocol.schema import MessageMetadata
    from magnetar.storage import Entry


class RoundRobinDispatcher(Dispatcher):
    """Each entry to exactly one consumer, taking turns among those that can take it."""

    def __init__(self, subscription: DispatchedSubscription) -> None:
        super().__init__(subscription)
        self._next = 0
        #: the consumer each chunked message (by uuid) is going to, until its last chunk is sent
        self._chunk_owners: dict[str, Consumer] = {}

    def remove_consumer(self, consumer: Consumer) -> None:
        """Detach a consumer; its chunked messages go to whoever gets their next chunk."""
        self._chunk_owners = {u: c for u, c in self._chunk_owners.items() if c is not consumer}
        super().remove_consumer(consumer)

    def select(self, entry: Entry, messages: int, meta: MessageMetadata | None = None) -> Consumer | None:
        if meta is not None and meta.num_chunks_from_msg > 1:
            return self._select_chunk(meta, messages)
        return self._take_turn(messages)

    def _take_turn(self, messages: int) -> Consumer | None:
        consumers = self.consumers
        n = len(consumers)
        for i in range(n):
            consumer = consumers[(self._next + i) % n]
            if consumer.can_take(messages) and consumer.connection.writable:
                self._next = (self._next + i + 1) % n
                return consumer
        return None

    def _select_chunk(self, meta: MessageMetadata, messages: int) -> Consumer | None:
        """The consumer of a chunked message's chunks (None: it cannot take this one now)."""
        uuid = meta.uuid
        owner = self._chunk_owners.get(uuid)
        if owner is None or owner.closed:
            owner = self._take_turn(messages)
            if owner is None:
                return None
            self._chunk_owners[uuid] = owner
        elif not (owner.can_take(messages) and owner.connection.writable):
            return None
        if meta.chunk_id >= meta.num_chunks_from_msg - 1:
            del self._chunk_owners[uuid]
        return owner
