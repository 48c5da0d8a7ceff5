"""Sans-IO framing of the Pulsar binary protocol: bytes in, frames out, and back.

The frame layout and the decoded :class:`~magnetar.protocol.frame.Frame` are in :mod:`.frame`.
Nothing here does I/O. :class:`FrameDecoder` is fed bytes and returns complete frames; a
malformed or oversized frame raises :class:`ProtocolError`, after which the connection that
produced the bytes must be closed (nothing else is affected). ``FrameDecoder.frames`` yields them
one by one instead (a client hands each on before the next is decoded). A MESSAGE frame of the
usual shape is a :class:`~magnetar.protocol.message_frame.MessageFrame`, its command read by hand
(the consumer's hot path, :mod:`.message_frame`), as are the usual SEND (:mod:`.send_frame`) and
FLOW (:mod:`.flow_frame`) on the broker's. The ``encode_*`` functions build frames, and
:func:`split_entry` / :func:`parse_entry_metadata` read entries.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Final

from magnetar.protocol.enums import COMMAND_FIELD
from magnetar.protocol.flow_frame import FLOW_PREFIX, read_flow_frame
from magnetar.protocol.frame import (
    MAGIC_CHECKSUM,
    Frame,
    FrameTooLargeError,
    ProtocolError,
    crc32c,
    entry_frame,
)
from magnetar.protocol.message_frame import (
    MESSAGE_PREFIX,
    FrameShape,
    read_message_frame,
    read_repeated_message_frame,
)
from magnetar.protocol.schema import BaseCommand, MessageMetadata
from magnetar.protocol.send_frame import SEND_PREFIX, read_send_frame

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

class FrameDecoder:
    """Splits a byte stream into :class:`Frame` objects.

    ``max_frame_size`` bounds the announced size of one frame (after its length prefix): a
    larger announcement fails at once, before any of the frame is buffered.
    """

    def __init__(self, max_frame_size: int) -> None:
        self.max_frame_size = max_frame_size
        #: the received pieces of a frame not complete yet: views of the immutable bytes read (no
        #: copy until the frame is whole, then one ``join``: a 100 KB SEND spans two or three reads)
        self._pending: list[bytes | memoryview] = []
        #: their bytes in all
        self._pending_size = 0
        #: that frame's size after its length prefix, once its first four bytes are in
        self._pending_total: int | None = None
        self._failed: str | None = None
        #: the shape of the last MESSAGE frame read by hand (empty head: none yet)
        self._shape = FrameShape()

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a complete frame."""
        return self._pending_size

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
            if self._pending_size:
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
                if source.startswith(MESSAGE_PREFIX, pos + 8):
                    if shape.head and source.startswith(shape.head, pos + 4):
                        frame = read_repeated_message_frame(source, view, pos + 4, pos + 4 + total, shape)
                    if frame is None:
                        frame = read_message_frame(source, view, pos + 4, pos + 4 + total, shape)
                elif source.startswith(SEND_PREFIX, pos + 8):
                    frame = read_send_frame(source, view, pos + 4, pos + 4 + total)
                elif source.startswith(FLOW_PREFIX, pos + 8):
                    frame = read_flow_frame(source, pos + 4, pos + 4 + total)
                yield frame or decode_frame_body(view[pos + 4 : pos + 4 + total])
                pos += 4 + total
            if pos < end:
                self._keep(view, pos)
        except ProtocolError as exc:
            self._failed = str(exc)
            raise type(exc)(str(exc)) from None

    def _feed(self, data: bytes | bytearray | memoryview) -> list[Frame]:
        # frames are views of ``source``: immutable bytes, so they stay valid once returned
        source = data if data.__class__ is bytes else bytes(data)
        frames: list[Frame] = []
        pos = self._complete_buffered(source, frames) if self._pending_size else 0
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
            if source.startswith(MESSAGE_PREFIX, pos + 8):
                frame = read_message_frame(source, view, pos + 4, pos + 4 + total)
            elif source.startswith(SEND_PREFIX, pos + 8):
                frame = read_send_frame(source, view, pos + 4, pos + 4 + total)
            elif source.startswith(FLOW_PREFIX, pos + 8):
                frame = read_flow_frame(source, pos + 4, pos + 4 + total)
            frames.append(frame or decode_frame_body(view[pos + 4 : pos + 4 + total]))
            pos += 4 + total
        if pos < end:
            self._keep(view, pos)
        return frames

    def _keep(self, view: memoryview, pos: int) -> None:
        """Keep ``view[pos:]``, the start of a frame not complete yet (its size, when the four bytes
        of it are there, was checked against the limit by the caller)."""
        rest = view[pos:]
        self._pending = [rest]
        self._pending_size = len(rest)
        self._pending_total = _U32.unpack_from(rest, 0)[0] if len(rest) >= 4 else None

    def _complete_buffered(self, source: bytes, frames: list[Frame]) -> int:
        """Finish the frame begun in earlier reads with the first bytes of ``source``; return how
        many of them it took (all when it is still incomplete)."""
        pending = self._pending
        have = self._pending_size
        total = self._pending_total
        taken = 0
        if total is None:  # fewer than four bytes of it so far
            head = b"".join(pending) + source[: 4 - have]
            taken = len(head) - have
            pending[:] = [head]
            have = self._pending_size = len(head)
            if have < 4:
                return taken
            (total,) = _U32.unpack_from(head, 0)
            if total > self.max_frame_size:
                raise FrameTooLargeError(f"frame of {total} bytes exceeds the limit of {self.max_frame_size}")
            self._pending_total = total
        wanted = min(4 + total - have, len(source) - taken)
        pending.append(memoryview(source)[taken : taken + wanted])
        taken += wanted
        have += wanted
        if have < 4 + total:
            self._pending_size = have
            return taken
        whole = b"".join(pending)
        self._pending = []
        self._pending_size = 0
        self._pending_total = None
        whole_view = memoryview(whole)
        frame = None
        if whole.startswith(MESSAGE_PREFIX, 8):
            frame = read_message_frame(whole, whole_view, 4, len(whole))
        elif whole.startswith(SEND_PREFIX, 8):
            frame = read_send_frame(whole, whole_view, 4, len(whole))
        elif whole.startswith(FLOW_PREFIX, 8):
            frame = read_flow_frame(whole, 4, len(whole))
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
            return entry_frame(command, body[pos + 6 :], checksum, None)
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
    return entry_frame(command, body[pos:], checksum, broker_meta)


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
