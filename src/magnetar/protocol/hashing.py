"""The hash functions whose exact values Pulsar clients and brokers agree on.

``murmur3_32`` (MurmurHash3 x86_32) places keys on the Key_Shared hash ring and is one of the
partition-routing hashes the clients offer; ``java_string_hash`` is Java's ``String.hashCode``,
the Java client's default partition-routing hash.
"""

from __future__ import annotations

import struct
from typing import Final

#: size of the Key_Shared hash ring: hash ranges cover 0 .. HASH_RANGE_SIZE - 1
HASH_RANGE_SIZE: Final = 65536

_MASK: Final = 0xFFFFFFFF
_C1: Final = 0xCC9E2D51
_C2: Final = 0x1B873593
_BLOCKS = struct.Struct("<I")


def murmur3_32(data: bytes | bytearray | memoryview, seed: int = 0) -> int:
    """MurmurHash3 x86_32 of ``data``, as an unsigned 32-bit integer."""
    view = memoryview(data).cast("B")
    length = len(view)
    body = length & ~3
    h = seed & _MASK
    for (k,) in _BLOCKS.iter_unpack(view[:body]):
        k = (k * _C1) & _MASK
        k = ((k << 15) | (k >> 17)) & _MASK
        k = (k * _C2) & _MASK
        h ^= k
        h = ((h << 13) | (h >> 19)) & _MASK
        h = (h * 5 + 0xE6546B64) & _MASK
    if body != length:
        k = int.from_bytes(view[body:], "little")
        k = (k * _C1) & _MASK
        k = ((k << 15) | (k >> 17)) & _MASK
        k = (k * _C2) & _MASK
        h ^= k
    h ^= length & _MASK
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK
    h ^= h >> 16
    return h


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode()`` of ``s``: a signed 32-bit int over its UTF-16 code units."""
    units = s.encode("utf-16-le", "surrogatepass")
    h = 0
    for (unit,) in struct.iter_unpack("<H", units):
        h = (31 * h + unit) & _MASK
    return h - (1 << 32) if h & 0x80000000 else h


def key_shared_hash(key: bytes | bytearray | memoryview | str) -> int:
    """Position of a sticky key on the Key_Shared hash ring (0 .. 65535).

    The key is the message's ordering key when it has one, else its partition key; a str is
    hashed as UTF-8 (a lone surrogate as "?"), as the Java broker does.
    """
    if isinstance(key, str):
        key = key.encode("utf-8", "replace")
    return murmur3_32(key) % HASH_RANGE_SIZE
