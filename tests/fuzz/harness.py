"""Fuzz targets: the frame decoder, and every command handler of a broker session.

One input is a byte string. :func:`decode_target` feeds it to a :class:`FrameDecoder` in pieces.
:class:`SessionTarget` turns it into a stream of frames for a real broker session (a
``ServerConnection`` on an in-process :class:`BrokerService` over a fake transport): after a valid
CONNECT, each piece of the input picks a command type and its protobuf bytes (and, for SEND, a
payload), or, now and then, raw bytes that break the framing. What must hold for every input: no
exception escapes the session or the event loop, a bad frame closes that connection only, and the
session's state goes when the connection goes.
"""

from __future__ import annotations

import asyncio
import struct
import tempfile
from pathlib import Path
from typing import Any

from magnetar.broker.config import BrokerConfig
from magnetar.broker.service import BrokerService
from magnetar.broker.session.connection import ServerConnection
from magnetar.protocol.enums import COMMAND_FIELD, CommandType
from magnetar.protocol.framing import (
    FrameDecoder,
    ProtocolError,
    crc32c,
    encode_command,
    encode_payload_command,
)
from magnetar.protocol.schema import BaseCommand

MAX_FRAME = 1 << 20
#: command types in the order a selector byte picks them (CONNECT is sent once, first)
COMMAND_TYPES = sorted(t for t in COMMAND_FIELD if t != 2)


def split(data: bytes) -> list[bytes]:
    """Pieces of an input: each is prefixed by one length byte."""
    out, pos = [], 0
    while pos < len(data):
        n = data[pos]
        out.append(data[pos + 1 : pos + 1 + n])
        pos += 1 + n
    return out


def decode_target(data: bytes) -> int:
    """Feed ``data`` to a frame decoder in pieces; returns the frames decoded. Only ProtocolError
    may come out (and then the decoder stays failed)."""
    decoder = FrameDecoder(MAX_FRAME)
    frames = 0
    for piece in split(data) or [data]:
        try:
            frames += len(decoder.feed(piece))
        except ProtocolError:
            try:
                decoder.feed(b"\x00")
            except ProtocolError:
                return frames
            raise AssertionError("a failed decoder accepted more input") from None
    return frames


def command_frame(piece: bytes) -> bytes:
    """One frame built from a piece: a command type, its protobuf bytes, a payload for SEND."""
    if not piece:
        return b""
    selector, body = piece[0], piece[1:]
    if selector == 0xFF:  # raw bytes: whatever the framing makes of them
        return body
    kind = COMMAND_TYPES[selector % len(COMMAND_TYPES)]
    command = BaseCommand(type=kind)
    sub = getattr(command, COMMAND_FIELD[kind])
    try:
        sub.MergeFromString(body)
    except Exception:  # noqa: BLE001 - undecodable protobuf: the command keeps only its type
        sub.SetInParent()
    else:
        sub.SetInParent()
    try:
        if selector & 0x80 and kind == 6:  # SEND with a payload: metadata size, metadata, payload
            entry = struct.pack(">I", min(len(body), 8)) + body
            return encode_payload_command(command, entry, crc32c(entry))
        return encode_command(command)
    except Exception:  # noqa: BLE001 - required fields missing: send the bare serialisation
        raw = command.SerializePartialToString()
        return struct.pack(">II", len(raw) + 4, len(raw)) + raw


class FakeTransport(asyncio.Transport):
    """Collects what the session writes; closing marks it closed."""

    def __init__(self) -> None:
        super().__init__()
        self.written = 0
        self.closed = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        """A loopback peer, no TLS."""
        return ("127.0.0.1", 40000) if name == "peername" else default

    def write(self, data: bytes) -> None:
        """Count the bytes."""
        self.written += len(data)

    def writelines(self, chunks: Any) -> None:
        """Count the bytes."""
        for chunk in chunks:
            self.written += len(chunk)

    def is_closing(self) -> bool:
        """Whether the session closed it."""
        return self.closed

    def close(self) -> None:
        """Mark closed."""
        self.closed = True

    def abort(self) -> None:
        """Mark closed."""
        self.closed = True

    def pause_reading(self) -> None:
        """Nothing to pause."""

    def resume_reading(self) -> None:
        """Nothing to resume."""

    def get_write_buffer_size(self) -> int:
        """Always drained."""
        return 0


CONNECT = encode_command(BaseCommand(type=2, connect={"client_version": "fuzz", "protocol_version": 21}))


class SessionTarget:
    """A broker service on a private loop and data directory; each input runs one connection."""

    def __init__(self, data_dir: Path | None = None) -> None:
        """Start the service (fsync off: the fuzz is about input handling, not durability)."""
        self._tmp = None if data_dir is not None else tempfile.TemporaryDirectory(prefix="magnetar-fuzz-")
        directory = data_dir if data_dir is not None else Path(self._tmp.name)  # type: ignore[union-attr]
        self.loop = asyncio.new_event_loop()
        self.errors: list[dict] = []
        self.loop.set_exception_handler(lambda _loop, context: self.errors.append(context))
        config = BrokerConfig(data_dir=directory, fsync="never", http_port=0, port=0)
        self.service = BrokerService(config)
        self.loop.run_until_complete(self.service.start())

    def run(self, data: bytes) -> bool:
        """Run one input through a fresh connection; returns whether the session closed it.
        Raises what escaped the session or the loop."""
        return self.loop.run_until_complete(self._one(data))

    async def _one(self, data: bytes) -> bool:
        session = ServerConnection(self.service)
        transport = FakeTransport()
        session.connection_made(transport)
        session.data_received(CONNECT)
        for piece in split(data):
            if transport.closed:
                break
            session.data_received(command_frame(piece))
            await asyncio.sleep(0)
            await session.settled()  # a PRODUCER / SUBSCRIBE whose topic loads is answered before the next piece
        await asyncio.sleep(0)
        session.connection_lost(None)
        await asyncio.sleep(0)
        if self.errors:
            context = self.errors.pop()
            self.errors.clear()
            raise AssertionError(f"unhandled error on the loop: {context.get('message')}") from context.get("exception")
        assert session not in self.service.connections, "the connection's state outlived it"
        return transport.closed

    def close(self) -> None:
        """Stop the service and the loop."""
        self.service.running = True
        self.loop.run_until_complete(self.service.stop())
        self.loop.close()
        if self._tmp is not None:
            self._tmp.cleanup()


TOPIC = "persistent://public/default/fuzz"


def piece(kind: int, fields: dict, payload: bool = False) -> bytes:
    """One input piece for a command of type ``kind`` with ``fields`` (the seeds of the corpus)."""
    sub = getattr(BaseCommand(type=kind), COMMAND_FIELD[kind])
    for name, value in fields.items():
        if isinstance(value, list):
            for item in value:
                getattr(sub, name).add(**item)
        else:
            setattr(sub, name, value)
    body = bytes([COMMAND_TYPES.index(kind) | (0x80 if payload else 0)]) + sub.SerializePartialToString()
    return bytes([len(body)]) + body if len(body) < 256 else b""


def seeds() -> dict[str, bytes]:
    """Valid command sequences that reach deep into the handlers: the corpus starts from these."""
    t = CommandType
    producer = piece(t.PRODUCER, {"topic": TOPIC, "producer_id": 1, "request_id": 1})
    send = piece(t.SEND, {"producer_id": 1, "sequence_id": 0, "num_messages": 1}, payload=True)
    subscribe = piece(t.SUBSCRIBE, {"topic": TOPIC, "subscription": "s", "sub_type": 1, "consumer_id": 1, "request_id": 2})
    flow = piece(t.FLOW, {"consumer_id": 1, "message_permits": 100})
    message_id = [{"ledger_id": 1, "entry_id": 0}]
    ack = piece(t.ACK, {"consumer_id": 1, "ack_type": 0, "message_id": message_id})
    cumulative = piece(t.ACK, {"consumer_id": 1, "ack_type": 1, "message_id": message_id})
    redeliver = piece(t.REDELIVER_UNACKNOWLEDGED_MESSAGES, {"consumer_id": 1})
    return {
        "produce": producer + send + send + piece(t.CLOSE_PRODUCER, {"producer_id": 1, "request_id": 3}),
        "consume": subscribe + flow + ack + redeliver + piece(t.UNSUBSCRIBE, {"consumer_id": 1, "request_id": 4}),
        "produce-consume": producer + subscribe + flow + send + send + cumulative,
        "lookup": piece(t.LOOKUP, {"topic": TOPIC, "request_id": 5})
        + piece(t.PARTITIONED_METADATA, {"topic": TOPIC, "request_id": 6}),
        "namespace": piece(t.GET_TOPICS_OF_NAMESPACE, {"namespace": "public/default", "request_id": 7}),
        "seek": subscribe + piece(t.SEEK, {"consumer_id": 1, "request_id": 8, "message_publish_time": 1}),
        "last-id": subscribe + piece(t.GET_LAST_MESSAGE_ID, {"consumer_id": 1, "request_id": 9})
        + piece(t.CLOSE_CONSUMER, {"consumer_id": 1, "request_id": 10}),
        "schema": piece(t.GET_SCHEMA, {"topic": TOPIC, "request_id": 11}),
        "ping": piece(t.PING, {}) + piece(t.PONG, {}),
        "raw": bytes([3, 0xFF, 0, 0]) + bytes([9, 0xFF]) + b"\x00\x00\x00\x04\x00\x00\x00\x00",
    }
