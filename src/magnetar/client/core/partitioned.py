"""A producer over every partition of a partitioned topic, and how it picks a partition.

Keyed messages go to ``hash(key) % partitions`` as the Java client computes it; others follow
the routing mode (round robin at batch boundaries by default, one partition, or a custom router).
The number of partitions is polled every ``partitions_update_interval`` seconds of the client
(the Java client's autoUpdatePartitions): producers for new partitions join at once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from magnetar.client.api.config import ProducerConfig
from magnetar.client.api.message import MessageId
from magnetar.client.core.handler import ClientContext
from magnetar.client.core.producer import AsyncProducer
from magnetar.client.core.sends import separate
from magnetar.client.exceptions import InvalidConfiguration, PulsarError
from magnetar.protocol.hashing import java_string_hash, murmur3_32
from magnetar.protocol.topic_name import TopicName

log = logging.getLogger("magnetar.client")


class PartitionsRoutingMode:
    """How a partitioned producer picks a partition for messages without a key (the official
    client's names and values)."""

    UseSinglePartition = 0
    RoundRobinDistribution = 1
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


def start_partition_updates(
    client: ClientContext, what: str, update: Callable[[], Awaitable[None]]
) -> asyncio.Task | None:
    """A task running ``update()`` every ``client.partitions_update_interval`` seconds (None
    when the interval is 0: no updates); a failed update is logged and tried again later."""
    interval = client.partitions_update_interval
    if not interval or interval <= 0:
        return None

    async def loop() -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await update()
            except PulsarError as exc:
                log.info("partition update of %s failed: %s", what, exc)

    return asyncio.get_running_loop().create_task(loop())


class AsyncPartitionedProducer:
    """A producer over every partition of a partitioned topic, with a router."""

    def __init__(
        self,
        client: ClientContext,
        topic: str,
        partitions: int,
        config: ProducerConfig,
        routing_mode: int,
        router: Callable[[Any, int], int] | None,
        hashing_scheme: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.topic = topic
        self.config = config
        self._routing_mode = routing_mode
        self._router = router
        self.hashing_scheme = hashing_scheme
        self.clock = clock
        #: a KeyValue SEPARATED schema's split into (key, value), done before routing
        self._split = config.schema.split if getattr(config.schema, "separated", False) else None
        self._base = TopicName.parse(topic)
        per_partition = config
        if config.max_pending_messages > 0 and config.max_pending_messages_across_partitions > 0:
            limit = max(1, min(config.max_pending_messages, config.max_pending_messages_across_partitions // partitions))
            per_partition = dataclasses.replace(config, max_pending_messages=limit)
        self._per_partition = per_partition
        self._settled_hook: Callable[[int], None] | None = None
        self.producers = [self._new_producer(i) for i in range(partitions)]
        self._updater: asyncio.Task | None = None
        self._closed = False
        seed = time.time_ns()
        self._single = seed % partitions
        # round robin at batch boundaries: stay on a partition for one batch's worth of messages
        self._cursor = seed // 7 % partitions
        self._batch_count = 0
        self._batch_bytes = 0
        self._last_switch = clock()
        self._batch_turns = self._routes_by_batch_turns()

    def _routes_by_batch_turns(self) -> bool:
        """Whether messages without options go round robin at batch boundaries (no router, batching on)."""
        return (
            self._router is None and self.config.batching_enabled
            and self._routing_mode not in (PartitionsRoutingMode.UseSinglePartition, PartitionsRoutingMode.CustomPartition)
        )

    @property
    def routing_mode(self) -> int:
        """The PartitionsRoutingMode used when no router is set."""
        return self._routing_mode

    @routing_mode.setter
    def routing_mode(self, mode: int) -> None:
        self._routing_mode = mode
        self._batch_turns = self._routes_by_batch_turns()

    @property
    def router(self) -> Callable[[Any, int], int] | None:
        """The message router (message, partitions) -> partition, if one is set."""
        return self._router

    @router.setter
    def router(self, router: Callable[[Any, int], int] | None) -> None:
        self._router = router
        self._batch_turns = self._routes_by_batch_turns()

    @property
    def name(self) -> str:
        """Producer name (that of the first partition's producer)."""
        return self.producers[0].name

    @property
    def last_sequence_id_published(self) -> int:
        """Highest sequence id published over the partitions."""
        return max(p.last_sequence_id_published for p in self.producers)

    def _new_producer(self, partition: int) -> AsyncProducer:
        producer = AsyncProducer(self.client, str(self._base.partition(partition)), self._per_partition, partition=partition)
        producer.settled_hook = self._settled_hook
        return producer

    @property
    def settled_hook(self) -> Callable[[int], None] | None:
        """Called with a count of messages settled (receipt or failure) on any partition."""
        return self._settled_hook

    @settled_hook.setter
    def settled_hook(self, hook: Callable[[int], None] | None) -> None:
        self._settled_hook = hook
        for producer in self.producers:
            producer.settled_hook = hook

    async def start(self) -> None:
        """Connect every partition's producer, then follow the number of partitions."""
        await self._start_all(self.producers)
        self._updater = start_partition_updates(self.client, self.topic, self.update_partitions)

    async def _start_all(self, producers: list[AsyncProducer]) -> None:
        results = await asyncio.gather(*(p.start() for p in producers), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            await asyncio.gather(*(p.close() for p in producers), return_exceptions=True)
            raise errors[0]

    async def update_partitions(self) -> None:
        """Look the number of partitions up again and add producers for new ones (a partitioned
        topic only grows)."""
        n = await self.client.lookup.partitions(self.topic)
        old = len(self.producers)
        if n <= old:
            return
        new = [self._new_producer(i) for i in range(old, n)]
        await self._start_all(new)
        if len(self.producers) != old:  # another update got there first
            await asyncio.gather(*(p.close() for p in new), return_exceptions=True)
            return
        self.producers.extend(new)
        log.info("producer on %s: %d partitions now (was %d)", self.topic, n, old)

    def partition_for(self, content: bytes, options: dict) -> int:
        """The partition a message goes to."""
        n = len(self.producers)
        if self.router is not None:
            index = self.router(_RoutedMessage(content, options, self.producers[0].encoder), n)
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
        return self._batch_turn(len(content) if content is not None else 0)

    def _batch_turn(self, size: int) -> int:
        """Round robin at batch boundaries: the partition of the next message of ``size`` bytes
        (the same as the previous one's until that one's batch would be cut)."""
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
        return self._cursor % len(self.producers)

    def _choose(self, content: bytes, options: dict) -> AsyncProducer:
        return self.producers[self.partition_for(content, options)]

    def _separated(self, content: Any, options: dict) -> tuple[Any, dict]:
        """A KeyValue SEPARATED pair as payload and key before routing (the key routes it)."""
        split = self._split
        if split is None or content is None or options.get("raw"):
            return content, options
        return separate(split, content, options)

    async def send(self, content: Any, **options: Any) -> MessageId:
        """Publish one message to the partition its router picks and wait for the receipt."""
        content, options = self._separated(content, options)
        return await self._choose(content, options).send(content, **options)

    async def send_async(self, content: Any, callback: Any = None, **options: Any) -> asyncio.Future[MessageId]:
        """Queue one message on the partition its router picks."""
        content, options = self._separated(content, options)
        return await self._choose(content, options).send_async(content, callback, **options)

    def send_nowait(self, content: Any, waiter: Any = None, sequence_id: int | None = None, **options: Any) -> None:
        """Queue a message without waiting (as :meth:`Producer.send_nowait`)."""
        content, options = self._separated(content, options)
        if sequence_id is not None:
            options["sequence_id"] = sequence_id
        if options or content.__class__ is not bytes or not self._batch_turns:
            self._choose(content, options).send_nowait(content, waiter, **options)
            return
        # what partition_for decides for bytes without options, once per message
        self.producers[self._batch_turn(len(content))].send_nowait(content, waiter)

    async def flush(self) -> None:
        """Flush every partition."""
        await asyncio.gather(*(p.flush() for p in self.producers))

    async def close(self) -> None:
        """Close every partition's producer."""
        self._closed = True
        if self._updater is not None:
            self._updater.cancel()
        await asyncio.gather(*(p.close() for p in self.producers), return_exceptions=True)

    @property
    def closed(self) -> bool:
        """Whether close() was called."""
        return self._closed

    def is_connected(self) -> bool:
        """Whether every partition's producer is connected."""
        return all(p.is_connected() for p in self.producers)


class _RoutedMessage:
    """What a custom router sees of a message: the official ``pulsar.Message`` methods that mean
    something before it is sent (its payload read as bytes, as the official router's message is)."""

    __slots__ = ("_content", "_options", "_encode", "_payload")

    def __init__(self, content: Any, options: dict, encode: Callable[[Any], bytes] | None = None) -> None:
        self._content = content
        self._options = options
        self._encode = encode
        self._payload: bytes | None = None

    def data(self) -> bytes:
        """The payload: the content encoded with the producer's schema (b'' for a null value)."""
        if self._payload is None:
            content = self._content
            if content is None:
                self._payload = b""
            elif self._encode is not None and not self._options.get("raw"):
                self._payload = self._encode(content)
            else:
                self._payload = bytes(content)
        return self._payload

    def value(self) -> bytes:
        """The payload as bytes (the official router's message has a bytes schema)."""
        return self.data()

    def partition_key(self) -> str:
        """The key ('' when none)."""
        return self._options.get("partition_key") or ""

    def ordering_key(self) -> str:
        """The ordering key ('' when none)."""
        key = self._options.get("ordering_key")
        if not key:
            return ""
        return key if isinstance(key, str) else bytes(key).decode("utf-8", "surrogateescape")

    def properties(self) -> dict[str, str]:
        """The properties."""
        return self._options.get("properties") or {}

    def event_timestamp(self) -> int:
        """The event time (0 when none)."""
        return self._options.get("event_timestamp") or 0
