"""SingleMessageMetadata written by hand: the one per-message encoding of a batch entry.

A producer batching messages, and the bulk API building a whole batch, write each message as
its size prefix, its SingleMessageMetadata and its payload. These functions write the same bytes
as ``SingleMessageMetadata(...).SerializeToString()`` (fields in number order; tested byte for
byte in tests/protocol/test_single_metadata.py) from the handful of fields a client sets, in
0.88x (a key and a sequence id) to 0.54x (two properties, a key and an event time) of protobuf's
time (benchmarks/wire_codec.py); a message with nothing but a payload (and a key) has a head its
caller caches.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Final

from magnetar.protocol.varint import SMALL_VARINT_LIMIT, SMALL_VARINTS, encode_varint

_U32: Final = struct.Struct(">I")
#: SingleMessageMetadata tags: properties (1), partition_key (2), payload_size (3), event_time (5),
#: partition_key_b64_encoded (6), ordering_key (7), sequence_id (8), null_value (9),
#: null_partition_key (10); KeyValue: key (1), value (2)
_PROPERTY: Final = b"\x0a"
_KEY: Final = b"\x12"
_PAYLOAD_SIZE: Final = b"\x18"
_EVENT_TIME: Final = b"\x28"
_ORDERING_KEY: Final = b"\x3a"
_SEQUENCE_ID: Final = b"\x40"
_NULL_VALUE: Final = b"\x48\x01"
_KEY_B64: Final = b"\x30\x01"
_NULL_KEY: Final = b"\x50\x01"
_KV_KEY: Final = b"\x0a"
_KV_VALUE: Final = b"\x12"


def _len_prefixed(tag: bytes, data: bytes) -> bytes:
    n = len(data)
    return tag + (SMALL_VARINTS[n] if n < SMALL_VARINT_LIMIT else encode_varint(n)) + data


def encode_single_metadata(
    payload_size: int,
    properties: Mapping[str, str] | None,
    partition_key: str | None,
    ordering_key: bytes | None,
    event_time: int,
    sequence_id: int | None,
    null_value: bool = False,
    key_b64: bool = False,
    null_key: bool = False,
) -> bytes:
    """A message's SingleMessageMetadata: ``None`` (and an ``event_time`` of 0, ``null_value``,
    ``key_b64`` and ``null_key`` False) leaves a field out; an empty key or properties value is
    written, as protobuf does. ``key_b64``: the key is base64 (``partition_key_b64_encoded``, a
    KeyValue SEPARATED key); ``null_key``: a null key (``null_partition_key``)."""
    parts = []
    if properties:
        for k, v in properties.items():
            parts.append(_len_prefixed(_PROPERTY, _len_prefixed(_KV_KEY, k.encode()) + _len_prefixed(_KV_VALUE, v.encode())))
    if partition_key is not None:
        parts.append(_len_prefixed(_KEY, partition_key.encode()))
    parts.append(_PAYLOAD_SIZE + (SMALL_VARINTS[payload_size] if payload_size < SMALL_VARINT_LIMIT else encode_varint(payload_size)))
    if event_time:
        parts.append(_EVENT_TIME + encode_varint(event_time))
    if key_b64:
        parts.append(_KEY_B64)
    if ordering_key is not None:
        parts.append(_len_prefixed(_ORDERING_KEY, ordering_key))
    if sequence_id is not None:
        parts.append(_SEQUENCE_ID + encode_varint(sequence_id))
    if null_value:
        parts.append(_NULL_VALUE)
    if null_key:
        parts.append(_NULL_KEY)
    return b"".join(parts)


def batched_message_head(
    payload_size: int,
    partition_key: str | None = None,
    properties: Mapping[str, str] | None = None,
    event_time: int = 0,
    null_value: bool = False,
    ordering_key: bytes | None = None,
    key_b64: bool = False,
    null_key: bool = False,
) -> bytes:
    """What precedes a message's payload in a batch: the size prefix and the SingleMessageMetadata
    (a message with nothing but a payload, or a payload and a key, has the same head as every
    other of its size: callers cache those)."""
    single = encode_single_metadata(payload_size, properties, partition_key, ordering_key, event_time, None, null_value,
                                    key_b64, null_key)
    return _U32.pack(len(single)) + single
