"""What every kind of topic offers, and the producer handling they share.

:class:`Topic` is the interface sessions, the service and the admin API use; its two kinds,
:class:`~magnetar.broker.topics.persistent.PersistentTopic` and
:class:`~magnetar.broker.topics.nonpersistent.NonPersistentTopic`, are siblings that each
implement publishing, subscriptions and reading in full. Producer names, access modes
(Shared, Exclusive, ExclusiveWithFencing, WaitForExclusive) and topic epochs work the same on
both, so they live here.
"""

from __future__ import annotations

import itertools
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from magnetar.broker.errors import BrokerError
from magnetar.broker.loop_urgency import NEVER_URGENT, LoopUrgency
from magnetar.broker.policies.rate_limits import TopicRateLimits
from magnetar.broker.policies.resolution import TopicPolicies
from magnetar.broker.topics.storage_stats import StorageLatencies, entry_size_bucket, new_entry_sizes
from magnetar.protocol.enums import InitialPosition, ProducerAccessMode, ServerError

if TYPE_CHECKING:
    from magnetar.broker.config import BrokerConfig
    from magnetar.broker.subscriptions.base import SubscriptionBase
    from magnetar.broker.subscriptions.consumer import Consumer
    from magnetar.broker.topics.producer import Producer
    from magnetar.broker.transport import PublishContext
    from magnetar.protocol.topic_name import TopicName

_producer_numbers = itertools.count()


class Topic(ABC):
    """One topic (or one partition of a partitioned topic): producers, subscriptions, publishing."""

    #: whether the topic stores its messages (persistent://) or only relays them (non-persistent://)
    persistent: ClassVar[bool]
    #: the latencies of its stored entries, once a commit round made one durable (storage_stats.py)
    storage_latencies: StorageLatencies | None = None

    def __init__(self, topic_name: TopicName, ledger_id: int, config: BrokerConfig, producer_name_prefix: str) -> None:
        self.topic_name = topic_name
        self.name = str(topic_name)
        #: index of this partition of a partitioned topic (-1 when not a partition)
        self.partition_index = topic_name.partition_index
        #: the id message ids of this topic carry
        self.ledger_id = ledger_id
        #: the broker settings (subscriptions and dispatchers read theirs from here)
        self.config = config
        #: callbacks other threads handed the loop for this topic (its commit rounds' outcomes): a
        #: dispatch run yields to them
        self.loop_urgency: LoopUrgency = NEVER_URGENT
        self._producer_name_prefix = producer_name_prefix
        self.producers: dict[str, Producer] = {}
        self.subscriptions: dict[str, SubscriptionBase] = {}
        self.policies = TopicPolicies()
        #: the publish, dispatch and subscribe rate limiters of the policies in force
        self.rate_limits = TopicRateLimits()
        #: a terminated topic accepts no more messages
        self.terminated = False
        #: when a producer or subscription last came or went (inactive-topic expiry)
        self.last_active = time.time()
        #: when the topic was created (epoch ms; a stored topic's comes from its metadata row at load)
        self.created_ms = int(self.last_active * 1000)
        #: when an entry was last stored (epoch ms; Pulsar's ledger lastAddEntryTime, not kept over loads)
        self.last_publish_ms = 0
        #: the Exclusive / ExclusiveWithFencing / promoted WaitForExclusive producer, if any
        self.exclusive_producer: Producer | None = None
        self._waiting: list[Producer] = []
        #: bumped each time a producer takes exclusive access; fenced producers carry an older one
        self.topic_epoch = 0
        self.closed = False
        self.msg_in_counter = 0
        self.bytes_in_counter = 0
        #: entries stored per size range (storage_stats.py's ENTRY_SIZE_BOUNDS; their bytes: bytes_in_counter)
        self.entry_sizes = new_entry_sizes()
        #: what subscriptions that are gone had sent to their consumers
        self.msg_out_from_removed_subscriptions = 0
        self.bytes_out_from_removed_subscriptions = 0
        #: deduplication state changed since it was last persisted (see :meth:`dedup_snapshot`)
        self.dedup_dirty = False

    def count_published(self, num_messages: int, size: int) -> None:
        """Count an entry a producer's publish stored: its messages, its bytes and its size range."""
        self.msg_in_counter += num_messages
        self.bytes_in_counter += size
        self.entry_sizes[entry_size_bucket(size)] += 1

    def apply_policies(self, policies: TopicPolicies) -> None:
        """Take newly resolved policies; what they change applies at once."""
        self.policies = policies
        self.rate_limits.update(policies.rates)
        for sub in self.subscriptions.values():
            sub.policies_changed()

    # -- producers -----------------------------------------------------------------------
    def add_producer(self, producer: Producer) -> bool:
        """Attach a producer, enforcing names and access modes.

        Returns False when a WaitForExclusive producer was queued behind the current holder
        (it is attached later, and told so through its session); raises BrokerError when
        the producer is refused.
        """
        if producer.name in self.producers or any(p.name == producer.name for p in self._waiting):
            raise BrokerError(
                ServerError.ProducerBusy, f"producer with name {producer.name!r} is already connected to {self.name}"
            )
        if self.terminated:
            raise BrokerError(ServerError.TopicTerminatedError, f"topic {self.name} was terminated")
        limit = self.policies.max_producers
        if limit > 0 and producer.remote_cluster is None and self.local_producers() >= limit:
            raise BrokerError(ServerError.ProducerBusy, f"topic {self.name} reached its maximum of {limit} producers")
        self.check_quota_for_producer()
        mode = producer.access_mode
        holder = self.exclusive_producer
        if mode == ProducerAccessMode.Shared:
            if holder is not None or self._waiting:
                name = holder.name if holder is not None else self._waiting[0].name
                raise BrokerError(ServerError.ProducerBusy, f"topic {self.name} has an exclusive producer {name!r}")
        elif mode == ProducerAccessMode.Exclusive:
            if holder is not None or self.producers:
                raise BrokerError(
                    ServerError.ProducerFenced,
                    f"topic {self.name} has existing producers; exclusive access refused",
                )
            self._take_exclusive(producer)
        elif mode == ProducerAccessMode.ExclusiveWithFencing:
            for waiting in self._waiting:
                waiting.refuse(f"fenced by producer {producer.name!r}")
            self._waiting.clear()
            for old in list(self.producers.values()):
                old.close_by_broker()
            self._take_exclusive(producer)
        elif mode == ProducerAccessMode.WaitForExclusive:
            if holder is not None or self.producers:
                self._waiting.append(producer)
                return False
            self._take_exclusive(producer)
        self.producers[producer.name] = producer
        return True

    @abstractmethod
    def check_quota_for_producer(self) -> None:
        """Raise BrokerError when a backlog quota refuses new producers."""

    def _take_exclusive(self, producer: Producer) -> None:
        if producer.topic_epoch is not None and producer.topic_epoch < self.topic_epoch:
            raise BrokerError(
                ServerError.ProducerFenced,
                f"producer {producer.name!r} was fenced: topic epoch {producer.topic_epoch} < {self.topic_epoch}",
            )
        self.topic_epoch = max(self.topic_epoch + 1, producer.topic_epoch or 0)
        self.exclusive_producer = producer

    def remove_producer(self, producer: Producer) -> None:
        """Detach a producer; a waiting exclusive producer may take over."""
        producer.closed = True
        self.last_active = time.time()
        if producer in self._waiting:
            self._waiting.remove(producer)
            return
        if self.producers.get(producer.name) is producer:
            del self.producers[producer.name]
        if self.exclusive_producer is producer:
            self.exclusive_producer = None
        while self._waiting and not self.producers:
            nxt = self._waiting.pop(0)
            if nxt.closed:
                continue
            try:
                self._take_exclusive(nxt)
            except BrokerError as exc:
                # fenced meanwhile: its own PRODUCER request fails; the next waiter gets its turn
                nxt.refuse(exc.message)
                continue
            self.producers[nxt.name] = nxt
            nxt.became_ready()

    def local_producers(self) -> int:
        """Producers of this cluster's clients (replicators of other clusters do not count in limits)."""
        return sum(1 for p in self.producers.values() if p.remote_cluster is None)

    def generate_producer_name(self) -> str:
        """A producer name unique on this broker, for producers that did not choose one."""
        return f"{self._producer_name_prefix}-{next(_producer_numbers)}"

    # -- publishing ----------------------------------------------------------------------
    @abstractmethod
    def publish(self, producer: Producer, entry: bytes, crc: int, context: PublishContext) -> bool:
        """Take one entry from ``producer`` and complete ``context`` exactly once.

        Returns True when the entry was appended and ``context`` completes later (once it is
        durable): the caller accounts its bytes as pending until then. Raises StorageError
        when the entry could not be appended (``context`` is then not completed).
        """

    def after_publishes(self, then: Callable[[], None]) -> None:
        """Call ``then`` once every publish accepted so far completed (or failed): at once here."""
        then()

    @abstractmethod
    def last_sequence_id(self, producer_name: str) -> int:
        """What PRODUCER_SUCCESS reports: the producer's last stored sequence id under dedup, else -1."""

    def dedup_snapshot(self) -> tuple[int, dict[str, int]] | None:
        """(entry id, sequence ids durable up to it) to persist, or None when unchanged."""
        return None

    # -- reading -------------------------------------------------------------------------
    @property
    @abstractmethod
    def first_entry_id(self) -> int:
        """Oldest entry still available."""

    @property
    @abstractmethod
    def last_entry_id(self) -> int:
        """Newest entry readable by consumers (-1 when none)."""

    @abstractmethod
    def last_message_id(self) -> tuple[int, int, int]:
        """(ledger id, entry id, batch index) of the last readable message; BrokerError when not kept."""

    @abstractmethod
    def find_entry_by_time(self, publish_time_ms: int) -> int:
        """First entry published at or after ``publish_time_ms``; BrokerError when not kept."""

    @abstractmethod
    def start_position(self, ledger_id: int, entry_id: int) -> int:
        """First entry to deliver for a start message id (earliest, latest or a real id)."""

    # -- subscriptions -------------------------------------------------------------------
    def check_subscribe(self, name: str, sub_type_name: str, durable: bool) -> None:
        """Raise BrokerError when a consumer may not subscribe to ``name`` with this type, in
        Pulsar's order and words: the topic's consumer limit, auto subscription creation, the
        enabled subscription types, then the subscription limit (new subscriptions only)."""
        policies, config = self.policies, self.config
        limit = policies.max_consumers_per_topic
        limit = config.max_consumers_per_topic if limit is None else limit
        if limit > 0 and sum(len(s.consumers) for s in self.subscriptions.values()) >= limit:
            raise BrokerError(ServerError.ConsumerBusy, "Topic reached max consumers limit")
        exists = name in self.subscriptions
        if durable and self.persistent and not exists and not policies.auto_subscription_creation:
            raise BrokerError(ServerError.SubscriptionNotFound, "Subscription does not exist")
        if policies.subscription_types_enabled and sub_type_name not in policies.subscription_types_enabled:
            raise BrokerError(ServerError.NotAllowedError, f"Topic[{{{self.name}}}] doesn't support {sub_type_name} sub type!")
        limit = policies.max_subscriptions_per_topic
        limit = config.max_subscriptions_per_topic if limit is None else limit
        if not exists and limit > 0 and len(self.subscriptions) >= limit:
            raise BrokerError(
                ServerError.NotAllowedError, f"Exceed the maximum number of subscriptions of the topic: {self.name}"
            )

    @abstractmethod
    def subscribe(
        self,
        name: str,
        *,
        durable: bool,
        initial_position: InitialPosition,
        start_message_id: tuple[int, int] | None,
        read_compacted: bool = False,
    ) -> SubscriptionBase:
        """The subscription ``name``, created at its start position if it does not exist."""

    @abstractmethod
    def remove_subscription(self, name: str) -> None:
        """Forget a subscription (unsubscribe, or the last reader of a non-durable one left)."""

    def subscription_removed(self, sub: SubscriptionBase) -> None:
        """Keep what a subscription that is gone had sent in the topic's out counters."""
        self.msg_out_from_removed_subscriptions += sub.msg_out_counter
        self.bytes_out_from_removed_subscriptions += sub.bytes_out_counter

    @property
    def msg_out_counter(self) -> int:
        """Messages sent to consumers of every subscription, those gone included."""
        return self.msg_out_from_removed_subscriptions + sum(s.msg_out_counter for s in self.subscriptions.values())

    @property
    def bytes_out_counter(self) -> int:
        """Bytes sent to consumers of every subscription, those gone included."""
        return self.bytes_out_from_removed_subscriptions + sum(s.bytes_out_counter for s in self.subscriptions.values())

    def unsubscribe(self, sub: SubscriptionBase, force: bool, requester: Consumer) -> None:
        """Delete a subscription on a consumer's request (refused while others are attached)."""
        others = [c for c in sub.consumers if c is not requester]
        if others and not force:
            raise BrokerError(ServerError.ConsumerBusy, f"subscription {sub.name} has other connected consumers")
        for consumer in others:
            consumer.close_by_broker()
        sub.remove_consumer(requester)
        if sub.name in self.subscriptions:
            self.remove_subscription(sub.name)

    # -- lifecycle -----------------------------------------------------------------------
    @abstractmethod
    def close(self) -> None:
        """Release what the topic holds (the service persists cursors first)."""

    @abstractmethod
    def stats_storage_size(self) -> int:
        """Bytes of storage this topic holds."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"
