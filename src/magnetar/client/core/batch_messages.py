"""Splitting a delivered batch entry into Message objects: the consumer's hot loop.

The batch is split here rather than with :func:`magnetar.protocol.batch.decode_batch`: this runs
once per message received, so it is kept to the bare minimum (sizes are still checked), and a
SingleMessageMetadata holding nothing but the payload size, or the payload size and the sequence
id (as the official producer writes them), the usual cases, is read without the protobuf parser.
"""

from __future__ import annotations

import re
import struct
from typing import Any

from google.protobuf.message import DecodeError

from magnetar.client.api.message import BATCH_INDEXES, IdPart, Message, MessageId, id_part
from magnetar.protocol.framing import ProtocolError
from magnetar.protocol.schema import MessageMetadata, SingleMessageMetadata

_U64 = (1 << 64) - 1
_U32 = struct.Struct(">I")
#: the metadata of a batched message that has nothing but a payload size (shared, never modified)
_NO_SINGLE_FIELDS = SingleMessageMetadata()
_new_message_id = object.__new__
#: a SingleMessageMetadata of payload_size (field 3, < 16384) and sequence_id (field 8, a varint
#: of up to 9 bytes), in that order: kept serialized in the message, parsed if asked for
_SIZE_AND_SEQUENCE = re.compile(rb"\x18(?:[\x00-\x7f]|[\x80-\xff][\x00-\x7f])\x40[\x80-\xff]{0,8}[\x00-\x7f]").fullmatch
_new_message = object.__new__


def before_start(msg_id: MessageId, start: MessageId, inclusive: bool) -> bool:
    """Whether a message precedes a reader's start id (and must be skipped)."""
    if start.ledger_id < 0 or start == MessageId.latest:
        return False
    a = (msg_id.ledger_id, msg_id.entry_id)
    if start._chunk_ids and msg_id._chunk_ids:
        a = msg_id._chunk_ids[0]
        b = start._chunk_ids[0]
    else:
        b = (start.ledger_id, start.entry_id)
    if a != b:
        return a < b
    if start.batch_index < 0 or msg_id.batch_index < 0:
        return not inclusive
    return msg_id.batch_index < start.batch_index if inclusive else msg_id.batch_index <= start.batch_index


def has_message_after(
    last: MessageId, mark_delete: MessageId | None, seen: MessageId | None, start: MessageId | None, inclusive: bool
) -> bool:
    """Whether the topic's last message ``last`` (entry id >= 0) is one a consumer has still to
    receive: after ``seen`` (the last one it received), else after its start position."""
    if seen is None:
        if start is None and mark_delete is not None:
            # after a seek by time: whatever follows the position the broker moved to
            return (last.ledger_id, last.entry_id) > (mark_delete.ledger_id, mark_delete.entry_id)
        if start is None or start == MessageId.earliest:
            return True
        if start == MessageId.latest:
            # the subscription started (or was sought) at the end: its mark-delete position is
            # the last message then, so anything after it came later
            return mark_delete is not None and (last.ledger_id, last.entry_id) > (mark_delete.ledger_id, mark_delete.entry_id)
        if inclusive:
            return (last.ledger_id, last.entry_id, max(last.batch_index, -1)) >= (start.ledger_id, start.entry_id, start.batch_index)
        return (last.ledger_id, last.entry_id, last.batch_index) > (start.ledger_id, start.entry_id, start.batch_index)
    return (last.ledger_id, last.entry_id, last.batch_index) > (seen.ledger_id, seen.entry_id, seen.batch_index)


def ack_set_mask(ack_set: Any) -> int | None:
    """The bit mask of the messages a MESSAGE frame's ack set leaves to deliver (None: all)."""
    if not ack_set:
        return None
    mask = 0
    for i, word in enumerate(ack_set):
        mask |= (word & _U64) << (64 * i)
    return mask


def split_batch(
    payload: bytes, meta: MessageMetadata, mask: int | None, entry: tuple[int, int], redelivery: int, consumer: Any,
    start: MessageId | None, inclusive: bool,
) -> list[Message]:
    """The messages of a batch entry that are still to deliver, in order, owned by ``consumer``.

    ``entry`` is (ledger id, entry id), signed; messages outside ``mask`` (acknowledged by
    batch index), compacted out, or before ``start`` are left out. Raises ProtocolError on a
    malformed batch.
    """
    count = meta.num_messages_in_batch
    ledger_id, entry_id = IdPart(entry[0]), IdPart(entry[1])
    topic, partition, schema = consumer.topic, id_part(consumer.partition), consumer.config.schema
    # only messages of the start entry itself (or before it) can precede the start position
    check_start = start is not None and entry <= (start.ledger_id, start.entry_id)
    parse, size_and_sequence, unpack = SingleMessageMetadata.FromString, _SIZE_AND_SEQUENCE, _U32.unpack_from
    new_id, new_message = _new_message_id, _new_message
    indexes = BATCH_INDEXES if count <= len(BATCH_INDEXES) else [id_part(i) for i in range(count)]
    out = []
    end = len(payload)
    pos = 0
    try:
        for index in range(count):
            (n,) = unpack(payload, pos)
            pos += 4
            # a metadata holding nothing but payload_size (field 3, a one or two byte varint)
            b0 = payload[pos]
            if n == 2 and b0 == 0x18 and payload[pos + 1] < 0x80:
                single = _NO_SINGLE_FIELDS
                size = payload[pos + 1]
            elif n == 3 and b0 == 0x18 and payload[pos + 2] < 0x80:
                single = _NO_SINGLE_FIELDS
                size = (payload[pos + 1] & 0x7F) | (payload[pos + 2] << 7)
            elif b0 == 0x18 and size_and_sequence(payload, pos, pos + n):
                single = payload[pos : pos + n]
                size = payload[pos + 1]
                if size >= 0x80:
                    size = (size & 0x7F) | (payload[pos + 2] << 7)
            else:
                single = parse(payload[pos : pos + n])
                size = single.payload_size
            pos += n
            body = payload[pos : pos + size]
            pos += size
            if pos > end or size < 0:
                raise ProtocolError(f"message {index} of a batch of {count} overruns its {end} bytes")
            if (mask is not None and not (mask >> index) & 1) or (single.__class__ is not bytes and single.compacted_out):
                continue
            msg_id = None  # (made on first use: see Message._id)
            if check_start:
                msg_id = new_id(MessageId)
                msg_id.ledger_id, msg_id.entry_id, msg_id.batch_index = ledger_id, entry_id, indexes[index]
                msg_id.partition, msg_id.batch_size, msg_id.topic, msg_id._chunk_ids = partition, count, topic, None
                if before_start(msg_id, start, inclusive):  # type: ignore[arg-type]
                    continue
            msg = new_message(Message)
            msg._payload = body
            msg._meta = meta
            msg._single = single
            msg._mid = msg_id
            msg._ledger = ledger_id
            msg._entry = entry_id
            msg._index = indexes[index]
            msg._topic = topic
            msg._redelivery_count = redelivery
            msg._schema = schema
            msg._consumer = consumer
            out.append(msg)
    except (struct.error, DecodeError, IndexError) as exc:
        raise ProtocolError(f"malformed batch of {count} messages: {exc}") from None
    if pos != end:
        raise ProtocolError(f"{end - pos} bytes left over after the {count} messages of a batch")
    return out
