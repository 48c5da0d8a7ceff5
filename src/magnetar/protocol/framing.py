"""Sans-IO framing of the Pulsar binary protocol: bytes in, frames out, and back.

A frame is ``[u32 total][u32 command size][BaseCommand]`` optionally followed, for SEND and
MESSAGE, by ``[u16 0x0e02][u32 size][BrokerEntryMetadata]`` (broker to client only),
``[u16 0x0e01][u32 CRC32C]`` and ``[u32 metadata size][MessageMetadata][payload]``. The checksum
covers everything from the metadata size to the end. magnetar calls that last part the
*entry*: it is what a producer sends, what the broker stores verbatim, and what a consumer
receives, so the producer's checksum travels with it unchanged.

Nothing here does I/O. :class:`FrameDecoder` is fed bytes and returns complete frames; a
malformed or oversized frame raises :class:`ProtocolError`, after which the connection that
produced the bytes must be closed (nothing else is affected). ``FrameDecoder.frames`` yields them
one by one instead (a client hands each on before the next is decoded). A MESSAGE frame of the
usual shape is a :class:`MessageFrame`, its command read by hand (the consumer's hot path).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
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


class MessageFrame(Frame):
    """A MESSAGE frame of the usual shape, its command read by hand (the consumer's hot path).

    The usual shape: a CommandMessage with a consumer id, a message id of a ledger and an entry
    id only, and optionally a redelivery count and a consumer epoch, followed by the checksum
    section and the entry. Any other MESSAGE frame is a plain :class:`Frame`. The fields are
    plain attributes; :attr:`command` parses the same bytes with protobuf on first use.
    """

    __slots__ = ("consumer_id", "ledger_id", "entry_id", "redelivery_count", "_source", "_command_start", "_command_end", "_parsed")

    consumer_id: int
    ledger_id: int
    entry_id: int
    redelivery_count: int

    @property  # type: ignore[override]
    def command(self) -> BaseCommand:
        """The frame's BaseCommand, parsed from its bytes on first use."""
        parsed = self._parsed
        if parsed is None:
            parsed = self._parsed = BaseCommand.FromString(memoryview(self._source)[self._command_start : self._command_end])
        return parsed

    @property
    def type(self) -> int:
        """MESSAGE."""
        return _MESSAGE


_MESSAGE: Final = 9
#: a MESSAGE command's first bytes: the type (field 1) 9, then the tag of field 9 (``message``)
_MESSAGE_PREFIX: Final = b"\x08\x09\x4a"
_U64_LIMIT: Final = 1 << 64


class _FrameShape:
    """What the next MESSAGE frames of a stream probably repeat of the last one read by hand: its
    bytes from the command size to the entry id's tag (``head``: command size, consumer id,
    ledger id), the entry id's varint length, and the command's bytes after the message id
    (``tail``: redelivery count, epoch)."""

    __slots__ = ("head", "entry_at", "entry_len", "tail", "consumer_id", "ledger_id", "redelivery_count", "cmd_size")

    def __init__(self) -> None:
        self.head = b""
        self.entry_at = 0
        self.entry_len = 0
        self.tail = b""
        self.consumer_id = 0
        self.ledger_id = 0
        self.redelivery_count = 0
        self.cmd_size = 0


def _message_frame(s: bytes, view: memoryview, pos: int, end: int, shape: _FrameShape | None = None) -> MessageFrame | None:
    """The frame body ``s[pos:end]`` (after its total size; ``view`` is ``memoryview(s)``) as a
    :class:`MessageFrame` when it has the usual shape (the caller saw ``_MESSAGE_PREFIX`` at
    ``s[pos + 4]``), else None (decode it in full). ``shape``, when given, is set to this
    frame's (see :func:`_repeated_message_frame`).

    A None answer says nothing about validity: the protobuf decoder then judges the frame.
    """
    try:
        (cmd_size,) = _U32.unpack_from(s, pos)
        p = pos + 7  # past the command size and the prefix
        cmd_end = p - 3 + cmd_size
        if cmd_end + 10 > end or s[p] != cmd_end - p - 1 or s[p + 1] != 0x08:
            return None  # (a length of 128 or more, or no consumer id first: the general decoder)
        # field 1, consumer id; then field 2, the message id: a length (< 128) and its fields
        # (one-byte varints are read inline: the usual consumer id, ledger id, redelivery count)
        consumer_id = s[p + 2]
        if consumer_id < 0x80:
            p += 3
        else:
            consumer_id, p = _varint(s, p + 2)
        if s[p] != 0x12 or s[p + 1] >= 0x80 or s[p + 2] != 0x08 or consumer_id >= _U64_LIMIT:
            return None
        id_end = p + 2 + s[p + 1]
        ledger_id = s[p + 3]
        if ledger_id < 0x80:
            p += 4
        else:
            ledger_id, p = _varint(s, p + 3)
        if s[p] != 0x10:
            return None
        entry_at = p + 1
        entry_id, p = _varint(s, entry_at)
        if p != id_end:
            return None  # a partition, batch index, ack set ... in the id: the general decoder
        redelivery_count = 0
        if p < cmd_end and s[p] == 0x18:
            redelivery_count = s[p + 1]
            if redelivery_count < 0x80:
                p += 2
            else:
                redelivery_count, p = _varint(s, p + 1)
        if p < cmd_end and s[p] == 0x28:
            _epoch, p = _varint(s, p + 1)
        if p != cmd_end or ledger_id >= _U64_LIMIT or entry_id >= _U64_LIMIT or redelivery_count >= 1 << 32:
            return None
        magic, checksum, meta_size = _CHECKSUM_AND_META_SIZE.unpack_from(s, cmd_end)
    except (IndexError, struct.error):
        return None
    if magic != MAGIC_CHECKSUM or meta_size > end - cmd_end - 10:
        return None
    if shape is not None and id_end - entry_at <= 4:
        shape.head = s[pos:entry_at]
        shape.entry_at = entry_at - pos
        shape.entry_len = id_end - entry_at
        shape.tail = s[id_end:cmd_end]
        shape.consumer_id = consumer_id
        shape.ledger_id = ledger_id
        shape.redelivery_count = redelivery_count
        shape.cmd_size = cmd_end - pos - 4
    frame = _new_frame(MessageFrame)
    frame.consumer_id = consumer_id
    frame.ledger_id = ledger_id
    frame.entry_id = entry_id
    frame.redelivery_count = redelivery_count
    frame.entry_view = view[cmd_end + 6 : end]
    frame._entry = None
    frame.checksum = checksum
    frame.broker_entry_metadata = None
    frame._source = s
    frame._command_start = pos + 4
    frame._command_end = cmd_end
    frame._parsed = None
    return frame


def _repeated_message_frame(s: bytes, view: memoryview, pos: int, end: int, shape: _FrameShape) -> MessageFrame | None:
    """As :func:`_message_frame`, for a frame whose bytes from ``pos`` start with ``shape.head``:
    when its entry id is a varint of the same length followed by the same tail, all but the
    entry id and the checksum section are known already (the same bytes read the same). Else None."""
    p = pos + shape.entry_at
    n = shape.entry_len
    b = s[p]
    # the entry id: n bytes, every one but the last with its continuation bit
    if n == 1:
        if b >= 0x80:
            return None
        entry_id = b
    elif n == 2:
        b1 = s[p + 1]
        if b < 0x80 or b1 >= 0x80:
            return None
        entry_id = (b & 0x7F) | (b1 << 7)
    elif n == 3:
        b1 = s[p + 1]
        b2 = s[p + 2]
        if b < 0x80 or b1 < 0x80 or b2 >= 0x80:
            return None
        entry_id = (b & 0x7F) | ((b1 & 0x7F) << 7) | (b2 << 14)
    else:
        b1 = s[p + 1]
        b2 = s[p + 2]
        b3 = s[p + 3]
        if b < 0x80 or b1 < 0x80 or b2 < 0x80 or b3 >= 0x80:
            return None
        entry_id = (b & 0x7F) | ((b1 & 0x7F) << 7) | ((b2 & 0x7F) << 14) | (b3 << 21)
    cmd_end = pos + 4 + shape.cmd_size
    tail = shape.tail
    if (tail and not s.startswith(tail, p + n)) or cmd_end + 10 > end:
        return None
    magic, checksum, meta_size = _CHECKSUM_AND_META_SIZE.unpack_from(s, cmd_end)
    if magic != MAGIC_CHECKSUM or meta_size > end - cmd_end - 10:
        return None
    frame = _new_frame(MessageFrame)
    frame.consumer_id = shape.consumer_id
    frame.ledger_id = shape.ledger_id
    frame.entry_id = entry_id
    frame.redelivery_count = shape.redelivery_count
    frame.entry_view = view[cmd_end + 6 : end]
    frame._entry = None
    frame.checksum = checksum
    frame.broker_entry_metadata = None
    frame._source = s
    frame._command_start = pos + 4
    frame._command_end = cmd_end
    frame._parsed = None
    return frame


def _varint(s: bytes, p: int) -> tuple[int, int]:
    """(value, position after it) of the varint at ``s[p]``; IndexError past 10 bytes or the end."""
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


class FrameDecoder:
    """Splits a byte stream into :class:`Frame` objects.

    ``max_frame_size`` bounds the announced size of one frame (after its length prefix): a
    larger announcement fails at once, before any of the frame is buffered.
    """

    def __init__(self, max_frame_size: int) -> None:
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._failed: str | None = None
        #: the shape of the last MESSAGE frame read by hand (empty head: none yet)
        self._shape = _FrameShape()

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

    def frames(self, data: bytes | bytearray | memoryview) -> Iterator[Frame]:
        """Add received bytes; yield every frame they complete, in order, each as soon as it is
        decoded: a frame handled before the next one is decoded is freed at once, where
        :meth:`feed` keeps every frame of a read alive until the last is decoded (hundreds of
        objects that wake the garbage collector). Iterate to the end: the bytes of an incomplete
        frame are kept for the next call only then. A bad frame raises ProtocolError when the
        iteration reaches it (the frames before it were yielded); after that the decoder stays
        failed.
        """
        if self._failed is not None:
            raise ProtocolError(f"stream already failed: {self._failed}")
        try:
            source = data if data.__class__ is bytes else bytes(data)
            pos = 0
            if self._buffer:
                completed: list[Frame] = []
                pos = self._complete_buffered(source, completed)
                yield from completed
            end = len(source)
            view = memoryview(source)
            shape = self._shape
            while end - pos >= 4:
                (total,) = _U32.unpack_from(source, pos)
                if total > self.max_frame_size:
                    raise FrameTooLargeError(f"frame of {total} bytes exceeds the limit of {self.max_frame_size}")
                if end - pos - 4 < total:
                    break
                frame = None
                if source.startswith(_MESSAGE_PREFIX, pos + 8):
                    if shape.head and source.startswith(shape.head, pos + 4):
                        frame = _repeated_message_frame(source, view, pos + 4, pos + 4 + total, shape)
                    if frame is None:
                        frame = _message_frame(source, view, pos + 4, pos + 4 + total, shape)
                yield frame or decode_frame_body(view[pos + 4 : pos + 4 + total])
                pos += 4 + total
            if pos < end:
                self._buffer += view[pos:]
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
            frame = None
            if source.startswith(_MESSAGE_PREFIX, pos + 8):
                frame = _message_frame(source, view, pos + 4, pos + 4 + total)
            frames.append(frame or decode_frame_body(view[pos + 4 : pos + 4 + total]))
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
            whole_view = memoryview(whole)
            frame = _message_frame(whole, whole_view, 4, len(whole)) if whole.startswith(_MESSAGE_PREFIX, 8) else None
            frames.append(frame or decode_frame_body(whole_view[4:]))
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


def encode_payload_frame(command: BaseCommand, metadata: bytes, payload: bytes) -> tuple[bytes, bytes]:
    """Encode a payload frame (SEND) as two pieces to write one after the other (``writelines``).

    The first piece runs from the frame's size to the end of ``metadata`` (a serialized
    MessageMetadata), the second is ``payload`` itself: the entry is never joined, and its
    checksum is computed over the two parts in turn. The bytes are those of
    :func:`encode_payload_command` on the joined entry.
    """
    head = _U32.pack(len(metadata)) + metadata
    checksum = crc32c(payload, crc32c(head))
    return encode_entry_header(command, len(head) + len(payload), checksum) + head, payload


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
