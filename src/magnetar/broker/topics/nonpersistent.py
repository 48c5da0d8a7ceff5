"""Non-persistent topics: messages go to the consumers connected right now, or nowhere.

Nothing is written to disk. A published message is handed to every subscription's dispatcher
at once; a subscription whose selected consumer has no permits (or has no consumer) drops it,
as Pulsar does. The producer gets its receipt immediately. Producer access modes, names and
subscription types behave as on persistent topics; acknowledgements, redelivery, seek and
last-message-id have nothing to act on.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from magnetar.broker.errors import BrokerError
from magnetar.broker.policies import TopicPolicies
from magnetar.broker.subscriptions.subscription import Subscription
from magnetar.broker.topics.persistent import Topic
from magnetar.protocol.enums import InitialPosition, ServerError
from magnetar.protocol.topic_name import TopicName
from magnetar.storage import CursorState, Entry

if TYPE_CHECKING:
    from magnetar.broker.service import BrokerService
    from magnetar.broker.subscriptions.consumer import Consumer
    from magnetar.broker.topics.producer import Producer

log = logging.getLogger("magnetar.broker.topics.nonpersistent")


class NonPersistentTopic(Topic):
    """A topic kept only in memory; shares producer handling with persistent topics."""

    def __init__(self, service: BrokerService, topic_name: TopicName, ledger_id: int) -> None:
        self.service = service
        self.topic_name = topic_name
        self.name = str(topic_name)
        #: index of this partition of a partitioned topic (-1 when not a partition)
        self.partition_index = topic_name.partition_index
        self.ledger = None  # type: ignore[assignment]
        self.ledger_id = ledger_id
        self.producers = {}
        self.subscriptions = {}
        self.last_readable_id = -1
        self.exclusive_producer = None
        self._waiting = []
        self.topic_epoch = 0
        self.last_sequence_ids = {}
        self.durable_sequence_ids = {}
        self.dedup_enabled = False
        self.dedup_dirty = False
        self.policies = TopicPolicies()
        self.quota_blocked = None
        self.terminated = False
        self.last_active = time.time()
        self.closed = False
        self.msg_in_counter = 0
        self.bytes_in_counter = 0
        self.msg_dropped_counter = 0

    def publish(
        self, producer: Producer, sequence_id: int, highest_sequence_id: int, num_messages: int, entry: bytes, crc: int
    ) -> None:
        """Deliver to the connected consumers that can take it, and acknowledge at once."""
        self.last_readable_id += 1
        item = Entry(self.last_readable_id, entry, crc)
        for sub in list(self.subscriptions.values()):
            if not sub.deliver_now(item, num_messages):  # type: ignore[attr-defined]
                self.msg_dropped_counter += num_messages
        producer.msg_in_counter += num_messages
        producer.bytes_in_counter += len(entry)
        self.msg_in_counter += num_messages
        self.bytes_in_counter += len(entry)
        producer.connection.send_receipt(producer.producer_id, sequence_id, highest_sequence_id, self.ledger_id, item.entry_id)

    def subscribe(
        self,
        name: str,
        *,
        durable: bool,
        initial_position: InitialPosition,
        start_message_id: tuple[int, int] | None,
        read_compacted: bool = False,
    ) -> Subscription:
        """The subscription ``name`` (always non-durable here)."""
        sub = self.subscriptions.get(name)
        if sub is None:
            sub = NonPersistentSubscription(self, name)
            self.subscriptions[name] = sub
        return sub

    def remove_subscription(self, name: str) -> None:
        """Forget a subscription."""
        self.last_active = time.time()
        self.subscriptions.pop(name, None)

    def cursor_moved(self, sub: Subscription) -> None:
        """Nothing to persist."""

    def last_message_id(self) -> tuple[int, int, int]:
        """Not available: nothing is kept."""
        raise BrokerError(ServerError.NotAllowedError, f"{self.name} is non-persistent: it has no last message id")

    def find_entry_by_time(self, publish_time_ms: int) -> int:
        """Not available: nothing is kept."""
        raise BrokerError(ServerError.NotAllowedError, f"{self.name} is non-persistent: seek is not supported")

    def _start_position(self, ledger_id: int, entry_id: int) -> int:
        raise BrokerError(ServerError.NotAllowedError, f"{self.name} is non-persistent: seek is not supported")

    @property
    def first_entry_id(self) -> int:
        """Nothing is stored."""
        return self.last_readable_id + 1

    def close(self) -> None:
        """Drop the topic."""
        self.closed = True

    def stats_storage_size(self) -> int:
        """Nothing is stored."""
        return 0

    def trim_position(self) -> int:
        """Nothing to trim."""
        return self.last_readable_id + 1


class NonPersistentSubscription(Subscription):
    """A subscription on a non-persistent topic: live delivery only."""

    def __init__(self, topic: NonPersistentTopic, name: str) -> None:
        super().__init__(topic, name, CursorState(), durable=False)

    def deliver_now(self, entry: Entry, messages: int) -> bool:
        """Hand one message to the consumer the dispatcher selects; False when dropped."""
        dispatcher = self.dispatcher
        if dispatcher is None or not dispatcher.consumers:
            return False
        consumer = dispatcher.select(entry, messages)
        if consumer is None:
            return False
        consumer.permits -= messages
        consumer.msg_out_counter += messages
        consumer.bytes_out_counter += len(entry.data)
        consumer.connection.send_message(consumer.consumer_id, self.topic.ledger_id, entry, 0, None)
        return True

    def flow(self, consumer: Consumer, permits: int) -> None:
        """Permits only; there is no backlog to dispatch."""
        consumer.add_permits(permits)

    def schedule_dispatch(self) -> None:
        """There is no backlog to dispatch."""

    def remove_consumer(self, consumer: Consumer) -> None:
        """Detach a consumer; the subscription goes with its last consumer."""
        if self.dispatcher is None or consumer not in self.dispatcher.consumers:
            return
        consumer.closed = True
        self.dispatcher.remove_consumer(consumer)
        if not self.consumers:
            self.topic.remove_subscription(self.name)

    def acknowledge(self, consumer: Consumer, cumulative: bool, message_ids) -> None:  # noqa: ANN001
        """Nothing to acknowledge: messages are not kept."""

    def redeliver_unacknowledged(self, consumer: Consumer, message_ids) -> None:  # noqa: ANN001
        """Nothing to redeliver: messages are not kept."""

    def reset_cursor(self, entry_id: int) -> None:
        """Seek is meaningless without storage."""
        raise BrokerError(ServerError.NotAllowedError, f"{self.topic.name} is non-persistent: seek is not supported")

    def backlog(self) -> int:
        """Nothing is kept, so nothing is behind."""
        return 0
