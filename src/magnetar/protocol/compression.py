"""Payload compression with the codecs of the Pulsar protocol, byte-compatible with its clients.

The formats are the ones the official clients write and read: LZ4 is a raw LZ4 *block*
without a size prefix (the size travels as ``MessageMetadata.uncompressed_size``), ZLIB is a
zlib-wrapped deflate stream, ZSTD is a standard zstd frame and SNAPPY is raw (unframed)
snappy. Decompression is bounded by the announced size, so a small corrupt or hostile payload
cannot make the broker allocate more than the sender declared.
"""

from __future__ import annotations

import zlib

import cramjam

from magnetar.protocol.enums import CompressionType

#: the zstd level the official clients use (ZSTD_CLEVEL_DEFAULT)
ZSTD_LEVEL = 3


class CompressionError(ValueError):
    """Payload that cannot be (de)compressed: corrupt input, wrong size, or an unknown codec."""


def _codec(codec: int) -> CompressionType:
    try:
        return CompressionType(codec)
    except ValueError:
        raise CompressionError(f"unknown compression codec {codec!r}") from None


def compress(codec: CompressionType | int, data: bytes) -> bytes:
    """Compress ``data`` with ``codec`` exactly as a Pulsar client would for the wire."""
    kind = _codec(codec)
    if kind is CompressionType.NONE:
        return bytes(data)
    if kind is CompressionType.ZLIB:
        return zlib.compress(data)
    if kind is CompressionType.LZ4:
        return bytes(cramjam.lz4.compress_block(data, store_size=False))
    if kind is CompressionType.ZSTD:
        return bytes(cramjam.zstd.compress(data, level=ZSTD_LEVEL))
    return bytes(cramjam.snappy.compress_raw(data))


def decompress(
    codec: CompressionType | int,
    data: bytes,
    uncompressed_size: int,
    *,
    max_size: int | None = None,
) -> bytes:
    """Decompress ``data``, which must expand to exactly ``uncompressed_size`` bytes.

    NONE returns ``data`` unchanged without checking the size, as the clients do (older
    producers leave ``uncompressed_size`` unset on uncompressed messages). ``max_size`` optionally
    refuses an announced size above a limit before anything is allocated. Raises
    :class:`CompressionError` on corrupt input or a size mismatch.
    """
    kind = _codec(codec)
    if kind is CompressionType.NONE:
        return bytes(data)
    if uncompressed_size < 0:
        raise CompressionError(f"negative uncompressed size {uncompressed_size}")
    if max_size is not None and uncompressed_size > max_size:
        raise CompressionError(f"uncompressed size {uncompressed_size} exceeds the limit of {max_size}")
    if kind is CompressionType.ZLIB:
        return _inflate(data, uncompressed_size)
    # One spare byte tells "expands to more than announced" apart from "exactly as announced".
    out = bytearray(uncompressed_size + 1)
    try:
        if kind is CompressionType.LZ4:
            written = cramjam.lz4.decompress_block_into(data, out)
        elif kind is CompressionType.ZSTD:
            written = cramjam.zstd.decompress_into(data, out)
        else:
            written = cramjam.snappy.decompress_raw_into(data, out)
    except Exception as exc:  # cramjam raises its own DecompressionError, or ValueError/OSError
        raise CompressionError(
            f"corrupt {kind.name} payload of {len(data)} bytes"
            f" (or larger than the announced {uncompressed_size} bytes): {exc}"
        ) from None
    if written != uncompressed_size:
        raise CompressionError(
            f"{kind.name} payload expands to {_at_least(written, uncompressed_size)} bytes,"
            f" not the announced {uncompressed_size}"
        )
    del out[uncompressed_size:]
    return bytes(out)


def _inflate(data: bytes, uncompressed_size: int) -> bytes:
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, uncompressed_size + 1)
    except zlib.error as exc:
        raise CompressionError(f"corrupt ZLIB payload of {len(data)} bytes: {exc}") from None
    if len(out) > uncompressed_size:
        raise CompressionError(f"ZLIB payload expands to more than the announced {uncompressed_size} bytes")
    if not inflater.eof:
        raise CompressionError(f"truncated ZLIB payload: stream ends after {len(out)} bytes")
    if inflater.unused_data:
        raise CompressionError(f"{len(inflater.unused_data)} bytes of garbage after the ZLIB stream")
    if len(out) != uncompressed_size:
        raise CompressionError(
            f"ZLIB payload expands to {len(out)} bytes, not the announced {uncompressed_size}"
        )
    return out


def _at_least(written: int, announced: int) -> str:
    return f"more than {announced}" if written > announced else str(written)
