"""Compression codecs: round trips, independent decoders, hand-built streams, the official client's output."""

from __future__ import annotations

import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnetar.protocol.compression import ZSTD_LEVEL, CompressionError, compress, decompress
from magnetar.protocol.enums import CompressionType
from magnetar.protocol.framing import split_entry
from magnetar.protocol.schema import MessageMetadata

CODECS = list(CompressionType)
REAL_CODECS = [c for c in CompressionType if c is not CompressionType.NONE]
SAMPLES = [
    b"",
    b"x",
    b"hello world",
    b"abc" * 1000,
    bytes(range(256)) * 8,
    b"Pulsar " * 3 + bytes(range(200)) + b"\x00" * 70000,
]


# --- independent reference decoders, written from the format specifications -------------------


def lz4_block_reference(src: bytes) -> bytes:
    """Decode a raw LZ4 block (no size prefix) following the LZ4 block format description."""
    out = bytearray()
    i = 0
    while True:
        token = src[i]
        i += 1
        literals = token >> 4
        if literals == 15:
            while True:
                extra = src[i]
                i += 1
                literals += extra
                if extra != 255:
                    break
        out += src[i : i + literals]
        i += literals
        if i == len(src):
            return bytes(out)
        offset = src[i] | (src[i + 1] << 8)
        i += 2
        match = token & 15
        if match == 15:
            while True:
                extra = src[i]
                i += 1
                match += extra
                if extra != 255:
                    break
        for _ in range(match + 4):
            out.append(out[-offset])


def snappy_raw_reference(src: bytes) -> bytes:
    """Decode raw (unframed) snappy following the snappy format description."""
    size = shift = i = 0
    while True:
        b = src[i]
        i += 1
        size |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            break
    out = bytearray()
    while i < len(src):
        tag = src[i]
        i += 1
        kind = tag & 3
        if kind == 0:
            length = tag >> 2
            if length >= 60:
                n = length - 59
                length = int.from_bytes(src[i : i + n], "little")
                i += n
            length += 1
            out += src[i : i + length]
            i += length
            continue
        if kind == 1:
            length = ((tag >> 2) & 7) + 4
            offset = ((tag >> 5) << 8) | src[i]
            i += 1
        elif kind == 2:
            length = (tag >> 2) + 1
            offset = int.from_bytes(src[i : i + 2], "little")
            i += 2
        else:
            length = (tag >> 2) + 1
            offset = int.from_bytes(src[i : i + 4], "little")
            i += 4
        for _ in range(length):
            out.append(out[-offset])
    assert len(out) == size
    return bytes(out)


ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def zstd_frame_content_size(frame: bytes) -> int | None:
    """The Frame_Content_Size a zstd frame header declares (None when absent)."""
    assert frame[:4] == ZSTD_MAGIC
    fhd = frame[4]
    fcs_flag, single_segment, dict_flag = fhd >> 6, (fhd >> 5) & 1, fhd & 3
    pos = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dict_flag]
    size = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    if size == 0:
        return None
    value = int.from_bytes(frame[pos : pos + size], "little")
    return value + 256 if size == 2 else value


def zstd_hand_frame(blocks: list[tuple[int, bytes, int]], content_size: int) -> bytes:
    """Assemble a zstd frame of raw (type 0) / RLE (type 1) blocks: (type, data, regenerated size)."""
    assert content_size < 256
    out = bytearray(ZSTD_MAGIC + bytes([0x20, content_size]))  # single segment, 1-byte content size
    for n, (block_type, data, size) in enumerate(blocks):
        last = n == len(blocks) - 1
        out += ((size << 3) | (block_type << 1) | int(last)).to_bytes(3, "little")
        out += data
    return bytes(out)


# --- round trips --------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("data", SAMPLES, ids=lambda d: f"{len(d)}B")
def test_round_trip(codec: CompressionType, data: bytes) -> None:
    packed = compress(codec, data)
    assert isinstance(packed, bytes)
    assert decompress(codec, packed, len(data)) == data


@settings(max_examples=200, deadline=None)
@given(codec=st.sampled_from(CODECS), data=st.binary(max_size=3000))
def test_round_trip_property(codec: CompressionType, data: bytes) -> None:
    assert decompress(codec, compress(codec, data), len(data)) == data


@settings(max_examples=100, deadline=None)
@given(codec=st.sampled_from(CODECS), text=st.text(max_size=400), repeat=st.integers(1, 50))
def test_round_trip_compressible_property(codec: CompressionType, text: str, repeat: int) -> None:
    data = text.encode() * repeat
    assert decompress(codec, compress(codec, data), len(data)) == data


def test_codec_given_as_plain_int() -> None:
    data = b"plain int codec " * 10
    assert decompress(1, compress(1, data), len(data)) == data


def test_compression_really_compresses() -> None:
    data = b"abcdefgh" * 1000
    for codec in REAL_CODECS:
        assert len(compress(codec, data)) < len(data) // 10, codec


# --- agreement with independent implementations ----------------------------------------------


@pytest.mark.parametrize("data", SAMPLES, ids=lambda d: f"{len(d)}B")
def test_zlib_matches_stdlib_both_ways(data: bytes) -> None:
    assert zlib.decompress(compress(CompressionType.ZLIB, data)) == data
    for level in (0, 1, 6, 9):
        assert decompress(CompressionType.ZLIB, zlib.compress(data, level), len(data)) == data


def test_zlib_is_zlib_wrapped_not_raw_deflate() -> None:
    packed = compress(CompressionType.ZLIB, b"hello")
    cmf, flg = packed[0], packed[1]
    assert cmf & 0x0F == 8  # deflate
    assert (cmf * 256 + flg) % 31 == 0
    raw = zlib.compressobj(wbits=-15)
    raw_deflate = raw.compress(b"hello") + raw.flush()
    with pytest.raises(CompressionError):
        decompress(CompressionType.ZLIB, raw_deflate, 5)


@pytest.mark.parametrize("data", SAMPLES, ids=lambda d: f"{len(d)}B")
def test_lz4_output_is_a_raw_block(data: bytes) -> None:
    packed = compress(CompressionType.LZ4, data)
    assert lz4_block_reference(packed) == data
    assert packed[:4] != b"\x04\x22\x4d\x18"  # not an LZ4 frame


def test_lz4_hand_built_block() -> None:
    # sequence 1: 3 literals "abc", then a 21-byte match at offset 3 (15 + extension byte 2, +4)
    # sequence 2: the 5 closing literals the format requires
    block = bytes([0x3F]) + b"abc" + b"\x03\x00" + b"\x02" + bytes([0x50]) + b"xyzuv"
    expected = b"abc" * 8 + b"xyzuv"
    assert lz4_block_reference(block) == expected
    assert decompress(CompressionType.LZ4, block, len(expected)) == expected


def test_lz4_empty_input_is_one_zero_token() -> None:
    assert compress(CompressionType.LZ4, b"") == b"\x00"
    assert decompress(CompressionType.LZ4, b"\x00", 0) == b""


@pytest.mark.parametrize("data", SAMPLES, ids=lambda d: f"{len(d)}B")
def test_snappy_output_is_raw_snappy(data: bytes) -> None:
    packed = compress(CompressionType.SNAPPY, data)
    assert snappy_raw_reference(packed) == data
    assert not packed.startswith(b"\xff\x06\x00\x00sNaPpY")  # not the framed format


def test_snappy_hand_built_streams() -> None:
    literal = b"\x0b" + bytes([(11 - 1) << 2]) + b"hello world"
    assert decompress(CompressionType.SNAPPY, literal, 11) == b"hello world"
    # "abc" literal, then a copy with 1-byte offset: length 9, offset 3
    copy = b"\x0c" + bytes([(3 - 1) << 2]) + b"abc" + bytes([((9 - 4) << 2) | 1]) + b"\x03"
    assert snappy_raw_reference(copy) == b"abc" * 4
    assert decompress(CompressionType.SNAPPY, copy, 12) == b"abc" * 4


@pytest.mark.parametrize("data", SAMPLES, ids=lambda d: f"{len(d)}B")
def test_zstd_output_is_a_frame_declaring_its_size(data: bytes) -> None:
    packed = compress(CompressionType.ZSTD, data)
    assert packed[:4] == ZSTD_MAGIC
    assert zstd_frame_content_size(packed) == len(data)


def test_zstd_hand_built_frames() -> None:
    raw = zstd_hand_frame([(0, b"hello ", 6), (0, b"world", 5)], 11)
    assert decompress(CompressionType.ZSTD, raw, 11) == b"hello world"
    rle = zstd_hand_frame([(0, b"ab", 2), (1, b"z", 40)], 42)
    assert decompress(CompressionType.ZSTD, rle, 42) == b"ab" + b"z" * 40


def test_zstd_level_is_the_clients_default() -> None:
    assert ZSTD_LEVEL == 3


# --- the official client's own output --------------------------------------------------------


def test_decompresses_official_client_payloads(official_capture: dict[str, Any]) -> None:
    seen = set()
    for item in official_capture["entries"]:
        if item["batch"]:
            continue
        meta_bytes, payload = split_entry(bytes.fromhex(item["entry"]))
        meta = MessageMetadata.FromString(meta_bytes)
        codec = CompressionType[item["codec"]]
        assert meta.compression == codec
        expected = bytes.fromhex(item["payloads"][0])
        assert decompress(meta.compression, bytes(payload), meta.uncompressed_size) == expected
        seen.add(codec)
    assert seen == set(CompressionType)


def test_official_client_leaves_uncompressed_size_unset_without_compression(
    official_capture: dict[str, Any],
) -> None:
    for item in official_capture["entries"]:
        if item["codec"] == "NONE":
            meta = MessageMetadata.FromString(split_entry(bytes.fromhex(item["entry"]))[0])
            assert meta.uncompressed_size == 0
            # so NONE must not check the announced size
            assert decompress(CompressionType.NONE, b"payload", 0) == b"payload"


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", REAL_CODECS, ids=lambda c: c.name)
def test_size_mismatch_raises(codec: CompressionType) -> None:
    data = b"some data to compress " * 20
    packed = compress(codec, data)
    for wrong in (len(data) - 1, len(data) + 1, 0, len(data) * 2):
        with pytest.raises(CompressionError, match=codec.name):
            decompress(codec, packed, wrong)


@pytest.mark.parametrize("codec", REAL_CODECS, ids=lambda c: c.name)
def test_truncated_input_raises(codec: CompressionType) -> None:
    data = bytes(range(256)) * 4 + b"tail" * 100
    packed = compress(codec, data)
    for cut in (0, 1, len(packed) // 2, len(packed) - 1):
        with pytest.raises(CompressionError):
            decompress(codec, packed[:cut], len(data))


@pytest.mark.parametrize("codec", REAL_CODECS, ids=lambda c: c.name)
def test_garbage_input_raises(codec: CompressionType) -> None:
    with pytest.raises(CompressionError):
        decompress(codec, b"\xff" * 64, 1000)


def test_zlib_trailing_garbage_raises() -> None:
    with pytest.raises(CompressionError, match="garbage"):
        decompress(CompressionType.ZLIB, zlib.compress(b"abc") + b"extra", 3)


def test_unknown_codec_raises() -> None:
    with pytest.raises(CompressionError, match="unknown compression codec 9"):
        compress(9, b"x")
    with pytest.raises(CompressionError, match="unknown compression codec"):
        decompress(-1, b"x", 1)


def test_negative_size_and_limit() -> None:
    packed = compress(CompressionType.LZ4, b"x" * 100)
    with pytest.raises(CompressionError, match="negative"):
        decompress(CompressionType.LZ4, packed, -1)
    with pytest.raises(CompressionError, match="limit"):
        decompress(CompressionType.LZ4, packed, 100, max_size=99)
    assert decompress(CompressionType.LZ4, packed, 100, max_size=100) == b"x" * 100


def test_compression_error_is_a_value_error() -> None:
    assert issubclass(CompressionError, ValueError)


@settings(max_examples=300, deadline=None)
@given(codec=st.sampled_from(REAL_CODECS), data=st.binary(max_size=200), size=st.integers(0, 5000))
def test_random_input_only_raises_compression_error(codec: CompressionType, data: bytes, size: int) -> None:
    try:
        out = decompress(codec, data, size)
    except CompressionError:
        return
    assert len(out) == size


@settings(max_examples=200, deadline=None)
@given(
    codec=st.sampled_from(REAL_CODECS),
    data=st.binary(min_size=1, max_size=500),
    index=st.integers(min_value=0),
    flip=st.integers(1, 255),
)
def test_corrupted_stream_never_escapes_as_another_error(
    codec: CompressionType, data: bytes, index: int, flip: int
) -> None:
    packed = bytearray(compress(codec, data))
    packed[index % len(packed)] ^= flip
    try:
        out = decompress(codec, bytes(packed), len(data))
    except CompressionError:
        return
    assert len(out) == len(data)
