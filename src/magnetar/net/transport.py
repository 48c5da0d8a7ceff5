"""A write-batching ``asyncio.Protocol`` over the Pulsar framing, for both ends of a connection.

API (subclass :class:`FramedProtocol`; the broker's session and the client's connection do):

- ``FramedProtocol(max_frame_size)``; ``self.decoder.max_frame_size`` may change later.
- implement ``frame_received(frame)``: called once per decoded frame, in order, until closed.
- override ``protocol_error(exc)`` to log: the default aborts the connection.
- ``write(data)``, ``write_entry_frame(header, entry)``, ``send_command(cmd)`` queue bytes; all that
  is queued in one loop iteration goes out in one ``transport.writelines`` (``flush()`` forces it).
- ``flushed_at_exit()``: within it, a connection's writes go out when it exits (one ``writelines``
  each, in the same callback), not in the loop's next iteration (the broker's commit round, whose
  receipts would otherwise wait behind a turn of other callbacks and a poll of every socket).
- ``writable`` is False between ``pause_writing`` and ``resume_writing`` (override, call super).
- ``abort()`` drops queued bytes and closes now; ``close()`` flushes and then closes.
- ``closed`` turns True on abort/close/connection_lost; ``last_received`` is the monotonic
  time of the last bytes read. Overriders of ``connection_made``/``connection_lost`` call super.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from magnetar.protocol.framing import Frame, FrameDecoder, ProtocolError, encode_command
from magnetar.protocol.schema import BaseCommand


class _FlushBatch(threading.local):
    """Per thread: the connections written to within the innermost ``flushed_at_exit`` (None:
    outside any). A thread-local, not a ContextVar: a callback scheduled inside the block copies
    the context and would run later with a batch that was already flushed."""

    batch: list[FramedProtocol] | None = None


_flush = _FlushBatch()


@contextmanager
def flushed_at_exit() -> Iterator[None]:
    """Connections written to inside this block are flushed as it exits (on the loop's thread), in
    the order of their first write, instead of in the loop's next iteration."""
    outer, batch = _flush.batch, []
    _flush.batch = batch
    try:
        yield
    finally:
        _flush.batch = outer
        for protocol in batch:
            protocol.flush()


class FramedProtocol(asyncio.Protocol):
    """One connection: bytes in to frames out, queued output written once per loop iteration."""

    def __init__(self, max_frame_size: int) -> None:
        self.decoder = FrameDecoder(max_frame_size)
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.writable = True
        self.last_received = time.monotonic()
        self._out: list[bytes] = []
        self._flush_scheduled = False

    # -- to implement ----------------------------------------------------------------------
    def frame_received(self, frame: Frame) -> None:
        """Handle one decoded frame (subclasses implement this)."""
        raise NotImplementedError

    def protocol_error(self, exc: ProtocolError) -> None:
        """The peer sent bytes that break the framing: by default, abort the connection."""
        self.abort()

    # -- asyncio.Protocol ------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Keep the transport (overriders call super first)."""
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        """Decode the frames ``data`` completes and hand each to :meth:`frame_received`."""
        self.last_received = time.monotonic()
        try:
            frames = self.decoder.feed(data)
        except ProtocolError as exc:
            self.protocol_error(exc)
            return
        for frame in frames:
            if self.closed:
                return
            self.frame_received(frame)

    def connection_lost(self, exc: Exception | None) -> None:
        """Mark the connection closed (overriders call super)."""
        self.closed = True

    def pause_writing(self) -> None:
        """The transport's buffer is above its high-water mark."""
        self.writable = False

    def resume_writing(self) -> None:
        """The transport's buffer drained below its low-water mark."""
        self.writable = True

    # -- output ----------------------------------------------------------------------------
    def write(self, data: bytes) -> None:
        """Queue bytes; everything queued in one loop iteration goes out in one call."""
        self._out.append(data)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            batch = _flush.batch
            if batch is None:
                asyncio.get_running_loop().call_soon(self.flush)
            else:
                batch.append(self)

    def write_entry_frame(self, header: bytes, entry: bytes) -> None:
        """Queue a payload frame as its header and its entry bytes, without joining them."""
        self._out.append(header)
        self.write(entry)

    def send_command(self, command: BaseCommand) -> None:
        """Queue a simple (payload-less) command."""
        self.write(encode_command(command))

    def flush(self) -> None:
        """Write everything queued now, in one ``writelines``."""
        self._flush_scheduled = False
        out, self._out = self._out, []
        if out and self.transport is not None and not self.closed:
            self.transport.writelines(out)

    def abort(self) -> None:
        """Close the connection at once, dropping what is queued."""
        if self.transport is not None and not self.closed:
            self.closed = True
            self.transport.abort()

    def close(self) -> None:
        """Close the connection after writing what is queued."""
        if self.transport is not None and not self.closed:
            self.flush()
            self.closed = True
            self.transport.close()
