"""MESSAGE frames of the usual shape, read by hand: the consumer's hot path.

The usual shape: a CommandMessage with a consumer id, a message id of a ledger and an entry id
only, and optionally a redelivery count and a consumer epoch, followed by the checksum section
and the entry. :func:`read_message_frame` reads one without protobuf (checked against it in the
tests); :func:`read_repeated_message_frame` reads the next ones of a stream faster, from what they
repeat of the last (:class:`FrameShape`). Any other MESSAGE frame is left to
:func:`~magnetar.protocol.framing.decode_frame_body`, which judges its validity.
"""

from __future__ import annotations

import struct
from typing import Final

from magnetar.protocol.frame import MAGIC_CHECKSUM, LazyCommandFrame
from magnetar.protocol.varint import read_varint_fast as _varint

_U32 = struct.Struct(">I")
#: checksum magic, checksum and metadata size: how a MESSAGE frame usually goes on
_CHECKSUM_AND_META_SIZE = struct.Struct(">HII")

_new_frame = object.__new__


class MessageFrame(LazyCommandFrame):
    """A MESSAGE frame of the usual shape, its command read by hand (the consumer's hot path).

    The usual shape: a CommandMessage with a consumer id, a message id of a ledger and an entry
    id only, and optionally a redelivery count and a consumer epoch, followed by the checksum
    section and the entry. Any other MESSAGE frame is a plain :class:`Frame`. The fields are
    plain attributes; :attr:`command` parses the same bytes with protobuf on first use.
    """

    __slots__ = ("consumer_id", "ledger_id", "entry_id", "redelivery_count")

    consumer_id: int
    ledger_id: int
    entry_id: int
    redelivery_count: int

    @property
    def type(self) -> int:
        """MESSAGE."""
        return _MESSAGE


_MESSAGE: Final = 9
#: a MESSAGE command's first bytes: the type (field 1) 9, then the tag of field 9 (``message``)
MESSAGE_PREFIX: Final = b"\x08\x09\x4a"
_U64_LIMIT: Final = 1 << 64


class FrameShape:
    """What the next MESSAGE frames of a stream probably repeat of the last one read by hand: its
    bytes from the command size to the entry id's tag (``head``: command size, consumer id,
    ledger id), the entry id's varint length, and the command's bytes after the message id
    (``tail``: redelivery count, epoch)."""

    __slots__ = ("head", "entry_at", "entry_len", "tail", "consumer_id", "ledger_id", "redelivery_count", "cmd_size")

    def __init__(self) -> None:
        self.head = b""
        self.entry_at = 0
        self.entry_len = 0
        self.tail = b""
        self.consumer_id = 0
        self.ledger_id = 0
        self.redelivery_count = 0
        self.cmd_size = 0


def read_message_frame(s: bytes, view: memoryview, pos: int, end: int, shape: FrameShape | None = None) -> MessageFrame | None:
    """The frame body ``s[pos:end]`` (after its total size; ``view`` is ``memoryview(s)``) as a
    :class:`MessageFrame` when it has the usual shape (the caller saw ``MESSAGE_PREFIX`` at
    ``s[pos + 4]``), else None (decode it in full). ``shape``, when given, is set to this
    frame's (see :func:`read_repeated_message_frame`).

    A None answer says nothing about validity: the protobuf decoder then judges the frame.
    """
    try:
        (cmd_size,) = _U32.unpack_from(s, pos)
        p = pos + 7  # past the command size and the prefix
        cmd_end = p - 3 + cmd_size
        if cmd_end + 10 > end or s[p] != cmd_end - p - 1 or s[p + 1] != 0x08:
            return None  # (a length of 128 or more, or no consumer id first: the general decoder)
        # field 1, consumer id; then field 2, the message id: a length (< 128) and its fields
        # (one-byte varints are read inline: the usual consumer id, ledger id, redelivery count)
        consumer_id = s[p + 2]
        if consumer_id < 0x80:
            p += 3
        else:
            consumer_id, p = _varint(s, p + 2)
        if s[p] != 0x12 or s[p + 1] >= 0x80 or s[p + 2] != 0x08 or consumer_id >= _U64_LIMIT:
            return None
        id_end = p + 2 + s[p + 1]
        ledger_id = s[p + 3]
        if ledger_id < 0x80:
            p += 4
        else:
            ledger_id, p = _varint(s, p + 3)
        if s[p] != 0x10:
            return None
        entry_at = p + 1
        entry_id, p = _varint(s, entry_at)
        if p != id_end:
            return None  # a partition, batch index, ack set ... in the id: the general decoder
        redelivery_count = 0
        if p < cmd_end and s[p] == 0x18:
            redelivery_count = s[p + 1]
            if redelivery_count < 0x80:
                p += 2
            else:
                redelivery_count, p = _varint(s, p + 1)
        if p < cmd_end and s[p] == 0x28:
            _epoch, p = _varint(s, p + 1)
        if p != cmd_end or ledger_id >= _U64_LIMIT or entry_id >= _U64_LIMIT or redelivery_count >= 1 << 32:
            return None
        magic, checksum, meta_size = _CHECKSUM_AND_META_SIZE.unpack_from(s, cmd_end)
    except (IndexError, struct.error):
        return None
    if magic != MAGIC_CHECKSUM or meta_size > end - cmd_end - 10:
        return None
    if shape is not None and id_end - entry_at <= 4:
        shape.head = s[pos:entry_at]
        shape.entry_at = entry_at - pos
        shape.entry_len = id_end - entry_at
        shape.tail = s[id_end:cmd_end]
        shape.consumer_id = consumer_id
        shape.ledger_id = ledger_id
        shape.redelivery_count = redelivery_count
        shape.cmd_size = cmd_end - pos - 4
    frame = _new_frame(MessageFrame)
    frame.consumer_id = consumer_id
    frame.ledger_id = ledger_id
    frame.entry_id = entry_id
    frame.redelivery_count = redelivery_count
    frame.entry_view = view[cmd_end + 6 : end]
    frame._entry = None
    frame.checksum = checksum
    frame.broker_entry_metadata = None
    frame._source = s
    frame._command_start = pos + 4
    frame._command_end = cmd_end
    frame._parsed = None
    return frame


def read_repeated_message_frame(s: bytes, view: memoryview, pos: int, end: int, shape: FrameShape) -> MessageFrame | None:
    """As :func:`read_message_frame`, for a frame whose bytes from ``pos`` start with ``shape.head``:
    when its entry id is a varint of the same length followed by the same tail, all but the
    entry id and the checksum section are known already (the same bytes read the same). Else None."""
    p = pos + shape.entry_at
    n = shape.entry_len
    b = s[p]
    # the entry id: n bytes, every one but the last with its continuation bit
    if n == 1:
        if b >= 0x80:
            return None
        entry_id = b
    elif n == 2:
        b1 = s[p + 1]
        if b < 0x80 or b1 >= 0x80:
            return None
        entry_id = (b & 0x7F) | (b1 << 7)
    elif n == 3:
        b1 = s[p + 1]
        b2 = s[p + 2]
        if b < 0x80 or b1 < 0x80 or b2 >= 0x80:
            return None
        entry_id = (b & 0x7F) | ((b1 & 0x7F) << 7) | (b2 << 14)
    else:
        b1 = s[p + 1]
        b2 = s[p + 2]
        b3 = s[p + 3]
        if b < 0x80 or b1 < 0x80 or b2 < 0x80 or b3 >= 0x80:
            return None
        entry_id = (b & 0x7F) | ((b1 & 0x7F) << 7) | ((b2 & 0x7F) << 14) | (b3 << 21)
    cmd_end = pos + 4 + shape.cmd_size
    tail = shape.tail
    if (tail and not s.startswith(tail, p + n)) or cmd_end + 10 > end:
        return None
    magic, checksum, meta_size = _CHECKSUM_AND_META_SIZE.unpack_from(s, cmd_end)
    if magic != MAGIC_CHECKSUM or meta_size > end - cmd_end - 10:
        return None
    frame = _new_frame(MessageFrame)
    frame.consumer_id = shape.consumer_id
    frame.ledger_id = shape.ledger_id
    frame.entry_id = entry_id
    frame.redelivery_count = shape.redelivery_count
    frame.entry_view = view[cmd_end + 6 : end]
    frame._entry = None
    frame.checksum = checksum
    frame.broker_entry_metadata = None
    frame._source = s
    frame._command_start = pos + 4
    frame._command_end = cmd_end
    frame._parsed = None
    return frame
