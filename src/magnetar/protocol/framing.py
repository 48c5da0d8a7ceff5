"""Sans-IO framing of the Pulsar binary protocol: bytes in, frames out, and back.

A frame is ``[u32 total][u32 command size][BaseCommand]`` optionally followed, for SEND and
MESSAGE, by ``[u16 0x0e02][u32 size][BrokerEntryMetadata]`` (broker to client only),
``[u16 0x0e01][u32 CRC32C]`` and ``[u32 metadata size][MessageMetadata][payload]``. The checksum
covers everything from the metadata size to the end. magnetar calls that last part the
*entry*: it is what a producer sends, what the broker stores verbatim, and what a consumer
receives, so the producer's checksum travels with it unchanged.

Nothing here does I/O. :class:`FrameDecoder` is fed bytes and returns complete frames; a
malformed or oversized frame raises :class:`ProtocolError`, after which the connection that
produced the bytes must be closed (nothing else is affected).
"""

from __future__ import annotations

import struct
from typing import Final

import crc32c as _crc32c

from magnetar.protocol.enums import COMMAND_FIELD
from magnetar.protocol.schema import BaseCommand, MessageMetadata

MAGIC_CHECKSUM: Final = 0x0E01
MAGIC_BROKER_ENTRY_METADATA: Final = 0x0E02
#: room above max_message_size that a frame may use for its command and metadata
#: (chunked messages fill max_message_size with payload alone)
FRAME_HEADROOM: Final = 10 * 1024

_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")
_HEADER = struct.Struct(">II")
_CHECKSUM_HEADER = struct.Struct(">HI")
#: checksum magic, checksum and metadata size: how a MESSAGE or SEND frame usually goes on
_CHECKSUM_AND_META_SIZE = struct.Struct(">HII")

crc32c = _crc32c.crc32c


class ProtocolError(Exception):
    """Input that breaks the framing or schema: the connection it came on must be closed."""


class FrameTooLargeError(ProtocolError):
    """A frame announced a size above the negotiated maximum."""


class Frame:
    """One decoded frame: the command and, for SEND/MESSAGE, the entry bytes and checksum.

    A decoded frame's entry is a view of the bytes received (:attr:`entry_view`, no copy, to
    read at once: the consumer copies only the payloads it keeps); :attr:`entry` makes it
    ``bytes`` on first use, for whoever keeps the entry (the broker stores it).
    """

    __slots__ = ("command", "entry_view", "_entry", "checksum", "broker_entry_metadata")

    def __init__(
        self,
        command: BaseCommand,
        entry: bytes | None = None,
        checksum: int | None = None,
        broker_entry_metadata: bytes | None = None,
    ) -> None:
        self.command = command
        #: ``[u32 metadata size][MessageMetadata][payload]`` without a copy, or None for a simple command
        self.entry_view: bytes | memoryview | None = entry
        self._entry = entry
        #: the CRC32C the sender announced for ``entry``, or None when it sent none
        self.checksum = checksum
        self.broker_entry_metadata = broker_entry_metadata

    @property
    def entry(self) -> bytes | None:
        """``[u32 metadata size][MessageMetadata][payload]`` as bytes, or None for a simple command."""
        if self._entry is None and self.entry_view is not None:
            self._entry = bytes(self.entry_view)
        return self._entry

    @property
    def type(self) -> int:
        """The BaseCommand type of this frame."""
        return self.command.type

    def checksum_ok(self) -> bool:
        """Whether the entry matches its announced checksum (True when none was sent)."""
        if self.checksum is None or self.entry_view is None:
            return True
        return crc32c(self.entry_view) == self.checksum

    def __repr__(self) -> str:
        size = None if self.entry_view is None else len(self.entry_view)
        return f"Frame(type={self.command.type}, entry_bytes={size})"


_new_frame = object.__new__


class FrameDecoder:
    """Splits a byte stream into :class:`Frame` objects.

    ``max_frame_size`` bounds the announced size of one frame (after its length prefix): a
    larger announcement fails at once, before any of the frame is buffered.
    """

    def __init__(self, max_frame_size: int) -> None:
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._failed: str | None = None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a complete frame."""
        return len(self._buffer)

    def feed(self, data: bytes | bytearray | memoryview) -> list[Frame]:
        """Add received bytes; return every frame they complete, in order.

        After a ProtocolError the decoder stays failed: every later call raises again.
        """
        if self._failed is not None:
            raise ProtocolError(f"stream already failed: {self._failed}")
        try:
            return self._feed(data)
        except ProtocolError as exc:
            self._failed = str(exc)
            raise type(exc)(str(exc)) from None

    def _feed(self, data: bytes | bytearray | memoryview) -> list[Frame]:
        # frames are views of ``source``: immutable bytes, so they stay valid once returned
        source = data if data.__class__ is bytes else bytes(data)
        frames: list[Frame] = []
        pos = self._complete_buffered(source, frames) if self._buffer else 0
        end = len(source)
        max_size = self.max_frame_size
        view = memoryview(source)
        while end - pos >= 4:
            (total,) = _U32.unpack_from(source, pos)
            if total > max_size:
                raise FrameTooLargeError(f"frame of {total} bytes exceeds the limit of {max_size}")
            if end - pos - 4 < total:
                break
            frames.append(decode_frame_body(view[pos + 4 : pos + 4 + total]))
            pos += 4 + total
        if pos < end:
            self._buffer += view[pos:]
        return frames

    def _complete_buffered(self, source: bytes, frames: list[Frame]) -> int:
        """Finish the frame begun in earlier reads with the first bytes of ``source``; return how
        many of them it took (all when it is still incomplete)."""
        buf = self._buffer
        taken = 0
        if len(buf) < 4:
            taken = min(4 - len(buf), len(source))
            buf += source[:taken]
            if len(buf) < 4:
                return taken
        (total,) = _U32.unpack_from(buf, 0)
        if total > self.max_frame_size:
            raise FrameTooLargeError(f"frame of {total} bytes exceeds the limit of {self.max_frame_size}")
        wanted = min(4 + total - len(buf), len(source) - taken)
        buf += memoryview(source)[taken : taken + wanted]
        taken += wanted
        if len(buf) == 4 + total:
            whole = bytes(buf)
            buf.clear()
            frames.append(decode_frame_body(memoryview(whole)[4:]))
        return taken


def decode_frame_body(body: memoryview) -> Frame:
    """Decode one frame given the bytes after its total-size prefix."""
    size = len(body)
    if size < 4:
        raise ProtocolError(f"frame of {size} bytes is too short for a command size")
    (cmd_size,) = _U32.unpack_from(body, 0)
    if cmd_size == 0 or cmd_size > size - 4:
        raise ProtocolError(f"command size {cmd_size} does not fit a frame of {size} bytes")
    try:
        command = BaseCommand.FromString(body[4 : 4 + cmd_size])
    except Exception as exc:  # the upb parser raises DecodeError; anything else is as bad
        raise ProtocolError(f"undecodable command: {exc}") from None
    # (a first byte 0x08 is the tag of field 1, type, as a varint: it is there)
    if body[4] != 0x08 and not command.HasField("type"):
        raise ProtocolError("command without a type")
    if command.type not in _NO_STRING_COMMANDS:
        _check_strings(command)
    pos = 4 + cmd_size
    if pos == size:
        return Frame(command)
    if size - pos >= 10:
        magic, checksum, meta_size = _CHECKSUM_AND_META_SIZE.unpack_from(body, pos)
        if magic == MAGIC_CHECKSUM:  # the usual layout, read in one go
            if meta_size > size - pos - 10:
                raise ProtocolError(f"metadata size {meta_size} overruns a payload of {size - pos - 6} bytes")
            return _entry_frame(command, body[pos + 6 :], checksum, None)
    broker_meta = None
    if size - pos >= 2 and _U16.unpack_from(body, pos)[0] == MAGIC_BROKER_ENTRY_METADATA:
        if size - pos < 6:
            raise ProtocolError("truncated broker entry metadata")
        (meta_size,) = _U32.unpack_from(body, pos + 2)
        if meta_size > size - pos - 6:
            raise ProtocolError("broker entry metadata overruns the frame")
        broker_meta = bytes(body[pos + 6 : pos + 6 + meta_size])
        pos += 6 + meta_size
    checksum = None
    if size - pos >= 2 and _U16.unpack_from(body, pos)[0] == MAGIC_CHECKSUM:
        if size - pos < 6:
            raise ProtocolError("truncated checksum")
        checksum = _U32.unpack_from(body, pos + 2)[0]
        pos += 6
    if size - pos < 4:
        raise ProtocolError("payload too short for a metadata size")
    (meta_size,) = _U32.unpack_from(body, pos)
    if meta_size > size - pos - 4:
        raise ProtocolError(f"metadata size {meta_size} overruns a payload of {size - pos} bytes")
    return _entry_frame(command, body[pos:], checksum, broker_meta)


def _entry_frame(command: BaseCommand, entry: memoryview, checksum: int | None, broker_meta: bytes | None) -> Frame:
    frame = _new_frame(Frame)
    frame.command = command
    frame.entry_view = entry
    frame._entry = None
    frame.checksum = checksum
    frame.broker_entry_metadata = broker_meta
    return frame


#: commands without string fields (the hot path), spared the UTF-8 check
_NO_STRING_COMMANDS = frozenset({6, 7, 9, 10, 11, 18, 19})


def _check_strings(message) -> None:  # noqa: ANN001 - any schema message
    """Reject string fields that are not valid UTF-8 (the parser hands those back as bytes)."""
    for field, value in message.ListFields():
        if field.type == field.TYPE_STRING:
            values = value if field.is_repeated else (value,)
            if any(isinstance(v, bytes) for v in values):
                raise ProtocolError(f"field {field.name} is not valid UTF-8")
        elif field.type == field.TYPE_MESSAGE:
            for v in value if field.is_repeated else (value,):
                _check_strings(v)


def sub_command(command: BaseCommand):  # noqa: ANN201 - returns the schema's message class
    """Return the typed sub-command of ``command`` (e.g. ``command.send`` for SEND), or None."""
    field = COMMAND_FIELD.get(command.type)
    if field is None or not command.HasField(field):
        return None
    return getattr(command, field)


def encode_command(command: BaseCommand) -> bytes:
    """Encode a simple (payload-less) command frame."""
    body = command.SerializeToString()
    n = len(body)
    return _HEADER.pack(n + 4, n) + body


def encode_entry_header(command: BaseCommand, entry_size: int, checksum: int) -> bytes:
    """Encode everything of a payload frame that precedes its entry bytes.

    Write the result followed by the entry (for example with ``writelines``) to send the
    frame without copying the entry.
    """
    body = command.SerializeToString()
    n = len(body)
    return _HEADER.pack(n + 4 + 6 + entry_size, n) + body + _CHECKSUM_HEADER.pack(MAGIC_CHECKSUM, checksum)


def encode_payload_command(command: BaseCommand, entry: bytes, checksum: int | None = None) -> bytes:
    """Encode a whole payload frame (SEND or MESSAGE) around ``entry``."""
    if checksum is None:
        checksum = crc32c(entry)
    return encode_entry_header(command, len(entry), checksum) + entry


def encode_entry(metadata: MessageMetadata, payload: bytes) -> bytes:
    """Build entry bytes ``[u32 metadata size][metadata][payload]``."""
    meta = metadata.SerializeToString()
    return _U32.pack(len(meta)) + meta + payload


def split_entry(entry: bytes | memoryview) -> tuple[memoryview, memoryview]:
    """Split entry bytes into (serialized metadata, payload) without copying."""
    view = memoryview(entry)
    if len(view) < 4:
        raise ProtocolError(f"entry of {len(view)} bytes is too short for a metadata size")
    (meta_size,) = _U32.unpack_from(view, 0)
    if meta_size > len(view) - 4:
        raise ProtocolError(f"metadata size {meta_size} overruns an entry of {len(view)} bytes")
    return view[4 : 4 + meta_size], view[4 + meta_size :]


def parse_entry_metadata(entry: bytes | memoryview) -> MessageMetadata:
    """Parse the MessageMetadata at the start of entry bytes."""
    meta, _ = split_entry(entry)
    try:
        return MessageMetadata.FromString(meta)
    except Exception as exc:
        raise ProtocolError(f"undecodable message metadata: {exc}") from None
