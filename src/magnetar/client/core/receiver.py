"""What single-topic and multi-topic consumers share: the receiver queue and how messages leave it.

Messages wait in the queue until a ``receive`` (or a waiting one is completed at once), a
``batch_receive``, a ``take`` by the sync face, or the message listener hands them to the
application; subclasses account for what left (permits, ack timeout tracking).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence

from magnetar.client.api.config import DEFAULT_BATCH_RECEIVE_POLICY, ConsumerConfig, MessageListener
from magnetar.client.api.message import Message
from magnetar.client.api.policies import ConsumerBatchReceivePolicy
from magnetar.client.core.futures import settle
from magnetar.client.exceptions import AlreadyClosed, InvalidConfiguration, PulsarError, Timeout

log = logging.getLogger("magnetar.client.core.consumer")


class Completed:
    """What acknowledge() and negative_acknowledge() return: nothing to wait for, yet awaitable,
    so that both ``consumer.acknowledge(msg)`` and the official asyncio client's
    ``await consumer.acknowledge(msg)`` work (acknowledgements are grouped and sent later, as in
    the official clients, whose futures also complete once the ack is queued)."""

    __slots__ = ()

    def __await__(self) -> Iterator[None]:
        return iter(())

    def __repr__(self) -> str:
        return "<completed>"


#: the one Completed instance
DONE = Completed()


class ReceiverBase:
    """Receiver queue, pending receives, batch receives and the listener of a consumer."""

    config: ConsumerConfig
    topic: str
    _closed: bool

    def _init_receiver(self) -> None:
        self._queue: deque[Message] = deque()
        self._waiters: deque[asyncio.Future] = deque()
        self._arrived = asyncio.Event()
        self._listener: MessageListener | None = self.config.message_listener
        self._listener_task: asyncio.Task | None = None
        self._listener_wakeup = asyncio.Event()
        self._paused = False
        #: told after each delivery to the queue, and when the receiver stops (the sync face's wait)
        self.on_delivered: Callable[[], None] | None = None
        #: awaited for each message before it is handed out on the loop, when the schema needs it
        #: (an Avro schema fetches the version that wrote the message: value() cannot wait there)
        self._prepare: Callable[[Message], Awaitable[None]] | None = getattr(self.config.schema, "prepare_message", None)

    # what subclasses provide
    def _dequeued_many(self, messages: Sequence[Message]) -> None:  # pragma: no cover - abstract
        """Messages handed to the application: consumption accounting."""
        raise NotImplementedError

    def _dequeued_one(self, msg: Message) -> None:
        self._dequeued_many((msg,))

    def _want_one(self) -> None:
        """A receive is about to wait on an empty queue (zero-queue consumers ask for a message)."""

    def _deliver(self, messages: list[Message]) -> None:
        """New messages: to waiting receives first, then the queue."""
        waiters = self._waiters
        i = 0
        n = len(messages)
        while waiters and i < n:
            fut = waiters.popleft()
            if fut.done():
                continue
            msg = messages[i]
            i += 1
            self._dequeued_many((msg,))
            fut.set_result(msg)
        if i < n:
            self._queue.extend(messages if i == 0 else messages[i:])
            self._arrived.set()
            if self._listener is not None:
                self._listener_wakeup.set()
            if self.on_delivered is not None:
                self.on_delivered()

    def check_receive(self) -> None:
        """Raise when receiving is not allowed: the consumer is closed, or a listener is set."""
        if self._closed:
            raise AlreadyClosed(f"consumer on {self.topic} is closed")
        if self._listener is not None:
            raise InvalidConfiguration("cannot receive when a message listener is set")

    async def receive(self, timeout_millis: int | None = None) -> Message:
        """The next message; raises Timeout after ``timeout_millis`` (waits forever when None)."""
        if self._closed or self._listener is not None:
            self.check_receive()
        if self._queue:
            msg = self._queue.popleft()
            self._dequeued_one(msg)
            if self._prepare is not None:
                await self._prepare(msg)
            return msg
        fut: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        self._want_one()
        try:
            if timeout_millis is None:
                msg = await fut
            else:
                msg = await asyncio.wait_for(fut, timeout_millis / 1000.0)
        except TimeoutError:
            raise Timeout(f"no message received from {self.topic} within {timeout_millis} ms") from None
        finally:
            if not fut.done() or fut.cancelled():
                fut.cancel()
                self._forget_waiter(fut)
        if self._prepare is not None:
            await self._prepare(msg)
        return msg

    def __aiter__(self) -> ReceiverBase:
        return self

    async def __anext__(self) -> Message:
        """``async for msg in consumer``: each next message; the loop ends once the consumer is
        closed or unsubscribed (a receive waiting then ends it too)."""
        try:
            return await self.receive()
        except AlreadyClosed:
            raise StopAsyncIteration from None

    def _forget_waiter(self, fut: asyncio.Future) -> None:
        """Drop a receive that timed out or was cancelled (else each poll of an idle consumer would
        stay queued until a message arrives)."""
        try:
            self._waiters.remove(fut)
        except ValueError:  # already taken by a delivery
            pass

    def receive_nowait(self, max_messages: int) -> list[Message]:
        """Up to ``max_messages`` queued messages, without waiting."""
        out = self.take(max_messages)
        if out:
            self._dequeued_many(out)
        return out

    def take(self, max_messages: int) -> list[Message]:
        """Remove up to ``max_messages`` queued messages *without* accounting for them: the caller
        reports them with :meth:`report_consumed` once the application has them."""
        queue = self._queue
        n = min(max_messages, len(queue))
        if n == len(queue):
            out = list(queue)
            queue.clear()
        else:
            out = [queue.popleft() for _ in range(n)]
        if out:
            self._taken(out)
        return out

    def _taken(self, messages: list[Message]) -> None:
        """Messages left the queue for the application (their position counts as seen)."""

    def report_consumed(self, messages: list[Message]) -> None:
        """Account for messages obtained with :meth:`take`."""
        if messages:
            self._dequeued_many(messages)

    def queued(self) -> int:
        """Messages waiting in the receiver queue."""
        return len(self._queue)

    async def batch_receive(self, policy: ConsumerBatchReceivePolicy | None = None) -> list[Message]:
        """Messages as the batch receive policy allows: returns when the count or bytes limit is
        reached, or when its timeout passes (with what arrived by then, possibly nothing)."""
        self.check_receive()
        policy = policy or self.config.batch_receive_policy or DEFAULT_BATCH_RECEIVE_POLICY
        loop = asyncio.get_running_loop()
        deadline = loop.time() + policy.timeout_ms / 1000.0 if policy.timeout_ms > 0 else None
        while not self._closed:
            count, size = len(self._queue), 0
            if policy.max_num_bytes > 0:
                size = sum(m.size() for m in self._queue)
            if policy.enough(count, size):
                break
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                break
            if not self._queue:
                self._want_one()
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), remaining)
            except TimeoutError:
                break
        out: list[Message] = []
        size = 0
        queue = self._queue
        while queue and policy.can_add(len(out), size, queue[0].size()):
            msg = queue.popleft()
            out.append(msg)
            size += msg.size()
        if out:
            self._dequeued_many(out)
            if self._prepare is not None:
                for msg in out:
                    await self._prepare(msg)
        return out

    # -- listener ------------------------------------------------------------------------
    def _start_listener(self) -> None:
        if self._listener is not None and self._listener_task is None:
            self._listener_task = asyncio.get_running_loop().create_task(self._run_listener())

    async def _run_listener(self) -> None:
        listener = self._listener
        assert listener is not None
        while not self._closed:
            if self._paused or not self._queue:
                if not self._queue:
                    self._want_one()
                self._listener_wakeup.clear()
                await self._listener_wakeup.wait()
                continue
            msg = self._queue.popleft()
            self._dequeued_many((msg,))
            try:
                if self._prepare is not None:
                    await self._prepare(msg)
                result = listener(self, msg)
                if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                    await result
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("message listener of %s failed on %s", self.topic, msg.message_id())

    def pause_message_listener(self) -> None:
        """Stop calling the listener (messages stay queued) until resumed."""
        self._paused = True

    def resume_message_listener(self) -> None:
        """Call the listener again."""
        self._paused = False
        self._listener_wakeup.set()

    def _stop_receiver(self, exc: PulsarError) -> None:
        if self._listener_task is not None:
            self._listener_task.cancel()
        self._arrived.set()
        while self._waiters:
            settle(self._waiters.popleft(), exc)
        if self.on_delivered is not None:
            self.on_delivered()
