"""What a producer keeps per message and per SEND: open batches, pending sends, their waiters.

The per-message work of a batched send is small: a message's SingleMessageMetadata is written by
hand (:func:`magnetar.protocol.single_metadata.encode_single_metadata`), and :func:`plain_head`
caches the whole prefix of a message with nothing but a payload. A waiter is a future or a
``callback(error, message_id)``; :func:`resolve` completes either.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import Callable
from typing import Any

from magnetar.client.api.arguments import InvalidArgument
from magnetar.client.api.message import BATCH_INDEXES, IdPart, MessageId, _signed, fast_message_id, id_part
from magnetar.client.exceptions import PulsarError, Timeout
from magnetar.protocol.schema import MessageMetadata, SingleMessageMetadata
from magnetar.protocol.single_metadata import batched_message_head

log = logging.getLogger("magnetar.client.core.producer")

SendCallback = Callable[[PulsarError | None, MessageId | None], None]


def key_bytes(key: str | bytes | bytearray | memoryview) -> bytes:
    """An ordering key as sent: bytes as they are, a str (the official client's type) in UTF-8.

    ``surrogateescape`` makes a key read back as text from any bytes encode to those bytes again.
    """
    if isinstance(key, str):
        return key.encode("utf-8", "surrogateescape")
    if isinstance(key, (bytes, bytearray, memoryview)):
        return bytes(key)
    raise InvalidArgument(f"Argument ordering_key is expected to be either None or of type 'str' and not '{type(key).__name__}'")


class B64Key(str):
    """A message key that is the base64 of bytes (``partition_key_b64_encoded``): a KeyValue
    SEPARATED schema's encoded key, as the Java client sends it."""

    __slots__ = ()


#: a null key (``null_partition_key``): a KeyValue SEPARATED pair whose key is None
NULL_KEY = B64Key("")


def separate(split: Callable[[Any], tuple[bytes | None, bytes | None]], content: Any,
             options: dict[str, Any]) -> tuple[bytes | None, dict[str, Any]]:
    """A KeyValue SEPARATED pair as (payload or None for a null value, the send options with its
    key): ``split`` is the schema's, the payload is sent as it is (``raw``)."""
    key, payload = split(content)
    options = {**options, "raw": True,
               "partition_key": NULL_KEY if key is None else B64Key(base64.b64encode(key).decode("ascii"))}
    return payload, options


def set_key(meta: Any, key: str) -> None:
    """Put a message key into a MessageMetadata (with the base64 mark, or as a null key)."""
    if key is NULL_KEY:
        meta.null_partition_key = True
        return
    meta.partition_key = key
    if key.__class__ is B64Key:
        meta.partition_key_b64_encoded = True


def b64_key_head(payload_size: int, key: B64Key, properties: dict[str, str] | None, event_time: int,
                 null_value: bool, ordering_key: bytes | None) -> bytes:
    """The batched head of a message whose key is a :class:`B64Key`: marked base64, or a null key."""
    null_key = key is NULL_KEY
    return batched_message_head(payload_size, None if null_key else key, properties, event_time, null_value,
                                ordering_key, key_b64=not null_key, null_key=null_key)


def lone_message_metadata(meta: MessageMetadata, head: bytes) -> None:
    """Copy a batched message's own fields (``head``: its size prefix and SingleMessageMetadata)
    into ``meta``, the metadata of an entry of its own: a batch of one leaves as a plain message,
    as the Java client sends it (its id then has no batch index)."""
    single = SingleMessageMetadata.FromString(head[4:])
    if single.properties:
        meta.properties.extend(single.properties)
    if single.HasField("partition_key"):
        meta.partition_key = single.partition_key
        if single.partition_key_b64_encoded:
            meta.partition_key_b64_encoded = True
    if single.null_partition_key:
        meta.null_partition_key = True
    if single.HasField("ordering_key"):
        meta.ordering_key = single.ordering_key
    if single.event_time:
        meta.event_time = single.event_time
    if single.null_value:
        meta.null_value = True


class Batch:
    """Messages collected for one entry.

    While every message has the same head (plain messages of one size, the usual batch), ``parts``
    holds only their contents and ``head`` that head: one list append per message, and the payload
    is joined with the head as separator. The first message with another head turns ``parts``
    into heads and contents in turn (``head`` None)."""

    __slots__ = (
        "parts", "head", "head_size", "payload_bytes", "count", "callbacks", "first_sequence_id", "last_sequence_id", "key",
        "ordering_key", "created", "txn",
    )

    def __init__(self, key: str | None = None, ordering_key: bytes | None = None) -> None:
        self.parts: list[bytes] = []
        self.head: bytes | None = None
        #: the payload size of the messages ``head`` is for, when they are plain (else -1)
        self.head_size = -1
        self.payload_bytes = 0
        self.count = 0
        self.callbacks: list[Any] = []
        self.first_sequence_id = -1
        self.last_sequence_id = -1
        self.key = key
        self.ordering_key = ordering_key
        self.created = time.monotonic()
        #: the id of the transaction whose messages the batch holds (None: outside any)
        self.txn: tuple[int, int] | None = None

    def add(self, head: bytes, content: bytes, plain: bool) -> None:
        """Append a message's head and content (the parts only; the counters are the caller's);
        ``plain``: the head is :func:`plain_head` of the content's size."""
        if head is self.head:
            self.parts.append(content)
        elif not self.count:
            self.head = head
            self.head_size = len(content) if plain else -1
            self.parts.append(content)
        else:
            shared = self.head
            if shared is not None:
                self.parts = [piece for body in self.parts for piece in (shared, body)]
                self.head = None
                self.head_size = -1
            self.parts += (head, content)

    def payload(self) -> bytes:
        """The batch's payload, every message's head and content (once: the batch is then sent)."""
        head = self.head
        if head is None:
            return b"".join(self.parts)
        self.parts.insert(0, b"")  # the separator then comes before every content, in one copy
        return head.join(self.parts)


class PendingSend:
    """One SEND in flight: its frame (for resends) and who waits for it.

    ``frame`` is the frame as the pieces written one after the other: everything up to the
    message metadata, and the payload (see :func:`~magnetar.protocol.framing.encode_payload_frame`).
    """

    __slots__ = (
        "sequence_id", "highest_sequence_id", "count", "frame", "callbacks", "deadline", "chunk_index", "chunk_ids", "batched",
    )

    def __init__(
        self, sequence_id: int, highest: int, count: int, frame: tuple[bytes, bytes], callbacks: list[Any], deadline: float
    ) -> None:
        self.sequence_id = sequence_id
        self.highest_sequence_id = highest
        self.count = count
        self.frame = frame
        self.callbacks = callbacks
        self.deadline = deadline
        self.chunk_index = -1
        #: entries of the chunks of one message received so far (shared by its chunks' sends)
        self.chunk_ids: list[tuple[int, int]] | None = None
        #: sent as a batch entry (even of one message): ids carry batch indexes
        self.batched = False


def plain_head(size: int) -> bytes:
    """Size prefix and SingleMessageMetadata of a batched message with nothing but a payload."""
    head = PLAIN_HEADS.get(size)
    if head is None:
        head = PLAIN_HEADS[size] = batched_message_head(size)
    return head


#: plain_head() of each payload size seen
PLAIN_HEADS: dict[int, bytes] = {}


def seconds(value: Any) -> float:
    """Seconds of a number or a timedelta."""
    return value.total_seconds() if hasattr(value, "total_seconds") else float(value)


def retrieve(fut: asyncio.Future) -> None:
    """Done callback marking a future's exception retrieved (nobody else awaits it)."""
    if not fut.cancelled():
        fut.exception()


def resolve(waiter: Any, exc: PulsarError | None, msg_id: MessageId | None) -> None:
    """Complete a waiter (future or callback) with an error or a message id."""
    if waiter is None:
        return
    if isinstance(waiter, asyncio.Future):
        if not waiter.done():
            if exc is not None:
                waiter.set_exception(exc)
            else:
                waiter.set_result(msg_id)
        return
    try:
        waiter(exc, msg_id)
    except Exception:
        log.exception("send callback failed")


def resolve_batch(
    callbacks: list[Any], ledger_id: int, entry_id: int, partition: int, count: int, topic: str | None
) -> None:
    """Complete the waiters of a batch's ``count`` messages with their ids (batch index i for the
    i-th); waiters past ``count`` (a flush's) get None."""
    lid, eid, part = IdPart(_signed(ledger_id)), IdPart(_signed(entry_id)), id_part(partition)
    indexes = BATCH_INDEXES if count <= len(BATCH_INDEXES) else [id_part(i) for i in range(count)]
    for i, cb in enumerate(callbacks):
        if cb is None:
            continue
        mid_i = fast_message_id(lid, eid, indexes[i], part, count, topic) if i < count else None
        if isinstance(cb, asyncio.Future):
            if not cb.done():
                cb.set_result(mid_i)
            continue
        try:
            cb(None, mid_i)
        except Exception:
            log.exception("send callback failed")


def callback_adapter(callback: SendCallback) -> Callable[[asyncio.Future], None]:
    """A done callback of a send future that calls ``callback(error, message_id)``."""
    def done(fut: asyncio.Future) -> None:
        if fut.cancelled():
            callback(Timeout("send cancelled"), None)
        elif fut.exception() is not None:
            callback(fut.exception(), None)  # type: ignore[arg-type]
        else:
            callback(None, fut.result())

    return done

