"""Non-persistent topics: messages go to the consumers connected right now, or nowhere.

Nothing is written to disk. A published message is handed to every subscription's dispatcher
at once; a subscription whose selected consumer has no permits (or has no consumer) drops it,
as Pulsar does. The producer gets its receipt immediately. Producer access modes, names and
subscription types behave as on persistent topics; the subscriptions are
:class:`~magnetar.broker.subscriptions.live.NonPersistentSubscription` (live delivery only).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from magnetar.broker.errors import BrokerError
from magnetar.broker.subscriptions.live import NonPersistentSubscription
from magnetar.broker.topics.base import Topic
from magnetar.protocol.enums import InitialPosition, ServerError
from magnetar.storage import Entry

if TYPE_CHECKING:
    from magnetar.broker.config import BrokerConfig
    from magnetar.broker.topics.producer import Producer
    from magnetar.broker.transport import PublishContext
    from magnetar.protocol.topic_name import TopicName

log = logging.getLogger("magnetar.broker.topics.nonpersistent")


class NonPersistentTopic(Topic):
    """A topic kept only in memory: every message goes to the consumers connected right now."""

    persistent: ClassVar[bool] = False

    def __init__(self, topic_name: TopicName, ledger_id: int, *, config: BrokerConfig, producer_name_prefix: str) -> None:
        super().__init__(topic_name, ledger_id, config, producer_name_prefix)
        #: id of the last message published (ids count up from 0; nothing is kept)
        self.last_readable_id = -1
        self.msg_dropped_counter = 0
        self.subscriptions: dict[str, NonPersistentSubscription] = {}  # type: ignore[assignment]
        #: set by the replication manager while the topic replicates: called with each entry a local
        #: producer publishes (what arrived by replication never goes back out)
        self.replication: Callable[[bytes], None] | None = None

    def check_quota_for_producer(self) -> None:
        """Nothing is kept, so there is no backlog and no quota to exceed."""

    # -- publishing ----------------------------------------------------------------------
    def publish(self, producer: Producer, entry: bytes, crc: int, context: PublishContext) -> bool:
        """Deliver to the connected consumers that can take it, and complete ``context`` at once."""
        num_messages = context.num_messages
        self.last_readable_id += 1
        item = Entry(self.last_readable_id, entry, crc)
        for sub in list(self.subscriptions.values()):
            if not sub.deliver_now(item, num_messages):
                self.msg_dropped_counter += num_messages
        if self.replication is not None and producer.remote_cluster is None:
            self.replication(entry)
        producer.msg_in_counter += num_messages
        producer.bytes_in_counter += len(entry)
        self.msg_in_counter += num_messages
        self.bytes_in_counter += len(entry)
        context.completed(self.ledger_id, item.entry_id)
        return False

    def last_sequence_id(self, producer_name: str) -> int:
        """Nothing is stored, so there is no deduplication state: -1."""
        return -1

    # -- reading -------------------------------------------------------------------------
    @property
    def first_entry_id(self) -> int:
        """Nothing is stored: one past the last message published."""
        return self.last_readable_id + 1

    @property
    def last_entry_id(self) -> int:
        """The last message published (-1 when none)."""
        return self.last_readable_id

    def last_message_id(self) -> tuple[int, int, int]:
        """Not available: nothing is kept."""
        raise BrokerError(ServerError.NotAllowedError, f"{self.name} is non-persistent: it has no last message id")

    def find_entry_by_time(self, publish_time_ms: int) -> int:
        """Not available: nothing is kept."""
        raise BrokerError(ServerError.NotAllowedError, f"{self.name} is non-persistent: seek is not supported")

    def start_position(self, ledger_id: int, entry_id: int) -> int:
        """Not available: nothing is kept."""
        raise BrokerError(ServerError.NotAllowedError, f"{self.name} is non-persistent: seek is not supported")

    # -- subscriptions -------------------------------------------------------------------
    def subscribe(
        self,
        name: str,
        *,
        durable: bool,
        initial_position: InitialPosition,
        start_message_id: tuple[int, int] | None,
        read_compacted: bool = False,
    ) -> NonPersistentSubscription:
        """The subscription ``name`` (always non-durable here)."""
        sub = self.subscriptions.get(name)
        if sub is None:
            sub = NonPersistentSubscription(self, name)
            self.subscriptions[name] = sub
        return sub

    def remove_subscription(self, name: str) -> None:
        """Forget a subscription (what it delivered stays in the topic's counters)."""
        self.last_active = time.time()
        sub = self.subscriptions.pop(name, None)
        if sub is not None:
            self.subscription_removed(sub)

    # -- lifecycle -----------------------------------------------------------------------
    def close(self) -> None:
        """Drop the topic."""
        self.closed = True

    def stats_storage_size(self) -> int:
        """Nothing is stored."""
        return 0
