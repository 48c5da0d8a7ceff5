"""A consumer attached to a subscription: permits, messages in flight, and delivery."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from magnetar.protocol.enums import SubType

if TYPE_CHECKING:
    from magnetar.broker.session.connection import ServerConnection
    from magnetar.broker.subscriptions.subscription import Subscription
    from magnetar.storage import Entry


class Consumer:
    """One SUBSCRIBE registration, identified by (connection, consumer id).

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
    )

    def __init__(
        self,
        connection: ServerConnection,
        consumer_id: int,
        name: str,
        subscription: Subscription,
        sub_type: SubType,
        priority_level: int = 0,
        read_compacted: bool = False,
        metadata: dict[str, str] | None = None,
    ) -> None:
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

    def add_permits(self, n: int) -> None:
        """Record a FLOW grant of ``n`` messages."""
        self.permits += n

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
            self.pending[entry.entry_id] = messages
            self.unacked_messages += messages
            limit = self.subscription.consumer_unacked_limit
            if limit > 0 and self.unacked_messages >= limit:
                self.blocked = True
        self.msg_out_counter += messages
        self.bytes_out_counter += len(entry.data)
        self.connection.send_message(
            self.consumer_id, self.subscription.topic.ledger_id, entry, redelivery_count, ack_set
        )

    def forget(self, entry_id: int) -> bool:
        """Drop an entry from the in-flight set (acknowledged or taken back); True if it was there."""
        messages = self.pending.pop(entry_id, None)
        if messages is None:
            return False
        self.unacked_messages -= messages
        return True

    def __repr__(self) -> str:
        return f"Consumer({self.name!r} id={self.consumer_id} on {self.subscription.name})"
