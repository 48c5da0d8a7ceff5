"""The ACK command frame written by hand: the consumer's hot path for acknowledging many entries.

:func:`encode_ack_frame` gives the same bytes as building the ``BaseCommand`` (type ACK) with
protobuf and encoding it with :func:`~magnetar.protocol.framing.encode_command`: fields in
field-number order, each whole-entry id as ``ledger_id`` and ``entry_id`` only. The ids of one
ledger share their leading bytes, so those are made once per ledger, not once per id.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Final

from magnetar.protocol.schema import MessageIdData
from magnetar.protocol.varint import SMALL_VARINT_LIMIT, SMALL_VARINTS, encode_varint

_U64: Final = (1 << 64) - 1
_HEADER: Final = struct.Struct(">II")
#: BaseCommand.type = ACK (10), then the tag of BaseCommand.ack (field 10, length-delimited)
_COMMAND_PREFIX: Final = b"\x08\x0a\x52"
#: CommandAck.message_id (field 3, length-delimited)
_ID_TAG: Final = b"\x1a"


#: a varint's first byte when more follow, per low 7 bits
_CONTINUED: Final = [bytes((i | 0x80,)) for i in range(128)]
#: entry ids below these are written as one (two) continued bytes and a SMALL_VARINTS entry
_TWO_PART_LIMIT: Final = SMALL_VARINT_LIMIT << 7
_THREE_PART_LIMIT: Final = SMALL_VARINT_LIMIT << 14


def _id_heads(ledger_id: int) -> list[bytes]:
    """Per length of the entry id's varint (index 0..10), what precedes it in a whole-entry id:
    the message_id tag, the id's length, ledger_id (field 1) and the entry_id tag (field 2)."""
    inner = b"\x08" + encode_varint(ledger_id) + b"\x10"
    return [_ID_TAG + encode_varint(len(inner) + n) + inner for n in range(11)]


def encode_ack_frame(consumer_id: int, ack_type: int, acks: Mapping[tuple[int, int], MessageIdData | None]) -> bytes:
    """The whole ACK frame for ``acks``: per (ledger id, entry id), signed, either None (the whole
    entry) or the MessageIdData to send as it is (an ack set)."""
    parts: list[bytes] = []
    append = parts.append
    heads: list[bytes] = []
    last_ledger = None
    for (ledger_id, entry_id), data in acks.items():
        if data is None:
            if ledger_id != last_ledger:
                last_ledger = ledger_id
                heads = _id_heads(ledger_id)
            if 0 <= entry_id < SMALL_VARINT_LIMIT:
                entry = SMALL_VARINTS[entry_id]
                append(heads[len(entry)])
                append(entry)
            elif 0 <= entry_id < _TWO_PART_LIMIT:
                entry = SMALL_VARINTS[entry_id >> 7]
                append(heads[len(entry) + 1])
                append(_CONTINUED[entry_id & 0x7F])
                append(entry)
            elif 0 <= entry_id < _THREE_PART_LIMIT:
                entry = SMALL_VARINTS[entry_id >> 14]
                append(heads[len(entry) + 2])
                append(_CONTINUED[entry_id & 0x7F])
                append(_CONTINUED[(entry_id >> 7) & 0x7F])
                append(entry)
            else:
                entry = encode_varint(entry_id)
                append(heads[len(entry)])
                append(entry)
        else:
            body = data.SerializeToString()
            append(_ID_TAG + encode_varint(len(body)) + body)
    ack = b"".join((b"\x08", encode_varint(consumer_id), b"\x10", encode_varint(int(ack_type)), *parts))
    command = _COMMAND_PREFIX + encode_varint(len(ack)) + ack
    size = len(command)
    return _HEADER.pack(size + 4, size) + command
