"""Hash functions: published vectors, vectors checked against the mmh3 package, Java hashCode values.

The murmur3 vectors below were computed with the ``mmh3`` package (MurmurHash3 x86_32, unsigned),
which also agreed with :func:`murmur3_32` on 20,000 random inputs when this file was written.
"""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magnetar.protocol.hashing import HASH_RANGE_SIZE, java_string_hash, key_shared_hash, murmur3_32

# (data, seed, MurmurHash3 x86_32)
MURMUR3_VECTORS = [
    (b"", 0, 0x00000000),
    (b"", 1, 0x514E28B7),
    (b"", 0xFFFFFFFF, 0x81F16F39),
    (b"hello", 0, 0x248BFA47),
    (b"Order-3459134", 0, 3112179635),
    (b"a", 0, 0x3C2569B2),
    (b"ab", 0, 0x9BBFD75F),
    (b"abc", 0, 0xB3DD93FA),
    (b"abcd", 0, 0x43ED676A),
    (b"Hello, world!", 1234, 0xFAF6CDB3),
    (b"The quick brown fox jumps over the lazy dog", 0, 0x2E4FF723),
    (b"\x00\x00\x00\x00", 0, 0x2362F9DE),
    (b"\xff\xfe\xfd", 0x9747B28C, 0x3831DB5A),
    # tail bytes with the high bit set: they must be taken unsigned
    (b"\xff", 0, 0xFD6CF10D),
    (b"\xff\xfe", 0, 0x96C86850),
    (b"\xff\xfe\xfd", 0, 0xD2BEF2DC),
    (b"\x80\x81\x82\x83\x84", 0, 0xB648CB76),
    ("héllo wörld".encode(), 0, 0x97F7F274),
    (b"\x00" * 7, 0, 0xD50F2EE1),
]

# bytes(range(1, n + 1)) for every body/tail split: (n, seed 0, seed 0x9747B28C)
MURMUR3_LENGTHS = [
    (0, 0x00000000, 0xEBB6C228),
    (1, 0xE45AD1AB, 0xB8EF150D),
    (2, 0x64C7667E, 0xA77FDC08),
    (3, 0x80D1D204, 0x4FDD533C),
    (4, 0x3E349DA5, 0xE2E42F0E),
    (5, 0xA291B9C8, 0x5A06626A),
    (6, 0xD7BFB23E, 0x17B80744),
    (7, 0xFC5897B5, 0x2CF53AA4),
    (8, 0x0D4B1FBB, 0x2B97E99D),
    (9, 0xA198F0A8, 0x3F6AFD5B),
    (10, 0x4DC93CCA, 0x764BAE21),
    (11, 0x01EFB7FA, 0x52BDDFEA),
    (12, 0x8F80F73B, 0x7A6C648C),
    (13, 0xC928CDF5, 0x2D1EDE58),
    (14, 0x4EA2E38E, 0xC4A34066),
    (15, 0xE4B30395, 0x55068FF4),
    (16, 0xDA7E3067, 0x11F5ECC7),
    (17, 0xE4E97D6E, 0xD9380E77),
]


@pytest.mark.parametrize(("data", "seed", "expected"), MURMUR3_VECTORS)
def test_murmur3_vectors(data: bytes, seed: int, expected: int) -> None:
    assert murmur3_32(data, seed) == expected


@pytest.mark.parametrize(("n", "seed0", "seed_other"), MURMUR3_LENGTHS)
def test_murmur3_every_tail_length(n: int, seed0: int, seed_other: int) -> None:
    data = bytes(range(1, n + 1))
    assert murmur3_32(data) == seed0
    assert murmur3_32(data, 0x9747B28C) == seed_other


def test_murmur3_accepts_bytes_like() -> None:
    assert murmur3_32(bytearray(b"hello")) == murmur3_32(memoryview(b"hello")) == 0x248BFA47


def test_murmur3_seed_is_taken_modulo_2_32() -> None:
    assert murmur3_32(b"abc", -1) == murmur3_32(b"abc", 0xFFFFFFFF)
    assert murmur3_32(b"abc", 2**32 + 5) == murmur3_32(b"abc", 5)


def _pure_python_murmur3_32(data: bytes, seed: int = 0) -> int:
    """hashing.py's own MurmurHash3 x86_32 before it took mmh3's: the reference mmh3 must match."""
    mask, c1, c2 = 0xFFFFFFFF, 0xCC9E2D51, 0x1B873593
    length = len(data)
    body = length & ~3
    h = seed & mask
    for (k,) in struct.iter_unpack("<I", data[:body]):
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        k = (k * c2) & mask
        h ^= k
        h = ((h << 13) | (h >> 19)) & mask
        h = (h * 5 + 0xE6546B64) & mask
    if body != length:
        k = int.from_bytes(data[body:], "little")
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        k = (k * c2) & mask
        h ^= k
    h ^= length & mask
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    h ^= h >> 16
    return h


def test_the_pure_python_reference_gives_the_published_vectors() -> None:
    for data, seed, expected in MURMUR3_VECTORS:
        assert _pure_python_murmur3_32(data, seed) == expected


def test_mmh3_agrees_with_the_pure_python_function_on_random_keys() -> None:
    """murmur3 x86_32 has no path that depends on the key but its length: the number of 4-byte
    blocks and the tail (0-3 bytes). Every length up to 64 (no block to 16 blocks, every tail) with
    seed 0 and a random seed, then 1,000 random keys up to 5,000 bytes, cover each path hundreds of
    times (20,000 random keys once took ~3.5 s of pure Python for no path more)."""
    rng = random.Random(22)
    lengths = [n for n in range(65) for _ in range(2)]
    lengths += [rng.choice([rng.randrange(80), rng.randrange(5000)]) for _ in range(1000)]
    for i, length in enumerate(lengths):
        data = rng.randbytes(length)
        if i < 130:
            seed = rng.getrandbits(32) if i % 2 else 0
        else:
            seed = rng.choice([0, 0, rng.getrandbits(32)])
        expected = _pure_python_murmur3_32(data, seed)
        assert murmur3_32(data, seed) == expected, (data, seed)
        assert murmur3_32(memoryview(b"x" + data)[1:], seed) == expected
        assert murmur3_32(bytearray(data), seed) == expected


def test_partition_routing_of_random_text_keys_is_unchanged() -> None:
    # the client's Murmur3_32Hash routing and the Key_Shared ring position of UTF-8 keys
    rng = random.Random(7)
    for _ in range(5000):
        key = "".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(128, 0xD7FF)])) for _ in range(rng.randrange(40)))
        data = key.encode("utf-8")
        assert key_shared_hash(key) == _pure_python_murmur3_32(data) % HASH_RANGE_SIZE
        assert (murmur3_32(data) & 0x7FFFFFFF) % 7 == (_pure_python_murmur3_32(data) & 0x7FFFFFFF) % 7


@given(data=st.binary(max_size=100), seed=st.integers(0, 2**32 - 1))
def test_murmur3_is_an_unsigned_32_bit_value(data: bytes, seed: int) -> None:
    h = murmur3_32(data, seed)
    assert 0 <= h < 2**32
    assert murmur3_32(data, seed) == h


def test_pulsar_documented_key_shared_example() -> None:
    # Pulsar's Key_Shared documentation: murmur3 of "Order-3459134" is 3112179635, slot 6067
    assert murmur3_32(b"Order-3459134") == 3112179635
    assert 3112179635 % 65536 == 6067
    assert key_shared_hash(b"Order-3459134") == 6067


def test_key_shared_hash_of_str_is_its_utf8() -> None:
    assert key_shared_hash("Order-3459134") == 6067
    assert key_shared_hash("héllo wörld") == 0x97F7F274 % 65536
    assert key_shared_hash("a\ud800b") == key_shared_hash(b"a?b")  # lone surrogate -> "?", as Java


def test_key_shared_hash_ignores_the_java_sign_mask() -> None:
    # the Java broker masks the hash with Integer.MAX_VALUE before "% 65536": same slot
    for key in (b"Order-3459134", b"key-0", b"ok", b""):
        assert key_shared_hash(key) == (murmur3_32(key) & 0x7FFFFFFF) % HASH_RANGE_SIZE


@given(key=st.binary(max_size=64))
def test_key_shared_hash_range(key: bytes) -> None:
    assert 0 <= key_shared_hash(key) < HASH_RANGE_SIZE == 65536


# --- Java String.hashCode -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("hello", 99162322),
        ("Hello, World!", 1498789909),
        # a well-known string whose hashCode is Integer.MIN_VALUE
        ("polygenelubricants", -2147483648),
        # U+1D11E is the surrogate pair D834 DD1E: ((0xD834 * 31) + 0xDD1E) * 31 + 0x61
        ("\U0001d11ea", 54944311),
        ("é", 0xE9),
    ],
)
def test_java_string_hash_vectors(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_java_string_hash_surrogate_pair_by_hand() -> None:
    assert java_string_hash("\U0001d11ea") == ((0xD834 * 31) + 0xDD1E) * 31 + 0x61
    assert java_string_hash("\U0001d11e") == java_string_hash("\ud834\udd1e")  # lone surrogates allowed


def _java_hash_by_formula(text: str) -> int:
    """s[0]*31^(n-1) + ... + s[n-1], over UTF-16 code units, wrapped to a signed 32-bit int."""
    raw = text.encode("utf-16-be", "surrogatepass")
    units = [int.from_bytes(raw[i : i + 2], "big") for i in range(0, len(raw), 2)]
    n = len(units)
    total = sum(u * 31 ** (n - 1 - i) for i, u in enumerate(units)) % 2**32
    return total - 2**32 if total >= 2**31 else total


@given(text=st.text(max_size=50))
def test_java_string_hash_matches_the_documented_formula(text: str) -> None:
    h = java_string_hash(text)
    assert -(2**31) <= h < 2**31
    assert h == _java_hash_by_formula(text)
