"""The hash functions whose exact values Pulsar clients and brokers agree on.

``murmur3_32`` (MurmurHash3 x86_32) places keys on the Key_Shared hash ring and is one of the
partition-routing hashes the clients offer; ``java_string_hash`` is Java's ``String.hashCode``,
the Java client's default partition-routing hash.

MurmurHash3 is the ``mmh3`` library's (C): the pure-Python loop it replaced took 13x (8-byte
keys), 47x (36 bytes, a UUID) to 580x (4 KiB) its time per call (benchmarks/murmur3.py, the
trees side by side; tests/protocol/test_hashing.py checks the two agree on random keys). Java's hashCode stays written here: no well-kept library computes it.
"""

from __future__ import annotations

import struct
from typing import Final

from mmh3 import mmh3_32_uintdigest

#: size of the Key_Shared hash ring: hash ranges cover 0 .. HASH_RANGE_SIZE - 1
HASH_RANGE_SIZE: Final = 65536

_MASK: Final = 0xFFFFFFFF


def murmur3_32(data: bytes | bytearray | memoryview, seed: int = 0) -> int:
    """MurmurHash3 x86_32 of ``data`` (any bytes-like object), as an unsigned 32-bit integer; the
    seed is taken modulo 2**32."""
    return mmh3_32_uintdigest(data, seed & _MASK)


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
