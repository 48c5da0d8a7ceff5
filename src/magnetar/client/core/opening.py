"""How a consumer opens the entries the broker delivers into Message objects.

:class:`EntryOpening` is a part of :class:`~.consumer.AsyncConsumer`: ``on_message`` takes one
MESSAGE frame; ``on_message_frames`` takes the MESSAGE frames of one read that the connection
decoded by hand (:class:`~magnetar.protocol.framing.MessageFrame`), in order, and hands their
messages on in one go. A plain entry (one message: not batched, compressed nor chunked) of a
consumer without a start position or a dead letter policy is opened there inline; every other
entry takes the general path, :meth:`EntryOpening._entry_messages`, so both give the same
messages, ids and payload bytes.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from magnetar.client.api.compat import ConsumerCryptoFailureAction
from magnetar.client.api.message import (
    EncryptedMessage,
    IdPart,
    Message,
    MessageEntry,
    MessageId,
    PlainMessage,
    fast_message,
    fast_message_id,
    id_part,
    message_entry,
)
from magnetar.client.core.batch_messages import ack_set_mask, before_start, split_batch
from magnetar.client.core.crypto import MessageDecryptor
from magnetar.protocol import commands
from magnetar.protocol.batch_reading import plain_after_head, plain_metadata_head
from magnetar.protocol.compression import decompress
from magnetar.protocol.enums import AckType, CompressionType
from magnetar.protocol.framing import ProtocolError, crc32c
from magnetar.protocol.message_frame import MessageFrame
from magnetar.protocol.schema import MessageIdData, MessageMetadata

if TYPE_CHECKING:
    from magnetar.client.api.config import ConsumerConfig
    from magnetar.client.core.acks import AckGroupingTracker
    from magnetar.client.core.chunks import ChunkAssembler
    from magnetar.client.core.dead_letter import DeadLetterHandler

log = logging.getLogger("magnetar.client.core.consumer")

_I64_MAX = (1 << 63) - 1
_U32 = struct.Struct(">I")
_NO_BATCH_INDEX = id_part(-1)
_U64 = (1 << 64) - 1
#: CommandAck.ValidationError.DecryptionError
_DECRYPTION_ERROR = 4
_new = object.__new__
class EntryOpening:
    """The receiving side of a consumer: MESSAGE frames in, messages to the queue (or the sink)."""

    # what the consumer provides
    name: str
    topic: str
    config: ConsumerConfig
    dead_letter: DeadLetterHandler | None
    sink: Callable[[Any, list[Message]], None] | None
    _acks: AckGroupingTracker
    _chunks: ChunkAssembler
    _start_id: MessageId | None
    _partition_part: IdPart
    _ledger_seen: tuple[int, Any]
    _possible_dlq: dict[tuple[int, int], list[Message]]
    consumer_id: int
    #: the producer_name field (tag, length, name) of the last plain entry's metadata, which
    #: parsed: a metadata of the same producer that is_plain_metadata() recognises is plain (no
    #: batch, compression nor chunks) and parses, without parsing it
    _meta_head: bytes = b""
    #: opens encrypted entries (made at the first one)
    _decryptor: MessageDecryptor | None = None

    def _consumed(self, n: int) -> None: ...  # noqa: D102
    def _deliver(self, messages: list[Message]) -> None: ...  # noqa: D102
    def _redeliver_entries(self, keys: list[tuple[int, int]]) -> None: ...  # noqa: D102
    def _redeliver_ids(self, ids: list) -> None: ...  # noqa: D102
    def _send_command(self, command: Any) -> None: ...  # noqa: D102

    def on_message(self, command: Any, frame: Any) -> None:
        """A MESSAGE frame: open the entry into messages and queue them."""
        entry = frame.entry_view
        if entry is None:
            return
        mid = command.message_id
        messages = self._entry_messages(mid.ledger_id, mid.entry_id, command.redelivery_count, command.ack_set, entry,
                                        frame.checksum)
        if messages:
            if self.sink is not None:
                self.sink(self, messages)
            else:
                self._deliver(messages)

    def on_message_frames(self, frames: Iterable[MessageFrame]) -> None:
        """MESSAGE frames of the usual shape for this consumer, in order: their messages are handed
        on together (one delivery for all the frames of one read)."""
        out: list[Message] = []
        general = self.dead_letter is not None or self._start_id is not None
        acks = self._acks
        topic, schema = self.topic, self.config.schema
        parse = MessageMetadata.FromString
        plain_after = plain_after_head
        pending, cumulative = acks.pending_entries, acks.last_cumulative
        seen = self._ledger_seen
        head = self._meta_head
        for frame in frames:
            entry = frame.entry_view
            ledger_id, entry_id = frame.ledger_id, frame.entry_id
            checked = not general and crc32c(entry) == frame.checksum
            if checked:
                source, at = frame._source, frame._command_end + 6  # (entry: a view of source from at)
                meta_size = _U32.unpack_from(source, at)[0]
                # kept serialized, parsed again if asked for: fewer long-lived objects for the GC
                meta_bytes = source[at + 4 : at + 4 + meta_size]
                # is_plain_metadata(meta_bytes, head), without a call per entry
                if head and meta_bytes.startswith(head) and plain_after(meta_bytes, len(head)):
                    plain = True
                else:
                    try:
                        meta = parse(meta_bytes)
                    except Exception:  # noqa: BLE001 - the general path reports it
                        meta = None
                    plain = (
                        meta is not None and not meta.HasField("num_messages_in_batch")
                        and meta.num_chunks_from_msg <= 1 and not meta.compression and not meta.encryption_keys
                    )
                    if plain:
                        head = self._meta_head = plain_metadata_head(meta_bytes)
                if plain:
                    if seen[0] != ledger_id:
                        seen = self._ledger_seen = (ledger_id, IdPart(ledger_id if ledger_id <= _I64_MAX else ledger_id - (1 << 64)))
                    signed_entry_id = entry_id if entry_id <= _I64_MAX else entry_id - (1 << 64)
                    key = (seen[1], signed_entry_id)
                    # a duplicate (its ack pending, or below the cumulative one) takes the general path
                    if key not in pending and (cumulative is None or key > cumulative):
                        ctx = _new(MessageEntry)
                        ctx.meta = meta_bytes
                        ctx.ledger = seen[1]
                        ctx.entry = signed_entry_id
                        ctx.topic = topic
                        ctx.redelivery_count = frame.redelivery_count
                        ctx.schema = schema
                        ctx.consumer = self
                        msg = _new(PlainMessage)
                        msg._payload = source[at + 4 + meta_size : at + len(entry)]  # the one copy of the payload
                        msg._mid = None  # (made from its entry on first use: see Message._id)
                        msg._ctx = ctx
                        out.append(msg)
                        continue
            try:
                # (a checksum found right is not computed again: a whole batch's bytes)
                checksum = None if checked else frame.checksum
                out += self._entry_messages(ledger_id, entry_id, frame.redelivery_count, (), entry, checksum,
                                            frame._source, frame._command_end + 6)
            except Exception:  # one bad entry must not lose the others of the read
                log.exception("consumer %s: error opening entry %d:%d of %s", self.name, ledger_id, entry_id, self.topic)
            pending, cumulative = acks.pending_entries, acks.last_cumulative  # (what it did may have flushed)
            seen = self._ledger_seen
        if out:
            if self.sink is not None:
                self.sink(self, out)
            else:
                self._deliver(out)

    def _entry_messages(
        self, ledger_id: int, entry_id: int, redelivery_count: int, ack_set: Any, entry: bytes | memoryview,
        checksum: int | None, source: bytes | None = None, at: int = 0,
    ) -> list[Message]:
        """The messages of one delivered entry to hand on (checksum, duplicates, dead letters and a
        reader's start position taken care of; permits of what is dropped given back). With
        ``source``, ``entry`` is ``memoryview(source)[at : at + len(entry)]``: a batch's messages
        are sliced from ``source`` without a copy of the whole entry first."""
        if checksum is not None and crc32c(entry) != checksum:
            log.warning("consumer %s: checksum mismatch on %d:%d, asking for redelivery", self.name, ledger_id, entry_id)
            self._consumed(1)
            self._redeliver_ids([MessageIdData(ledger_id=ledger_id, entry_id=entry_id)])
            return []
        try:
            messages = self._open(ledger_id, entry_id, redelivery_count, ack_set, entry, source, at)
        except (ProtocolError, ValueError) as exc:
            log.error("consumer %s: cannot open entry %d:%d of %s: %s", self.name, ledger_id, entry_id, self.topic, exc)
            self._consumed(1)
            self._send_command(commands.ack(self.consumer_id, AckType.Individual, [MessageIdData(ledger_id=ledger_id, entry_id=entry_id)]))
            return []
        dlq = self.dead_letter
        if messages and dlq is not None and redelivery_count >= dlq.max_redeliver_count:
            keys = messages[0]._id.chunk_entries()
            for key in keys:
                self._possible_dlq[key] = messages
            if redelivery_count > dlq.max_redeliver_count:
                # already past its last chance (e.g. a consumer died holding it): straight to the DLQ
                self._consumed(len(messages))
                self._redeliver_entries(keys)
                return []
        return messages

    def _open(
        self, ledger_id: int, entry_id: int, redelivery_count: int, ack_set: Any, entry: bytes | memoryview,
        source: bytes | None = None, at: int = 0,
    ) -> list[Message]:
        """The messages of an entry still to deliver (none while a chunked message is incomplete);
        the permits of what is not delivered are given back (``source`` and ``at``: see
        :meth:`_entry_messages`)."""
        size = len(entry)
        meta_size = _U32.unpack_from(entry, 0)[0] if size >= 4 else size
        if meta_size > size - 4:
            raise ProtocolError(f"metadata size {meta_size} overruns an entry of {size} bytes")
        meta = MessageMetadata.FromString(entry[4 : 4 + meta_size])
        ledger_seen = self._ledger_seen
        if ledger_seen[0] != ledger_id:
            ledger_seen = self._ledger_seen = (ledger_id, IdPart(ledger_id if ledger_id <= _I64_MAX else ledger_id - (1 << 64)))
        key = (ledger_seen[1], IdPart(entry_id if entry_id <= _I64_MAX else entry_id - (1 << 64)))
        if self._acks.is_duplicate(key):
            self._consumed(meta.num_messages_in_batch if meta.HasField("num_messages_in_batch") else 1)
            return []
        batched = meta.HasField("num_messages_in_batch")
        if (source is not None and batched and meta.num_chunks_from_msg <= 1 and not meta.encryption_keys
                and meta.compression == CompressionType.NONE):
            # a batch as it usually comes: its messages sliced from the bytes received (one copy
            # each; a 128 KiB entry copied first cost 30-180 ns per 1 KiB message, warm cache to loaded)
            span = (at + 4 + meta_size, at + size)
            return self._batch_messages(source, meta, ack_set, key, redelivery_count, span)
        # the one copy of the payload (the entry is a view of the bytes received)
        payload = bytes(entry[4 + meta_size :])
        chunk_ids = None
        if meta.num_chunks_from_msg > 1:
            whole = self._chunks.add(meta, payload, key, meta.publish_time)
            self._chunks.expire_incomplete()
            if whole is None:
                self._consumed(1)
                return []
            payload, chunk_ids = whole
        if meta.encryption_keys:
            opened = self._decrypted(meta, payload, key, chunk_ids, redelivery_count)
            if not isinstance(opened, bytes):
                return opened
            payload = opened
        if meta.compression != CompressionType.NONE:
            payload = decompress(meta.compression, payload, meta.uncompressed_size, max_size=1 << 31)
        start = self._start_id
        inclusive = self.config.start_message_id_inclusive
        if not batched:
            msg_id = fast_message_id(key[0], key[1], _NO_BATCH_INDEX, self._partition_part, 0, self.topic)
            if chunk_ids is not None:
                msg_id._chunk_ids = chunk_ids
            if start is not None and before_start(msg_id, start, inclusive):
                self._consumed(1)
                return []
            ctx = message_entry(meta, key[0], key[1], self.topic, redelivery_count, self.config.schema, self)
            return [fast_message(payload, None, msg_id, ctx)]
        return self._batch_messages(payload, meta, ack_set, key, redelivery_count, None)

    def _batch_messages(
        self, payload: bytes, meta: MessageMetadata, ack_set: Any, key: tuple[IdPart, IdPart], redelivery_count: int,
        span: tuple[int, int] | None,
    ) -> list[Message]:
        """A batch entry's messages still to deliver (``span``: where the batch lies in ``payload``,
        None: all of it); the permits of those left out are given back."""
        out = split_batch(payload, meta, ack_set_mask(ack_set), key, redelivery_count, self, self._start_id,
                          self.config.start_message_id_inclusive, span)
        if out:
            out = self._acks.not_acknowledged(key, out)
        skipped = meta.num_messages_in_batch - len(out)
        if skipped:
            self._consumed(skipped)
        return out

    def _decrypted(
        self, meta: MessageMetadata, payload: bytes, key: tuple[IdPart, IdPart], chunk_ids: Any, redelivery_count: int,
    ) -> bytes | list[Message]:
        """An encrypted entry's payload decrypted, or what the crypto failure action makes of an
        entry that cannot be: CONSUME, the entry as one message still encrypted; DISCARD, nothing
        (acknowledged as a decryption error); FAIL, nothing (left unacknowledged: it comes again
        with a redelivery, as the official clients do)."""
        decryptor = self._decryptor
        if decryptor is None:
            decryptor = self._decryptor = MessageDecryptor(self.config.crypto_key_reader)
        opened = decryptor.decrypt(meta, payload)
        if opened is not None:
            return opened
        count = meta.num_messages_in_batch if meta.HasField("num_messages_in_batch") else 1
        action = self.config.crypto_failure_action
        if action == ConsumerCryptoFailureAction.CONSUME:
            log.warning("consumer %s: delivering an entry of %s it cannot decrypt, still encrypted", self.name, self.topic)
            msg_id = fast_message_id(key[0], key[1], _NO_BATCH_INDEX, self._partition_part, 0, self.topic)
            if chunk_ids is not None:
                msg_id._chunk_ids = chunk_ids
            msg = fast_message(payload, None, msg_id, message_entry(meta, key[0], key[1], self.topic, redelivery_count, None, self))
            msg.__class__ = EncryptedMessage
            if count > 1:
                self._consumed(count - 1)
            return [msg]
        self._consumed(count)
        ids = [MessageIdData(ledger_id=int(key[0]) & _U64, entry_id=int(key[1]) & _U64)]
        if action == ConsumerCryptoFailureAction.DISCARD:
            log.warning("consumer %s: discarding an entry of %s it cannot decrypt", self.name, self.topic)
            ack = commands.ack(self.consumer_id, AckType.Individual, ids)
            ack.ack.validation_error = _DECRYPTION_ERROR
            self._send_command(ack)
        else:
            log.error("consumer %s: an entry of %s cannot be decrypted; not delivered (crypto_failure_action FAIL)",
                      self.name, self.topic)
        return []
