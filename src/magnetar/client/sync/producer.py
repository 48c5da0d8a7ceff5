"""The sync face's producer: sends handed to the client's loop thread in bulk.

Messages cross from application threads to the loop thread through a deque drained by one loop
callback (one wake-up of the loop per burst, not per message), where the asyncio core takes them
synchronously (``send_nowait``: no coroutine or task per message). A blocking ``send()`` waits on
a bare lock that the receipt's callback releases: one futex wake, where a ``threading.Event``
allocated a condition and a second lock per send and woke the sender through a notify.
"""

from __future__ import annotations

import collections
import logging
import threading
from _thread import allocate_lock
from collections.abc import Callable, Coroutine
from datetime import timedelta
from typing import Any

from magnetar.client.api.arguments import check_optional, check_types
from magnetar.client.api.message import MessageId
from magnetar.client.core.partitioned import AsyncPartitionedProducer
from magnetar.client.core.producer import AsyncProducer
from magnetar.client.exceptions import AlreadyClosed, ProducerQueueIsFull, PulsarError, Timeout
from magnetar.client.sync.loop_thread import LoopThread
from magnetar.client.sync.transaction import core_of

log = logging.getLogger("magnetar.client")

#: the send options' accepted types when given (as the official client checks them; magnetar
#: also takes an ordering key of bytes, a tuple of clusters and a delay in seconds)
_SEND_OPTION_TYPES: dict[str, type | tuple[type, ...]] = {
    "properties": dict, "partition_key": str, "ordering_key": (str, bytes), "replication_clusters": (list, tuple),
    "event_timestamp": int, "deliver_at": int, "deliver_after": (timedelta, int, float),
}


class Producer:
    """Synchronous producer.

    ``max_pending_messages`` is enforced here, before messages cross to the loop thread: a
    counter under a plain lock, decremented once per send settled (a batch of receipts costs
    one update, not one per message), waited on only when ``block_if_queue_full`` and full.
    ``thread`` is the client's loop thread, ``run`` the client's way of running a coroutine
    there and waiting for it (flush and close).
    """

    def __init__(
        self, thread: LoopThread, core: AsyncProducer | AsyncPartitionedProducer, run: Callable[[Coroutine[Any, Any, Any]], Any]
    ) -> None:
        self._thread = thread
        self._run = run
        self._core = core
        self._loop = thread.loop
        self._queue: collections.deque = collections.deque()
        self._scheduled = False
        self._limit = core.config.max_pending_messages
        self._block = core.config.block_if_queue_full
        self._pending = 0
        self._blocked = 0
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        schema = core.config.schema
        #: whether the core encodes content with a schema (else content must be bytes)
        self._typed = schema is not None and getattr(schema, "schema_type", 0) != 0
        core.settled_hook = self._settled

    @property
    def core(self) -> AsyncProducer | AsyncPartitionedProducer:
        """The asyncio producer."""
        return self._core

    def producer_name(self) -> str:
        """The producer's name."""
        return self._core.name

    def topic(self) -> str:
        """The topic."""
        return self._core.topic

    def last_sequence_id(self) -> int:
        """Highest sequence id published."""
        return self._core.last_sequence_id_published

    def send(
        self,
        content: Any,
        properties: dict[str, str] | None = None,
        partition_key: str | None = None,
        ordering_key: bytes | None = None,
        sequence_id: int | None = None,
        replication_clusters: Any = None,
        disable_replication: bool = False,
        event_timestamp: int | None = None,
        deliver_at: int | None = None,
        deliver_after: Any = None,
        txn: Any = None,
    ) -> MessageId:
        """Publish and wait for the receipt; returns the message id (raises the send's error, or
        Timeout 5 s after ``send_timeout_millis`` if no answer came at all). ``txn``: the
        transaction the message belongs to (visible once it is committed)."""
        done = allocate_lock()
        done.acquire()
        outcome: list[Any] = []

        def settled(error: PulsarError | None, msg_id: MessageId | None) -> None:
            outcome.append(error)
            outcome.append(msg_id)
            done.release()

        timeout_ms = self._core.config.send_timeout_millis
        wait_s = timeout_ms / 1000.0 + 5 if timeout_ms > 0 else -1
        # nothing between the loop's wake-up (in send_async) and the wait: the woken loop thread
        # needs the GIL this thread holds until it blocks
        self.send_async(
            content, settled, properties, partition_key, ordering_key, sequence_id, replication_clusters,
            disable_replication, event_timestamp, deliver_at, deliver_after, txn,
        )
        if not done.acquire(True, wait_s):
            raise Timeout(f"producer {self._core.name}: send to {self._core.topic} did not complete")
        if outcome[0] is not None:
            raise outcome[0]
        return outcome[1]

    def send_async(
        self,
        content: Any,
        callback: Callable[[PulsarError | None, MessageId | None], None] | None,
        properties: dict[str, str] | None = None,
        partition_key: str | None = None,
        ordering_key: bytes | None = None,
        sequence_id: int | None = None,
        replication_clusters: Any = None,
        disable_replication: bool = False,
        event_timestamp: int | None = None,
        deliver_at: int | None = None,
        deliver_after: Any = None,
        txn: Any = None,
    ) -> None:
        """Queue a message; ``callback(error, message_id)`` runs on the client's thread when it
        completes (``error`` is None on success); ``txn``: its transaction. Content that is not bytes (for a producer
        without a schema) raises TypeError, an option of the wrong type InvalidArgument (a
        ValueError), a closed client AlreadyClosed."""
        if content.__class__ is not bytes and not self._typed and content is not None:
            _check_content(content)
        if sequence_id is not None and sequence_id.__class__ is not int:
            check_optional(sequence_id, int, "sequence_id")
        if (properties is None and partition_key is None and ordering_key is None and event_timestamp is None
                and deliver_at is None and deliver_after is None and not replication_clusters and not disable_replication):
            options = None  # (the common send, without a call to find that out)
        else:
            options = _given_options(properties, partition_key, ordering_key, replication_clusters,
                                     disable_replication, event_timestamp, deliver_at, deliver_after)
        if txn is not None:
            options = {**(options or {}), "txn": core_of(txn)}
        if self._loop.is_closed():
            raise AlreadyClosed(f"producer {self._core.name} on {self._core.topic}: the client is closed")
        limit = self._limit
        if limit:
            with self._lock:
                if self._pending >= limit:
                    if not self._block or threading.current_thread() is self._thread.thread:
                        # (blocking the client's own loop thread, in a callback, would never end)
                        error = ProducerQueueIsFull(
                            f"producer {self._core.name} on {self._core.topic}: max_pending_messages ({limit}) reached"
                        )
                        if callback is None:
                            raise error
                        callback(error, None)
                        return
                    self._blocked += 1
                    try:
                        while self._pending >= limit:
                            self._room.wait(1.0)
                    finally:
                        self._blocked -= 1
                self._pending += 1
        if options is not None:
            item: tuple = (content, callback, sequence_id, options)
        elif sequence_id is not None:
            item = (content, callback, sequence_id)
        else:
            item = (content, callback)
        self._queue.append(item)
        if not self._scheduled:
            self._scheduled = True
            try:
                self._loop.call_soon_threadsafe(self._drain)
            except RuntimeError:  # the loop closed under this call: the client was shut down
                self._scheduled = False
                self._queue.clear()
                self._settled(1)
                raise AlreadyClosed(f"producer {self._core.name} on {self._core.topic}: the client is closed") from None

    def _settled(self, n: int) -> None:
        """(loop thread) ``n`` messages got their receipt or failed."""
        if not self._limit:
            return
        with self._lock:
            self._pending -= n
            if self._blocked:
                self._room.notify_all()

    def _drain(self) -> None:
        self._scheduled = False
        queue = self._queue
        send = self._core.send_nowait
        while queue:
            try:
                item = queue.popleft()
            except IndexError:
                break
            try:
                if len(item) == 2:
                    send(item[0], item[1])
                elif len(item) == 3:
                    send(item[0], item[1], item[2])
                else:
                    send(item[0], item[1], item[2], **item[3])
            except Exception as exc:  # refused before it was queued: the core never counted it
                self._settled(1)
                error = exc if isinstance(exc, PulsarError) else PulsarError(f"cannot send: {exc!r}")
                if item[1] is not None:
                    try:
                        item[1](error, None)
                    except Exception:
                        log.exception("send callback failed")

    def flush(self) -> None:
        """Wait until everything queued so far has its receipt."""

        async def flush() -> None:
            self._drain()
            await self._core.flush()

        self._run(flush())

    def close(self) -> None:
        """Flush and close."""

        async def close() -> None:
            self._drain()
            await self._core.close()

        self._run(close())

    def is_connected(self) -> bool:
        """Whether the producer is connected."""
        return self._core.is_connected()


def _given_options(
    properties: dict[str, str] | None, partition_key: str | None, ordering_key: bytes | None,
    replication_clusters: Any, disable_replication: bool, event_timestamp: int | None, deliver_at: int | None,
    deliver_after: Any,
) -> dict[str, Any]:
    """The send options given (some not at their defaults: the caller checked) as ``send_nowait``
    keywords, their types checked."""
    given = {
        "properties": properties, "partition_key": partition_key, "ordering_key": ordering_key,
        "event_timestamp": event_timestamp, "deliver_at": deliver_at, "deliver_after": deliver_after,
    }
    check_types({**given, "replication_clusters": replication_clusters, "disable_replication": disable_replication},
                {"disable_replication": bool}, _SEND_OPTION_TYPES)
    options = {name: value for name, value in given.items() if value is not None}
    if replication_clusters:
        options["replication_clusters"] = replication_clusters
    if disable_replication:
        options["disable_replication"] = disable_replication
    return options


def _check_content(content: Any) -> None:
    """Refuse content a producer without a schema cannot send (TypeError, as the official client)."""
    if not isinstance(content, (bytes, bytearray, memoryview)):
        raise TypeError(f"message content must be bytes, not {type(content).__name__} (or give the producer a schema)")


__all__ = ["Producer"]
