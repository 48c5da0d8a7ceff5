"""Reading what a consumer is delivered, by hand where it is hot: the few shapes the protocol's
generated decoder would otherwise parse once per message.

- :func:`split_batch_payload`: a batch entry's payload into each message's SingleMessageMetadata
  and payload bytes. A metadata of nothing but ``payload_size`` (the bulk of batches) is
  :data:`EMPTY_SINGLE`; one of ``payload_size`` then ``sequence_id`` (as the official producers
  write them) is kept serialized (bytes: ``SingleMessageMetadata.FromString`` reads it when a
  field is asked for); any other is parsed.
- :func:`plain_metadata_head` and :func:`is_plain_metadata`: whether an entry's MessageMetadata
  is that of a plain message (no batch, compression, chunks nor encryption) without parsing it:
  it starts with the ``producer_name`` field of a metadata known to be plain, and nothing but
  ``sequence_id``, ``publish_time`` and optionally ``uncompressed_size`` and ``event_time`` follow.

Each reading is tested against the generated decoder (``magnetar.protocol.schema``), byte for
byte, in tests/protocol/test_batch_reading.py.
"""

from __future__ import annotations

import re
import struct
from typing import Final

from google.protobuf.message import DecodeError

from magnetar.protocol.framing import ProtocolError
from magnetar.protocol.schema import SingleMessageMetadata
from magnetar.protocol.uniform_batch import uniform_bodies

_U32: Final = struct.Struct(">I")
#: the metadata of a batched message that has nothing but a payload size (shared: never modify it)
EMPTY_SINGLE: Final = SingleMessageMetadata()
#: a SingleMessageMetadata of payload_size (field 3, < 16384) and sequence_id (field 8, a varint
#: of up to 9 bytes), in that order
_SIZE_AND_SEQUENCE = re.compile(rb"\x18(?:[\x00-\x7f]|[\x80-\xff][\x00-\x7f])\x40[\x80-\xff]{0,8}[\x00-\x7f]").fullmatch
#: what may follow the producer name in a plain MessageMetadata: sequence_id (2), publish_time
#: (3), then optionally uncompressed_size (9) and event_time (12), each a varint of up to 9 bytes
#: (``plain_after_head(meta, len(head))``: :func:`is_plain_metadata` without the call, for a
#: caller's per-entry loop that has checked ``meta.startswith(head)`` and a non-empty head)
plain_after_head: Final = re.compile(
    rb"\x10[\x80-\xff]{0,8}[\x00-\x7f]\x18[\x80-\xff]{0,8}[\x00-\x7f]"
    rb"(?:\x48[\x80-\xff]{0,8}[\x00-\x7f])?(?:\x60[\x80-\xff]{0,8}[\x00-\x7f])?"
).fullmatch


class BatchSingles(dict[int, "SingleMessageMetadata | bytes"]):
    """The SingleMessageMetadata of a batch's messages by index, holding only those that are not
    :data:`EMPTY_SINGLE` (``singles[i]`` of any other index is EMPTY_SINGLE): the bulk of batches,
    whose messages have nothing of their own, hold nothing."""

    def __missing__(self, index: int) -> SingleMessageMetadata:
        return EMPTY_SINGLE


def split_batch_payload(
    payload: bytes, count: int, first_sequence: int = -1, start: int = 0, end: int | None = None,
) -> tuple[BatchSingles, list[bytes]]:
    """The ``count`` messages of a batch payload: their metadata (:data:`EMPTY_SINGLE`, left out
    of the :class:`BatchSingles`; kept serialized bytes; or parsed: see the module) and their
    payload bytes, in order. Raises ProtocolError on a malformed batch (a message overrunning it,
    or bytes left over).

    The batch is ``payload[start:end]`` (``end`` None: to the end): a batch read where it lies
    in the bytes received, each message's payload sliced out of them (one copy per message, none
    of the whole batch).

    With ``first_sequence`` (the entry's MessageMetadata.sequence_id, >= 0), a metadata of
    ``payload_size`` then ``sequence_id`` equal to ``first_sequence`` + its index (as the official
    producers number a batch's messages; a sequence id of up to three varint bytes) is
    :data:`EMPTY_SINGLE` too: a batched message without its own sequence id has that one
    (``Message.sequence_id``). Nothing is kept of it, nor read by a regular expression."""
    if end is None:
        end = len(payload)
    bodies = uniform_bodies(payload, count, first_sequence, start, end)
    if bodies is not None:
        return BatchSingles(), bodies
    return split_each_message(payload, count, first_sequence, start, end)


def split_each_message(
    payload: bytes, count: int, first_sequence: int, start: int, end: int,
) -> tuple[BatchSingles, list[bytes]]:
    """:func:`split_batch_payload` message by message (a batch that is not uniform: see
    :mod:`magnetar.protocol.uniform_batch`)."""
    unpack, size_and_sequence, parse, empty = _U32.unpack_from, _SIZE_AND_SEQUENCE, SingleMessageMetadata.FromString, EMPTY_SINGLE
    singles = BatchSingles()
    bodies: list[bytes] = []
    add_body = bodies.append
    pos = start
    try:
        for index in range(count):
            (n,) = unpack(payload, pos)
            pos += 4
            stop = pos + n
            single = None
            if payload[pos] == 0x18:
                size = payload[pos + 1]
                at = pos + 2
                if size >= 0x80:
                    high = payload[at]
                    size = (size & 0x7F) | (high << 7) if high < 0x80 else -1
                    at += 1
                if at == stop and size >= 0:
                    single = empty
                elif size >= 0 and payload[at] == 0x40 and first_sequence >= 0:
                    seq = first_sequence + index
                    if stop - at == 2:
                        if seq < 0x80 and payload[at + 1] == seq:
                            single = empty
                    elif stop - at == 3:
                        if seq < 1 << 14 and payload[at + 1] == seq & 0x7F | 0x80 and payload[at + 2] == seq >> 7:
                            single = empty
                    elif (stop - at == 4 and seq < 1 << 21 and payload[at + 1] == seq & 0x7F | 0x80
                          and payload[at + 2] == seq >> 7 & 0x7F | 0x80 and payload[at + 3] == seq >> 14):
                        single = empty
                if single is None and size >= 0 and size_and_sequence(payload, pos, stop):
                    single = payload[pos:stop]
            if single is None:
                single = singles[index] = parse(payload[pos:stop])
                size = single.payload_size
            elif single is not empty:
                singles[index] = single
            pos = stop
            add_body(payload[pos : pos + size])
            pos += size
            if pos > end or size < 0:
                raise ProtocolError(f"message {index} of a batch of {count} overruns its {end - start} bytes")
    except (struct.error, DecodeError, IndexError) as exc:
        raise ProtocolError(f"malformed batch of {count} messages: {exc}") from None
    if pos != end:
        raise ProtocolError(f"{end - pos} bytes left over after the {count} messages of a batch")
    return singles, bodies


def plain_metadata_head(meta: bytes) -> bytes:
    """The ``producer_name`` field (tag, one-byte length, name) a MessageMetadata starts with, to
    recognise the next metadata of the same producer with :func:`is_plain_metadata` (empty when
    the name is not the first field or is 128 bytes or longer)."""
    if len(meta) > 2 and meta[0] == 0x0A and meta[1] < 0x80:
        return meta[: 2 + meta[1]]
    return b""


def is_plain_metadata(meta: bytes, head: bytes) -> bool:
    """Whether ``meta`` (a serialized MessageMetadata) is plain, known without parsing it: it
    starts with ``head`` (from :func:`plain_metadata_head` of a metadata that parsed as plain; an
    empty ``head`` recognises nothing) and holds nothing else but the fields a plain message has."""
    return bool(head) and meta.startswith(head) and plain_after_head(meta, len(head)) is not None


__all__ = ["EMPTY_SINGLE", "BatchSingles", "is_plain_metadata", "plain_after_head", "plain_metadata_head", "split_batch_payload",
           "split_each_message"]
