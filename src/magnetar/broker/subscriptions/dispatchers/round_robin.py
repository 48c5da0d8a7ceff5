"""Shared subscriptions: entries go round robin to every consumer with permits.

Consumers' priority levels are honoured as Pulsar does: a lower number is a higher priority;
the consumers of the highest level that can take an entry get it in turn, and a lower level
gets entries only while none of the higher levels can take them.

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
        #: whether the consumers have different priority levels (else the first able one is taken)
        self._mixed_levels = False

    def consumers_changed(self) -> None:
        """Note whether priority levels now matter."""
        self._mixed_levels = len({c.priority_level for c in self.consumers}) > 1

    def remove_consumer(self, consumer: Consumer) -> None:
        """Detach a consumer; its chunked messages go to whoever gets their next chunk."""
        self._chunk_owners = {u: c for u, c in self._chunk_owners.items() if c is not consumer}
        super().remove_consumer(consumer)

    def select(self, entry: Entry, messages: int, meta: MessageMetadata | None = None) -> Consumer | None:
        if meta is not None and meta.num_chunks_from_msg > 1:
            return self._select_chunk(meta, messages)
        return self._take_turn(messages)

    def _take_turn(self, messages: int) -> Consumer | None:
        """The next consumer in turn, of the highest priority level among those that can take
        ``messages`` now."""
        consumers = self.consumers
        n = len(consumers)
        chosen: Consumer | None = None
        chosen_at = 0
        for i in range(n):
            at = (self._next + i) % n
            consumer = consumers[at]
            if not (consumer.can_take(messages) and consumer.connection.writable):
                continue
            if chosen is None or consumer.priority_level < chosen.priority_level:
                chosen, chosen_at = consumer, at
                if not self._mixed_levels:
                    break
        if chosen is not None:
            self._next = (chosen_at + 1) % n
        return chosen

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
