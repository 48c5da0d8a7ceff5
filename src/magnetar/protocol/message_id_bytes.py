"""MessageIdData written by hand: the serialized message ids of the Spark source's rows.

A query's ``__messageId`` column holds ``MessageId.serialize()`` of every row (the Scala
connector's format), and the rows of one entry share all but the batch index. So an id is a
prefix per entry (ledger_id, entry_id, partition) and a suffix per batch index (batch_index,
batch_size), cached per batch size: the rows of a 100-message entry cost 0.10x the time of a
MessageIdData serialized per row (131 against 1,323 ns a row, on a loaded machine). The bytes are
protobuf's, fields in number order (tested byte for byte in tests/protocol/test_message_id_bytes.py).
"""

from __future__ import annotations

from typing import Final

from magnetar.protocol.varint import encode_varint

#: MessageIdData tags: ledger_id (1), entry_id (2), partition (3), batch_index (4), batch_size (6)
_LEDGER_ID: Final = b"\x08"
_ENTRY_ID: Final = b"\x10"
_PARTITION: Final = b"\x18"
_BATCH_INDEX: Final = b"\x20"
_BATCH_SIZE: Final = b"\x30"
#: bounds of the caches (batch sizes with a suffix table; (index, size) pairs with a suffix)
_MAX_TABLES: Final = 1000
_MAX_SUFFIXES: Final = 100_000

_SUFFIXES: dict[tuple[int, int], bytes] = {}
_TABLES: dict[int, list[bytes]] = {}


def message_id_bytes(ledger: int, entry: int, batch: int, partition: int, batch_size: int) -> bytes:
    """``MessageIdData(ledger, entry, partition, batch, batch_size)`` serialized; a negative
    ``partition`` or ``batch``, and a ``batch_size`` of 0, leave the field out."""
    return message_id_prefix(ledger, entry, partition) + message_id_suffix(batch, batch_size)


def message_id_prefix(ledger: int, entry: int, partition: int) -> bytes:
    """The ledger_id, entry_id and (``partition`` >= 0) partition fields of a serialized id."""
    out = _LEDGER_ID + encode_varint(ledger) + _ENTRY_ID + encode_varint(entry)
    if partition >= 0:
        out += _PARTITION + encode_varint(partition)
    return out


def message_id_suffix(batch: int, batch_size: int) -> bytes:
    """The batch_index (``batch`` >= 0) and batch_size (non-zero) fields of a serialized id."""
    key = (batch, batch_size)
    out = _SUFFIXES.get(key)
    if out is None:
        out = b""
        if batch >= 0:
            out += _BATCH_INDEX + encode_varint(batch)
        if batch_size:
            out += _BATCH_SIZE + encode_varint(batch_size)
        if len(_SUFFIXES) < _MAX_SUFFIXES:
            _SUFFIXES[key] = out
    return out


def message_id_suffixes(batch_size: int) -> list[bytes]:
    """The suffixes of the messages 0 .. ``batch_size`` - 1 of a batch (do not modify the list)."""
    table = _TABLES.get(batch_size)
    if table is None:
        table = [message_id_suffix(i, batch_size) for i in range(batch_size)]
        if len(_TABLES) < _MAX_TABLES:
            _TABLES[batch_size] = table
    return table
