"""The synchronous face of the client: the asyncio core on a background loop thread.

``Client`` starts one daemon thread running an event loop (uvloop when installed); every call
hands its coroutine to that loop and waits for the result. The hot paths avoid a round trip
per message: ``Producer.send_async`` queues messages for the loop in bulk, and
``Consumer.receive`` takes already-queued messages directly, telling the loop about consumed
messages in groups.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from .client import AsyncClient, MultiTopicsConsumer, PartitionedProducer
from .client import Reader as AsyncReader
from .consumer import Consumer as AsyncConsumer
from .errors import AlreadyClosed, ProducerQueueIsFull, PulsarError, Timeout
from .message import Message, MessageId
from .producer import Producer as AsyncProducer

T = TypeVar("T")


class _LoopThread:
    """An event loop running in a daemon thread."""

    def __init__(self) -> None:
        try:
            import uvloop

            self.loop = uvloop.new_event_loop()
        except ImportError:  # pragma: no cover - uvloop is absent on some platforms
            self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="magnetar-client", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        if threading.current_thread() is self.thread:
            raise RuntimeError("blocking client call made from the client's own loop thread (inside a callback?)")
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise Timeout(f"operation did not complete within {timeout} s") from None

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        if not self.thread.is_alive():
            self.loop.close()


class Client:
    """Synchronous client with the methods and options of ``pulsar.Client``."""

    def __init__(self, service_url: str, **options: Any) -> None:
        self._thread = _LoopThread()

        async def make() -> AsyncClient:
            return AsyncClient(service_url, **options)

        self._client = self._thread.run(make())
        self._timeout = self._client.operation_timeout + 5

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return self._thread.run(coro, self._timeout if timeout is None else timeout)

    def create_producer(self, topic: str, **options: Any) -> Producer:
        """A producer on ``topic`` (options as ``pulsar.Client.create_producer``)."""
        return Producer(self, self._run(self._client.create_producer(topic, **options), None if options.get("access_mode") != 2 else 1e9))

    def subscribe(self, topic: Any, subscription_name: str, **options: Any) -> Consumer:
        """A consumer (options as ``pulsar.Client.subscribe``)."""
        listener = options.get("message_listener")
        if listener is not None:
            options["message_listener"] = lambda c, m: listener(self._wrapped_consumer, m)
        consumer = Consumer(self, self._run(self._client.subscribe(topic, subscription_name, **options)))
        self._wrapped_consumer = consumer
        return consumer

    def create_reader(self, topic: str, start_message_id: MessageId, **options: Any) -> Reader:
        """A reader (options as ``pulsar.Client.create_reader``)."""
        return Reader(self, self._run(self._client.create_reader(topic, start_message_id, **options)))

    def get_topic_partitions(self, topic: str) -> list[str]:
        """Partition names of ``topic``."""
        return self._run(self._client.get_topic_partitions(topic))

    def close(self) -> None:
        """Close everything and stop the loop thread."""
        try:
            self._run(self._client.close())
        finally:
            self._thread.stop()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Producer:
    """Synchronous producer."""

    def __init__(self, client: Client, core: AsyncProducer | PartitionedProducer) -> None:
        self._client = client
        self._core = core
        self._loop = client._thread.loop
        self._queue: collections.deque = collections.deque()
        self._lock = threading.Lock()
        self._scheduled = False
        limit = core.config.max_pending_messages
        self._slots = threading.BoundedSemaphore(limit) if limit > 0 else None
        self._block = core.config.block_if_queue_full

    def producer_name(self) -> str:
        """The producer's name."""
        return self._core.name

    def topic(self) -> str:
        """The topic."""
        return self._core.topic

    def last_sequence_id(self) -> int:
        """Highest sequence id published."""
        return self._core.last_sequence_id_published

    def send(self, content: bytes, **options: Any) -> MessageId:
        """Publish and wait for the receipt; returns the message id."""
        done = threading.Event()
        box: list[Any] = []

        def callback(error: PulsarError | None, msg_id: MessageId | None) -> None:
            box.append((error, msg_id))
            done.set()

        self.send_async(content, callback, **options)
        if not done.wait(self._core.config.send_timeout_millis / 1000.0 + 5 if self._core.config.send_timeout_millis > 0 else None):
            raise Timeout("send did not complete")
        error, msg_id = box[0]
        if error is not None:
            raise error
        return msg_id

    def send_async(self, content: bytes, callback: Callable[[PulsarError | None, MessageId | None], None] | None, **options: Any) -> None:
        """Queue a message; ``callback(error, message_id)`` runs on the client's thread when it completes."""
        slots = self._slots
        if slots is not None and not slots.acquire(blocking=self._block):
            raise ProducerQueueIsFull("max_pending_messages reached")

        def done(error: PulsarError | None, msg_id: MessageId | None) -> None:
            if slots is not None:
                slots.release()
            if callback is not None:
                callback(error, msg_id)

        with self._lock:
            self._queue.append((content, done, options))
            if self._scheduled:
                return
            self._scheduled = True
        self._loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        with self._lock:
            items = list(self._queue)
            self._queue.clear()
            self._scheduled = False
        core = self._core
        for content, done, options in items:
            try:
                core.send_nowait(content, done, **options)
            except PulsarError as exc:
                done(exc, None)
            except Exception as exc:  # bad arguments: report through the callback
                done(PulsarError(str(exc)), None)

    def flush(self) -> None:
        """Wait until everything queued so far has its receipt."""

        async def flush() -> None:
            self._drain()
            await self._core.flush()

        self._client._run(flush())

    def close(self) -> None:
        """Flush and close."""

        async def close() -> None:
            self._drain()
            await self._core.close()

        self._client._run(close())

    def is_connected(self) -> bool:
        """Whether the producer is connected."""
        return self._core.is_connected()


class Consumer:
    """Synchronous consumer."""

    def __init__(self, client: Client, core: AsyncConsumer | MultiTopicsConsumer) -> None:
        self._client = client
        self._core = core
        self._loop = client._thread.loop

    def topic(self) -> str:
        """The topic (or topics)."""
        return self._core.topic

    def subscription_name(self) -> str:
        """The subscription."""
        return self._core.subscription

    def receive(self, timeout_millis: int | None = None) -> Message:
        """The next message; raises Timeout after ``timeout_millis``."""
        got = self._take(1)
        if got:
            return got[0]
        return self._client._run(self._core.receive(timeout_millis), None if timeout_millis is None else timeout_millis / 1000 + 5)

    def batch_receive(self, max_messages: int = 100, timeout_millis: int = 100) -> list[Message]:
        """Up to ``max_messages`` messages, waiting at most ``timeout_millis`` for the first."""
        got = self._take(max_messages)
        if got:
            return got
        try:
            first = self.receive(timeout_millis)
        except Timeout:
            return []
        return [first, *self._take(max_messages - 1)]

    def _take(self, n: int) -> list[Message]:
        if not self._core.queued():
            return []
        fut = asyncio.run_coroutine_threadsafe(_take(self._core, n), self._loop)
        return fut.result()

    def acknowledge(self, message: Message | MessageId) -> None:
        """Acknowledge one message."""
        self._loop.call_soon_threadsafe(self._core.acknowledge, message)

    def acknowledge_cumulative(self, message: Message | MessageId) -> None:
        """Acknowledge up to this message."""
        from magnetar.protocol.enums import SubType

        if self._core.config.consumer_type in (SubType.Shared, SubType.Key_Shared):
            from .errors import CumulativeAcknowledgementNotAllowedError

            raise CumulativeAcknowledgementNotAllowedError("cumulative acknowledgement is not allowed on Shared subscriptions")
        self._loop.call_soon_threadsafe(self._core.acknowledge_cumulative, message)

    def negative_acknowledge(self, message: Message | MessageId) -> None:
        """Have this message redelivered later."""
        self._loop.call_soon_threadsafe(self._core.negative_acknowledge, message)

    def redeliver_unacknowledged_messages(self) -> None:
        """Redeliver everything unacknowledged."""
        self._loop.call_soon_threadsafe(self._core.redeliver_unacknowledged_messages)

    def seek(self, target: MessageId | int) -> None:
        """Move to a message id or publish time (ms)."""
        self._client._run(self._core.seek(target))

    def unsubscribe(self) -> None:
        """Delete the subscription."""
        self._client._run(self._core.unsubscribe())

    def close(self) -> None:
        """Close the consumer."""
        self._client._run(self._core.close())

    def is_connected(self) -> bool:
        """Whether the consumer is connected."""
        return self._core.is_connected()


async def _take(core: Any, n: int) -> list[Message]:
    return core.receive_nowait(n)


class Reader:
    """Synchronous reader."""

    def __init__(self, client: Client, core: AsyncReader) -> None:
        self._client = client
        self._core = core
        self._consumer = Consumer(client, core.consumer)

    def topic(self) -> str:
        """The topic."""
        return self._core.topic

    def read_next(self, timeout_millis: int | None = None) -> Message:
        """The next message."""
        return self._consumer.receive(timeout_millis)

    def has_message_available(self) -> bool:
        """Whether a next message exists."""
        return self._client._run(self._core.has_message_available())

    def seek(self, target: MessageId | int) -> None:
        """Move to a message id or publish time (ms)."""
        self._client._run(self._core.seek(target))

    def close(self) -> None:
        """Close the reader."""
        self._client._run(self._core.close())

    def is_connected(self) -> bool:
        """Whether the reader is connected."""
        return self._core.is_connected()


__all__ = ["AlreadyClosed", "Client", "Consumer", "Producer", "Reader"]
