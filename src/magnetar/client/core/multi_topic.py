"""One subscription over several topics: a list, the partitions of one, or a pattern.

A child :class:`~.consumer.AsyncConsumer` per topic (partition) delivers into this consumer's queue;
acknowledgements go back to the child a message came from. Patterns are matched against the
namespace's topics at start and every ``discovery_period`` seconds; the partitions of listed
topics are looked up again every ``partitions_update_interval`` seconds of the client, and new
partitions are consumed from their first message (what a producer sent there before this
consumer saw the partition is not skipped).

A reader (``durable=False``) of a partitioned topic starts at its ``start_message_id``: earliest
or latest on every partition, or a message id on the partition it belongs to and from the
earliest message on the others.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import re
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from magnetar.client.api.config import ConsumerConfig
from magnetar.client.api.message import Message, MessageId
from magnetar.client.core.consumer import AsyncConsumer
from magnetar.client.core.dead_letter import DeadLetterHandler
from magnetar.client.core.handler import ClientContext
from magnetar.client.core.partitioned import start_partition_updates
from magnetar.client.core.receiver import Completed, ReceiverBase
from magnetar.client.exceptions import AlreadyClosed, OperationNotSupported, PulsarError
from magnetar.protocol.enums import InitialPosition, TopicsMode
from magnetar.protocol.topic_name import TopicName

log = logging.getLogger("magnetar.client")

_multi_ids = itertools.count()


class AsyncMultiTopicsConsumer(ReceiverBase):
    """One subscription over several topics: a list, the partitions of one, or a pattern."""

    def __init__(
        self,
        client: ClientContext,
        topics: list[str],
        subscription: str,
        config: ConsumerConfig,
        *,
        pattern: re.Pattern | None = None,
        discovery_period: float = 60,
        mode: TopicsMode = TopicsMode.PERSISTENT,
        durable: bool = True,
        start_message_id: MessageId | None = None,
    ) -> None:
        self.client = client
        self.subscription = subscription
        self.pattern = pattern
        #: the pattern without its domain, what topic names without theirs are matched against
        self._short_pattern = re.compile(_without_domain(pattern.pattern), pattern.flags) if pattern is not None else None
        self.discovery_period = discovery_period
        self.mode = mode
        self.durable = durable
        self.start_message_id = start_message_id
        self._topics = list(topics)
        self.name = config.consumer_name or f"magnetar-multi-{next(_multi_ids)}"
        self.config = config
        # children share the name (dead letter producers are named after it) and have no listener
        self._child_config = dataclasses.replace(config, consumer_name=self.name, message_listener=None)
        self.consumers: dict[str, AsyncConsumer] = {}
        self._handlers: dict[str, DeadLetterHandler] = {}
        self._closed = False
        #: told, with the child, when messages a child queued here before are void (its seek or reconnection)
        self.sink_reset: Callable[[AsyncConsumer], None] | None = None
        self._discovery: asyncio.Task | None = None
        self._init_receiver()

    @property
    def topic(self) -> str:
        """The topics (or pattern) subscribed."""
        return self.pattern.pattern if self.pattern is not None else ",".join(self._topics)

    async def start(self) -> None:
        """Subscribe to every topic (and start discovery for a pattern)."""
        if self.pattern is not None:
            await self._discover()
            self._discovery = asyncio.get_running_loop().create_task(self._discover_loop())
        else:
            for topic in self._topics:
                await self._add_topic(topic)
            self._discovery = start_partition_updates(self.client, self.topic, self.update_partitions)
        self._start_listener()

    async def update_partitions(self) -> None:
        """Look the partitions of the topics up again and consume the new ones."""
        for topic in list(self._topics):
            await self._add_topic(topic, added=True)

    def _handler_for(self, topic: str) -> DeadLetterHandler | None:
        policy = self.config.dead_letter_policy
        if policy is None:
            return None
        key = str(TopicName.parse(topic).partitioned_parent)
        if self.config.retry_enable and self._handlers:
            return next(iter(self._handlers.values()))  # one topic and its retry topic: one handler
        handler = self._handlers.get(key)
        if handler is None:
            handler = self._handlers[key] = DeadLetterHandler(self.client, policy, key, self.subscription, self.name)
            handler.schema = self.config.schema
        return handler

    def _start_for(self, name: str, partition: int) -> MessageId | None:
        """Where a reader's child starts: the start id on its own partition (or everywhere when
        it is earliest or latest), the earliest message elsewhere."""
        start = self.start_message_id
        if start is None or start.ledger_id < 0 or start == MessageId.latest:
            return start
        own = start.partition if start.partition >= 0 else TopicName.parse(start.topic).partition_index if start.topic else -1
        return start if own == partition or start.topic == name else MessageId.earliest

    def _new_child(self, name: str, partition: int, added: bool = False) -> AsyncConsumer:
        config = self._child_config
        start = self._start_for(name, partition)
        if added:
            # a partition added after the start: from its first message
            config = dataclasses.replace(config, initial_position=InitialPosition.Earliest)
            start = MessageId.earliest if start is not None else None
        child = AsyncConsumer(
            self.client, name, self.subscription, config, partition=partition,
            durable=self.durable, start_message_id=start, dead_letter=self._handler_for(name),
        )
        child.sink = self._on_messages
        child.sink_reset = self._drop_messages_of
        return child

    def _drop_messages_of(self, child: AsyncConsumer) -> None:
        """A child moved (seek): the messages it queued here before are not to be received."""
        if any(m._ctx.consumer is child for m in self._queue):
            self._queue = deque(m for m in self._queue if m._ctx.consumer is not child)
        if self.sink_reset is not None:
            self.sink_reset(child)

    async def _add_topic(self, topic: str, added: bool = False) -> None:
        n = await self.client.lookup.partitions(topic)
        base = TopicName.parse(topic)
        names = [str(base.partition(i)) for i in range(n)] if n else [topic]
        new = [self._new_child(name, i if n else -1, added) for i, name in enumerate(names) if name not in self.consumers]
        for child in new:
            self.consumers[child.topic] = child
        results = await asyncio.gather(*(c.start() for c in new), return_exceptions=True)
        for child, result in zip(new, results, strict=True):
            if isinstance(result, BaseException):
                del self.consumers[child.topic]
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise errors[0]

    def _matches(self, topic: str) -> bool:
        """Whether a topic (or its partitioned parent) matches the pattern, the domain
        (``persistent://``) left out of both as the Java and C++ clients do; a pattern with no
        domain also matches bare local names."""
        assert self.pattern is not None
        name = TopicName.parse(topic)
        parent = str(name.partitioned_parent)
        candidates = [_without_domain(topic), _without_domain(parent)]
        if "://" not in self.pattern.pattern:
            candidates += [name.local_name, name.partitioned_parent.local_name]
        assert self._short_pattern is not None
        return any(self._short_pattern.fullmatch(c) for c in candidates)

    async def _discover(self) -> None:
        assert self.pattern is not None
        # tenant/namespace/pattern, with or without a domain; a bare pattern is of public/default
        m = re.match(r"^([^/:]+)/([^/]+)/", _without_domain(self.pattern.pattern))
        namespace = f"{m.group(1)}/{m.group(2)}" if m else "public/default"
        topics = await self.client.lookup.topics_of_namespace(namespace, self.mode)
        for topic in topics:
            if self._matches(topic) and topic not in self.consumers:
                name = TopicName.parse(topic)
                child = self._new_child(topic, name.partition_index)
                self.consumers[topic] = child
                try:
                    await child.start()
                except PulsarError:
                    del self.consumers[topic]
                    raise
                parent = str(name.partitioned_parent)
                if parent not in self._topics:
                    self._topics.append(parent)

    async def _discover_loop(self) -> None:
        while not self._closed:
            await asyncio.sleep(self.discovery_period)
            try:
                await self._discover()
            except PulsarError as exc:
                log.info("topic discovery for %s failed: %s", self.topic, exc)

    def _on_messages(self, child: AsyncConsumer, messages: list[Message]) -> None:
        self._deliver(messages)

    def _dequeued_many(self, messages: Sequence[Message]) -> None:
        batch: list[Message] = []
        owner = None
        for msg in messages:
            if msg._ctx.consumer is not owner and batch:
                owner._dequeued_many(batch)
                batch = []
            owner = msg._ctx.consumer
            batch.append(msg)
        if batch:
            owner._dequeued_many(batch)

    def _taken(self, messages: list[Message]) -> None:
        for msg in messages:
            msg._ctx.consumer._last_dequeued = msg._id

    def _want_one(self) -> None:
        if self.config.receiver_queue_size == 0:
            for child in self.consumers.values():
                child._want_one()

    def dequeued(self, msg: Message) -> None:
        """A message was handed to the application."""
        msg._ctx.consumer.dequeued(msg)

    def child_for(self, message: Message | MessageId) -> AsyncConsumer:
        """The child consumer a message (or message id) belongs to; OperationNotSupported when
        the id does not say (as an id a producer returned: it names no topic). Safe to call
        from any thread: the sync face checks acknowledgements with it before queueing them."""
        if isinstance(message, Message) and message._ctx.consumer is not None:
            return message._ctx.consumer
        mid = message.message_id() if isinstance(message, Message) else message
        child = self.child_of_id(mid)
        if child is None:
            raise OperationNotSupported(f"message id {mid} does not say which of the topics {sorted(self.consumers)} it belongs to")
        return child

    def child_of_id(self, mid: MessageId) -> AsyncConsumer | None:
        """The child a message id belongs to: by its topic, else by its partition when only one
        child has that partition index (ids restored with MessageId.deserialize have no topic)."""
        if mid.topic:
            return self.consumers.get(mid.topic)
        if mid.partition < 0:
            return None
        candidates = [c for c in tuple(self.consumers.values()) if c.partition == mid.partition]
        return candidates[0] if len(candidates) == 1 else None

    def acknowledge(self, message: Message | MessageId, txn: Any = None) -> Completed | asyncio.Future[None]:
        """Acknowledge one message on the topic it came from (awaiting the result is optional;
        in the transaction ``txn`` when given)."""
        return self.child_for(message).acknowledge(message, txn)

    def acknowledge_cumulative(self, message: Message | MessageId, txn: Any = None) -> Completed | asyncio.Future[None]:
        """Cumulative acknowledgement on the message's topic (in the transaction ``txn`` when given)."""
        return self.child_for(message).acknowledge_cumulative(message, txn)

    def negative_acknowledge(self, message: Message | MessageId) -> Completed:
        """Negative acknowledgement on the message's topic."""
        return self.child_for(message).negative_acknowledge(message)

    async def reconsume_later(self, message: Message, delay: float = 0, properties: dict[str, str] | None = None) -> None:
        """Send the message to the retry letter topic (see Consumer.reconsume_later)."""
        await self.child_for(message).reconsume_later(message, delay, properties)

    def redeliver_unacknowledged_messages(self) -> None:
        """Redeliver everything unacknowledged on every topic."""
        self._queue.clear()
        for child in self.consumers.values():
            child.redeliver_unacknowledged_messages()

    async def seek(self, target: MessageId | int) -> None:
        """Seek every topic (to a publish time or the earliest/latest id), or the topic of a message id
        (the others keep their position and what they queued)."""
        child = self.child_of_id(target) if isinstance(target, MessageId) else None
        if child is not None:
            await child.seek(target)
            return
        if isinstance(target, MessageId) and target not in (MessageId.earliest, MessageId.latest):
            raise OperationNotSupported("seek on several topics needs a publish time, MessageId.earliest/latest, or an id from one of them")
        await asyncio.gather(*(c.seek(target) for c in self.consumers.values()))

    async def has_message_available(self) -> bool:
        """Whether any of the topics has a message after the last one received."""
        if self._queue:
            return True
        results = await asyncio.gather(*(c.has_message_available() for c in self.consumers.values()))
        return any(results)

    async def get_last_message_id(self) -> tuple[MessageId, MessageId | None]:
        """Not defined over several topics."""
        raise OperationNotSupported("get_last_message_id is for single-topic consumers")

    async def unsubscribe(self) -> None:
        """Unsubscribe on every topic."""
        await asyncio.gather(*(c.unsubscribe() for c in self.consumers.values()))
        await self.close()

    async def close(self) -> None:
        """Close every child consumer."""
        if self._closed:
            return
        self._closed = True
        if self._discovery is not None:
            self._discovery.cancel()
        await asyncio.gather(*(c.close() for c in self.consumers.values()), return_exceptions=True)
        for handler in self._handlers.values():
            try:
                await handler.close()
            except PulsarError:
                pass
        self._stop_receiver(AlreadyClosed(f"consumer on {self.topic} was closed"))

    def is_connected(self) -> bool:
        """Whether every child consumer is connected."""
        return all(c.is_connected() for c in self.consumers.values())

    def has_reached_end_of_topic(self) -> bool:
        """Whether every topic (partition) was terminated and read to its end."""
        return bool(self.consumers) and all(c.has_reached_end_of_topic() for c in self.consumers.values())

    def topics(self) -> list[str]:
        """Topic names this consumer reads."""
        return sorted(self.consumers)


def _without_domain(name: str) -> str:
    """A topic name (or pattern) without its ``persistent://`` / ``non-persistent://`` prefix."""
    _, sep, rest = name.partition("://")
    return rest if sep else name
