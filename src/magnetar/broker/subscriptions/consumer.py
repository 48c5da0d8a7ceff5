"""A consumer attached to a subscription: permits, messages in flight, and delivery."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from magnetar.protocol.enums import SubType

if TYPE_CHECKING:
    from magnetar.broker.transport import ConsumerTransport
    from magnetar.storage import Entry


_U64 = (1 << 64) - 1


def count_unacked(ack_set: list[int] | None) -> int:
    """Messages an ack set (bits set: still unacknowledged) leaves unacknowledged."""
    return sum(bin(word & _U64).count("1") for word in ack_set) if ack_set else 0


class MessageSource(Protocol):
    """What a consumer uses of its subscription's topic: the ids its messages carry."""

    #: the id message ids of the topic carry
    ledger_id: int
    #: index of the partition (-1 when the topic is not a partition)
    partition_index: int


class ConsumerSubscription(Protocol):
    """What a consumer uses of the subscription it belongs to."""

    name: str
    topic: MessageSource

    @property
    def consumer_unacked_limit(self) -> int:
        """Unacked messages at which a consumer is blocked (0: no limit)."""
        ...

    def remove_consumer(self, consumer: Consumer) -> None:
        """Detach a consumer."""
        ...


#: the subscription type a consumer belongs to (sessions hold ``Consumer[Subscription]``)
SubscriptionT = TypeVar("SubscriptionT", bound=ConsumerSubscription)


class Consumer(Generic[SubscriptionT]):
    """One SUBSCRIBE registration, identified by (session, consumer id).

    The consumer owns its permits (granted by FLOW, in messages) and the entries delivered to
    it and not yet acknowledged (``pending``: entry id -> messages in the entry), which are
    redelivered to others when it leaves.
    """

    __slots__ = (
        "connection",
        "consumer_id",
        "name",
        "subscription",
        "sub_type",
        "priority_level",
        "permits",
        "pending",
        "unacked_messages",
        "blocked",
        "read_compacted",
        "key_shared_meta",
        "metadata",
        "closed",
        "msg_out_counter",
        "bytes_out_counter",
        "redelivered_counter",
        "connected_since",
        "last_consumed_ms",
        "last_acked_ms",
        "first_flow_ms",
        "last_flow_ms",
        "first_sent_ms",
        "_ledger_id",
        "_partition",
    )

    def __init__(
        self,
        connection: ConsumerTransport,
        consumer_id: int,
        name: str,
        subscription: SubscriptionT,
        sub_type: SubType,
        priority_level: int = 0,
        read_compacted: bool = False,
        metadata: dict[str, str] | None = None,
    ) -> None:
        #: the session this consumer's client is connected through
        self.connection = connection
        self.consumer_id = consumer_id
        self.name = name
        self.subscription = subscription
        self.sub_type = sub_type
        self.priority_level = priority_level
        self.permits = 0
        self.pending: dict[int, int] = {}
        self.unacked_messages = 0
        self.blocked = False
        self.read_compacted = read_compacted
        self.key_shared_meta = None
        self.metadata = metadata or {}
        self.closed = False
        self.msg_out_counter = 0
        self.bytes_out_counter = 0
        self.redelivered_counter = 0
        self.connected_since = time.time()
        #: epoch ms of the last message sent to this consumer and of its last ACK (Pulsar's
        #: lastConsumedTimestamp, lastAckedTimestamp)
        self.last_consumed_ms = 0
        self.last_acked_ms = 0
        #: epoch ms of its first and last FLOW and of the first message sent to it (Pulsar's
        #: firstConsumedFlowTimestamp, lastConsumedFlowTimestamp, firstMessagesSentTimestamp)
        self.first_flow_ms = 0
        self.last_flow_ms = 0
        self.first_sent_ms = 0
        topic = subscription.topic
        self._ledger_id = topic.ledger_id
        #: as Pulsar does: a partition's messages carry its index (clients expose it in ids)
        self._partition = topic.partition_index

    def add_permits(self, n: int) -> None:
        """Record a FLOW grant of ``n`` messages."""
        self.permits += n
        now_ms = int(time.time() * 1000)
        self.subscription.last_consumed_flow_ms = self.last_flow_ms = now_ms
        if not self.first_flow_ms:
            self.first_flow_ms = now_ms

    def can_take(self, messages: int) -> bool:
        """Whether an entry of ``messages`` messages may be sent now.

        As in Pulsar, an entry goes out while the consumer has any permit left and its whole
        cost is deducted: a batch is never split, and waiting for enough permits for a whole
        batch could stall a client that re-grants only after consuming half its queue.
        """
        return self.permits > 0 and not self.blocked and not self.closed

    def deliver(self, entry: Entry, messages: int, redelivery_count: int, ack_set: list[int] | None) -> None:
        """Send one entry as a MESSAGE frame and account for it."""
        self.permits -= messages
        if entry.entry_id not in self.pending:
            # of a partly acknowledged batch, only the messages still unacknowledged count
            unacked = min(messages, count_unacked(ack_set)) if ack_set else messages
            self.pending[entry.entry_id] = unacked
            self.unacked_messages += unacked
            limit = self.subscription.consumer_unacked_limit
            if limit > 0 and self.unacked_messages >= limit:
                self.blocked = True
        self.msg_out_counter += messages
        self.bytes_out_counter += len(entry.data)
        self.last_consumed_ms = int(time.time() * 1000)
        if not self.first_sent_ms:
            self.first_sent_ms = self.last_consumed_ms
        self.connection.send_message(self.consumer_id, self._ledger_id, self._partition, entry, redelivery_count, ack_set)

    def deliver_live(self, entry: Entry, messages: int) -> None:
        """Send a message of a non-persistent topic: nothing is kept, so nothing is tracked."""
        self.permits -= messages
        self.msg_out_counter += messages
        self.bytes_out_counter += len(entry.data)
        self.last_consumed_ms = int(time.time() * 1000)
        if not self.first_sent_ms:
            self.first_sent_ms = self.last_consumed_ms
        self.connection.send_message(self.consumer_id, self._ledger_id, self._partition, entry, 0, None)

    def close_by_broker(self) -> None:
        """Detach the consumer from its subscription and tell its client (which then resubscribes)."""
        self.subscription.remove_consumer(self)
        self.connection.consumer_closed_by_broker(self.consumer_id)

    def acked_partly(self, entry_id: int, remaining: int) -> bool:
        """Some messages of an in-flight batch were acknowledged, ``remaining`` are not; True if
        the entry is in flight to this consumer."""
        messages = self.pending.get(entry_id)
        if messages is None:
            return False
        if remaining < messages:
            self.pending[entry_id] = remaining
            self.unacked_messages -= messages - remaining
        return True

    def reached_end_of_topic(self) -> None:
        """The topic is terminated and everything in it is acknowledged: tell the client."""
        self.connection.reached_end_of_topic(self.consumer_id)

    def forget(self, entry_id: int) -> bool:
        """Drop an entry from the in-flight set (acknowledged or taken back); True if it was there."""
        messages = self.pending.pop(entry_id, None)
        if messages is None:
            return False
        self.unacked_messages -= messages
        return True

    def restore(self, entry_id: int, messages: int) -> None:
        """Take back into the in-flight set an entry it had received (a transaction holding its
        acknowledgement was aborted: as if that acknowledgement never came)."""
        if entry_id not in self.pending:
            self.pending[entry_id] = messages
            self.unacked_messages += messages

    def __repr__(self) -> str:
        return f"Consumer({self.name!r} id={self.consumer_id} on {self.subscription.name})"
