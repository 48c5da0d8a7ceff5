"""A batch of equal-size messages without metadata of their own, read a column at a time.

A batching producer that sends records of one size (the official clients' and ``magnetar perf``'s
batches, fixed-size records) writes every message of a batch with the same frame: a 4-byte
metadata size, a SingleMessageMetadata of ``payload_size`` (and, from the official producers, a
``sequence_id`` of the entry's first sequence id plus its index), then the payload. Such a batch
is a table of ``count`` rows of one stride. Instead of a Python step per message, each byte
column of the rows' heads is checked with one strided slice (``payload[at:end:stride]``, a loop
in C), and the payloads are sliced out with one list comprehension.

:func:`uniform_layout` (where the payloads lie: a consumer slices each one only when asked
for) and :func:`uniform_bodies` (the payloads) answer only when every row's head is the first
row's, with its own sequence id where the first has one; anything else (sizes that differ, a
sequence id not the first's plus its index, any other field, a varint longer than needed) is
None, and the caller reads the batch message by message (which keeps the metadata of sequence
ids of four varint bytes or more serialized, where this reading keeps nothing:
``Message.sequence_id`` reads the same id). Each answer is tested against that reading in
tests/protocol/test_uniform_batch.py.
"""

from __future__ import annotations

import struct
from typing import Final

_U32: Final = struct.Struct(">I")
#: the low byte of a varint that goes on (0x80 set), for the low 7 bits 0..127, twice over
_LOW_CYCLE: Final = bytes(range(0x80, 0x100)) * 2
#: payload sizes of up to two varint bytes: the rows the message by message reading
#: (batch_reading.py) also leaves without metadata of their own
_MAX_SIZE: Final = 1 << 14
_MAX_SIZE_BYTES: Final = 2
#: sequence ids of up to nine varint bytes (below 2 ** 63: Pulsar's are signed longs); the message
#: by message reading keeps those of four bytes or more serialized (its byte checks stop at three),
#: whose ``sequence_id`` reads the same value the entry's first id plus the index gives
_MAX_SEQUENCE_BYTES: Final = 9


def _varint_at(data: bytes, pos: int, limit: int, most: int) -> tuple[int, int]:
    """(value, position after it) of the varint at ``pos``; (-1, pos) when it runs past ``limit``
    or is longer than ``most`` bytes."""
    value = shift = 0
    while pos < limit and shift < 7 * most:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return value, pos
        shift += 7
    return -1, pos


def _varint_size(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


def _sequence_column(first: int, count: int, byte_index: int, last: bool) -> bytes:
    """Byte ``byte_index`` of the varints of ``first`` .. ``first + count - 1``, all of one length
    (``last``: the varint's last byte, without the continuation bit)."""
    flag = 0 if last else 0x80
    if byte_index == 0:
        if last:  # one-byte varints: the values themselves (< 128)
            return bytes(range(first, first + count))
        low = first & 0x7F
        return (_LOW_CYCLE * (count // 128 + 1))[low : low + count]
    shift = 7 * byte_index
    parts: list[bytes] = []
    value, stop = first, first + count
    while value < stop:
        run_end = min(stop, ((value >> shift) + 1) << shift)
        parts.append(bytes((((value >> shift) & 0x7F) | flag,)) * (run_end - value))
        value = run_end
    return b"".join(parts)


def _head_shape(payload: bytes, count: int, first_sequence: int, start: int, end: int) -> tuple[int, int, int, int] | None:
    """(metadata size, payload size, offset of the sequence id in a row or 0, its byte count) of
    the first row, if it is a head this module reads and the rows fill ``start`` .. ``end``."""
    if end - start < 6:
        return None
    (meta_size,) = _U32.unpack_from(payload, start)
    at = start + 4
    meta_end = at + meta_size
    if meta_end > end or payload[at] != 0x18:
        return None
    size, pos = _varint_at(payload, at + 1, meta_end, _MAX_SIZE_BYTES)
    if not 0 <= size < _MAX_SIZE or pos - at - 1 != _varint_size(size):
        return None
    seq_at = seq_bytes = 0
    if pos < meta_end:
        if first_sequence < 0 or payload[pos] != 0x40:
            return None
        seq_bytes = _varint_size(first_sequence)
        if seq_bytes > _MAX_SEQUENCE_BYTES or _varint_size(first_sequence + count - 1) != seq_bytes:
            return None
        value, after = _varint_at(payload, pos + 1, meta_end, seq_bytes)
        if value != first_sequence or after != meta_end or after - pos - 1 != seq_bytes:
            return None
        seq_at = pos + 1 - start
    if (4 + meta_size + size) * count != end - start:
        return None
    return meta_size, size, seq_at, seq_bytes


def uniform_layout(payload: bytes, count: int, first_sequence: int, start: int, end: int) -> tuple[int, int, int] | None:
    """Where the payloads of the ``count`` messages of ``payload[start:end]`` lie when it is a
    uniform batch (module docstring): (offset of the first payload, the stride, the payload size),
    message ``i``'s payload being ``payload[first + i * stride : first + i * stride + size]``;
    None when the batch is not uniform."""
    if count < 2 or payload.__class__ is not bytes:  # (a column is compared with repeated bytes)
        return None
    shape = _head_shape(payload, count, first_sequence, start, end)
    if shape is None:
        return None
    meta_size, size, seq_at, seq_bytes = shape
    head = 4 + meta_size
    stride = head + size
    for j in range(head):
        if seq_at <= j < seq_at + seq_bytes:
            i = j - seq_at
            expected = _sequence_column(first_sequence, count, i, i == seq_bytes - 1)
        else:
            expected = payload[start + j : start + j + 1] * count
        if payload[start + j : end : stride] != expected:
            return None
    return start + head, stride, size


def uniform_bodies(payload: bytes, count: int, first_sequence: int, start: int, end: int) -> list[bytes] | None:
    """The payloads of the ``count`` messages of ``payload[start:end]`` when it is a uniform batch
    (module docstring), every message's metadata then being nothing of its own; None when not."""
    layout = uniform_layout(payload, count, first_sequence, start, end)
    if layout is None:
        return None
    first_body, stride, size = layout
    return [payload[at : at + size] for at in range(first_body, first_body + count * stride, stride)]


__all__ = ["uniform_bodies", "uniform_layout"]
