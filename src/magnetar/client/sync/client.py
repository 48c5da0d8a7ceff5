"""The synchronous face of the client: the asyncio core on a background loop thread.

``Client`` starts one daemon thread running an event loop (uvloop when installed); every call
hands its coroutine to that loop and waits for the result. The hot paths avoid a round trip
per message:

- ``Producer.send_async`` queues messages for the loop in bulk (one wake-up of the loop per
  burst, not per message), and ``Producer.send`` waits for its receipt on a bare lock
  (:mod:`.producer`);
- ``Consumer.receive`` serves messages from a local buffer refilled in one round trip with
  what the receiver queue holds (up to its size); they count as consumed when they are taken,
  so the broker gets its permits back at once, in one FLOW (the buffer is at most one receiver
  queue more);
- acknowledgements, negative acknowledgements and other fire-and-forget calls are queued
  and handed to the loop in bulk the same way.

Message listeners run on a pool of ``message_listener_threads`` threads (one by default), one
message at a time per consumer, never on the loop thread.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from magnetar.client.api.arguments import InvalidArgument
from magnetar.client.api.config import DEFAULT_BATCH_RECEIVE_POLICY
from magnetar.client.api.failover import ServiceInfo
from magnetar.client.api.message import Message, MessageId
from magnetar.client.core.client import AsyncClient
from magnetar.client.core.consumer import AsyncConsumer
from magnetar.client.core.multi_topic import AsyncMultiTopicsConsumer
from magnetar.client.core.reader import AsyncReader
from magnetar.client.exceptions import (
    AlreadyClosed,
    CumulativeAcknowledgementNotAllowedError,
    Timeout,
)
from magnetar.client.sync.delivery import DeliveryWait
from magnetar.client.sync.loop_thread import CallBatcher, LoopThread
from magnetar.client.sync.producer import Producer
from magnetar.client.sync.tableview import TableView
from magnetar.client.sync.transaction import Transaction, core_of
from magnetar.protocol.enums import ProducerAccessMode, SubType

ConsumerType = SubType

log = logging.getLogger("magnetar.client")
T = TypeVar("T")


class Client:
    """Synchronous client with the methods and options of ``pulsar.Client``."""

    def __init__(self, service_url: Any, authentication: Any = None, **options: Any) -> None:
        options["authentication"] = authentication
        self._thread = LoopThread()
        self._listener_pool: concurrent.futures.ThreadPoolExecutor | None = None

        async def make() -> AsyncClient:
            return AsyncClient(service_url, **options)

        try:
            self._client = self._thread.run(make())
        except BaseException:
            self._thread.stop()
            raise
        self._listener_threads = max(1, self._client.message_listener_threads)
        self._timeout = self._client.operation_timeout + 5

    def get_service_info(self) -> ServiceInfo:
        """The service (cluster) the client uses now (it changes with AutoClusterFailover)."""
        return self._client.get_service_info()

    @property
    def async_client(self) -> AsyncClient:
        """The asyncio core (use it only from coroutines on :attr:`loop`)."""
        return self._client

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the client runs on."""
        return self._thread.loop

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return self._thread.run(coro, self._timeout if timeout is None else timeout)

    def _wrap_listener(self, listener: Callable[[Any, Message], Any], holder: list) -> Callable:
        """A core listener running ``listener(wrapper, msg)`` on the listener threads."""
        if asyncio.iscoroutinefunction(listener):
            async def run_async(core: Any, msg: Message) -> None:
                await listener(holder[0], msg)

            return run_async
        if self._listener_pool is None:
            self._listener_pool = concurrent.futures.ThreadPoolExecutor(self._listener_threads, thread_name_prefix="magnetar-listener")
        pool = self._listener_pool

        async def run(core: Any, msg: Message) -> None:
            while not holder:  # the wrapper exists once subscribe() returned
                await asyncio.sleep(0.001)
            await asyncio.get_running_loop().run_in_executor(pool, listener, holder[0], msg)

        return run

    def create_producer(self, topic: str, producer_name: str | None = None, schema: Any = None, **options: Any) -> Producer:
        """A producer on ``topic`` (options as ``pulsar.Client.create_producer``)."""
        wait = options.get("access_mode") == ProducerAccessMode.WaitForExclusive
        core = self._client.create_producer(topic, producer_name, schema, **options)
        return Producer(self._thread, self._run(core, 1e9 if wait else None), self._run)

    def subscribe(
        self,
        topic: Any,
        subscription_name: str,
        consumer_type: Any = ConsumerType.Exclusive,
        schema: Any = None,
        message_listener: Callable[[Any, Message], Any] | None = None,
        **options: Any,
    ) -> Consumer:
        """A consumer (options as ``pulsar.Client.subscribe``)."""
        holder: list = []
        if message_listener is not None:
            message_listener = self._wrap_listener(message_listener, holder)
        core = self._client.subscribe(topic, subscription_name, consumer_type, schema, message_listener, **options)
        consumer = Consumer(self, self._run(core))
        holder.append(consumer)
        return consumer

    def create_reader(
        self,
        topic: str,
        start_message_id: MessageId,
        schema: Any = None,
        reader_listener: Callable[[Any, Message], Any] | None = None,
        **options: Any,
    ) -> Reader:
        """A reader (options as ``pulsar.Client.create_reader``)."""
        holder: list = []
        if reader_listener is not None:
            reader_listener = self._wrap_listener(reader_listener, holder)
        core = self._client.create_reader(topic, start_message_id, schema, reader_listener, **options)
        reader = Reader(self, self._run(core))
        holder.append(reader)
        return reader

    def create_table_view(self, topic: str, subscription_name: str | None = None, schema: Any = None) -> TableView:
        """A table view of ``topic`` (as ``pulsar.Client.create_table_view``): the latest value of each
        key; returns once everything published before the call was read."""
        return TableView(self._run(self._client.create_table_view(topic, subscription_name, schema)), self._run)

    def new_transaction(self, timeout_ms: int = 60000) -> Transaction:
        """A new transaction, aborted by its coordinator when not ended within ``timeout_ms`` (the
        client must be created with ``enable_transaction=True``: else NotAllowedError)."""
        return Transaction(self._run(self._client.new_transaction(timeout_ms)), self._run)

    def get_topic_partitions(self, topic: str) -> list[str]:
        """Partition names of ``topic``."""
        return self._run(self._client.get_topic_partitions(topic))

    def close(self) -> None:
        """Close everything and stop the loop thread (again: nothing happens)."""
        if self._thread.stopped:
            return
        try:
            self._run(self._client.close())
        finally:
            if self._listener_pool is not None:
                self._listener_pool.shutdown(wait=False, cancel_futures=True)
            self._thread.stop()

    def shutdown(self) -> None:
        """Same as close()."""
        self.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _acknowledge_many(core: AsyncConsumer | AsyncMultiTopicsConsumer) -> Callable[[list[Any]], None]:
    """How the loop thread acknowledges a run of messages queued by the sync face: a single-topic
    core in one call (the messages of one batch entry taken off its pending indexes at once); one
    by one when that fails part way (acknowledging a message twice is harmless), so that one bad
    message costs only its own acknowledgement."""
    many = core.acknowledge_many if isinstance(core, AsyncConsumer) else None

    def each(messages: list[Any]) -> None:
        for message in messages:
            try:
                core.acknowledge(message)
            except Exception:  # the caller is gone: the error can only be logged
                log.exception("deferred acknowledgement on the client loop failed")

    if many is None:
        return each

    def grouped(messages: list[Any]) -> None:
        try:
            many(messages)
        except Exception:
            each(messages)

    return grouped


class Consumer:
    """Synchronous consumer.

    ``receive()`` takes from a local buffer without crossing to the loop thread; an empty
    buffer is refilled on the loop thread, in one round trip, with everything the receiver
    queue holds. Every change of the buffer other than taking a message happens on the loop
    thread (refills, and dropping what must not be received: a durable consumer registering
    again, a seek, a redelivery), so they are ordered with the consumer's own events and need
    no lock that the loop thread would wait on. Acknowledgements are queued for the loop
    without waiting.
    """

    def __init__(self, client: Client, core: AsyncConsumer | AsyncMultiTopicsConsumer) -> None:
        self._client = client
        self._core = core
        self._loop = client.loop
        self._calls = CallBatcher(self._loop, _acknowledge_many(core))
        #: a multi-topic consumer refuses, at once, an id that does not say which topic it is of
        #: (an acknowledgement queued for the loop would otherwise fail unseen)
        self._owner_check = core.child_for if isinstance(core, AsyncMultiTopicsConsumer) else None
        #: messages taken from the core's queue (and counted as consumed there, so the broker
        #: gets its permits back at once), served by receive() without a round trip
        self._buffer: collections.deque[Message] = collections.deque()
        #: one refill at a time (taken by application threads only, never on the loop thread)
        self._refill_lock = threading.Lock()
        self._refill_size = max(0, core.config.receiver_queue_size)
        self._delivery = DeliveryWait(self._loop, core, lambda: self._buffer, self._refill_size)
        # told on the loop thread when a durable consumer registers again (the broker sends
        # again what is buffered here) or moves (a seek); a multi-topic consumer is to pass on
        # its children's notices with the child concerned
        core.sink_reset = self._void

    @property
    def core(self) -> AsyncConsumer | AsyncMultiTopicsConsumer:
        """The asyncio consumer."""
        return self._core

    def topic(self) -> str:
        """The topic (or topics)."""
        return self._core.topic

    def subscription_name(self) -> str:
        """The subscription."""
        return self._core.subscription

    def consumer_name(self) -> str:
        """The consumer's name."""
        return self._core.name

    def receive(self, timeout_millis: int | None = None) -> Message:
        """The next message; raises Timeout after ``timeout_millis``."""
        try:
            return self._buffer.popleft()
        except IndexError:
            pass
        core = self._core
        core.check_receive()  # raises when a listener owns the messages, or when closed
        deadline = None if timeout_millis is None else time.monotonic() + timeout_millis / 1000
        with self._refill_lock:
            while self._refill_size:
                try:
                    return self._buffer.popleft()
                except IndexError:
                    pass
                if core.queued():
                    self._client._run(self._refill())
                    continue
                if not self._delivery.wait(None if deadline is None else max(0.0, deadline - time.monotonic())):
                    raise Timeout(f"no message received from {core.topic} within {timeout_millis} ms")
                core.check_receive()
        wait = None if timeout_millis is None else timeout_millis / 1000 + 5
        return self._client._run(self._core.receive(timeout_millis), wait)

    async def _refill(self) -> int:
        """(loop thread) Move what the receiver queue holds to the buffer; how many moved."""
        got = self._core.receive_nowait(self._refill_size)
        self._buffer.extend(got)
        return len(got)

    def _void(self, of: Any = None) -> None:
        """(loop thread) Drop the buffered messages (the broker sends them again, or they are
        before a seek's position), or only those of the child consumer ``of`` of a multi-topic
        consumer. Lock-free: application threads may be taking messages meanwhile; each one is
        either taken by them (received before the drop) or dropped, never both."""
        old = self._buffer
        self._buffer = collections.deque()
        self._delivery.reset()
        kept: list[Message] = []
        if of is not None and of is not self._core:
            while True:
                try:
                    msg = old.popleft()
                except IndexError:
                    break
                if msg._ctx.consumer is not of:
                    kept.append(msg)
        else:
            old.clear()
        if kept:
            self._buffer.extend(kept)

    def batch_receive(self) -> list[Message]:
        """Messages as the consumer's batch receive policy allows (see ConsumerBatchReceivePolicy)."""
        buffer = self._buffer
        if buffer:
            policy = self._core.config.batch_receive_policy or DEFAULT_BATCH_RECEIVE_POLICY
            out: list[Message] = []
            size = 0
            while buffer and policy.can_add(len(out), size, buffer[0].size()):
                try:
                    msg = buffer.popleft()
                except IndexError:
                    break
                out.append(msg)
                size += msg.size()
            if out:
                return out
        return self._client._run(self._core.batch_receive(), None)

    def acknowledge(self, message: Message | MessageId, txn: Transaction | None = None) -> None:
        """Acknowledge one message (queued for the loop thread, sent grouped); raises AlreadyClosed
        once the consumer is closed. In a transaction (``txn``) it waits for the broker's answer
        (TransactionConflict when another transaction acknowledged the message)."""
        if self._core._closed:
            raise AlreadyClosed(f"consumer on {self._core.topic} is closed")
        if self._owner_check is not None:
            self._owner_check(message)
        if txn is not None:
            self._acknowledge_in(message, txn, False)
            return
        self._calls.ack(message)

    def _acknowledge_in(self, message: Message | MessageId, txn: Transaction, cumulative: bool) -> None:
        core, in_txn = self._core, core_of(txn)

        async def ack() -> None:
            if cumulative:
                await core.acknowledge_cumulative(message, in_txn)
            else:
                await core.acknowledge(message, in_txn)

        self._client._run(ack())

    def acknowledge_cumulative(self, message: Message | MessageId, txn: Transaction | None = None) -> None:
        """Acknowledge up to this message (not on Shared and Key_Shared subscriptions); in a
        transaction as :meth:`acknowledge`."""
        kind = self._core.config.consumer_type
        if kind in (SubType.Shared, SubType.Key_Shared):
            raise CumulativeAcknowledgementNotAllowedError(f"cumulative acknowledgement is not allowed on {kind.name} subscriptions")
        if self._core._closed:
            raise AlreadyClosed(f"consumer on {self._core.topic} is closed")
        if self._owner_check is not None:
            self._owner_check(message)
        if txn is not None:
            self._acknowledge_in(message, txn, True)
            return
        self._calls.call(self._core.acknowledge_cumulative, message)

    def negative_acknowledge(self, message: Message | MessageId) -> None:
        """Have this message redelivered later."""
        if self._owner_check is not None:
            self._owner_check(message)
        self._calls.call(self._core.negative_acknowledge, message)

    def reconsume_later(self, message: Message, delay: float = 0, properties: dict[str, str] | None = None) -> None:
        """Send the message to the retry letter topic (subscribe with retry_enable=True) and wait."""
        self._client._run(self._core.reconsume_later(message, delay, properties))

    def redeliver_unacknowledged_messages(self) -> None:
        """Redeliver everything unacknowledged."""
        self._buffer.clear()  # at once for this thread; again on the loop, after any refill under way
        self._calls.call(self._redeliver)

    def _redeliver(self) -> None:
        self._void()
        self._core.redeliver_unacknowledged_messages()

    def pause_message_listener(self) -> None:
        """Stop calling the listener until resumed."""
        self._calls.call(self._core.pause_message_listener)

    def resume_message_listener(self) -> None:
        """Call the listener again."""
        self._calls.call(self._core.resume_message_listener)

    def seek(self, messageid: MessageId | int) -> None:
        """Move to a message id or publish time (ms)."""
        if not isinstance(messageid, (MessageId, int)):
            raise InvalidArgument(f"invalid seek_arg type {type(messageid)}")
        core = self._core
        moved = core.child_of_id(messageid) if isinstance(core, AsyncMultiTopicsConsumer) and isinstance(messageid, MessageId) else None

        async def seek() -> None:
            self._void(moved)
            await core.seek(messageid)

        self._client._run(seek())

    def get_last_message_id(self) -> MessageId:
        """Id of the last message of the topic."""
        last, _ = self._client._run(self._core.get_last_message_id())
        return last

    def has_message_available(self) -> bool:
        """Whether a next message exists."""
        if self._buffer:
            return True
        # a refill on the loop may move the core's queued messages into the buffer while the core looks
        # (they are then neither queued there nor after the last one handed out): look at it again after
        return self._client._run(self._core.has_message_available()) or bool(self._buffer)

    def unsubscribe(self) -> None:
        """Delete the subscription."""

        async def unsubscribe() -> None:
            self._void()
            await self._core.unsubscribe()

        self._client._run(unsubscribe())

    def close(self) -> None:
        """Close the consumer: the acknowledgements queued so far are sent first."""

        async def close() -> None:
            self._void()
            self._calls.drain()
            await self._core.close()

        self._client._run(close())

    def is_connected(self) -> bool:
        """Whether the consumer is connected."""
        return self._core.is_connected()

    def has_reached_end_of_topic(self) -> bool:
        """Whether the topic was terminated and every message of it acknowledged."""
        return self._core.has_reached_end_of_topic()


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
        return self._consumer.has_message_available()

    def seek(self, messageid: MessageId | int) -> None:
        """Move to a message id or publish time (ms)."""
        self._consumer.seek(messageid)

    def close(self) -> None:
        """Close the reader."""
        self._consumer.close()

    def is_connected(self) -> bool:
        """Whether the reader is connected."""
        return self._core.is_connected()

    def has_reached_end_of_topic(self) -> bool:
        """Whether the topic was terminated and read to its end."""
        return self._core.has_reached_end_of_topic()


__all__ = ["AlreadyClosed", "Client", "Consumer", "Producer", "Reader"]
