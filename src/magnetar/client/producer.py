"""Producers: batching, compression, sequence ids, receipts, send timeouts and reconnection.

The per-message work of a batched send is small and in Python: encode the message's
SingleMessageMetadata (hand-written varints for the common fields), append it and the payload
to the open batch, remember the callback. Everything else happens once per batch: the
MessageMetadata, compression, the checksum and the SEND frame. Frames are kept until their
receipt arrives, and resent in order on a new connection after a reconnection.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import struct
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from magnetar.client.errors import (
    AlreadyClosed,
    ConnectError,
    InvalidConfiguration,
    MessageTooBig,
    OperationNotSupported,
    ProducerFenced,
    ProducerQueueIsFull,
    PulsarError,
    Timeout,
    TopicTerminated,
    error_for,
)
from magnetar.client.message import MessageId, _signed, fast_message_id
from magnetar.client.trackers import Backoff
from magnetar.protocol.compression import compress
from magnetar.protocol.enums import CommandType, CompressionType, ProducerAccessMode, ServerError
from magnetar.protocol.framing import crc32c, encode_entry_header
from magnetar.protocol.schema import BaseCommand, KeyValue, MessageMetadata

if TYPE_CHECKING:
    from magnetar.client.client import AsyncClient
    from magnetar.client.connection import ClientConnection

log = logging.getLogger("magnetar.client.producer")

_U32 = struct.Struct(">I")
#: room left in a chunk (and in the size check of a chunking producer) for the metadata
_CHUNK_HEADROOM = 1024
_producer_ids = itertools.count()
SendCallback = Callable[[PulsarError | None, MessageId | None], None]


class BatchingType:
    """How messages are grouped into batches."""

    Default = 0
    KeyBased = 1


@dataclass
class ProducerConfig:
    """Producer options, named and defaulted as in the official Python client."""

    producer_name: str | None = None
    initial_sequence_id: int | None = None
    send_timeout_millis: int = 30000
    compression_type: CompressionType = CompressionType.NONE
    max_pending_messages: int = 1000
    max_pending_messages_across_partitions: int = 50000
    block_if_queue_full: bool = False
    #: None: on, unless chunking is enabled (the official Python client defaults to off)
    batching_enabled: bool | None = None
    batching_max_messages: int = 1000
    batching_max_allowed_size_in_bytes: int = 128 * 1024
    batching_max_publish_delay_ms: int = 10
    batching_type: int = BatchingType.Default
    chunking_enabled: bool = False
    properties: dict[str, str] = field(default_factory=dict)
    access_mode: ProducerAccessMode = ProducerAccessMode.Shared
    schema: Any = None
    lazy_start_partitioned_producers: bool = False
    #: a subscription the broker creates with the producer (dead letter producers use it)
    initial_subscription_name: str | None = None
    encryption_key: Any = None
    crypto_key_reader: Any = None

    def __post_init__(self) -> None:
        if self.batching_enabled is None:
            self.batching_enabled = not self.chunking_enabled
        if self.chunking_enabled and self.batching_enabled:
            raise InvalidConfiguration("chunking requires batching to be disabled (batching_enabled=False)")
        if self.encryption_key is not None or self.crypto_key_reader is not None:
            raise OperationNotSupported("end-to-end encryption is not supported by magnetar's client")
        if self.batching_max_messages < 1 or self.batching_max_allowed_size_in_bytes < 1:
            raise InvalidConfiguration("batching_max_messages and batching_max_allowed_size_in_bytes must be positive")
        if self.batching_max_publish_delay_ms < 0 or self.send_timeout_millis < 0 or self.max_pending_messages < 0:
            raise InvalidConfiguration("batching_max_publish_delay_ms, send_timeout_millis and max_pending_messages must be >= 0")
        self.compression_type = CompressionType(int(self.compression_type))
        self.access_mode = ProducerAccessMode(int(self.access_mode))
        self.properties = dict(self.properties or {})


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL_VARINTS = [_varint(i) for i in range(16384)]


def _len_prefixed(tag: int, data: bytes) -> bytes:
    n = len(data)
    return bytes((tag,)) + (_SMALL_VARINTS[n] if n < 16384 else _varint(n)) + data


def encode_single_metadata(
    payload_size: int,
    properties: dict[str, str] | None,
    partition_key: str | None,
    ordering_key: bytes | None,
    event_time: int,
    sequence_id: int | None,
    null_value: bool = False,
) -> bytes:
    """SingleMessageMetadata bytes, written by hand: the only per-message encoding of a batch."""
    parts = []
    if properties:
        for k, v in properties.items():
            parts.append(_len_prefixed(0x0A, _len_prefixed(0x0A, k.encode()) + _len_prefixed(0x12, v.encode())))
    if partition_key is not None:
        parts.append(_len_prefixed(0x12, partition_key.encode()))
    parts.append(b"\x18" + (_SMALL_VARINTS[payload_size] if payload_size < 16384 else _varint(payload_size)))
    if event_time:
        parts.append(b"\x28" + _varint(event_time))
    if ordering_key is not None:
        parts.append(_len_prefixed(0x3A, ordering_key))
    if sequence_id is not None:
        parts.append(b"\x40" + _varint(sequence_id))
    if null_value:
        parts.append(b"\x48\x01")
    return b"".join(parts)


class _Batch:
    """Messages collected for one entry."""

    __slots__ = (
        "parts", "payload_bytes", "count", "callbacks", "first_sequence_id", "last_sequence_id", "key",
        "ordering_key", "created",
    )

    def __init__(self, key: str | None = None, ordering_key: bytes | None = None) -> None:
        self.parts: list[bytes] = []
        self.payload_bytes = 0
        self.count = 0
        self.callbacks: list[Any] = []
        self.first_sequence_id = -1
        self.last_sequence_id = -1
        self.key = key
        self.ordering_key = ordering_key
        self.created = time.monotonic()


class _OpSend:
    """One SEND in flight: its frame (for resends) and who waits for it."""

    __slots__ = (
        "sequence_id", "highest_sequence_id", "count", "frame", "callbacks", "deadline", "chunk_index", "chunk_ids", "batched",
    )

    def __init__(self, sequence_id: int, highest: int, count: int, frame: bytes, callbacks: list[Any], deadline: float) -> None:
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


class Producer:
    """A producer on one topic (or one partition): the asyncio core."""

    def __init__(self, client: AsyncClient, topic: str, config: ProducerConfig, partition: int = -1) -> None:
        self.client = client
        self.topic = topic
        self.config = config
        self.partition = partition
        self.producer_id = next(_producer_ids)
        self.name = config.producer_name or ""
        self._user_named = bool(config.producer_name)
        self.conn: ClientConnection | None = None
        self._sequence_id = 0 if config.initial_sequence_id is None else config.initial_sequence_id + 1
        self.last_sequence_id_published = -1 if config.initial_sequence_id is None else config.initial_sequence_id
        self._batch: _Batch | None = None
        self._key_batches: dict[tuple[str | None, bytes | None], _Batch] = {}
        self._batch_timer: asyncio.TimerHandle | None = None
        self._pending: deque[_OpSend] = deque()
        self._pending_messages = 0
        #: called with the number of messages settled (receipt or failure) by each send
        self.settled_hook: Callable[[int], None] | None = None
        self._max_count = config.batching_max_messages
        self._max_bytes = config.batching_max_allowed_size_in_bytes
        self._key_based = config.batching_type == BatchingType.KeyBased
        self._space = asyncio.Event()
        self._space.set()
        self._closed = False
        self._fenced: PulsarError | None = None
        self._reconnecting = False
        self._topic_epoch: int | None = None
        self._timeout_task: asyncio.Task | None = None
        self.schema_version = b""
        self.max_message_size = 5 * 1024 * 1024
        self._batching = bool(config.batching_enabled)
        schema = config.schema
        #: encodes typed values (None: payloads are bytes)
        self._encode = None if schema is None or getattr(schema, "schema_type", 0) == 0 else schema.encode

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        """Register the producer with its broker (waits while queued behind an exclusive one)."""
        await self._connect(first=True)
        if self.config.send_timeout_millis > 0:
            self._timeout_task = asyncio.create_task(self._check_timeouts())

    async def _connect(self, first: bool = False) -> None:
        conn = await self.client.lookup.connection_for(self.topic)
        rid = conn.new_request_id()
        cmd = BaseCommand(type=CommandType.PRODUCER)
        p = cmd.producer
        p.topic = self.topic
        p.producer_id = self.producer_id
        p.request_id = rid
        if self.name:
            p.producer_name = self.name
        p.user_provided_producer_name = self._user_named
        p.producer_access_mode = self.config.access_mode
        if self._topic_epoch is not None:
            p.topic_epoch = self._topic_epoch
        for k, v in self.config.properties.items():
            p.metadata.append(KeyValue(key=k, value=v))
        if self.config.initial_subscription_name:
            p.initial_subscription_name = self.config.initial_subscription_name
        schema = self.config.schema
        info = schema.schema_info() if schema is not None and hasattr(schema, "schema_info") else None
        if info is not None:
            p.schema.CopyFrom(info)
        conn.producers[self.producer_id] = self
        try:
            timeout = None if self.config.access_mode == ProducerAccessMode.WaitForExclusive else self.client.operation_timeout
            resp = (await conn.request(cmd, rid, timeout or 1e9)).producer_success
        except BaseException:
            conn.producers.pop(self.producer_id, None)
            raise
        self.conn = conn
        self.max_message_size = conn.max_message_size
        self.name = resp.producer_name
        if resp.HasField("topic_epoch"):
            self._topic_epoch = resp.topic_epoch
        if resp.schema_version:
            self.schema_version = resp.schema_version
        if first and self.config.initial_sequence_id is None and resp.last_sequence_id >= 0:
            self._sequence_id = resp.last_sequence_id + 1
            self.last_sequence_id_published = resp.last_sequence_id
        for op in self._pending:
            conn.write(op.frame)

    async def close(self) -> None:
        """Flush what is pending, then close on the broker."""
        if self._closed:
            return
        try:
            # what is pending gets at most one operation timeout to be acknowledged
            await asyncio.wait_for(self.flush(), self.client.operation_timeout)
        except (PulsarError, TimeoutError):
            pass
        self._closed = True
        if self._timeout_task is not None:
            self._timeout_task.cancel()
        conn = self.conn
        if conn is not None and not conn.closed:
            conn.producers.pop(self.producer_id, None)
            rid = conn.new_request_id()
            cmd = BaseCommand(type=CommandType.CLOSE_PRODUCER)
            cmd.close_producer.producer_id = self.producer_id
            cmd.close_producer.request_id = rid
            try:
                await conn.request(cmd, rid, self.client.operation_timeout)
            except PulsarError:
                pass
        self._fail_all(AlreadyClosed(f"producer {self.name} on {self.topic} was closed"))

    def is_connected(self) -> bool:
        """Whether the producer is registered on a live connection."""
        return not self._closed and self.conn is not None and not self.conn.closed and not self._reconnecting

    # -- sending -------------------------------------------------------------------------
    async def send(self, content: bytes, **options: Any) -> MessageId:
        """Publish one message and wait for the broker's receipt."""
        fut = await self.send_async(content, **options)
        return await fut

    async def send_async(
        self, content: bytes, callback: SendCallback | None = None, **options: Any
    ) -> asyncio.Future[MessageId]:
        """Queue one message; returns a future of its id (and calls ``callback`` if given).

        Waits for room when max_pending_messages is reached and block_if_queue_full is set;
        raises ProducerQueueIsFull otherwise.
        """
        if self._pending_messages >= self.config.max_pending_messages > 0:
            if not self.config.block_if_queue_full:
                raise ProducerQueueIsFull(
                    f"producer {self.name} on {self.topic}: {self._pending_messages} messages pending"
                    f" (max_pending_messages {self.config.max_pending_messages}, block_if_queue_full off)"
                )
            while self._pending_messages >= self.config.max_pending_messages:
                self._space.clear()
                await self._space.wait()
        fut: asyncio.Future[MessageId] = asyncio.get_running_loop().create_future()
        if callback is not None:
            fut.add_done_callback(_callback_adapter(callback))
        self.send_nowait(content, fut, **options)
        return fut

    def send_nowait(
        self,
        content: bytes,
        waiter: Any = None,
        *,
        properties: dict[str, str] | None = None,
        partition_key: str | None = None,
        ordering_key: bytes | None = None,
        sequence_id: int | None = None,
        event_timestamp: int | None = None,
        deliver_at: int | None = None,
        deliver_after: float | None = None,
        null_value: bool = False,
        replication_clusters: Any = None,
        disable_replication: bool = False,
        raw: bool = False,
    ) -> None:
        """Queue a message without waiting; ``waiter`` is a future or a callable(error, id).

        ``content`` is encoded with the producer's schema unless ``raw`` (already bytes); None
        sends a null value (a tombstone).
        """
        if self._closed:
            raise AlreadyClosed(f"producer {self.name} on {self.topic} is closed")
        if self._fenced is not None:
            raise self._fenced
        if content is None:
            content = b""
            null_value = True
        elif self._encode is not None and not raw:
            content = self._encode(content)
        elif not isinstance(content, (bytes, bytearray, memoryview)):
            raise TypeError(f"message content must be bytes, not {type(content).__name__} (or give the producer a schema)")
        if deliver_after is not None:
            deliver_at = int(time.time() * 1000 + _seconds(deliver_after) * 1000)
        replicate_to = None
        if disable_replication:
            replicate_to = ["__local__"]
        elif replication_clusters:
            replicate_to = list(replication_clusters)
        if sequence_id is None:
            sequence_id = self._sequence_id
            self._sequence_id += 1
        elif sequence_id >= self._sequence_id:
            self._sequence_id = sequence_id + 1
        self._pending_messages += 1
        if (self._batching and deliver_at is None and replicate_to is None
                and len(content) < self.config.batching_max_allowed_size_in_bytes):
            self._add_to_batch(bytes(content), waiter, properties, partition_key, ordering_key, sequence_id, event_timestamp or 0, null_value)
        else:
            self._flush_batches()
            self._send_single(
                bytes(content), waiter, properties, partition_key, ordering_key, sequence_id, event_timestamp or 0,
                deliver_at, null_value, replicate_to,
            )

    def _add_to_batch(
        self, content: bytes, waiter: Any, properties: dict | None, key: str | None, ordering_key: bytes | None,
        sequence_id: int, event_time: int, null_value: bool,
    ) -> None:
        batch = None if self._key_based else self._batch
        if batch is None:
            batch = self._open_batch(key, ordering_key)
        size = len(content)
        limit = self._max_bytes
        if batch.count and batch.payload_bytes + size > limit:
            # as the Java client: a message that does not fit closes the batch before it
            self._flush_batch(batch)
            batch = self._open_batch(key, ordering_key)
        if properties is None and key is None and ordering_key is None and not event_time and not null_value:
            head = _PLAIN_HEADS.get(size) or _plain_head(size)
        else:
            single = encode_single_metadata(size, properties, key, ordering_key, event_time, None, null_value)
            head = _U32.pack(len(single)) + single
        parts = batch.parts
        parts.append(head)
        parts.append(content)
        batch.payload_bytes += size
        batch.count += 1
        batch.callbacks.append(waiter)
        if batch.first_sequence_id < 0:
            batch.first_sequence_id = sequence_id
        batch.last_sequence_id = sequence_id
        if batch.count >= self._max_count or batch.payload_bytes >= limit:
            self._flush_batch(batch)
        elif self._batch_timer is None:
            delay = self.config.batching_max_publish_delay_ms / 1000.0
            self._batch_timer = asyncio.get_running_loop().call_later(delay, self._on_batch_timer)

    def _open_batch(self, key: str | None, ordering_key: bytes | None) -> _Batch:
        if self._key_based:
            bkey = (key, ordering_key)
            batch = self._key_batches.get(bkey)
            if batch is None:
                batch = self._key_batches[bkey] = _Batch(key, ordering_key)
            return batch
        if self._batch is None:
            self._batch = _Batch()
        return self._batch

    def _on_batch_timer(self) -> None:
        self._batch_timer = None
        self._flush_batches()

    def _flush_batches(self) -> None:
        if self._batch is not None:
            self._flush_batch(self._batch)
        for batch in list(self._key_batches.values()):
            self._flush_batch(batch)

    def _flush_batch(self, batch: _Batch) -> None:
        if batch is self._batch:
            self._batch = None
        else:
            self._key_batches.pop((batch.key, batch.ordering_key), None)
        if self._batch is None and not self._key_batches and self._batch_timer is not None:
            self._batch_timer.cancel()
            self._batch_timer = None
        if not batch.count:
            return
        meta = MessageMetadata(
            producer_name=self.name,
            sequence_id=batch.first_sequence_id,
            publish_time=int(time.time() * 1000),
            num_messages_in_batch=batch.count,
        )
        if batch.last_sequence_id != batch.first_sequence_id:
            meta.highest_sequence_id = batch.last_sequence_id
        if batch.key is not None:
            meta.partition_key = batch.key
        if batch.ordering_key is not None:
            meta.ordering_key = batch.ordering_key
        payload = b"".join(batch.parts)
        self._enqueue(meta, payload, batch.count, batch.first_sequence_id, batch.last_sequence_id, batch.callbacks, batched=True)

    def _send_single(
        self, content: bytes, waiter: Any, properties: dict | None, key: str | None, ordering_key: bytes | None,
        sequence_id: int, event_time: int, deliver_at: int | None, null_value: bool, replicate_to: list[str] | None = None,
    ) -> None:
        meta = MessageMetadata(producer_name=self.name, sequence_id=sequence_id, publish_time=int(time.time() * 1000))
        if replicate_to:
            meta.replicate_to.extend(replicate_to)
        if properties:
            for k, v in properties.items():
                meta.properties.append(KeyValue(key=k, value=v))
        if key is not None:
            meta.partition_key = key
        if ordering_key is not None:
            meta.ordering_key = ordering_key
        if event_time:
            meta.event_time = event_time
        if deliver_at is not None:
            meta.deliver_at_time = deliver_at
        if null_value:
            meta.null_value = True
        self._enqueue(meta, content, 1, sequence_id, sequence_id, [waiter], single=True)

    def _enqueue(
        self, meta: MessageMetadata, payload: bytes, count: int, first_seq: int, last_seq: int,
        callbacks: list[Any], single: bool = False, batched: bool = False,
    ) -> None:
        codec = self.config.compression_type
        if codec != CompressionType.NONE:
            meta.compression = codec
            meta.uncompressed_size = len(payload)
            payload = compress(codec, payload)
        if self.schema_version:
            meta.schema_version = self.schema_version
        if single and self.config.chunking_enabled and len(payload) > self.max_message_size - _CHUNK_HEADROOM:
            self._enqueue_chunks(meta, payload, first_seq, callbacks)
            return
        meta_bytes = meta.SerializeToString()
        entry = _U32.pack(len(meta_bytes)) + meta_bytes + payload
        if len(payload) > self.max_message_size:
            self._settled(count)
            err = MessageTooBig(
                f"producer {self.name} on {self.topic}: a message of {len(payload)} bytes"
                f"{' (compressed)' if self.config.compression_type else ''} exceeds the broker's maximum of"
                f" {self.max_message_size} bytes (enable chunking to send it)"
            )
            for cb in callbacks:
                _resolve(cb, err, None)
            return
        cmd = BaseCommand(type=CommandType.SEND)
        s = cmd.send
        s.producer_id = self.producer_id
        s.sequence_id = first_seq
        if count > 1:
            s.num_messages = count
        if last_seq != first_seq:
            s.highest_sequence_id = last_seq
        frame = encode_entry_header(cmd, len(entry), crc32c(entry)) + entry
        deadline = time.monotonic() + self.config.send_timeout_millis / 1000.0
        op = _OpSend(first_seq, last_seq, count, frame, callbacks, deadline)
        op.batched = batched
        self._pending.append(op)
        self.last_sequence_id_published = max(self.last_sequence_id_published, last_seq)
        conn = self.conn
        if conn is not None and not conn.closed and not self._reconnecting:
            conn.write(frame)

    def _enqueue_chunks(self, meta: MessageMetadata, payload: bytes, sequence_id: int, callbacks: list[Any]) -> None:
        chunk_size = max(1, self.max_message_size - _CHUNK_HEADROOM)
        total = len(payload)
        chunk_ids: list[tuple[int, int]] = []
        chunks = [payload[i : i + chunk_size] for i in range(0, total, chunk_size)]
        meta.uuid = f"{self.name}-{sequence_id}"
        meta.num_chunks_from_msg = len(chunks)
        meta.total_chunk_msg_size = total
        deadline = time.monotonic() + self.config.send_timeout_millis / 1000.0
        for i, chunk in enumerate(chunks):
            meta.chunk_id = i
            meta_bytes = meta.SerializeToString()
            entry = _U32.pack(len(meta_bytes)) + meta_bytes + chunk
            cmd = BaseCommand(type=CommandType.SEND)
            cmd.send.producer_id = self.producer_id
            cmd.send.sequence_id = sequence_id
            cmd.send.is_chunk = True
            frame = encode_entry_header(cmd, len(entry), crc32c(entry)) + entry
            last = i == len(chunks) - 1
            op = _OpSend(sequence_id, sequence_id, 1 if last else 0, frame, callbacks if last else [], deadline)
            op.chunk_index = i
            op.chunk_ids = chunk_ids
            self._pending.append(op)
            conn = self.conn
            if conn is not None and not conn.closed and not self._reconnecting:
                conn.write(frame)
        self.last_sequence_id_published = max(self.last_sequence_id_published, sequence_id)

    async def flush(self) -> None:
        """Send the open batch and wait until every message sent so far has its receipt (or failed)."""
        self._flush_batches()
        if not self._pending:
            return
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        fut.add_done_callback(_retrieve)
        self._pending[-1].callbacks.append(fut)
        try:
            await fut
        except PulsarError:
            pass

    def _settled(self, n: int) -> None:
        """``n`` messages got their receipt or failed: room for more."""
        self._pending_messages -= n
        if not self._space.is_set():
            self._space.set()
        hook = self.settled_hook
        if hook is not None and n:
            hook(n)

    # -- broker events -------------------------------------------------------------------
    def on_receipt(self, receipt: Any) -> None:
        """SEND_RECEIPT: complete the oldest pending send (receipts come in order)."""
        pending = self._pending
        if not pending:
            return
        op = pending[0]
        if receipt.sequence_id != op.sequence_id:
            if receipt.sequence_id < op.sequence_id:
                return  # a late duplicate receipt
            log.warning(
                "producer %s: receipt for sequence %d while %d is the oldest pending; reconnecting",
                self.name, receipt.sequence_id, op.sequence_id,
            )
            if self.conn is not None:
                self.conn.close(ConnectError("out-of-order receipt"))
            return
        pending.popleft()
        mid = receipt.message_id
        ledger_id, entry_id = mid.ledger_id, mid.entry_id
        count = op.count
        self._settled(count)
        callbacks = op.callbacks
        topic = self.topic
        partition = self.partition
        if op.chunk_index >= 0:
            assert op.chunk_ids is not None
            msg_id = MessageId(ledger_id, entry_id, -1, partition, 0, topic)
            op.chunk_ids.append((msg_id.ledger_id, msg_id.entry_id))
            if count:  # the last chunk
                msg_id._chunk_ids = list(op.chunk_ids)
                for cb in callbacks:
                    _resolve(cb, None, msg_id)
            return
        if not op.batched:
            msg_id = MessageId(ledger_id, entry_id, -1, partition, 0, topic)
            for cb in callbacks:
                _resolve(cb, None, msg_id)
            return
        lid, eid = _signed(ledger_id), _signed(entry_id)
        for i, cb in enumerate(callbacks):
            if cb is None:
                continue
            mid_i = fast_message_id(lid, eid, i, partition, count, topic) if i < count else None
            if isinstance(cb, asyncio.Future):
                if not cb.done():
                    cb.set_result(mid_i)
                continue
            try:
                cb(None, mid_i)
            except Exception:
                log.exception("send callback failed")

    def on_send_error(self, error: Any) -> None:
        """SEND_ERROR: a checksum error fails that send; anything else reconnects and resends."""
        if error.error == ServerError.ChecksumError:
            for i, op in enumerate(self._pending):
                if op.sequence_id == error.sequence_id:
                    del self._pending[i]
                    self._settled(op.count)
                    exc = error_for(error.error, error.message)
                    for cb in op.callbacks:
                        _resolve(cb, exc, None)
                    return
            return
        if error.error == ServerError.TopicTerminatedError:
            self._fail_all(TopicTerminated(error.message))
            return
        log.warning("producer %s on %s: send error %s (%s), reconnecting", self.name, self.topic, error.error, error.message)
        if self.conn is not None:
            self.conn.close(ConnectError(error.message))

    def on_closed_by_broker(self) -> None:
        """CLOSE_PRODUCER: the broker dropped us (fencing, unload): reconnect."""
        self._schedule_reconnect()

    def on_connection_lost(self, conn: ClientConnection) -> None:
        """The connection went away: reconnect and resend what is pending."""
        if conn is self.conn:
            self._schedule_reconnect()

    def _schedule_reconnect(self) -> None:
        if self._closed or self._reconnecting:
            return
        self._reconnecting = True
        asyncio.get_running_loop().create_task(self._reconnect())

    async def _reconnect(self) -> None:
        backoff = Backoff(0.1, 30.0)
        try:
            while not self._closed:
                try:
                    await self._connect()
                    return
                except ProducerFenced as exc:
                    self._fenced = exc
                    self._fail_all(exc)
                    return
                except TopicTerminated as exc:
                    self._fail_all(exc)
                    return
                except PulsarError as exc:
                    delay = backoff.next()
                    log.info("producer %s: reconnect to %s failed (%s), retrying in %.1f s", self.name, self.topic, exc, delay)
                await asyncio.sleep(delay)
        finally:
            self._reconnecting = False

    def _fail_all(self, exc: PulsarError) -> None:
        batches = [b for b in (self._batch, *self._key_batches.values()) if b is not None]
        self._batch = None
        self._key_batches.clear()
        if self._batch_timer is not None:
            self._batch_timer.cancel()
            self._batch_timer = None
        pending, self._pending = self._pending, deque()
        self._settled(self._pending_messages)
        for op in pending:
            for cb in op.callbacks:
                _resolve(cb, exc, None)
        for batch in batches:  # messages not sent yet fail as well
            for cb in batch.callbacks:
                _resolve(cb, exc, None)

    async def _check_timeouts(self) -> None:
        interval = min(1.0, self.config.send_timeout_millis / 1000.0 / 2)
        while not self._closed:
            await asyncio.sleep(interval)
            now = time.monotonic()
            pending = self._pending
            expired = []
            while pending and pending[0].deadline <= now:
                expired.append(pending.popleft())
            if expired:
                exc = Timeout(
                    f"producer {self.name} on {self.topic}: no receipt within {self.config.send_timeout_millis} ms"
                )
                for op in expired:
                    self._settled(op.count)
                    for cb in op.callbacks:
                        _resolve(cb, exc, None)


def _plain_head(size: int) -> bytes:
    """Size prefix and SingleMessageMetadata of a batched message with nothing but a payload."""
    head = _PLAIN_HEADS.get(size)
    if head is None:
        single = encode_single_metadata(size, None, None, None, 0, None)
        head = _PLAIN_HEADS[size] = _U32.pack(len(single)) + single
    return head


_PLAIN_HEADS: dict[int, bytes] = {}


def _seconds(value: Any) -> float:
    return value.total_seconds() if hasattr(value, "total_seconds") else float(value)


def _retrieve(fut: asyncio.Future) -> None:
    if not fut.cancelled():
        fut.exception()


def _resolve(waiter: Any, exc: PulsarError | None, msg_id: MessageId | None) -> None:
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


def _callback_adapter(callback: SendCallback) -> Callable[[asyncio.Future], None]:
    def done(fut: asyncio.Future) -> None:
        if fut.cancelled():
            callback(Timeout("send cancelled"), None)
        elif fut.exception() is not None:
            callback(fut.exception(), None)  # type: ignore[arg-type]
        else:
            callback(None, fut.result())

    return done
