"""SEND frames read by hand (:class:`SendFrame`): the same fields as protobuf, or a plain frame."""

from __future__ import annotations

import random
import struct

import pytest

from magnetar.protocol.enums import CommandType
from magnetar.protocol.frame import Frame, ProtocolError, crc32c
from magnetar.protocol.framing import FrameDecoder, encode_command, encode_entry, encode_payload_command
from magnetar.protocol.schema import BaseCommand, MessageMetadata
from magnetar.protocol.send_frame import SendFrame

U32 = struct.Struct(">I")
VALUES = [0, 1, 127, 128, 300, 16383, 16384, 2**21, 2**32 - 1, 2**32, 2**35 + 7, 2**63 - 1, 2**63, 2**64 - 1]


def _command(rng: random.Random) -> tuple[BaseCommand, bool]:
    """A random SEND command, and whether it has the usual shape (read by hand)."""
    cmd = BaseCommand(type=CommandType.SEND)
    s = cmd.send
    s.producer_id = rng.choice(VALUES)
    s.sequence_id = rng.choice(VALUES)
    if rng.random() < 0.5:
        s.num_messages = rng.choice([0, 1, 2, 127, 128, 1000, 2**31 - 1, -1])
    if rng.random() < 0.4:
        s.highest_sequence_id = rng.choice(VALUES)
    usual = not (s.HasField("num_messages") and s.num_messages < 0)
    extra = rng.random()
    if extra < 0.08:
        s.txnid_most_bits, s.txnid_least_bits = rng.choice(VALUES), rng.choice(VALUES)
        usual = False
    elif extra < 0.14:
        s.is_chunk = rng.random() < 0.5
        usual = False
    elif extra < 0.18:
        s.marker = True
        usual = False
    elif extra < 0.22:
        s.message_id.ledger_id, s.message_id.entry_id = 3, 4
        usual = False
    return cmd, usual


def _fields(frame: Frame) -> tuple:
    s = frame.command.send
    return (frame.command.type, s.producer_id, s.sequence_id, s.num_messages, s.highest_sequence_id,
            bytes(frame.entry_view), frame.checksum, frame.broker_entry_metadata)


def test_random_send_frames_match_protobuf_byte_for_byte() -> None:
    rng = random.Random(27)
    fast = slow = 0
    for i in range(3000):
        cmd, usual = _command(rng)
        payload = rng.randbytes(rng.choice([0, 1, 100, 1000]))
        entry = encode_entry(MessageMetadata(producer_name="p", sequence_id=i, publish_time=i), payload)
        wire = encode_payload_command(cmd, entry)
        [frame] = FrameDecoder(1 << 20).feed(wire)
        expected = BaseCommand.FromString(wire[8 : 8 + U32.unpack_from(wire, 4)[0]])
        assert frame.command == expected
        assert bytes(frame.entry_view) == entry and frame.entry == entry
        assert frame.checksum == crc32c(entry) and frame.checksum_ok()
        assert frame.type == CommandType.SEND
        assert isinstance(frame, SendFrame) == usual, cmd
        if isinstance(frame, SendFrame):
            fast += 1
            s = expected.send
            assert (frame.producer_id, frame.sequence_id, frame.num_messages, frame.highest_sequence_id) == (
                s.producer_id, s.sequence_id, s.num_messages, s.highest_sequence_id)
        else:
            slow += 1
    assert fast > 2000 and slow > 300


def test_every_decoder_path_reads_the_usual_send_by_hand_in_order() -> None:
    # three SENDs sent whole, split across reads (the buffered path), and through frames()
    entries = [encode_entry(MessageMetadata(producer_name="p", sequence_id=i, publish_time=i), bytes([i]) * 50)
               for i in range(3)]
    wires = []
    for i, entry in enumerate(entries):
        cmd = BaseCommand(type=CommandType.SEND)
        cmd.send.producer_id, cmd.send.sequence_id, cmd.send.num_messages = 7, 1000 + i, 1
        wires.append(encode_payload_command(cmd, entry))
    stream = b"".join(wires)
    for cut in (1, 5, 9, 40, len(wires[0]) + 3):
        decoder = FrameDecoder(1 << 20)
        frames = decoder.feed(stream[:cut]) + decoder.feed(stream[cut:])
        assert [f.__class__ for f in frames] == [SendFrame] * 3
        assert [(f.producer_id, f.sequence_id, f.entry) for f in frames] == [(7, 1000 + i, e) for i, e in enumerate(entries)]
    frames = list(FrameDecoder(1 << 20).frames(stream))
    assert [(f.__class__, f.sequence_id, f.entry) for f in frames] == [(SendFrame, 1000 + i, e) for i, e in enumerate(entries)]


def test_a_send_without_a_checksum_or_with_a_bad_metadata_size_goes_to_the_general_decoder() -> None:
    entry = encode_entry(MessageMetadata(producer_name="p", sequence_id=1, publish_time=1), b"x" * 20)
    cmd = BaseCommand(type=CommandType.SEND)
    cmd.send.producer_id, cmd.send.sequence_id = 1, 2
    body = cmd.SerializeToString()
    plain = U32.pack(4 + len(body) + len(entry)) + U32.pack(len(body)) + body + entry  # no checksum section
    [frame] = FrameDecoder(1 << 20).feed(plain)
    assert frame.__class__ is Frame and frame.checksum is None and frame.entry == entry
    assert frame.command.send.sequence_id == 2
    wire = bytearray(encode_payload_command(cmd, entry))
    meta_at = 8 + len(body) + 6
    wire[meta_at : meta_at + 4] = U32.pack(10_000)  # a metadata size past the frame's end
    with pytest.raises(ProtocolError, match="overruns"):
        FrameDecoder(1 << 20).feed(bytes(wire))


def test_a_send_without_a_payload_is_not_read_by_hand() -> None:
    cmd = BaseCommand(type=CommandType.SEND)
    cmd.send.producer_id, cmd.send.sequence_id = 1, 2
    [frame] = FrameDecoder(1 << 20).feed(encode_command(cmd))
    assert frame.__class__ is Frame and frame.entry is None
