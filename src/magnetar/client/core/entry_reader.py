"""Whole entries in, no Message per message: the reading half of :mod:`magnetar.client.bulk`.

:class:`EntryReader` is a non-durable reader that hands over the entries the broker delivers
(metadata and payload, decompressed, chunks joined) instead of one ``Message`` object per
message: on the client's loop the work is per entry, and
:class:`~magnetar.protocol.batch_columns.MessageColumns` later splits the batches of many entries
into plain lists, column by column.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from typing import Any

from magnetar.client.api.message import MessageId, _signed
from magnetar.client.core.batch_messages import ack_set_mask
from magnetar.client.core.chunks import ChunkAssembler, EntryKey
from magnetar.client.core.handler import ClientContext, HandlerState
from magnetar.client.core.registration import close_on_broker, consumers_of, register
from magnetar.client.exceptions import AlreadyClosed, PulsarError, Timeout
from magnetar.protocol import commands
from magnetar.protocol.compression import decompress
from magnetar.protocol.enums import AckType, CommandType, CompressionType, InitialPosition, SubType
from magnetar.protocol.framing import ProtocolError, crc32c, split_entry
from magnetar.protocol.schema import BaseCommand, MessageIdData, MessageMetadata

_U64 = (1 << 64) - 1
#: consumer ids of entry readers: a range of their own, far above the consumers' counter
_reader_ids = itertools.count(1 << 48)


class Entry:
    """One stored entry as delivered: id, metadata and payload (decompressed; chunks joined).

    Its messages are the batch indexes ``first`` .. ``stop - 1`` (all of them unless the reader
    started inside the entry, or a caller cut it at an end position) that ``mask`` leaves (None:
    all); ``count`` is how many messages the entry holds.
    """

    __slots__ = ("ledger_id", "entry_id", "meta", "payload", "count", "batched", "first", "stop", "mask", "chunk_ids")

    def __init__(self, ledger_id: int, entry_id: int, meta: MessageMetadata, payload: bytes) -> None:
        self.ledger_id = ledger_id
        self.entry_id = entry_id
        self.meta = meta
        self.payload = payload
        self.batched = meta.HasField("num_messages_in_batch")
        self.count = meta.num_messages_in_batch if self.batched else 1
        self.first = 0
        self.stop = self.count
        self.mask: int | None = None
        #: (ledger, entry) of every chunk of a chunked message (None otherwise)
        self.chunk_ids: list[EntryKey] | None = None

    def first_entry(self) -> EntryKey:
        """(ledger, entry) where the entry's message starts (its first chunk's for a chunked message)."""
        return self.chunk_ids[0] if self.chunk_ids else (self.ledger_id, self.entry_id)

    def __repr__(self) -> str:
        return f"Entry({self.ledger_id}:{self.entry_id}, {self.count} messages)"


class EntryReader(HandlerState):
    """A non-durable, exclusive reader of one topic (or partition) handing over whole entries.

    Starts at ``start`` (inclusive or not, as a reader's start id); ``receiver_queue_size``
    counts messages, as a consumer's. Permits are granted again once half of them were taken.
    After a reconnection it goes on after the last entry taken.
    """

    kind = "reader"

    def __init__(
        self,
        client: ClientContext,
        topic: str,
        start: MessageId,
        *,
        inclusive: bool = True,
        receiver_queue_size: int = 10_000,
        reader_name: str | None = None,
        subscription_role_prefix: str | None = None,
        read_compacted: bool = False,
    ) -> None:
        super().__init__(client, topic)
        self.consumer_id = next(_reader_ids)
        self.name = reader_name or f"magnetar-bulk-{self.consumer_id & 0xFFFFFF}"
        self.subscription = f"{subscription_role_prefix or 'reader'}-{time.time_ns() & 0xFFFFFFFFFF:010x}"
        self.read_compacted = read_compacted
        self.queue_size = max(1, receiver_queue_size)
        self._start = start
        # messages before (ledger, entry, batch index) ``_floor`` are skipped, and a message that
        # is not batched in the floor's entry when the start was exclusive
        self._skip_floor_single = not inclusive and start.batch_index >= 0
        if start.ledger_id < 0 or start == MessageId.latest:
            self._floor: tuple[int, int, int] | None = None
        else:
            index = max(start.batch_index, 0)
            if not inclusive:
                self._floor = (start.ledger_id, start.entry_id + 1, 0) if start.batch_index < 0 else (
                    start.ledger_id, start.entry_id, index + 1)
            else:
                self._floor = (start.ledger_id, start.entry_id, index)
        self._entries: deque[Entry] = deque()
        self._queued_messages = 0
        self._permits = 0
        self._arrived: asyncio.Event | None = None
        self._chunks = ChunkAssembler(lambda keys, ack: None, 10, False, 60_000)
        self._last_taken: EntryKey | None = None
        self._error: PulsarError | None = None
        self.reached_end_of_topic = False

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        """Subscribe and grant the first permits."""
        self._arrived = asyncio.Event()
        await self._connect()

    def _subscribe_command(self, request_id: int) -> BaseCommand:
        cmd = BaseCommand(type=CommandType.SUBSCRIBE)
        s = cmd.subscribe
        s.topic = self.topic
        s.subscription = self.subscription
        s.sub_type = SubType.Exclusive
        s.consumer_id = self.consumer_id
        s.request_id = request_id
        s.consumer_name = self.name
        s.durable = False
        s.read_compacted = self.read_compacted
        start = self._resubscribe_start()
        s.initial_position = InitialPosition.Earliest if start == MessageId.earliest else InitialPosition.Latest
        s.start_message_id.CopyFrom(start.to_proto())
        return cmd

    async def _connect(self) -> None:
        conn, _ = await register(self, self.consumer_id, consumers_of, self._subscribe_command, self.client.operation_timeout)
        self._entries.clear()
        self._queued_messages = 0
        self._permits = 0
        self._chunks.clear()
        conn.send_command(commands.flow(self.consumer_id, self.queue_size))

    def _resubscribe_start(self) -> MessageId:
        """Where to (re)subscribe: the start, or the entry after the last one taken."""
        if self._last_taken is None:
            return self._start
        ledger, entry = self._last_taken
        self._floor = (ledger, entry + 1, 0)
        self._skip_floor_single = False
        return MessageId(ledger, entry)

    async def close(self) -> None:
        """Close on the broker; waiting receives fail."""
        if self._closed:
            return
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        await self._close_on_broker()
        self._fail(AlreadyClosed(f"reader {self.name} on {self.topic} was closed"))

    async def _close_on_broker(self) -> None:
        await close_on_broker(self, self.consumer_id, consumers_of, commands.close_consumer)

    def _fail(self, exc: PulsarError) -> None:
        self._error = exc
        if self._arrived is not None:
            self._arrived.set()

    # -- broker events ---------------------------------------------------------------------------
    def on_message(self, command: Any, frame: Any) -> None:
        """A MESSAGE frame: queue its entry (per entry work only)."""
        data = frame.entry
        if data is None:
            return
        mid = command.message_id
        if frame.checksum is not None and crc32c(data) != frame.checksum:
            self._redeliver(mid.ledger_id, mid.entry_id)
            return
        try:
            entry = self._open(_signed(mid.ledger_id), _signed(mid.entry_id), data, command.ack_set)
        except (ProtocolError, ValueError) as exc:
            self._fail(PulsarError(f"reader on {self.topic}: cannot open entry {mid.ledger_id}:{mid.entry_id}: {exc}"))
            return
        if entry is None:
            return
        self._entries.append(entry)
        self._queued_messages += entry.count
        if self._arrived is not None:
            self._arrived.set()

    def _redeliver(self, ledger_id: int, entry_id: int) -> None:
        conn = self.conn
        if conn is not None and not conn.closed:
            ids = [MessageIdData(ledger_id=ledger_id & _U64, entry_id=entry_id & _U64)]
            conn.send_command(commands.redeliver_unacknowledged(self.consumer_id, ids))

    def _open(self, ledger_id: int, entry_id: int, data: bytes, ack_set: Any) -> Entry | None:
        """The entry to queue (None: nothing of it is to be read, or a chunk of an incomplete message)."""
        meta_view, payload_view = split_entry(data)
        meta = MessageMetadata.FromString(meta_view)
        payload = bytes(payload_view)
        chunk_ids = None
        if meta.num_chunks_from_msg > 1:
            whole = self._chunks.add(meta, payload, (ledger_id, entry_id), meta.publish_time)
            if whole is None:
                self._consumed(1)
                return None
            payload, chunk_ids = whole
        if meta.compression != CompressionType.NONE:
            payload = decompress(meta.compression, payload, meta.uncompressed_size, max_size=1 << 31)
        entry = Entry(ledger_id, entry_id, meta, payload)
        entry.chunk_ids = chunk_ids
        entry.mask = ack_set_mask(ack_set)
        floor = self._floor
        if floor is not None:
            where = entry.first_entry() if chunk_ids else (ledger_id, entry_id)
            if where < floor[:2]:
                self._consumed(entry.count)
                return None
            if where == floor[:2] and (floor[2] > 0 or not entry.batched):
                if (self._skip_floor_single if not entry.batched else floor[2] >= entry.count):
                    self._consumed(entry.count)
                    return None
                entry.first = floor[2] if entry.batched else 0
        return entry

    def on_active_change(self, active: bool) -> None:
        """ACTIVE_CONSUMER_CHANGE: nothing to do for an exclusive reader."""

    def on_reached_end_of_topic(self) -> None:
        """The topic was terminated and read to its end."""
        self.reached_end_of_topic = True

    # -- taking entries --------------------------------------------------------------------------
    def _consumed(self, n: int) -> None:
        self._permits += n
        if self._permits >= max(1, self.queue_size // 2):
            conn = self.conn
            if conn is not None and not conn.closed:
                conn.send_command(commands.flow(self.consumer_id, self._permits))
            self._permits = 0

    def queued(self) -> int:
        """Messages waiting in the queue (in whole entries)."""
        return self._queued_messages

    def take(self, max_messages: int) -> list[Entry]:
        """Queued entries holding up to ``max_messages`` messages (at least one entry if any)."""
        if self._error is not None:
            raise self._error
        entries = self._entries
        out: list[Entry] = []
        n = 0
        while entries and (not out or n + entries[0].count <= max_messages):
            entry = entries.popleft()
            out.append(entry)
            n += entry.count
        if out:
            self._queued_messages -= n
            self._last_taken = (out[-1].ledger_id, out[-1].entry_id)
            self._consumed(n)
        return out

    async def receive(self, max_messages: int, timeout_ms: int) -> list[Entry]:
        """Entries holding up to ``max_messages`` messages, waiting up to ``timeout_ms`` for the first."""
        if self._closed:
            raise AlreadyClosed(f"reader {self.name} on {self.topic} is closed")
        out = self.take(max_messages)
        if out:
            return out
        arrived = self._arrived
        assert arrived is not None, "start() first"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000.0
        while True:
            arrived.clear()
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise Timeout(f"no message received from {self.topic} within {timeout_ms} ms")
            try:
                await asyncio.wait_for(arrived.wait(), remaining)
            except TimeoutError:
                raise Timeout(f"no message received from {self.topic} within {timeout_ms} ms") from None
            out = self.take(max_messages)
            if out:
                return out
            if self._closed:
                raise AlreadyClosed(f"reader {self.name} on {self.topic} is closed")

    def acknowledge_cumulative(self, entry: Entry) -> None:
        """Acknowledge everything up to this entry (the broker counts a reader's unacknowledged messages)."""
        conn = self.conn
        if conn is not None and not conn.closed:
            ids = [MessageIdData(ledger_id=entry.ledger_id & _U64, entry_id=entry.entry_id & _U64)]
            conn.send_command(commands.ack(self.consumer_id, AckType.Cumulative, ids))


async def open_entry_reader(client: ClientContext, topic: str, start: MessageId, **options: Any) -> EntryReader:
    """An :class:`EntryReader` on ``topic`` (one partition or a non-partitioned topic), started.

    The client does not track it: close it before the client."""
    reader = EntryReader(client, topic, start, **options)
    await reader.start()
    return reader


__all__ = ["Entry", "EntryReader", "open_entry_reader"]
