"""The asyncio client: connections, lookups, and factories for producers, consumers, readers.

``AsyncClient`` is the core. Partitioned topics get a producer per partition behind a router
and a multi-topic consumer over the partitions; topic lists and regex subscriptions use the
same multi-topic consumer, with periodic discovery of new topics for patterns.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from magnetar.client.auth import Authentication
from magnetar.client.connection import ConnectionPool
from magnetar.client.consumer import Consumer, ConsumerConfig, DeadLetterHandler, ReceiverBase
from magnetar.client.errors import (
    AlreadyClosed,
    InvalidConfiguration,
    InvalidTopicName,
    OperationNotSupported,
    PulsarError,
)
from magnetar.client.lookup import HttpLookupService, LookupService, ServiceUrl
from magnetar.client.message import Message, MessageId
from magnetar.client.policies import DEFAULT_MAX_RECONSUME_TIMES, ConsumerDeadLetterPolicy, topics_mode
from magnetar.client.producer import Producer, ProducerConfig
from magnetar.protocol.enums import InitialPosition, SubType, TopicsMode
from magnetar.protocol.hashing import java_string_hash, murmur3_32
from magnetar.protocol.topic_name import InvalidTopicNameError, TopicName

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
    """The partition of a keyed message, bit for bit as the Java client computes it:
    ``signSafeMod(hash(key) & Integer.MAX_VALUE, partitions)`` where the hash is
    ``String.hashCode()`` (JavaStringHash) or MurmurHash3 x86_32 of the UTF-8 bytes, seed 0."""
    if scheme == HashingScheme.Murmur3_32Hash:
        h = murmur3_32(key.encode("utf-8", "surrogatepass")) & 0x7FFFFFFF
    else:
        h = java_string_hash(key) & 0x7FFFFFFF
    return h % partitions


def _context(exc: PulsarError, what: str) -> PulsarError:
    """The same error type, saying what failed before why."""
    return type(exc)(f"{what}: {exc}")


def _topic(name: str) -> str:
    try:
        return str(TopicName.parse(name))
    except InvalidTopicNameError as exc:
        raise InvalidTopicName(str(exc)) from None


class AsyncClient:
    """A Pulsar client on the running asyncio loop. Use ``async with AsyncClient(url) as c``."""

    def __init__(
        self,
        service_url: str,
        authentication: Authentication | None = None,
        operation_timeout_seconds: float = 30,
        io_threads: int = 1,
        message_listener_threads: int = 1,
        concurrent_lookup_requests: int = 50000,
        log_conf_file_path: str | None = None,
        stats_interval_in_seconds: int = 600,
        use_tls: bool = False,
        tls_trust_certs_file_path: str | None = None,
        tls_allow_insecure_connection: bool = False,
        tls_validate_hostname: bool = False,
        logger: Any = None,
        connection_timeout_ms: int = 10000,
        listener_name: str | None = None,
        tls_private_key_file_path: str | None = None,
        tls_certificate_file_path: str | None = None,
        *,
        keep_alive_interval_seconds: float = 30,
    ) -> None:
        self.service_url = ServiceUrl.parse(service_url)
        if use_tls and not self.service_url.tls:
            self.service_url = ServiceUrl({"pulsar": "pulsar+ssl", "http": "https"}[self.service_url.scheme], self.service_url.hosts)
        if operation_timeout_seconds <= 0 or connection_timeout_ms <= 0:
            raise InvalidConfiguration("operation_timeout_seconds and connection_timeout_ms must be positive")
        if authentication is not None and not isinstance(authentication, Authentication):
            raise InvalidConfiguration(
                f"authentication must be a magnetar.client Authentication (e.g. AuthenticationToken), not {type(authentication).__name__}"
            )
        self.operation_timeout = float(operation_timeout_seconds)
        self.authentication = authentication
        self.message_listener_threads = message_listener_threads
        ssl_context = None
        if self.service_url.tls:
            import ssl

            ssl_context = ssl.create_default_context(cafile=tls_trust_certs_file_path)
            ssl_context.check_hostname = bool(tls_validate_hostname) and not tls_allow_insecure_connection
            if tls_allow_insecure_connection:
                ssl_context.verify_mode = ssl.CERT_NONE
            if tls_certificate_file_path:
                ssl_context.load_cert_chain(tls_certificate_file_path, tls_private_key_file_path)
        self.pool = ConnectionPool(connection_timeout_ms / 1000.0, keep_alive_interval_seconds, ssl_context, authentication)
        lookup_cls = HttpLookupService if self.service_url.http else LookupService
        self.lookup: LookupService = lookup_cls(self.pool, self.service_url, self.operation_timeout, listener_name)
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
        name = TopicName.parse(_topic(topic))
        n = await self.lookup.partitions(str(name))
        return [str(name.partition(i)) for i in range(n)] if n else [str(name)]

    async def create_producer(
        self,
        topic: str,
        producer_name: str | None = None,
        schema: Any = None,
        *,
        message_routing_mode: int = PartitionsRoutingMode.RoundRobinDistribution,
        message_router: Callable[[Any, int], int] | None = None,
        hashing_scheme: int = HashingScheme.JavaStringHash,
        **options: Any,
    ) -> Producer | PartitionedProducer:
        """A producer on ``topic`` (a partitioned producer when the topic is partitioned).

        Options are those of ``pulsar.Client.create_producer`` (see ProducerConfig).
        """
        self._check_open()
        name = _topic(topic)
        try:
            config = ProducerConfig(producer_name=producer_name, schema=schema, **options)
        except TypeError as exc:
            raise InvalidConfiguration(f"create_producer: {exc}") from None
        try:
            n = await self.lookup.partitions(name)
            if n:
                producer: Any = PartitionedProducer(
                    self, name, n, config, message_routing_mode, message_router, hashing_scheme
                )
            else:
                producer = Producer(self, name, config)
            await producer.start()
        except PulsarError as exc:
            raise _context(exc, f"could not create a producer on {name}") from exc
        self._handles.append(producer)
        return producer

    async def _new_producer(self, topic: str, config: ProducerConfig) -> Producer | PartitionedProducer:
        """A producer owned by someone else (dead letter producers): not closed with the client."""
        n = await self.lookup.partitions(topic)
        producer: Any = PartitionedProducer(self, topic, n, config, 0, None, HashingScheme.JavaStringHash) if n else Producer(self, topic, config)
        await producer.start()
        return producer

    async def subscribe(
        self,
        topic: str | list[str] | re.Pattern,
        subscription_name: str,
        consumer_type: SubType = SubType.Exclusive,
        schema: Any = None,
        message_listener: Callable | None = None,
        *,
        pattern_auto_discovery_period: float = 60,
        regex_subscription_mode: int = TopicsMode.PERSISTENT,
        enable_retry: bool | None = None,
        **options: Any,
    ) -> Consumer | MultiTopicsConsumer:
        """A consumer on a topic, a list of topics, or every topic matching a pattern.

        Options are those of ``pulsar.Client.subscribe`` (see ConsumerConfig); ``retry_enable``
        (or ``enable_retry``) also subscribes to the retry letter topic for ``reconsume_later``.
        """
        self._check_open()
        if not subscription_name:
            raise InvalidConfiguration("subscribe: the subscription name is empty")
        if enable_retry is not None:
            options["retry_enable"] = enable_retry
        try:
            config = ConsumerConfig(consumer_type=consumer_type, schema=schema, message_listener=message_listener, **options)
        except TypeError as exc:
            raise InvalidConfiguration(f"subscribe: {exc}") from None
        what = f"could not subscribe to {topic if isinstance(topic, str) else getattr(topic, 'pattern', topic)} as {subscription_name!r}"
        try:
            consumer = await self._subscribe(topic, subscription_name, config, pattern_auto_discovery_period, regex_subscription_mode)
        except PulsarError as exc:
            raise _context(exc, what) from exc
        self._handles.append(consumer)
        return consumer

    async def _subscribe(
        self, topic: Any, subscription: str, config: ConsumerConfig, period: float, mode: int
    ) -> Consumer | MultiTopicsConsumer:
        if isinstance(topic, re.Pattern):
            consumer: Any = MultiTopicsConsumer(
                self, [], subscription, config, pattern=topic, discovery_period=period, mode=topics_mode(mode)
            )
        elif isinstance(topic, (list, tuple)):
            if not topic:
                raise InvalidConfiguration("subscribe: the topic list is empty")
            topics = [_topic(t) for t in topic]
            consumer = MultiTopicsConsumer(self, topics, subscription, config)
        else:
            name = _topic(topic)
            if config.retry_enable:
                policy = config.dead_letter_policy or ConsumerDeadLetterPolicy(DEFAULT_MAX_RECONSUME_TIMES)
                handler = DeadLetterHandler(self, policy, name, subscription, config.consumer_name or "")
                config.dead_letter_policy = ConsumerDeadLetterPolicy(
                    policy.max_redeliver_count, handler.dead_letter_topic, policy.initial_subscription_name,
                    handler.retry_letter_topic,
                )
                consumer = MultiTopicsConsumer(self, [name, handler.retry_letter_topic], subscription, config)
            else:
                n = await self.lookup.partitions(name)
                consumer = MultiTopicsConsumer(self, [name], subscription, config) if n else Consumer(self, name, subscription, config)
        try:
            await consumer.start()
        except BaseException:
            await consumer.close()
            raise
        return consumer

    async def create_reader(
        self,
        topic: str,
        start_message_id: MessageId,
        schema: Any = None,
        reader_listener: Callable | None = None,
        receiver_queue_size: int = 1000,
        reader_name: str | None = None,
        subscription_role_prefix: str | None = None,
        is_read_compacted: bool = False,
        crypto_key_reader: Any = None,
        start_message_id_inclusive: bool = False,
        crypto_failure_action: Any = None,
    ) -> Reader:
        """A reader: a non-durable, exclusive subscription starting at ``start_message_id``."""
        self._check_open()
        if not isinstance(start_message_id, MessageId):
            raise InvalidConfiguration(f"create_reader: start_message_id must be a MessageId, not {type(start_message_id).__name__}")
        name = _topic(topic)
        sub = f"{subscription_role_prefix or 'reader'}-{time.time_ns() & 0xFFFFFFFFFF:010x}"
        config = ConsumerConfig(
            consumer_type=SubType.Exclusive,
            receiver_queue_size=receiver_queue_size,
            consumer_name=reader_name,
            is_read_compacted=is_read_compacted,
            start_message_id_inclusive=start_message_id_inclusive,
            initial_position=InitialPosition.Earliest if start_message_id == MessageId.earliest else InitialPosition.Latest,
            message_listener=reader_listener,
            schema=schema,
            crypto_key_reader=crypto_key_reader,
        )
        try:
            n = await self.lookup.partitions(name)
            if n:
                if start_message_id not in (MessageId.earliest, MessageId.latest):
                    raise OperationNotSupported("a reader of a partitioned topic starts at MessageId.earliest or MessageId.latest only")
                consumer: Any = MultiTopicsConsumer(self, [name], sub, config, durable=False, start_message_id=start_message_id)
            else:
                consumer = Consumer(self, name, sub, config, durable=False, start_message_id=start_message_id)
            await consumer.start()
        except PulsarError as exc:
            raise _context(exc, f"could not create a reader on {name}") from exc
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

    async def shutdown(self) -> None:
        """Same as close()."""
        await self.close()


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
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        import dataclasses

        self.client = client
        self.topic = topic
        self.config = config
        self.routing_mode = routing_mode
        self.router = router
        self.hashing_scheme = hashing_scheme
        self.clock = clock
        base = TopicName.parse(topic)
        per_partition = config
        if config.max_pending_messages > 0 and config.max_pending_messages_across_partitions > 0:
            limit = max(1, min(config.max_pending_messages, config.max_pending_messages_across_partitions // partitions))
            per_partition = dataclasses.replace(config, max_pending_messages=limit)
        self.producers = [Producer(client, str(base.partition(i)), per_partition, partition=i) for i in range(partitions)]
        seed = time.time_ns()
        self._single = seed % partitions
        # round robin at batch boundaries: stay on a partition for one batch's worth of messages
        self._cursor = seed // 7 % partitions
        self._batch_count = 0
        self._batch_bytes = 0
        self._last_switch = clock()

    @property
    def name(self) -> str:
        """Producer name (that of the first partition's producer)."""
        return self.producers[0].name

    @property
    def last_sequence_id_published(self) -> int:
        """Highest sequence id published over the partitions."""
        return max(p.last_sequence_id_published for p in self.producers)

    async def start(self) -> None:
        """Connect every partition's producer."""
        results = await asyncio.gather(*(p.start() for p in self.producers), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            await asyncio.gather(*(p.close() for p in self.producers), return_exceptions=True)
            raise errors[0]

    def partition_for(self, content: bytes, options: dict) -> int:
        """The partition a message goes to."""
        n = len(self.producers)
        if self.router is not None:
            index = self.router(_RoutedMessage(content, options), n)
            if not isinstance(index, int) or not 0 <= index < n:
                raise InvalidConfiguration(f"the message router returned {index!r}: not a partition in [0, {n})")
            return index
        if self.routing_mode == PartitionsRoutingMode.CustomPartition:
            raise InvalidConfiguration("CustomPartition routing needs a message_router")
        key = options.get("partition_key")
        if key:
            return partition_for_key(key, n, self.hashing_scheme)
        if self.routing_mode == PartitionsRoutingMode.UseSinglePartition:
            return self._single
        if not self.config.batching_enabled:
            self._cursor += 1
            return self._cursor % n
        size = len(content) if content is not None else 0
        now = self.clock()
        cfg = self.config
        if (
            self._batch_count >= cfg.batching_max_messages
            or size >= cfg.batching_max_allowed_size_in_bytes - self._batch_bytes
            or (now - self._last_switch) * 1000 >= cfg.batching_max_publish_delay_ms
        ):
            self._cursor += 1
            self._last_switch = now
            self._batch_count = 1
            self._batch_bytes = size
        else:
            self._batch_count += 1
            self._batch_bytes += size
        return self._cursor % n

    def _choose(self, content: bytes, options: dict) -> Producer:
        return self.producers[self.partition_for(content, options)]

    async def send(self, content: Any, **options: Any) -> MessageId:
        """Publish one message to the partition its router picks and wait for the receipt."""
        return await self._choose(content, options).send(content, **options)

    async def send_async(self, content: Any, callback: Any = None, **options: Any) -> asyncio.Future[MessageId]:
        """Queue one message on the partition its router picks."""
        return await self._choose(content, options).send_async(content, callback, **options)

    def send_nowait(self, content: Any, waiter: Any = None, **options: Any) -> None:
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


class _RoutedMessage:
    """What a custom router sees of a message."""

    __slots__ = ("_content", "_options")

    def __init__(self, content: bytes, options: dict) -> None:
        self._content = content
        self._options = options

    def data(self) -> bytes:
        """The payload (before schema encoding)."""
        return self._content

    def partition_key(self) -> str:
        """The key ('' when none)."""
        return self._options.get("partition_key") or ""

    def ordering_key(self) -> bytes:
        """The ordering key (b'' when none)."""
        return self._options.get("ordering_key") or b""

    def properties(self) -> dict[str, str]:
        """The properties."""
        return self._options.get("properties") or {}

    def event_timestamp(self) -> int:
        """The event time (0 when none)."""
        return self._options.get("event_timestamp") or 0


class MultiTopicsConsumer(ReceiverBase):
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
        durable: bool = True,
        start_message_id: MessageId | None = None,
    ) -> None:
        import dataclasses

        self.client = client
        self.subscription = subscription
        self.pattern = pattern
        self.discovery_period = discovery_period
        self.mode = mode
        self.durable = durable
        self.start_message_id = start_message_id
        self._topics = list(topics)
        self.name = config.consumer_name or f"magnetar-multi-{next(_multi_ids)}"
        self.config = config
        # children share the name (dead letter producers are named after it) and have no listener
        self._child_config = dataclasses.replace(config, consumer_name=self.name, message_listener=None)
        self.consumers: dict[str, Consumer] = {}
        self._handlers: dict[str, DeadLetterHandler] = {}
        self._closed = False
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
        self._start_listener()

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

    def _new_child(self, name: str, partition: int) -> Consumer:
        child = Consumer(
            self.client, name, self.subscription, self._child_config, partition=partition,
            durable=self.durable, start_message_id=self.start_message_id, dead_letter=self._handler_for(name),
        )
        child.sink = self._on_messages
        return child

    async def _add_topic(self, topic: str) -> None:
        n = await self.client.lookup.partitions(topic)
        base = TopicName.parse(topic)
        names = [str(base.partition(i)) for i in range(n)] if n else [topic]
        new = [self._new_child(name, i if n else -1) for i, name in enumerate(names) if name not in self.consumers]
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
        assert self.pattern is not None
        name = TopicName.parse(topic)
        candidates = [topic, str(name.partitioned_parent)]
        if "://" not in self.pattern.pattern:
            candidates += [name.local_name, name.partitioned_parent.local_name]
        return any(self.pattern.fullmatch(c) for c in candidates)

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

    def _on_messages(self, child: Consumer, messages: list[Message]) -> None:
        self._deliver(messages)

    def _dequeued_many(self, messages: Iterable[Message]) -> None:
        batch: list[Message] = []
        owner = None
        for msg in messages:
            if msg._consumer is not owner and batch:
                owner._dequeued_many(batch)
                batch = []
            owner = msg._consumer
            batch.append(msg)
        if batch:
            owner._dequeued_many(batch)

    def _taken(self, messages: list[Message]) -> None:
        for msg in messages:
            msg._consumer._last_dequeued = msg._id

    def _want_one(self) -> None:
        if self.config.receiver_queue_size == 0:
            for child in self.consumers.values():
                child._want_one()

    def dequeued(self, msg: Message) -> None:
        """A message was handed to the application."""
        msg._consumer.dequeued(msg)

    def _child(self, message: Message | MessageId) -> Consumer:
        if isinstance(message, Message) and message._consumer is not None:
            return message._consumer
        mid = message.message_id() if isinstance(message, Message) else message
        child = self.consumers.get(mid.topic or "")
        if child is None:
            raise OperationNotSupported(f"message id {mid} does not say which of the topics {sorted(self.consumers)} it belongs to")
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

    async def reconsume_later(self, message: Message, delay: float = 0, properties: dict[str, str] | None = None) -> None:
        """Send the message to the retry letter topic (see Consumer.reconsume_later)."""
        await self._child(message).reconsume_later(message, delay, properties)

    def redeliver_unacknowledged_messages(self) -> None:
        """Redeliver everything unacknowledged on every topic."""
        self._queue.clear()
        for child in self.consumers.values():
            child.redeliver_unacknowledged_messages()

    async def seek(self, target: MessageId | int) -> None:
        """Seek every topic (to a publish time or the earliest/latest id), or the topic of a message id."""
        self._queue.clear()
        if isinstance(target, MessageId) and target.topic and target.topic in self.consumers:
            await self.consumers[target.topic].seek(target)
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

    def topics(self) -> list[str]:
        """Topic names this consumer reads."""
        return sorted(self.consumers)


_multi_ids = itertools.count()


class Reader:
    """Reads a topic from a position, with no durable subscription."""

    def __init__(self, consumer: Consumer | MultiTopicsConsumer) -> None:
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
]
