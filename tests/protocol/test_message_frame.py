"""MESSAGE frames read by hand (:class:`MessageFrame`): the same fields as protobuf, or a plain frame."""

from __future__ import annotations

import random
import struct

import pytest

from magnetar.protocol.enums import CommandType
from magnetar.protocol.frame import Frame, ProtocolError, crc32c
from magnetar.protocol.framing import FrameDecoder, encode_entry, encode_payload_command
from magnetar.protocol.message_frame import MessageFrame
from magnetar.protocol.schema import BaseCommand, MessageMetadata

U32 = struct.Struct(">I")
VALUES = [0, 1, 127, 128, 300, 16383, 16384, 2**21, 2**32 - 1, 2**32, 2**35 + 7, 2**63 - 1, 2**63, 2**64 - 1]


def _command(rng: random.Random) -> BaseCommand:
    cmd = BaseCommand(type=CommandType.MESSAGE)
    m = cmd.message
    m.consumer_id = rng.choice(VALUES)
    m.message_id.ledger_id = rng.choice(VALUES)
    m.message_id.entry_id = rng.choice(VALUES)
    extra = rng.random()
    if extra < 0.1:
        m.message_id.partition = rng.choice([-1, 0, 3])
    elif extra < 0.2:
        m.message_id.batch_index = rng.choice([-1, 0, 5])
    elif extra < 0.3:
        m.ack_set.extend([-1, 5])
    if rng.random() < 0.5:
        m.redelivery_count = rng.choice([0, 1, 127, 128, 2**32 - 1])
    if rng.random() < 0.3:
        m.consumer_epoch = rng.choice(VALUES)
    return cmd


def _fields(frame: Frame) -> tuple:
    m = frame.command.message
    return (frame.command.type, m.consumer_id, m.message_id.ledger_id, m.message_id.entry_id, m.redelivery_count,
            bytes(frame.entry_view), frame.checksum, frame.broker_entry_metadata)


def test_random_message_frames_match_protobuf_byte_for_byte() -> None:
    rng = random.Random(14)
    fast = 0
    for i in range(3000):
        cmd = _command(rng)
        payload = rng.randbytes(rng.choice([0, 1, 100, 1000]))
        entry = encode_entry(MessageMetadata(producer_name="p", sequence_id=i, publish_time=i), payload)
        wire = encode_payload_command(cmd, entry)
        [frame] = FrameDecoder(1 << 20).feed(wire)
        expected = BaseCommand.FromString(wire[8 : 8 + U32.unpack_from(wire, 4)[0]])
        assert frame.command == expected
        assert bytes(frame.entry_view) == entry and frame.entry == entry
        assert frame.checksum == crc32c(entry) and frame.checksum_ok()
        if isinstance(frame, MessageFrame):
            fast += 1
            m = expected.message
            assert (frame.consumer_id, frame.ledger_id, frame.entry_id, frame.redelivery_count) == (
                m.consumer_id, m.message_id.ledger_id, m.message_id.entry_id, m.redelivery_count)
            assert not m.ack_set and not m.message_id.HasField("partition") and not m.message_id.HasField("batch_index")
            assert frame.type == CommandType.MESSAGE
        else:
            m = expected.message
            assert m.ack_set or m.message_id.HasField("partition") or m.message_id.HasField("batch_index")
    assert fast > 2000


def test_message_frames_split_anywhere_decode_the_same() -> None:
    rng = random.Random(7)
    wires = []
    for i in range(200):
        entry = encode_entry(MessageMetadata(producer_name="p", sequence_id=i, publish_time=1), rng.randbytes(i))
        wires.append(encode_payload_command(_command(rng), entry))
    stream = b"".join(wires)
    whole = [_fields(f) for f in FrameDecoder(1 << 20).feed(stream)]
    for _ in range(20):
        decoder = FrameDecoder(1 << 20)
        got: list[Frame] = []
        pos = 0
        while pos < len(stream):
            step = rng.randint(1, 300)
            got += decoder.feed(stream[pos : pos + step])
            pos += step
        assert [_fields(f) for f in got] == whole
        assert sum(isinstance(f, MessageFrame) for f in got) == sum(isinstance(f, MessageFrame) for f in FrameDecoder(1 << 20).feed(stream))


def test_message_without_checksum_or_with_broker_metadata_is_a_plain_frame() -> None:
    cmd = BaseCommand(type=CommandType.MESSAGE)
    cmd.message.consumer_id = 1
    cmd.message.message_id.ledger_id = 2
    cmd.message.message_id.entry_id = 3
    body = cmd.SerializeToString()
    entry = encode_entry(MessageMetadata(producer_name="p", sequence_id=1, publish_time=1), b"x")
    plain = U32.pack(len(body)) + body + entry
    [frame] = FrameDecoder(1 << 20).feed(U32.pack(len(plain)) + plain)
    assert not isinstance(frame, MessageFrame) and frame.entry == entry and frame.checksum is None


@pytest.mark.parametrize("cut", range(1, 40))
def test_truncated_or_corrupted_message_frames_never_decode_differently(cut: int) -> None:
    rng = random.Random(cut)
    cmd = BaseCommand(type=CommandType.MESSAGE)
    cmd.message.consumer_id = 5
    cmd.message.message_id.ledger_id = 300
    cmd.message.message_id.entry_id = 70000
    cmd.message.redelivery_count = 2
    entry = encode_entry(MessageMetadata(producer_name="p", sequence_id=1, publish_time=1), b"payload")
    wire = bytearray(encode_payload_command(cmd, entry))
    for _ in range(50):
        broken = bytearray(wire)
        broken[8 + rng.randrange(min(cut, len(broken) - 8))] = rng.randrange(256)
        try:
            [frame] = FrameDecoder(1 << 20).feed(bytes(broken))
        except ProtocolError:  # the general decoder judged it
            continue
        if isinstance(frame, MessageFrame):
            size = U32.unpack_from(broken, 4)[0]
            expected = BaseCommand.FromString(bytes(broken[8 : 8 + size]))
            m = expected.message
            assert (frame.consumer_id, frame.ledger_id, frame.entry_id, frame.redelivery_count) == (
                m.consumer_id, m.message_id.ledger_id, m.message_id.entry_id, m.redelivery_count)


def _similar_command(rng: random.Random, base_entry: int) -> BaseCommand:
    """A MESSAGE command as a broker sends them in a run: mostly one consumer and ledger, entry ids
    close together (across varint lengths), now and then another redelivery count or epoch."""
    cmd = BaseCommand(type=CommandType.MESSAGE)
    m = cmd.message
    m.consumer_id = 3 if rng.random() < 0.9 else rng.choice(VALUES)
    m.message_id.ledger_id = 77 if rng.random() < 0.9 else rng.choice(VALUES)
    m.message_id.entry_id = max(0, base_entry + rng.randint(-3, 3))
    if rng.random() < 0.05:
        m.message_id.batch_index = 0
    if rng.random() < 0.2:
        m.redelivery_count = rng.choice([0, 1, 2, 200])
    if rng.random() < 0.2:
        m.consumer_epoch = rng.choice([0, 1, 5])
    return cmd


def _alone(wire: bytes) -> list[tuple]:
    """The frame decoded by a fresh decoder (nothing remembered from earlier frames)."""
    return [(type(f), _fields(f), getattr(f, "entry_id", None), getattr(f, "redelivery_count", None))
            for f in FrameDecoder(1 << 20).feed(wire)]


def test_runs_of_similar_frames_decode_as_each_frame_alone() -> None:
    rng = random.Random(21)
    wires = []
    for i in range(3000):
        base = rng.choice([5, 126, 16380, 2**21 - 2, 2**28 - 2, 2**35])
        entry = encode_entry(MessageMetadata(producer_name="p", sequence_id=i, publish_time=i), rng.randbytes(rng.randint(0, 50)))
        wires.append(encode_payload_command(_similar_command(rng, base), entry))
    stream = b"".join(wires)
    expected = [frame for wire in wires for frame in _alone(wire)]
    assert sum(t is MessageFrame for t, *_ in expected) > 2500
    for _ in range(5):
        decoder = FrameDecoder(1 << 20)
        got = []
        pos = 0
        while pos < len(stream):
            step = rng.randint(1, 5000)
            got += [(type(f), _fields(f), getattr(f, "entry_id", None), getattr(f, "redelivery_count", None))
                    for f in decoder.frames(stream[pos : pos + step])]
            pos += step
        assert got == expected


def test_a_corrupted_frame_after_a_good_one_decodes_as_alone() -> None:
    rng = random.Random(5)
    for i in range(3000):
        good = encode_payload_command(_similar_command(rng, 300), encode_entry(
            MessageMetadata(producer_name="p", sequence_id=i, publish_time=1), b"payload"))
        broken = bytearray(encode_payload_command(_similar_command(rng, 300), encode_entry(
            MessageMetadata(producer_name="p", sequence_id=i, publish_time=1), b"payload")))
        at = 4 + rng.randrange(min(40, len(broken) - 4))
        broken[at] = rng.randrange(256)
        decoder = FrameDecoder(1 << 20)
        list(decoder.frames(good))
        try:
            alone = _alone(bytes(broken))
        except ProtocolError:
            with pytest.raises(ProtocolError):
                list(decoder.frames(bytes(broken)))
            continue
        got = [(type(f), _fields(f), getattr(f, "entry_id", None), getattr(f, "redelivery_count", None))
               for f in decoder.frames(bytes(broken))]
        assert got == alone
