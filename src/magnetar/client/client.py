"""The asyncio client: connections, lookups, and factories for producers, consumers, readers.

``AsyncClient`` is the core. Partitioned topics get a producer per partition behind a router
and a multi-topic consumer over the partitions; topic lists and regex subscriptions use the
same multi-topic consumer, with periodic discovery of new topics for patterns.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from magnetar.protocol.enums import InitialPosition, SubType, TopicsMode
from magnetar.protocol.hashing import java_string_hash, murmur3_32
from magnetar.protocol.topic_name import TopicName

from .connection import ConnectionPool
from .consumer import Consumer, ConsumerConfig
from .errors import AlreadyClosed, InvalidConfiguration, PulsarError, Timeout
from .lookup import HttpLookupService, LookupService, ServiceUrl
from .message import Message, MessageId
from .producer import Producer, ProducerConfig

log = logging.getLogger("magnetar.client")


class PartitionsRoutingMode:
    """How a partitioned producer picks a partition for messages without a key."""

    RoundRobinDistribution = 0
    UseSinglePartition = 1
    CustomPartition = 2


class HashingScheme:
    """Hash of a message key used to pick its partition (as the Java client)."""

    JavaStringHash = 0
    Murmur3_32Hash = 1


def partition_for_key(key: str, partitions: int, scheme: int = HashingScheme.JavaStringHash) -> int:
    """The partition of a keyed message, bit for bit as the Java client computes it."""
    if scheme == HashingScheme.Murmur3_32Hash:
        h = murmur3_32(key.encode()) & 0x7FFFFFFF
    else:
        h = java_string_hash(key) & 0x7FFFFFFF
    return h % partitions


class AsyncClient:
    """A Pulsar client on the running asyncio loop. Use ``async with AsyncClient(url) as c``."""

    def __init__(
        self,
        service_url: str,
        *,
        operation_timeout_seconds: float = 30,
        connection_timeout_ms: int = 10000,
        keep_alive_interval_seconds: float = 30,
        authentication: Any = None,
        tls_trust_certs_file_path: str | None = None,
        tls_allow_insecure_connection: bool = False,
        tls_validate_hostname: bool = False,
        listener_name: str | None = None,
    ) -> None:
        self.service_url = ServiceUrl.parse(service_url)
        self.operation_timeout = float(operation_timeout_seconds)
        self.authentication = authentication
        ssl_context = None
        if self.service_url.tls:
            import ssl

            ssl_context = ssl.create_default_context(cafile=tls_trust_certs_file_path)
            ssl_context.check_hostname = tls_validate_hostname
            if tls_allow_insecure_connection:
                ssl_context.verify_mode = ssl.CERT_NONE
        self.pool = ConnectionPool(connection_timeout_ms / 1000.0, keep_alive_interval_seconds, ssl_context)
        lookup_cls = HttpLookupService if self.service_url.http else LookupService
        self.lookup: LookupService = lookup_cls(self.pool, self.service_url, self.operation_timeout)
        self._handles: list[Any] = []
        self._closed = False

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise AlreadyClosed("client is closed")

    async def get_topic_partitions(self, topic: str) -> list[str]:
        """Partition topic names of ``topic`` (itself when not partitioned)."""
        self._check_open()
        name = TopicName.parse(topic)
        n = await self.lookup.partitions(str(name))
        return [str(name.partition(i)) for i in range(n)] if n else [str(name)]

    async def create_producer(
        self,
        topic: str,
        *,
        message_routing_mode: int = PartitionsRoutingMode.RoundRobinDistribution,
        message_router: Callable[[Any, int], int] | None = None,
        hashing_scheme: int = HashingScheme.JavaStringHash,
        **options: Any,
    ) -> Producer | PartitionedProducer:
        """A producer on ``topic`` (a partitioned producer when the topic is partitioned)."""
        self._check_open()
        config = ProducerConfig(**options)
        name = TopicName.parse(topic)
        n = await self.lookup.partitions(str(name))
        if n:
            producer: Any = PartitionedProducer(self, str(name), n, config, message_routing_mode, message_router, hashing_scheme)
        else:
            producer = Producer(self, str(name), config)
        await producer.start()
        self._handles.append(producer)
        return producer

    async def subscribe(
        self,
        topic: str | list[str] | re.Pattern,
        subscription_name: str,
        *,
        consumer_type: SubType = SubType.Exclusive,
        pattern_auto_discovery_period: float = 60,
        regex_subscription_mode: TopicsMode = TopicsMode.PERSISTENT,
        **options: Any,
    ) -> Consumer | MultiTopicsConsumer:
        """A consumer on a topic, a list of topics, or every topic matching a pattern."""
        self._check_open()
        config = ConsumerConfig(consumer_type=consumer_type, **options)
        if isinstance(topic, re.Pattern):
            consumer: Any = MultiTopicsConsumer(
                self, [], subscription_name, config, pattern=topic,
                discovery_period=pattern_auto_discovery_period, mode=regex_subscription_mode,
            )
        elif isinstance(topic, (list, tuple)):
            consumer = MultiTopicsConsumer(self, [str(TopicName.parse(t)) for t in topic], subscription_name, config)
        else:
            name = str(TopicName.parse(topic))
            n = await self.lookup.partitions(name)
            if n:
                consumer = MultiTopicsConsumer(self, [name], subscription_name, config)
            else:
                consumer = Consumer(self, name, subscription_name, config)
        await consumer.start()
        self._handles.append(consumer)
        return consumer

    async def create_reader(
        self,
        topic: str,
        start_message_id: MessageId,
        *,
        reader_name: str | None = None,
        subscription_role_prefix: str | None = None,
        receiver_queue_size: int = 1000,
        is_read_compacted: bool = False,
        start_message_id_inclusive: bool = False,
        reader_listener: Callable | None = None,
        **options: Any,
    ) -> Reader:
        """A reader: a non-durable, exclusive subscription starting at ``start_message_id``."""
        self._check_open()
        name = str(TopicName.parse(topic))
        sub = f"{subscription_role_prefix or 'reader'}-{time.time_ns() & 0xFFFFFFFFFF:010x}"
        config = ConsumerConfig(
            consumer_type=SubType.Exclusive,
            receiver_queue_size=receiver_queue_size,
            consumer_name=reader_name,
            is_read_compacted=is_read_compacted,
            start_message_id_inclusive=start_message_id_inclusive,
            initial_position=InitialPosition.Earliest if start_message_id == MessageId.earliest else InitialPosition.Latest,
            message_listener=reader_listener,
            **options,
        )
        consumer = Consumer(self, name, sub, config, durable=False, start_message_id=start_message_id)
        await consumer.start()
        reader = Reader(consumer)
        self._handles.append(reader)
        return reader

    async def close(self) -> None:
        """Close every producer, consumer and reader, then the connections."""
        if self._closed:
            return
        for handle in reversed(self._handles):
            try:
                await handle.close()
            except PulsarError:
                pass
        self._handles.clear()
        await self.pool.close()
        self._closed = True


class PartitionedProducer:
    """A producer over every partition of a partitioned topic, with a router."""

    def __init__(
        self,
        client: AsyncClient,
        topic: str,
        partitions: int,
        config: ProducerConfig,
        routing_mode: int,
        router: Callable[[Any, int], int] | None,
        hashing_scheme: int,
    ) -> None:
        self.client = client
        self.topic = topic
        self.config = config
        self.routing_mode = routing_mode
        self.router = router
        self.hashing_scheme = hashing_scheme
        base = TopicName.parse(topic)
        self.producers = [Producer(client, str(base.partition(i)), config, partition=i) for i in range(partitions)]
        self._single = int(time.time_ns()) % partitions
        self._rr_start = time.monotonic()
        self._rr_offset = int(time.time_ns()) % partitions

    @property
    def name(self) -> str:
        """Producer name (that of the first partition's producer)."""
        return self.producers[0].name

    async def start(self) -> None:
        """Connect every partition's producer."""
        await asyncio.gather(*(p.start() for p in self.producers))

    def _choose(self, content: bytes, options: dict) -> Producer:
        n = len(self.producers)
        key = options.get("partition_key")
        if self.routing_mode == PartitionsRoutingMode.CustomPartition and self.router is not None:
            return self.producers[self.router(_RoutedMessage(content, options), n) % n]
        if key:
            return self.producers[partition_for_key(key, n, self.hashing_scheme)]
        if self.routing_mode == PartitionsRoutingMode.UseSinglePartition:
            return self.producers[self._single]
        if not self.config.batching_enabled:
            self._rr_offset += 1
            return self.producers[self._rr_offset % n]
        # switch partition at batch boundaries: once per batching window
        window = max(self.config.batching_max_publish_delay_ms, 1) / 1000.0
        slot = int((time.monotonic() - self._rr_start) / window)
        return self.producers[(slot + self._rr_offset) % n]

    async def send(self, content: bytes, **options: Any) -> MessageId:
        """Publish one message to the partition its router picks and wait for the receipt."""
        return await self._choose(content, options).send(content, **options)

    async def send_async(self, content: bytes, callback: Any = None, **options: Any) -> asyncio.Future[MessageId]:
        """Queue one message on the partition its router picks."""
        return await self._choose(content, options).send_async(content, callback, **options)

    def send_nowait(self, content: bytes, waiter: Any = None, **options: Any) -> None:
        """Queue a message without waiting."""
        self._choose(content, options).send_nowait(content, waiter, **options)

    async def flush(self) -> None:
        """Flush every partition."""
        await asyncio.gather(*(p.flush() for p in self.producers))

    async def close(self) -> None:
        """Close every partition's producer."""
        await asyncio.gather(*(p.close() for p in self.producers), return_exceptions=True)

    def is_connected(self) -> bool:
        """Whether every partition's producer is connected."""
        return all(p.is_connected() for p in self.producers)

    @property
    def last_sequence_id_published(self) -> int:
        """Highest sequence id published over the partitions."""
        return max(p.last_sequence_id_published for p in self.producers)


class _RoutedMessage:
    """What a custom router sees of a message."""

    __slots__ = ("_content", "_options")

    def __init__(self, content: bytes, options: dict) -> None:
        self._content = content
        self._options = options

    def data(self) -> bytes:
        """The payload."""
        return self._content

    def partition_key(self) -> str:
        """The key ('' when none)."""
        return self._options.get("partition_key") or ""

    def properties(self) -> dict[str, str]:
        """The properties."""
        return self._options.get("properties") or {}


class MultiTopicsConsumer:
    """One subscription over several topics: a list, the partitions of one, or a pattern."""

    def __init__(
        self,
        client: AsyncClient,
        topics: list[str],
        subscription: str,
        config: ConsumerConfig,
        *,
        pattern: re.Pattern | None = None,
        discovery_period: float = 60,
        mode: TopicsMode = TopicsMode.PERSISTENT,
    ) -> None:
        self.client = client
        self.subscription = subscription
        self.config = config
        self.pattern = pattern
        self.discovery_period = discovery_period
        self.mode = mode
        self._topics = list(topics)
        self.consumers: dict[str, Consumer] = {}
        self._queue: deque[tuple[Consumer, Message]] = deque()
        self._waiters: deque[asyncio.Future] = deque()
        self._closed = False
        self._discovery: asyncio.Task | None = None
        self._listener = config.message_listener
        self._listener_task: asyncio.Task | None = None
        self._listener_wakeup = asyncio.Event()

    @property
    def topic(self) -> str:
        """The topics (or pattern) subscribed."""
        return self.pattern.pattern if self.pattern is not None else ",".join(self._topics)

    async def start(self) -> None:
        """Subscribe to every topic (and start discovery for a pattern)."""
        if self.pattern is not None:
            await self._discover()
            self._discovery = asyncio.create_task(self._discover_loop())
        else:
            for topic in self._topics:
                await self._add_topic(topic)
        if self._listener is not None:
            self._listener_task = asyncio.create_task(self._run_listener())

    async def _add_topic(self, topic: str) -> None:
        n = await self.client.lookup.partitions(topic)
        base = TopicName.parse(topic)
        names = [str(base.partition(i)) for i in range(n)] if n else [topic]
        child_config = ConsumerConfig(**{**self.config.__dict__, "message_listener": None})
        new = []
        for i, name in enumerate(names):
            if name in self.consumers:
                continue
            child = Consumer(self.client, name, self.subscription, child_config, partition=i if n else -1)
            child.sink = self._on_messages
            new.append(child)
        await asyncio.gather(*(c.start() for c in new))
        for child in new:
            self.consumers[child.topic] = child

    def _matches(self, topic: str) -> bool:
        assert self.pattern is not None
        parent = str(TopicName.parse(topic).partitioned_parent)
        return bool(self.pattern.fullmatch(topic) or self.pattern.fullmatch(parent))

    async def _discover(self) -> None:
        assert self.pattern is not None
        source = self.pattern.pattern
        namespace = "public/default"
        m = re.match(r"^(?:persistent|non-persistent)://([^/]+)/([^/]+)/", source)
        if m:
            namespace = f"{m.group(1)}/{m.group(2)}"
        topics = await self.client.lookup.topics_of_namespace(namespace, self.mode)
        for topic in topics:
            if self._matches(topic) and topic not in self.consumers:
                parent = str(TopicName.parse(topic).partitioned_parent)
                index = TopicName.parse(topic).partition_index
                child_config = ConsumerConfig(**{**self.config.__dict__, "message_listener": None})
                child = Consumer(self.client, topic, self.subscription, child_config, partition=index)
                child.sink = self._on_messages
                await child.start()
                self.consumers[topic] = child
                if parent not in self._topics:
                    self._topics.append(parent)

    async def _discover_loop(self) -> None:
        while not self._closed:
            await asyncio.sleep(self.discovery_period)
            try:
                await self._discover()
            except PulsarError as exc:
                log.info("topic discovery for %s failed: %s", self.topic, exc)

    def _on_messages(self, child: Consumer, messages: list[Message]) -> None:
        waiters = self._waiters
        for msg in messages:
            while waiters:
                fut = waiters.popleft()
                if not fut.done():
                    child.dequeued(msg)
                    fut.set_result(msg)
                    break
            else:
                self._queue.append((child, msg))
        if self._listener is not None:
            self._listener_wakeup.set()

    async def receive(self, timeout_millis: int | None = None) -> Message:
        """The next message from any of the topics."""
        if self._closed:
            raise AlreadyClosed("consumer is closed")
        if self._queue:
            child, msg = self._queue.popleft()
            child.dequeued(msg)
            return msg
        fut: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            if timeout_millis is None:
                return await fut
            return await asyncio.wait_for(fut, timeout_millis / 1000.0)
        except TimeoutError:
            raise Timeout(f"no message within {timeout_millis} ms on {self.topic}") from None
        finally:
            if not fut.done():
                fut.cancel()

    def receive_nowait(self, max_messages: int) -> list[Message]:
        """Up to ``max_messages`` queued messages, without waiting."""
        out = []
        while self._queue and len(out) < max_messages:
            child, msg = self._queue.popleft()
            child.dequeued(msg)
            out.append(msg)
        return out

    def queued(self) -> int:
        """Messages waiting."""
        return len(self._queue)

    async def _run_listener(self) -> None:
        assert self._listener is not None
        while not self._closed:
            if not self._queue:
                self._listener_wakeup.clear()
                await self._listener_wakeup.wait()
                continue
            child, msg = self._queue.popleft()
            child.dequeued(msg)
            try:
                result = self._listener(self, msg)
                if asyncio.iscoroutine(result):
                    await result
            except Exception:
                log.exception("message listener failed")

    def _child(self, message: Message | MessageId) -> Consumer:
        mid = message.message_id() if isinstance(message, Message) else message
        topic = message.topic_name() if isinstance(message, Message) else mid.topic
        child = self.consumers.get(topic or "")
        if child is None:
            from .errors import OperationNotSupported

            raise OperationNotSupported(f"message id {mid} does not say which topic it belongs to")
        return child

    def acknowledge(self, message: Message | MessageId) -> None:
        """Acknowledge one message on the topic it came from."""
        self._child(message).acknowledge(message)

    def acknowledge_cumulative(self, message: Message | MessageId) -> None:
        """Cumulative acknowledgement on the message's topic."""
        self._child(message).acknowledge_cumulative(message)

    def negative_acknowledge(self, message: Message | MessageId) -> None:
        """Negative acknowledgement on the message's topic."""
        self._child(message).negative_acknowledge(message)

    def redeliver_unacknowledged_messages(self) -> None:
        """Redeliver everything unacknowledged on every topic."""
        self._queue.clear()
        for child in self.consumers.values():
            child.redeliver_unacknowledged_messages()

    async def seek(self, target: MessageId | int) -> None:
        """Seek every topic (to a publish time), or the topic of a message id."""
        self._queue.clear()
        if isinstance(target, MessageId) and target.topic:
            await self.consumers[target.topic].seek(target)
            return
        await asyncio.gather(*(c.seek(target) for c in self.consumers.values()))

    async def unsubscribe(self) -> None:
        """Unsubscribe on every topic."""
        await asyncio.gather(*(c.unsubscribe() for c in self.consumers.values()))
        await self.close()

    async def close(self) -> None:
        """Close every child consumer."""
        if self._closed:
            return
        self._closed = True
        for task in (self._discovery, self._listener_task):
            if task is not None:
                task.cancel()
        await asyncio.gather(*(c.close() for c in self.consumers.values()), return_exceptions=True)
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_exception(AlreadyClosed("consumer closed"))

    def is_connected(self) -> bool:
        """Whether every child consumer is connected."""
        return all(c.is_connected() for c in self.consumers.values())

    def topics(self) -> list[str]:
        """Topic names this consumer reads."""
        return sorted(self.consumers)


class Reader:
    """Reads a topic from a position, with no durable subscription."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer

    @property
    def topic(self) -> str:
        """The topic read."""
        return self.consumer.topic

    async def read_next(self, timeout_millis: int | None = None) -> Message:
        """The next message."""
        return await self.consumer.receive(timeout_millis)

    async def has_message_available(self) -> bool:
        """Whether a next message exists now."""
        return await self.consumer.has_message_available()

    async def seek(self, target: MessageId | int) -> None:
        """Move to a message id or publish time."""
        await self.consumer.seek(target)

    async def close(self) -> None:
        """Close the reader."""
        await self.consumer.close()

    def is_connected(self) -> bool:
        """Whether the reader is connected."""
        return self.consumer.is_connected()


__all__ = [
    "AsyncClient",
    "HashingScheme",
    "MultiTopicsConsumer",
    "PartitionedProducer",
    "PartitionsRoutingMode",
    "Reader",
    "partition_for_key",
    "InvalidConfiguration",
]
