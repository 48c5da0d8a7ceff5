"""The official ``pulsar.asyncio`` API over magnetar's asyncio core.

``import magnetar.client as pulsar`` then ``pulsar.asyncio.Client(url)`` (or
``from magnetar.client.asyncio import Client``) runs code written for the official asyncio client:
the same classes, method names, awaitability and ``PulsarException.error()``. Each object wraps
the core one (``.core``), which :class:`~magnetar.client.core.client.AsyncClient` returns directly.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from magnetar.client.api.compat import CompressionType, ConsumerCryptoFailureAction
from magnetar.client.api.config import BatchingType
from magnetar.client.api.message import Message, MessageId
from magnetar.client.api.policies import RegexSubscriptionMode
from magnetar.client.core.client import AsyncClient
from magnetar.client.core.consumer import AsyncConsumer
from magnetar.client.core.futures import set_future
from magnetar.client.core.multi_topic import AsyncMultiTopicsConsumer
from magnetar.client.core.partitioned import AsyncPartitionedProducer, PartitionsRoutingMode
from magnetar.client.core.producer import AsyncProducer
from magnetar.client.core.reader import AsyncReader
from magnetar.client.core.transactions import AsyncTransaction, TransactionState
from magnetar.client.exceptions import AlreadyClosed
from magnetar.client.exceptions import PulsarError as PulsarException
from magnetar.protocol.enums import InitialPosition, ProducerAccessMode


class ClientState:
    """What the objects of one client share: whether :meth:`Client.shutdown` was called (they
    then refuse every operation with AlreadyClosed, at once, as the official client's do)."""

    __slots__ = ("shut_down",)

    def __init__(self) -> None:
        self.shut_down = False

    def check(self, what: str, topic: str | None = None) -> None:
        """Raise AlreadyClosed when the client was shut down (``what`` on ``topic``: the message
        is only formatted then, not on every call of a hot path)."""
        if self.shut_down:
            raise AlreadyClosed(f"{what}{'' if topic is None else ' on ' + topic}: the client was shut down")


class Producer:
    """A producer with the methods of ``pulsar.asyncio.Producer``."""

    def __init__(self, core: AsyncProducer | AsyncPartitionedProducer, state: ClientState | None = None) -> None:
        self.core = core
        self._state = state or ClientState()

    async def send(
        self,
        content: Any,
        properties: dict[str, str] | None = None,
        partition_key: str | None = None,
        ordering_key: str | None = None,
        sequence_id: int | None = None,
        replication_clusters: list[str] | None = None,
        disable_replication: bool | None = None,
        event_timestamp: int | None = None,
        deliver_at: int | None = None,
        deliver_after: Any = None,
        txn: AsyncTransaction | None = None,
    ) -> MessageId:
        """Publish one message and return its id once the broker stored it (in the transaction
        ``txn`` when given: visible once it is committed)."""
        self._state.check("producer", self.core.topic)
        return await self.core.send(
            content, properties=properties, partition_key=partition_key, ordering_key=ordering_key,
            sequence_id=sequence_id, replication_clusters=replication_clusters,
            disable_replication=bool(disable_replication), event_timestamp=event_timestamp,
            deliver_at=deliver_at, deliver_after=deliver_after, txn=txn,
        )

    async def flush(self) -> None:
        """Wait until every message sent so far has its receipt."""
        self._state.check("producer", self.core.topic)
        await self.core.flush()

    async def close(self) -> None:
        """Flush and close the producer (AlreadyClosed when it was closed before, as the official
        client's)."""
        self._state.check("producer", self.core.topic)
        if self.core.closed:
            raise AlreadyClosed(f"producer {self.core.name} on {self.core.topic} is already closed")
        await self.core.close()

    def topic(self) -> str:
        """The topic published to."""
        return self.core.topic

    def producer_name(self) -> str:
        """The producer's name (given or assigned by the broker)."""
        return self.core.name

    def last_sequence_id(self) -> int:
        """The highest sequence id published (-1 before the first)."""
        return self.core.last_sequence_id_published

    def is_connected(self) -> bool:
        """Whether the producer is connected."""
        return self.core.is_connected()


class Consumer:
    """A consumer with the methods of ``pulsar.asyncio.Consumer``."""

    def __init__(self, core: AsyncConsumer | AsyncMultiTopicsConsumer, state: ClientState | None = None) -> None:
        self.core = core
        self._state = state or ClientState()

    def _check(self) -> None:
        self._state.check("consumer", self.core.topic)

    async def receive(self, timeout_millis: int | None = None) -> Message:
        """The next message (``timeout_millis`` is magnetar's addition: Timeout after it)."""
        if self._state.shut_down:
            self._check()
        return await self.core.receive(timeout_millis)

    async def batch_receive(self) -> list[Message]:
        """Messages as the batch receive policy allows (magnetar's addition)."""
        self._check()
        return await self.core.batch_receive()

    async def acknowledge(self, message: Message | MessageId, txn: AsyncTransaction | None = None) -> None:
        """Acknowledge one message (grouped: sent within ack_group_time_ms; in the transaction
        ``txn``: at once, returning once the broker holds it)."""
        if self._state.shut_down:
            self._check()
        if txn is not None:
            await self.core.acknowledge(message, txn)
            return
        self.core.acknowledge(message)

    async def acknowledge_cumulative(self, message: Message | MessageId, txn: AsyncTransaction | None = None) -> None:
        """Acknowledge every message up to and including this one (Exclusive / Failover), in the
        transaction ``txn`` when given."""
        self._check()
        if txn is not None:
            await self.core.acknowledge_cumulative(message, txn)
            return
        self.core.acknowledge_cumulative(message)

    async def negative_acknowledge(self, message: Message | MessageId) -> None:
        """Have this message redelivered after the negative acknowledgement delay."""
        self._check()
        self.core.negative_acknowledge(message)

    async def unsubscribe(self) -> None:
        """Delete the subscription and close."""
        self._check()
        await self.core.unsubscribe()

    async def seek(self, messageid: MessageId | int) -> None:
        """Move the subscription to a message id or a publish time (ms since the epoch)."""
        if not isinstance(messageid, (MessageId, int)):
            raise ValueError(f"invalid messageid type {type(messageid)}")
        self._check()
        await self.core.seek(messageid)

    async def close(self) -> None:
        """Close the consumer (pending acknowledgements are sent first)."""
        await self.core.close()

    async def get_last_message_id(self) -> MessageId:
        """The id of the last message of the topic."""
        self._check()
        last, _ = await self.core.get_last_message_id()
        return last

    def redeliver_unacknowledged_messages(self) -> None:
        """Have every message received and not acknowledged delivered again."""
        self.core.redeliver_unacknowledged_messages()

    def topic(self) -> str:
        """The topic (or topics) consumed."""
        return self.core.topic

    def subscription_name(self) -> str:
        """The subscription's name."""
        return self.core.subscription

    def consumer_name(self) -> str:
        """The consumer's name."""
        return self.core.name

    def is_connected(self) -> bool:
        """Whether the consumer is connected."""
        return self.core.is_connected()


class Reader:
    """A reader with the methods of ``pulsar.asyncio.Reader``."""

    def __init__(self, core: AsyncReader, state: ClientState | None = None) -> None:
        self.core = core
        self._state = state or ClientState()

    async def read_next(self, timeout_millis: int | None = None) -> Message:
        """The next message."""
        self._state.check("reader", self.core.topic)
        return await self.core.read_next(timeout_millis)

    async def has_message_available(self) -> bool:
        """Whether a message follows the last one read."""
        return await self.core.has_message_available()

    async def seek(self, messageid: MessageId | int) -> None:
        """Move to a message id or a publish time (ms since the epoch)."""
        if not isinstance(messageid, (MessageId, int)):
            raise ValueError(f"invalid messageid type {type(messageid)}")
        self._state.check("reader", self.core.topic)
        await self.core.seek(messageid)

    async def close(self) -> None:
        """Close the reader."""
        await self.core.close()

    def topic(self) -> str:
        """The topic read."""
        return self.core.topic

    def is_connected(self) -> bool:
        """Whether the reader is connected."""
        return self.core.is_connected()


class Client:
    """The asyncio client with the methods of ``pulsar.asyncio.Client``; options as ``pulsar.Client``."""

    def __init__(self, service_url: str, **options: Any) -> None:
        self.core = AsyncClient(service_url, **options)
        self._state = ClientState()
        self._shutdown: asyncio.Task | None = None

    async def create_producer(self, topic: str, producer_name: str | None = None, schema: Any = None, **options: Any) -> Producer:
        """A producer (options as ``pulsar.asyncio.Client.create_producer``)."""
        self._state.check("create_producer")
        return Producer(await self.core.create_producer(topic, producer_name, schema, **options), self._state)

    async def subscribe(
        self, topic: str | list[str], subscription_name: str, consumer_type: Any = None, schema: Any = None,
        *, is_pattern_topic: bool = False, **options: Any,
    ) -> Consumer:
        """A consumer on a topic, a list of topics, or (``is_pattern_topic``) a regex of topics."""
        if is_pattern_topic:
            if not isinstance(topic, str):
                raise ValueError("Argument 'topic' must be a string when 'is_pattern_topic' is True")
            topic = re.compile(topic)  # type: ignore[assignment]
        elif not isinstance(topic, (str, list)):
            raise ValueError("Argument 'topic' is expected to be of type 'str' or 'list'")
        if consumer_type is not None:
            options["consumer_type"] = consumer_type
        self._state.check("subscribe")
        return Consumer(await self.core.subscribe(topic, subscription_name, schema=schema, **options), self._state)

    async def create_reader(self, topic: str, start_message_id: MessageId, schema: Any = None, **options: Any) -> Reader:
        """A reader starting at ``start_message_id`` (options as ``pulsar.asyncio.Client.create_reader``)."""
        self._state.check("create_reader")
        return Reader(await self.core.create_reader(topic, start_message_id, schema, **options), self._state)

    async def new_transaction(self, timeout_ms: int = 60000) -> AsyncTransaction:
        """A new transaction (the client must be created with ``enable_transaction=True``)."""
        self._state.check("new_transaction")
        return await self.core.new_transaction(timeout_ms)

    async def get_topic_partitions(self, topic: str) -> list[str]:
        """The partitions of a topic (the topic itself when not partitioned)."""
        return await self.core.get_topic_partitions(topic)

    async def close(self) -> None:
        """Close every producer, consumer and reader, then the connections (after :meth:`shutdown`:
        wait until it is done)."""
        if self._shutdown is not None:
            await self._shutdown
            return
        await self.core.close()

    def shutdown(self) -> None:
        """Shut the client down at once: from now on its producers, consumers and readers raise
        AlreadyClosed; they and the connections are closed in the background (the official
        client's shutdown is not awaitable either)."""
        self._state.shut_down = True
        if self._shutdown is not None:
            return
        try:
            self._shutdown = asyncio.get_running_loop().create_task(self.core.close())
        except RuntimeError:  # no running loop: nothing can be connected any more
            pass


#: ``pulsar.asyncio._set_future(future, result, value)``: settle a future with a callback-style
#: outcome from any thread, a no-op on a future already resolved or cancelled (bridges magnetar's
#: ``send_async`` callbacks, whose first argument compares equal to a Result, to asyncio code)
_set_future = set_future

#: the names ``pulsar.asyncio`` exports beside its classes (the same objects as ``magnetar.client``'s)
__all__ = [
    "BatchingType",
    "Client",
    "CompressionType",
    "Consumer",
    "ConsumerCryptoFailureAction",
    "InitialPosition",
    "PartitionsRoutingMode",
    "Producer",
    "ProducerAccessMode",
    "PulsarException",
    "Reader",
    "RegexSubscriptionMode",
    "TransactionState",
]
