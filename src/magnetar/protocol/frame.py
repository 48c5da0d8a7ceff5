"""One decoded frame of the Pulsar binary protocol, and the errors that end a connection.

A frame is ``[u32 total][u32 command size][BaseCommand]`` optionally followed, for SEND and
MESSAGE, by ``[u16 0x0e02][u32 size][BrokerEntryMetadata]`` (broker to client only),
``[u16 0x0e01][u32 CRC32C]`` and ``[u32 metadata size][MessageMetadata][payload]``. The checksum
covers everything from the metadata size to the end. magnetar calls that last part the
*entry*: it is what a producer sends, what the broker stores verbatim, and what a consumer
receives, so the producer's checksum travels with it unchanged.

:mod:`.framing` splits byte streams into frames and encodes them; :mod:`.message_frame` reads
the usual MESSAGE frame by hand.
"""

from __future__ import annotations

from typing import Final

from magnetar.checksum import crc32c
from magnetar.protocol.schema import BaseCommand

MAGIC_CHECKSUM: Final = 0x0E01



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


class LazyCommandFrame(Frame):
    """A frame read by hand (message_frame.py, send_frame.py, flow_frame.py): its fields are plain attributes of the
    subclass, and :attr:`command` parses the same bytes with protobuf only when someone asks for it."""

    __slots__ = ("_source", "_command_start", "_command_end", "_parsed")

    @property  # type: ignore[override]
    def command(self) -> BaseCommand:
        """The frame's BaseCommand, parsed from its bytes on first use."""
        parsed = self._parsed
        if parsed is None:
            parsed = self._parsed = BaseCommand.FromString(memoryview(self._source)[self._command_start : self._command_end])
        return parsed


_new_frame = object.__new__


def entry_frame(command: BaseCommand, entry: memoryview, checksum: int | None, broker_meta: bytes | None) -> Frame:
    """A decoded SEND or MESSAGE frame around a view of its entry (made without ``__init__``: the
    broker decodes one per SEND)."""
    frame = _new_frame(Frame)
    frame.command = command
    frame.entry_view = entry
    frame._entry = None
    frame.checksum = checksum
    frame.broker_entry_metadata = broker_meta
    return frame
