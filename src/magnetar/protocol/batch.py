"""Batch payloads and whole entries: building them as a producer does, opening them as a consumer does.

A batch payload, before compression, is for each message ``[u32 size][SingleMessageMetadata]
[payload]`` with ``SingleMessageMetadata.payload_size`` giving the payload's length. An entry is
``[u32 metadata size][MessageMetadata][payload]`` (see :mod:`.framing`); its payload is compressed
as a whole, and it is a batch exactly when ``MessageMetadata.num_messages_in_batch`` is present,
which is the test the official clients apply (a batch may hold a single message).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from magnetar.protocol.compression import compress, decompress
from magnetar.protocol.enums import CompressionType
from magnetar.protocol.framing import ProtocolError, encode_entry, split_entry
from magnetar.protocol.schema import KeyValue, MessageMetadata, SingleMessageMetadata

_U32 = struct.Struct(">I")


class UnsupportedEntryError(ValueError):
    """An entry whose payload cannot be opened here: encrypted, or one chunk of a larger message."""


@dataclass(slots=True)
class BatchMessage:
    """One message of a batch, with the per-message fields a SingleMessageMetadata carries."""

    payload: bytes
    properties: dict[str, str] = field(default_factory=dict)
    partition_key: str | None = None
    ordering_key: bytes | None = None
    #: 0 means unset, as on the wire
    event_time: int = 0
    sequence_id: int | None = None
    null_value: bool = False

    def single_metadata(self) -> SingleMessageMetadata:
        """The SingleMessageMetadata that describes this message inside a batch."""
        meta = SingleMessageMetadata(payload_size=len(self.payload))
        for key, value in self.properties.items():
            meta.properties.append(KeyValue(key=key, value=value))
        if self.partition_key is not None:
            meta.partition_key = self.partition_key
        if self.ordering_key is not None:
            meta.ordering_key = self.ordering_key
        if self.event_time:
            meta.event_time = self.event_time
        if self.sequence_id is not None:
            meta.sequence_id = self.sequence_id
        if self.null_value:
            meta.null_value = True
        return meta


def encode_batch(messages: Iterable[BatchMessage]) -> bytes:
    """Concatenate messages into an (uncompressed) batch payload."""
    parts: list[bytes] = []
    for message in messages:
        meta = message.single_metadata().SerializeToString()
        parts.append(_U32.pack(len(meta)))
        parts.append(meta)
        parts.append(bytes(message.payload))
    return b"".join(parts)


def decode_batch(
    payload: bytes | bytearray | memoryview, count: int
) -> list[tuple[SingleMessageMetadata, bytes]]:
    """Split an uncompressed batch payload into its ``count`` messages.

    Raises :class:`ProtocolError` when the payload does not hold exactly ``count`` well-formed
    messages (truncated, overrunning sizes, undecodable metadata, or bytes left over).
    """
    if count < 0:
        raise ProtocolError(f"negative batch message count {count}")
    view = memoryview(payload)
    end = len(view)
    pos = 0
    out: list[tuple[SingleMessageMetadata, bytes]] = []
    for index in range(count):
        if end - pos < 4:
            raise ProtocolError(f"batch truncated before message {index} of {count}: {end - pos} bytes left")
        (meta_size,) = _U32.unpack_from(view, pos)
        pos += 4
        if meta_size > end - pos:
            raise ProtocolError(
                f"metadata size {meta_size} of batch message {index} overruns the {end - pos} bytes left"
            )
        try:
            meta = SingleMessageMetadata.FromString(view[pos : pos + meta_size])
        except Exception as exc:  # the upb parser raises DecodeError; anything else is as bad
            raise ProtocolError(f"undecodable metadata of batch message {index}: {exc}") from None
        pos += meta_size
        if not meta.HasField("payload_size"):
            raise ProtocolError(f"batch message {index} has no payload size")
        size = meta.payload_size
        if size < 0 or size > end - pos:
            raise ProtocolError(
                f"payload size {size} of batch message {index} does not fit the {end - pos} bytes left"
            )
        out.append((meta, bytes(view[pos : pos + size])))
        pos += size
    if pos != end:
        raise ProtocolError(f"{end - pos} bytes left over after the {count} messages of a batch")
    return out


def build_entry(
    metadata: MessageMetadata,
    messages_or_payload: Sequence[BatchMessage] | bytes | bytearray | memoryview,
    compression: CompressionType | int = CompressionType.NONE,
) -> bytes:
    """Build entry bytes from message metadata and either one raw payload or a batch of messages.

    ``metadata`` is not modified: the entry carries a copy with ``compression``,
    ``uncompressed_size`` and, for a batch, ``num_messages_in_batch`` filled in as the official
    clients fill them (compression is left unset for NONE).
    """
    meta = MessageMetadata()
    meta.CopyFrom(metadata)
    if isinstance(messages_or_payload, bytes | bytearray | memoryview):
        raw = bytes(messages_or_payload)
        meta.ClearField("num_messages_in_batch")
    else:
        if not messages_or_payload:
            raise ValueError("a batch needs at least one message")
        raw = encode_batch(messages_or_payload)
        meta.num_messages_in_batch = len(messages_or_payload)
    compressed = compress(compression, raw)
    if compression == CompressionType.NONE:
        meta.ClearField("compression")
    else:
        meta.compression = compression
    meta.uncompressed_size = len(raw)
    return encode_entry(meta, compressed)


def open_entry(
    entry: bytes | bytearray | memoryview,
) -> tuple[MessageMetadata, list[tuple[SingleMessageMetadata | None, bytes]]]:
    """Parse entry bytes and return their metadata and messages, decompressed and unbatched.

    A non-batch entry gives one message whose single metadata is None. Raises
    :class:`ProtocolError` on malformed framing or batch structure,
    :class:`~.compression.CompressionError` on a payload that does not decompress to its
    announced size, and :class:`UnsupportedEntryError` for encrypted entries and chunks.
    """
    if len(entry) < 4:
        raise ProtocolError(f"entry of {len(entry)} bytes is too short for a metadata size")
    meta_bytes, payload = split_entry(entry)
    try:
        meta = MessageMetadata.FromString(meta_bytes)
    except Exception as exc:
        raise ProtocolError(f"undecodable message metadata: {exc}") from None
    if len(meta.encryption_keys):
        raise UnsupportedEntryError("the entry is encrypted: only its consumers can open it")
    if meta.HasField("num_chunks_from_msg") and meta.num_chunks_from_msg > 1:
        raise UnsupportedEntryError(
            f"the entry is chunk {meta.chunk_id} of {meta.num_chunks_from_msg}: reassemble the message first"
        )
    raw = decompress(meta.compression, payload, meta.uncompressed_size)
    if not meta.HasField("num_messages_in_batch"):
        return meta, [(None, raw)]
    return meta, list(decode_batch(raw, meta.num_messages_in_batch))
