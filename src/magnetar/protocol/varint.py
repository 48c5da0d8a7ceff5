"""Protocol-buffers base-128 varints, for the few places that write or read protobuf by hand.

Values are unsigned 64-bit: a negative value is written as its two's complement, as protobuf
writes an ``int64``/``uint64`` field. :data:`SMALL_VARINTS` holds the encodings of 0..16383 so
that hot paths can index it instead of calling (``SMALL_VARINTS[n] if n < 16384 else
encode_varint(n)``).
"""

from __future__ import annotations

from itertools import chain, repeat
from typing import Final

_U64: Final = (1 << 64) - 1
#: values below this have a precomputed encoding in SMALL_VARINTS
SMALL_VARINT_LIMIT: Final = 16384
#: values below this take at most four varint bytes: two written here, the rest from SMALL_VARINTS
_FOUR_BYTES: Final = 1 << 28


def write_varint(value: int, out: bytearray) -> None:
    """Append the varint of ``value`` (taken modulo 2**64) to ``out``."""
    value &= _U64
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _encode(value: int) -> bytes:
    out = bytearray()
    write_varint(value, out)
    return bytes(out)


#: the encodings of 0 .. SMALL_VARINT_LIMIT - 1 (one or two bytes each), built by C loops alone (map over
#: ranges, no Python frame per entry): every process that loads the protocol pays it, the broker before it
#: listens and the client before its first CONNECT (timeit, best of 5 at load 1: 4.0 ms against 9.6 ms for a
#: comprehension of bytes((low | 0x80, high)), 23 ms for _encode's loop). A two-byte varint of ``i`` is the
#: little-endian 16-bit integer ``(i & 0x7F | 0x80) + (i >> 7 << 8)``: for each high byte, a range of them.
SMALL_VARINTS: Final[list[bytes]] = [*map(int.to_bytes, range(0x80)), *map(
    int.to_bytes,
    chain.from_iterable(range(high << 8 | 0x80, (high + 1) << 8) for high in range(1, SMALL_VARINT_LIMIT >> 7)),
    repeat(2), repeat("little"))]


#: a varint's first byte when more follow, per low 7 bits
_CONTINUED: Final[list[bytes]] = [bytes((i | 0x80,)) for i in range(128)]
#: values below this take at most three varint bytes: one continued byte and a SMALL_VARINTS entry
_THREE_BYTES: Final = SMALL_VARINT_LIMIT << 7


def encode_varint(value: int) -> bytes:
    """The varint bytes of ``value`` (taken modulo 2**64)."""
    if 0 <= value < SMALL_VARINT_LIMIT:
        return SMALL_VARINTS[value]
    # entry and sequence ids mostly (a receipt and a MESSAGE head carry two or three): table
    # look-ups, no loop over the bytes
    if 0 < value < _THREE_BYTES:
        return _CONTINUED[value & 0x7F] + SMALL_VARINTS[value >> 7]
    if 0 < value < _FOUR_BYTES:
        return _CONTINUED[value & 0x7F] + _CONTINUED[(value >> 7) & 0x7F] + SMALL_VARINTS[value >> 14]
    return _encode(value)


def read_varint(data: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, int]:
    """Decode the varint at ``data[pos:]``: (value, position after it).

    Raises ValueError when the data ends inside the varint or it is longer than ten bytes.
    """
    value = shift = 0
    end = len(data)
    while pos < end:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than ten bytes")
    raise ValueError("data ends inside a varint")


def read_varint_fast(s: bytes, p: int) -> tuple[int, int]:
    """(value, position after it) of the varint at ``s[p]``, for the hand-written frame readers' hot
    paths (one byte without a loop); IndexError past 10 bytes or the end, which they treat as "not the
    usual shape"."""
    b = s[p]
    if b < 0x80:
        return b, p + 1
    value = b & 0x7F
    shift = 7
    while True:
        p += 1
        b = s[p]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, p + 1
        shift += 7
        if shift > 63:
            raise IndexError("varint longer than 10 bytes")


def zigzag(value: int) -> int:
    """The zig-zag mapping of a signed 64-bit value (Avro ``long``, protobuf ``sint64``)."""
    return ((value << 1) ^ (value >> 63)) & _U64


def unzigzag(value: int) -> int:
    """The signed value of a zig-zag mapped one."""
    return (value >> 1) ^ -(value & 1)
