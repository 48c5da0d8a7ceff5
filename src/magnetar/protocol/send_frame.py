"""SEND frames of the usual shape, read by hand: the broker's publish path.

The usual shape: a CommandSend of a producer id, a sequence id and optionally the number of
messages and the highest sequence id (in that order, each once), followed by the checksum section
and the entry. :func:`read_send_frame` reads one without protobuf (checked against it in the
tests). Any other SEND frame (a transaction, a chunk flag, a marker, a message id, an unknown
field) is left to :func:`~magnetar.protocol.framing.decode_frame_body`, which judges its validity.
"""

from __future__ import annotations

import struct
from typing import Final

from magnetar.protocol.frame import MAGIC_CHECKSUM, LazyCommandFrame
from magnetar.protocol.varint import read_varint_fast as _varint

_U32 = struct.Struct(">I")
#: checksum magic, checksum and metadata size: how a SEND frame usually goes on
_CHECKSUM_AND_META_SIZE = struct.Struct(">HII")

_new_frame = object.__new__

_SEND: Final = 6
#: a SEND command's first bytes: the type (field 1) 6, then the tag of field 6 (``send``)
SEND_PREFIX: Final = b"\x08\x06\x32"
_U64_LIMIT: Final = 1 << 64
_I32_LIMIT: Final = 1 << 31
#: CommandSend's tags the usual shape may carry after the sequence id: num_messages, highest_sequence_id
_NUM_MESSAGES_TAG: Final = 0x18
_HIGHEST_TAG: Final = 0x30


class SendFrame(LazyCommandFrame):
    """A SEND frame of the usual shape, its command read by hand (the broker's publish path).

    The fields are plain attributes (``num_messages`` 1 and ``highest_sequence_id`` 0 when absent,
    protobuf's defaults); :attr:`command` parses the same bytes with protobuf on first use.
    """

    __slots__ = ("producer_id", "sequence_id", "num_messages", "highest_sequence_id")

    producer_id: int
    sequence_id: int
    num_messages: int
    highest_sequence_id: int

    @property
    def type(self) -> int:
        """SEND."""
        return _SEND


def read_send_frame(s: bytes, view: memoryview, pos: int, end: int) -> SendFrame | None:
    """The frame body ``s[pos:end]`` (after its total size; ``view`` is ``memoryview(s)``) as a
    :class:`SendFrame` when it has the usual shape (the caller saw ``SEND_PREFIX`` at
    ``s[pos + 4]``), else None (decode it in full).

    A None answer says nothing about validity: the protobuf decoder then judges the frame.
    """
    try:
        (cmd_size,) = _U32.unpack_from(s, pos)
        p = pos + 7  # past the command size and the prefix
        cmd_end = p - 3 + cmd_size
        if cmd_end + 10 > end or s[p] != cmd_end - p - 1 or s[p + 1] != 0x08:
            return None  # (a length of 128 or more, or no producer id first: the general decoder)
        producer_id, p = _varint(s, p + 2)
        if s[p] != 0x10:
            return None
        sequence_id, p = _varint(s, p + 1)
        num_messages = 1
        if p < cmd_end and s[p] == _NUM_MESSAGES_TAG:
            num_messages, p = _varint(s, p + 1)
        highest = 0
        if p < cmd_end and s[p] == _HIGHEST_TAG:
            highest, p = _varint(s, p + 1)
        if p != cmd_end or producer_id >= _U64_LIMIT or sequence_id >= _U64_LIMIT or highest >= _U64_LIMIT:
            return None
        if num_messages >= _I32_LIMIT:
            return None  # (a negative int32 is ten bytes on the wire: the general decoder's reading)
        magic, checksum, meta_size = _CHECKSUM_AND_META_SIZE.unpack_from(s, cmd_end)
    except (IndexError, struct.error):
        return None
    if magic != MAGIC_CHECKSUM or meta_size > end - cmd_end - 10:
        return None
    frame = _new_frame(SendFrame)
    frame.producer_id = producer_id
    frame.sequence_id = sequence_id
    frame.num_messages = num_messages
    frame.highest_sequence_id = highest
    frame.entry_view = view[cmd_end + 6 : end]
    frame._entry = None
    frame.checksum = checksum
    frame.broker_entry_metadata = None
    frame._source = s
    frame._command_start = pos + 4
    frame._command_end = cmd_end
    frame._parsed = None
    return frame
