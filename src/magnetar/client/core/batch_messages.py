"""Splitting a delivered batch entry into Message objects: the consumer's hot loop.

The bytes are read by :func:`magnetar.protocol.batch_reading.split_batch_payload` (the usual
SingleMessageMetadata shapes without the protobuf parser); what is left here runs once per message
received and is kept to the bare minimum: which messages to hand out, and their Message objects.
"""

from __future__ import annotations

from typing import Any

from magnetar.client.api.message import (
    BATCH_INDEXES,
    IdPart,
    Message,
    MessageId,
    UniformEntry,
    UniformMessage,
    id_part,
    message_entry,
)
from magnetar.protocol.batch_reading import EMPTY_SINGLE, split_batch_payload, split_each_message
from magnetar.protocol.schema import MessageMetadata
from magnetar.protocol.uniform_batch import uniform_layout

_U64 = (1 << 64) - 1
_new_message_id = object.__new__
_new_message = object.__new__
_new_entry = object.__new__


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
    start: MessageId | None, inclusive: bool, span: tuple[int, int] | None = None,
) -> list[Message]:
    """The messages of a batch entry that are still to deliver, in order, owned by ``consumer``.

    ``entry`` is (ledger id, entry id), signed; messages outside ``mask`` (acknowledged by
    batch index), compacted out, or before ``start`` are left out. Raises ProtocolError on a
    malformed batch. With ``span`` (start, end), the batch is ``payload[start:end]``: the bytes
    received, read in place.
    """
    count = meta.num_messages_in_batch
    at, end = span if span is not None else (0, len(payload))
    ledger_id, entry_id = IdPart(entry[0]), IdPart(entry[1])
    # only messages of the start entry itself (or before it) can precede the start position
    check_start = start is not None and entry <= (start.ledger_id, start.entry_id)
    if mask is None and not check_start:
        # the usual case: every message of the entry is handed out
        layout = uniform_layout(payload, count, meta.sequence_id, at, end)
        if layout is not None:
            return uniform_messages(payload, layout, meta, ledger_id, entry_id, redelivery, consumer, count)
        singles, bodies = split_each_message(payload, count, meta.sequence_id, at, end)
    else:
        singles, bodies = split_batch_payload(payload, count, meta.sequence_id, at, end)
    topic = consumer.topic
    ctx = message_entry(meta, ledger_id, entry_id, topic, redelivery, consumer.config.schema, consumer)
    new_message, empty = _new_message, EMPTY_SINGLE
    indexes = BATCH_INDEXES if count <= len(BATCH_INDEXES) else [id_part(i) for i in range(count)]
    out = []
    if mask is None and not check_start and not singles:
        # none with metadata of its own
        for index, body in zip(indexes, bodies, strict=False):  # (indexes is longer)
            msg = new_message(Message)
            msg._payload = body
            msg._single = empty
            msg._index = index
            msg._mid = None  # (made on first use: see Message._id)
            msg._ctx = ctx
            out.append(msg)
        return out
    partition = id_part(consumer.partition)
    for index, body in zip(indexes, bodies, strict=False):
        if mask is not None and not (mask >> index) & 1:
            continue
        single = singles.get(index, empty)
        if single is not empty and single.__class__ is not bytes and single.compacted_out:
            continue
        msg_id = None
        if check_start:
            msg_id = _new_message_id(MessageId)
            msg_id.ledger_id, msg_id.entry_id, msg_id.batch_index = ledger_id, entry_id, index
            msg_id.partition, msg_id.batch_size, msg_id.topic, msg_id._chunk_ids = partition, count, topic, None
            if before_start(msg_id, start, inclusive):  # type: ignore[arg-type]
                continue
        msg = new_message(Message)
        msg._payload = body
        msg._single = single
        msg._index = index
        msg._mid = msg_id
        msg._ctx = ctx
        out.append(msg)
    return out


def uniform_messages(
    payload: bytes, layout: tuple[int, int, int], meta: MessageMetadata, ledger_id: IdPart, entry_id: IdPart,
    redelivery: int, consumer: Any, count: int,
) -> list[Message]:
    """The ``count`` messages of a uniform batch whose payloads lie in ``payload`` as ``layout``
    says (:func:`magnetar.protocol.uniform_batch.uniform_layout`): :class:`UniformMessage` objects
    of one :class:`UniformEntry`, their payloads left where they are."""
    ctx = _new_entry(UniformEntry)
    ctx.meta = meta
    ctx.ledger = ledger_id
    ctx.entry = entry_id
    ctx.topic = consumer.topic
    ctx.redelivery_count = redelivery
    ctx.schema = consumer.config.schema
    ctx.consumer = consumer
    ctx.source = payload
    ctx.first, ctx.stride, ctx.size = layout
    new_message = _new_message
    out = []
    append = out.append
    for index in BATCH_INDEXES[:count] if count <= len(BATCH_INDEXES) else map(id_part, range(count)):
        msg = new_message(UniformMessage)
        msg._index = index
        msg._mid = None  # (made on first use: see Message._id)
        msg._ctx = ctx
        append(msg)
    return out
