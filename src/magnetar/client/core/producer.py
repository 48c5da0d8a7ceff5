"""Producers: batching, compression, sequence ids, chunking and reconnection.

Everything but the per-message append (:mod:`.sends`) happens once per batch: the
MessageMetadata, compression, the checksum and the SEND frame. Frames are kept until their
receipt arrives (:mod:`.send_completion`: receipts, send errors, send timeouts), and resent in
order on a new connection after a reconnection (the :class:`~.handler.ConnectionHandler`'s).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from magnetar.client.api.config import BatchingType, ProducerConfig
from magnetar.client.api.message import MessageId
from magnetar.client.core.crypto import encryptor_for
from magnetar.client.core.handler import ClientContext, HandlerState
from magnetar.client.core.registration import close_on_broker, producer_command, producers_of, register
from magnetar.client.core.send_completion import SendCompletion
from magnetar.client.core.sends import (
    PLAIN_HEADS,
    B64Key,
    Batch,
    PendingSend,
    SendCallback,
    b64_key_head,
    callback_adapter,
    key_bytes,
    lone_message_metadata,
    plain_head,
    resolve,
    seconds,
    separate,
    set_key,
)
from magnetar.client.exceptions import (
    AlreadyClosed,
    MessageTooBig,
    ProducerFenced,
    ProducerQueueIsFull,
    PulsarError,
    TopicTerminated,
)
from magnetar.protocol import commands
from magnetar.protocol.compression import compress
from magnetar.protocol.enums import CommandType, CompressionType, ProducerAccessMode
from magnetar.protocol.framing import encode_payload_frame
from magnetar.protocol.schema import BaseCommand, KeyValue, MessageMetadata
from magnetar.protocol.single_metadata import batched_message_head

#: room left in a chunk (and in the size check of a chunking producer) for the metadata
_CHUNK_HEADROOM = 1024
_producer_ids = itertools.count()
_NOT_AN_OPTION = object()
#: send_nowait's options as they are when not given (the sync producer passes them all when it
#: passes any): a message with only these is plain
_OPTION_DEFAULTS: dict[str, Any] = {
    "properties": None, "partition_key": None, "ordering_key": None, "event_timestamp": None, "deliver_at": None,
    "deliver_after": None, "null_value": False, "replication_clusters": None, "disable_replication": False,
    "raw": False,
}


def _only_defaults(options: dict[str, Any]) -> bool:
    """Whether every option given is a send_nowait option at its default (an unknown one is not)."""
    return all(value is _OPTION_DEFAULTS.get(name, _NOT_AN_OPTION) for name, value in options.items())


class AsyncProducer(HandlerState, SendCompletion):
    """A producer on one topic (or one partition): the asyncio core (the completing side of its sends
    is :class:`~magnetar.client.core.send_completion.SendCompletion`)."""

    kind = "producer"

    def __init__(self, client: ClientContext, topic: str, config: ProducerConfig, partition: int = -1) -> None:
        super().__init__(client, topic)
        self.config = config
        self.partition = partition
        self.producer_id = next(_producer_ids)
        self.name = config.producer_name or ""
        self._user_named = bool(config.producer_name)
        self._sequence_id = 0 if config.initial_sequence_id is None else config.initial_sequence_id + 1
        self.last_sequence_id_published = -1 if config.initial_sequence_id is None else config.initial_sequence_id
        self._batch: Batch | None = None
        self._key_batches: dict[tuple[str | None, bytes | None], Batch] = {}
        self._batch_timer: asyncio.TimerHandle | None = None
        self._pending: deque[PendingSend] = deque()
        self._pending_messages = 0
        #: called with the number of messages settled (receipt or failure) by each send
        self.settled_hook: Callable[[int], None] | None = None
        #: open transactions sending through this producer, by id: each SEND of one is reported to it
        self.txn_sinks: dict[tuple[int, int], Any] = {}
        self._refused: dict[int, PulsarError] = {}
        self._max_count = config.batching_max_messages
        self._max_bytes = config.batching_max_allowed_size_in_bytes
        self._key_based = config.batching_type == BatchingType.KeyBased
        self._space = asyncio.Event()
        self._space.set()
        self._fenced: PulsarError | None = None
        self._topic_epoch: int | None = None
        self._timeout_task: asyncio.Task | None = None
        self.schema_version = b""
        self.max_message_size = 5 * 1024 * 1024
        self._batching = bool(config.batching_enabled)
        schema = config.schema
        #: encodes typed values (None: payloads are bytes)
        self._encode = None if schema is None or getattr(schema, "schema_type", 0) == 0 else schema.encode
        #: a KeyValue SEPARATED schema's split into (key, value): the key goes into the message key
        self._split = schema.split if getattr(schema, "separated", False) else None
        #: bytes without options go into the one open batch as they are (batching on, not by key, no schema)
        self._plain_open = self._batching and not self._key_based and self._encode is None
        #: end-to-end encryption of every payload (None: off)
        self._encryptor = encryptor_for(config)

    @property
    def encoder(self) -> Callable[[Any], bytes] | None:
        """What encodes a message's content with the producer's schema (None: contents are bytes)."""
        return self._encode

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        """Register the producer with its broker (waits while queued behind an exclusive one)."""
        await self._connect(first=True)
        if self.config.send_timeout_millis > 0:
            self._timeout_task = asyncio.create_task(self._check_timeouts())

    async def _connect(self, first: bool = False) -> None:
        timeout = None if self.config.access_mode == ProducerAccessMode.WaitForExclusive else self.client.operation_timeout
        conn, answer = await register(self, self.producer_id, producers_of, self._producer_command, timeout or 1e9)
        resp = answer.producer_success
        self.max_message_size = conn.max_message_size
        self.name = resp.producer_name
        if resp.HasField("topic_epoch"):
            self._topic_epoch = resp.topic_epoch
        if resp.schema_version:
            self.schema_version = resp.schema_version
        if first and self.config.initial_sequence_id is None and resp.last_sequence_id >= 0:
            self._sequence_id = resp.last_sequence_id + 1
            self.last_sequence_id_published = resp.last_sequence_id
        self._refused.clear()  # (resent: refused again if they still are)
        for op in self._pending:
            conn.write_entry_frame(*op.frame)

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
        for task in list(self._tasks):  # a pending reconnection (as the official client cancels it)
            task.cancel()
        await self._close_on_broker()
        self._fail_all(AlreadyClosed(f"producer {self.name} on {self.topic} was closed"))

    def _gives_up_on(self, exc: PulsarError) -> bool:
        """Fenced or terminated: every pending send fails, and no reconnection helps."""
        if isinstance(exc, ProducerFenced):
            self._fenced = exc
            self._fail_all(exc)
            return True
        if isinstance(exc, TopicTerminated):
            self._fail_all(exc)
            return True
        return False

    def _producer_command(self, request_id: int) -> BaseCommand:
        return producer_command(
            self.config, self.topic, self.producer_id, request_id, self.name, self._user_named, self._topic_epoch
        )

    async def _close_on_broker(self) -> None:
        await close_on_broker(self, self.producer_id, producers_of, commands.close_producer)

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
            fut.add_done_callback(callback_adapter(callback))
        self.send_nowait(content, fut, **options)
        return fut

    def send_nowait(
        self, content: Any, waiter: Any = None, sequence_id: int | None = None, txn: Any = None, **options: Any
    ) -> None:
        """Queue a message without waiting; ``waiter`` is a future or a callable(error, id); the
        sequence id is the producer's next unless given; ``txn``: the transaction it belongs to
        (an :class:`~magnetar.client.core.transactions.AsyncTransaction`: into the open batch of its
        messages once its partition is registered, queued by the transaction until then).

        ``options``: properties, partition_key, ordering_key, event_timestamp, deliver_at,
        deliver_after, null_value, replication_clusters, disable_replication, raw (see
        :meth:`_queue_message`). A message of bytes with none of them (or all at their defaults)
        goes straight into the open batch here: this runs once per message, so it does only what
        that case needs.
        """
        if self._split is not None and content is not None and not options.get("raw"):
            content, options = separate(self._split, content, options)
        txn_id = None
        if txn is not None:
            txn_id = txn.ready_on(self)
            if txn_id is None:  # its partition is not registered yet: the transaction queues it
                txn.queue_send(self, content, waiter, sequence_id, options)
                return
        batch = self._batch
        if ((not options or _only_defaults(options)) and batch is not None and batch.count and batch.txn == txn_id
                and content.__class__ is bytes and self._plain_open and not self._closed
                and batch.payload_bytes + len(content) < self._max_bytes):
            if sequence_id is None:
                sequence_id = self._sequence_id
                self._sequence_id += 1
            elif sequence_id >= self._sequence_id:
                self._sequence_id = sequence_id + 1
            self._pending_messages += 1
            size = len(content)
            if size == batch.head_size:
                batch.parts.append(content)
            else:
                batch.add(PLAIN_HEADS.get(size) or plain_head(size), content, True)
            batch.payload_bytes += size
            batch.count += 1
            batch.callbacks.append(waiter)
            if batch.first_sequence_id < 0:
                batch.first_sequence_id = sequence_id
            batch.last_sequence_id = sequence_id
            if batch.count >= self._max_count:
                self._flush_batch(batch)
            return
        if txn is not None:
            txn.queue_send(self, content, waiter, sequence_id, options)
            return
        self._queue_message(content, waiter, sequence_id=sequence_id, **options)

    def _queue_message(
        self,
        content: Any,
        waiter: Any = None,
        *,
        properties: dict[str, str] | None = None,
        partition_key: str | None = None,
        ordering_key: str | bytes | None = None,
        sequence_id: int | None = None,
        event_timestamp: int | None = None,
        deliver_at: int | None = None,
        deliver_after: float | None = None,
        null_value: bool = False,
        replication_clusters: Any = None,
        disable_replication: bool = False,
        raw: bool = False,
        txn: tuple[int, int] | None = None,
    ) -> None:
        """:meth:`send_nowait` of any message: with options, into a batch of its own, or as a send of its own;
        ``txn``: the id of its transaction (batched only with messages of the same transaction).

        ``content`` is encoded with the producer's schema unless ``raw`` (already bytes); None
        sends a null value (a tombstone).
        """
        if self._closed:
            raise AlreadyClosed(f"producer {self.name} on {self.topic} is closed")
        if self._fenced is not None:
            raise self._fenced
        if ordering_key is not None and ordering_key.__class__ is not bytes:
            ordering_key = key_bytes(ordering_key)
        if content is None:
            content = b""
            null_value = True
        elif self._encode is not None and not raw:
            content = self._encode(content)
        elif not isinstance(content, (bytes, bytearray, memoryview)):
            raise TypeError(f"message content must be bytes, not {type(content).__name__} (or give the producer a schema)")
        if deliver_after is not None:
            deliver_at = int(time.time() * 1000 + seconds(deliver_after) * 1000)
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
                and len(content) < self.config.batching_max_allowed_size_in_bytes
                and (txn is None or not self._key_based)):
            self._add_to_batch(
                bytes(content), waiter, properties, partition_key, ordering_key, sequence_id, event_timestamp or 0, null_value, txn
            )
        else:
            self._flush_batches()
            self._send_single(
                bytes(content), waiter, properties, partition_key, ordering_key, sequence_id, event_timestamp or 0,
                deliver_at, null_value, replicate_to, txn,
            )

    def _add_to_batch(
        self, content: bytes, waiter: Any, properties: dict | None, key: str | None, ordering_key: bytes | None,
        sequence_id: int, event_time: int, null_value: bool, txn: tuple[int, int] | None = None,
    ) -> None:
        batch = None if self._key_based else self._batch
        if batch is not None and batch.txn != txn:  # a batch holds the messages of one transaction
            self._flush_batch(batch)
            batch = None
        if batch is None:
            batch = self._open_batch(key, ordering_key)
        size = len(content)
        limit = self._max_bytes
        if batch.count and batch.payload_bytes + size > limit:
            # as the Java client: a message that does not fit closes the batch before it
            self._flush_batch(batch)
            batch = self._open_batch(key, ordering_key)
        plain = properties is None and key is None and ordering_key is None and not event_time and not null_value
        if plain:
            head = PLAIN_HEADS.get(size) or plain_head(size)
        elif key.__class__ is B64Key:
            head = b64_key_head(size, key, properties, event_time, null_value, ordering_key)  # type: ignore[arg-type]
        else:
            head = batched_message_head(size, key, properties, event_time, null_value, ordering_key)
        batch.txn = txn
        batch.add(head, content, plain)
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

    def _open_batch(self, key: str | None, ordering_key: bytes | None) -> Batch:
        if self._key_based:
            bkey = (key, ordering_key)
            batch = self._key_batches.get(bkey)
            if batch is None:
                batch = self._key_batches[bkey] = Batch(key, ordering_key)
            return batch
        if self._batch is None:
            self._batch = Batch()
        return self._batch

    def send_batch(
        self,
        payload: bytes,
        count: int,
        first_sequence_id: int,
        last_sequence_id: int,
        callback: Callable[[PulsarError | None, MessageId | None], None] | None,
        txn: tuple[int, int] | None = None,
    ) -> None:
        """(the client's loop) Send ``count`` messages already encoded as one batch payload as one
        entry with these sequence ids, after whatever this producer batched message by message;
        ``callback(error, message_id)`` runs once for the whole batch (the id of its first message).
        For bulk writers (:mod:`magnetar.client.bulk`) that build batches column at a time; ``txn``:
        the id of the transaction they belong to (its partition registered by the caller)."""
        if self.closed:
            raise AlreadyClosed(f"producer {self.name} on {self.topic} is closed")
        if self._fenced is not None:
            raise self._fenced
        self._flush_batches()
        if last_sequence_id >= self._sequence_id:
            self._sequence_id = last_sequence_id + 1
        self._pending_messages += count
        meta = MessageMetadata(
            producer_name=self.name,
            sequence_id=first_sequence_id,
            publish_time=int(time.time() * 1000),
            num_messages_in_batch=count,
        )
        if last_sequence_id != first_sequence_id:
            meta.highest_sequence_id = last_sequence_id
        if txn is not None:
            meta.txnid_most_bits, meta.txnid_least_bits = txn
        self._enqueue(meta, payload, count, first_sequence_id, last_sequence_id, [callback], batched=True)

    def _on_batch_timer(self) -> None:
        self._batch_timer = None
        self._flush_batches()

    def _flush_batches(self) -> None:
        if self._batch is not None:
            self._flush_batch(self._batch)
        for batch in list(self._key_batches.values()):
            self._flush_batch(batch)

    def _flush_batch(self, batch: Batch) -> None:
        if batch is self._batch:
            self._batch = None
        else:
            self._key_batches.pop((batch.key, batch.ordering_key), None)
        if self._batch is None and not self._key_batches and self._batch_timer is not None:
            self._batch_timer.cancel()
            self._batch_timer = None
        if not batch.count:
            return
        if batch.count == 1:
            self._send_lone(batch)
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
            set_key(meta, batch.key)
        if batch.ordering_key is not None:
            meta.ordering_key = batch.ordering_key
        if batch.txn is not None:
            meta.txnid_most_bits, meta.txnid_least_bits = batch.txn
        payload = batch.payload()
        self._enqueue(meta, payload, batch.count, batch.first_sequence_id, batch.last_sequence_id, batch.callbacks, batched=True)

    def _send_lone(self, batch: Batch) -> None:
        """A batch of one message, sent as a plain message (as the Java client does)."""
        sequence_id = batch.first_sequence_id
        meta = MessageMetadata(producer_name=self.name, sequence_id=sequence_id, publish_time=int(time.time() * 1000))
        assert batch.head is not None  # one message: its head is the batch's
        lone_message_metadata(meta, batch.head)
        if batch.txn is not None:
            meta.txnid_most_bits, meta.txnid_least_bits = batch.txn
        self._enqueue(meta, batch.parts[0], 1, sequence_id, sequence_id, batch.callbacks, single=True)

    def _send_single(
        self, content: bytes, waiter: Any, properties: dict | None, key: str | None, ordering_key: bytes | None,
        sequence_id: int, event_time: int, deliver_at: int | None, null_value: bool, replicate_to: list[str] | None = None,
        txn: tuple[int, int] | None = None,
    ) -> None:
        meta = MessageMetadata(producer_name=self.name, sequence_id=sequence_id, publish_time=int(time.time() * 1000))
        if txn is not None:
            meta.txnid_most_bits, meta.txnid_least_bits = txn
        if replicate_to:
            meta.replicate_to.extend(replicate_to)
        if properties:
            for k, v in properties.items():
                meta.properties.append(KeyValue(key=k, value=v))
        if key is not None:
            set_key(meta, key)
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
        if meta.HasField("txnid_most_bits"):
            sink = self.txn_sinks.get((meta.txnid_most_bits, meta.txnid_least_bits))
            if sink is not None:  # its transaction waits for this send before it ends
                callbacks.append(sink.send_enqueued())
        codec = self.config.compression_type
        if codec != CompressionType.NONE:
            meta.compression = codec
            meta.uncompressed_size = len(payload)
            payload = compress(codec, payload)
        if self._encryptor is not None:
            payload = self._encryptor.encrypt(meta, payload)
        if self.schema_version:
            meta.schema_version = self.schema_version
        if single and self.config.chunking_enabled and len(payload) > self.max_message_size - _CHUNK_HEADROOM:
            self._enqueue_chunks(meta, payload, first_seq, callbacks)
            return
        if len(payload) > self.max_message_size:
            self._settled(count)
            err = MessageTooBig(
                f"producer {self.name} on {self.topic}: a message of {len(payload)} bytes"
                f"{' (compressed)' if self.config.compression_type else ''} exceeds the broker's maximum of"
                f" {self.max_message_size} bytes (enable chunking to send it)"
            )
            for cb in callbacks:
                resolve(cb, err, None)
            return
        cmd = BaseCommand(type=CommandType.SEND)
        s = cmd.send
        s.producer_id = self.producer_id
        s.sequence_id = first_seq
        if count > 1:
            s.num_messages = count
        if last_seq != first_seq:
            s.highest_sequence_id = last_seq
        if meta.HasField("txnid_most_bits"):
            s.txnid_most_bits, s.txnid_least_bits = meta.txnid_most_bits, meta.txnid_least_bits
        frame = encode_payload_frame(cmd, meta.SerializeToString(), payload)
        deadline = time.monotonic() + self.config.send_timeout_millis / 1000.0
        op = PendingSend(first_seq, last_seq, count, frame, callbacks, deadline)
        op.batched = batched
        self._pending.append(op)
        self.last_sequence_id_published = max(self.last_sequence_id_published, last_seq)
        conn = self.conn
        if conn is not None and not conn.closed and not self.connection_handler.reconnecting:
            conn.write_entry_frame(*frame)
            if len(self._pending) == 1:
                # nothing else in flight (one-at-a-time sends): out now, not one loop iteration later
                conn.flush()

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
            cmd = BaseCommand(type=CommandType.SEND)
            cmd.send.producer_id = self.producer_id
            cmd.send.sequence_id = sequence_id
            cmd.send.is_chunk = True
            if meta.HasField("txnid_most_bits"):
                cmd.send.txnid_most_bits, cmd.send.txnid_least_bits = meta.txnid_most_bits, meta.txnid_least_bits
            frame = encode_payload_frame(cmd, meta.SerializeToString(), chunk)
            last = i == len(chunks) - 1
            op = PendingSend(sequence_id, sequence_id, 1 if last else 0, frame, callbacks if last else [], deadline)
            op.chunk_index = i
            op.chunk_ids = chunk_ids
            self._pending.append(op)
            conn = self.conn
            if conn is not None and not conn.closed and not self.connection_handler.reconnecting:
                conn.write_entry_frame(*frame)
        self.last_sequence_id_published = max(self.last_sequence_id_published, sequence_id)
