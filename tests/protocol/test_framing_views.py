"""Decoded entries are views of the bytes received: valid after later reads, ``bytes`` on demand."""

from __future__ import annotations

import struct

from magnetar.protocol.enums import CommandType
from magnetar.protocol.framing import FrameDecoder, crc32c, encode_entry, encode_payload_command
from magnetar.protocol.schema import BaseCommand, MessageMetadata

U32 = struct.Struct(">I")


def _message_frame(entry_id: int, payload: bytes) -> tuple[bytes, bytes]:
    cmd = BaseCommand(type=CommandType.MESSAGE)
    cmd.message.consumer_id = 1
    cmd.message.message_id.ledger_id = 3
    cmd.message.message_id.entry_id = entry_id
    entry = encode_entry(MessageMetadata(producer_name="p", sequence_id=entry_id, publish_time=1), payload)
    return encode_payload_command(cmd, entry), entry


def test_entries_stay_exact_while_later_bytes_arrive() -> None:
    payloads = [b"", b"a", bytes(range(256)) * 3, b"z" * 70_000, b"tail"]
    wires, entries = zip(*(_message_frame(i, p) for i, p in enumerate(payloads)), strict=True)
    stream = b"".join(wires)
    decoder = FrameDecoder(1 << 20)
    frames = []
    for start in range(0, len(stream), 1000):  # frames start and end anywhere in a read
        frames += decoder.feed(stream[start : start + 1000])
    assert decoder.buffered == 0
    assert [bytes(f.entry_view) for f in frames] == list(entries)
    assert [f.entry for f in frames] == list(entries)
    assert all(type(f.entry) is bytes and f.checksum_ok() for f in frames)
    assert [f.checksum for f in frames] == [crc32c(e) for e in entries]


def test_a_frame_split_inside_its_length_prefix_decodes() -> None:
    wire, entry = _message_frame(9, b"payload")
    decoder = FrameDecoder(1 << 20)
    assert decoder.feed(wire[:2]) == [] and decoder.feed(wire[2:3]) == []
    (frame,) = decoder.feed(wire[3:] + wire[:5])
    assert frame.entry == entry and frame.command.message.message_id.entry_id == 9
    assert decoder.buffered == 5
    (again,) = decoder.feed(wire[5:])
    assert again.entry == entry and frame.entry == entry


def test_entry_view_of_a_bytearray_read_is_not_changed_by_reusing_it() -> None:
    wire, entry = _message_frame(1, b"kept")
    read = bytearray(wire)
    (frame,) = FrameDecoder(1 << 20).feed(read)
    read[:] = b"\0" * len(read)
    assert bytes(frame.entry_view) == entry and frame.entry == entry


def _send_frame(sequence_id: int, payload: bytes) -> tuple[bytes, bytes]:
    cmd = BaseCommand(type=CommandType.SEND)
    cmd.send.producer_id = 1
    cmd.send.sequence_id = sequence_id
    entry = encode_entry(MessageMetadata(producer_name="p", sequence_id=sequence_id, publish_time=1), payload)
    return encode_payload_command(cmd, entry), entry


def test_send_frames_completed_across_reads_keep_their_entries() -> None:
    # a SEND finished from buffered bytes is a view of the completed buffer, not a copy: the next
    # frames, begun in the same read, must go to a new buffer and leave it as it was
    sends = [_send_frame(i, bytes([i]) * (30_000 + i)) for i in range(6)]
    stream = b"".join(wire for wire, _ in sends)
    decoder = FrameDecoder(1 << 20)
    frames = []
    for start in range(0, len(stream), 7_001):
        frames += decoder.feed(stream[start : start + 7_001])
    assert decoder.buffered == 0
    assert [f.command.send.sequence_id for f in frames] == list(range(6))
    assert [bytes(f.entry_view) for f in frames] == [entry for _, entry in sends]
    assert [f.entry for f in frames] == [entry for _, entry in sends]
    assert all(type(f.entry) is bytes and f.checksum_ok() for f in frames)
