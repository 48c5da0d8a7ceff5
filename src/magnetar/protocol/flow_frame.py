"""FLOW frames of the usual shape, read by hand: a consumer's permits on the broker's dispatch path.

The usual shape: a CommandFlow of a consumer id and a permit count (in that order, each once) and
nothing after the command. :func:`read_flow_frame` reads one without protobuf (checked against it
in the tests): an official consumer sends one per half of its receiver queue, about two per entry
of a 1,000-message batch. Any other FLOW frame (fields in another order, an unknown field, a value
out of its type's range, a payload) is left to
:func:`~magnetar.protocol.framing.decode_frame_body`, which judges its validity.
"""

from __future__ import annotations

import struct
from typing import Final

from magnetar.protocol.frame import LazyCommandFrame
from magnetar.protocol.varint import read_varint_fast as _varint

_U32 = struct.Struct(">I")
_new_frame = object.__new__

_FLOW: Final = 11
#: a FLOW command's first bytes: the type (field 1) 11, then the tag of field 11 (``flow``)
FLOW_PREFIX: Final = b"\x08\x0b\x5a"
_U64_LIMIT: Final = 1 << 64
_U32_LIMIT: Final = 1 << 32


class FlowFrame(LazyCommandFrame):
    """A FLOW frame of the usual shape, its command read by hand.

    ``consumer_id`` and ``message_permits`` are plain attributes; :attr:`command` parses the same
    bytes with protobuf on first use.
    """

    __slots__ = ("consumer_id", "message_permits")

    consumer_id: int
    message_permits: int

    @property
    def type(self) -> int:
        """FLOW."""
        return _FLOW


def read_flow_frame(s: bytes, pos: int, end: int) -> FlowFrame | None:
    """The frame body ``s[pos:end]`` (after its total size) as a :class:`FlowFrame` when it has the
    usual shape (the caller saw ``FLOW_PREFIX`` at ``s[pos + 4]``), else None (decode it in full).

    A None answer says nothing about validity: the protobuf decoder then judges the frame.
    """
    try:
        (cmd_size,) = _U32.unpack_from(s, pos)
        cmd_end = pos + 4 + cmd_size
        p = pos + 7  # past the command size and the prefix
        if cmd_end != end or s[p] != cmd_end - p - 1 or s[p + 1] != 0x08:
            return None  # (a payload after the command, another length, no consumer id first)
        consumer_id, p = _varint(s, p + 2)
        if s[p] != 0x10:
            return None
        permits, p = _varint(s, p + 1)
    except (IndexError, struct.error):
        return None
    if p != cmd_end or consumer_id >= _U64_LIMIT or permits >= _U32_LIMIT:
        return None
    frame = _new_frame(FlowFrame)
    frame.consumer_id = consumer_id
    frame.message_permits = permits
    frame.entry_view = None
    frame._entry = None
    frame.checksum = None
    frame.broker_entry_metadata = None
    frame._source = s
    frame._command_start = pos + 4
    frame._command_end = cmd_end
    frame._parsed = None
    return frame
