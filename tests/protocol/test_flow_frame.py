"""FLOW frames read by hand (:class:`FlowFrame`): the same fields as protobuf, or a plain frame."""

from __future__ import annotations

import random
import struct

import pytest

from magnetar.protocol.enums import CommandType
from magnetar.protocol.flow_frame import FlowFrame
from magnetar.protocol.frame import Frame, ProtocolError
from magnetar.protocol.framing import FrameDecoder, encode_command
from magnetar.protocol.schema import BaseCommand
from magnetar.protocol.varint import encode_varint

U32 = struct.Struct(">I")
IDS = [0, 1, 127, 128, 300, 16383, 16384, 2**21, 2**32 - 1, 2**32, 2**35 + 7, 2**63 - 1, 2**63, 2**64 - 1]
PERMITS = [0, 1, 127, 128, 500, 1000, 16384, 2**31 - 1, 2**31, 2**32 - 1]


def _flow(consumer_id: int, permits: int) -> BaseCommand:
    cmd = BaseCommand(type=CommandType.FLOW)
    cmd.flow.consumer_id, cmd.flow.message_permits = consumer_id, permits
    return cmd


def _wire(body: bytes) -> bytes:
    """A frame around a command's bytes, whatever they are."""
    return U32.pack(4 + len(body)) + U32.pack(len(body)) + body


def _by_hand(consumer_id: int, permits: int, tail: bytes = b"") -> bytes:
    """A FLOW command's bytes written without protobuf (to make shapes protobuf would not write)."""
    inner = b"\x08" + encode_varint(consumer_id) + b"\x10" + encode_varint(permits) + tail
    return b"\x08\x0b\x5a" + encode_varint(len(inner)) + inner


def test_random_flow_frames_match_protobuf_byte_for_byte() -> None:
    rng = random.Random(39)
    for _ in range(2000):
        cmd = _flow(rng.choice(IDS), rng.choice(PERMITS))
        wire = encode_command(cmd)
        [frame] = FrameDecoder(1 << 20).feed(wire)
        assert frame.__class__ is FlowFrame
        expected = BaseCommand.FromString(wire[8:])
        assert (frame.consumer_id, frame.message_permits) == (expected.flow.consumer_id, expected.flow.message_permits)
        assert frame.command == expected == cmd
        assert frame.type == CommandType.FLOW and frame.entry is None and frame.checksum is None


@pytest.mark.parametrize(
    "body",
    [
        # the permits first, then the consumer id: valid, not the usual order
        b"\x08\x0b\x5a\x04\x10\x05\x08\x07",
        # an unknown field after the permits
        _by_hand(7, 5, b"\x18\x01"),
        # the permits past uint32: protobuf keeps the low 32 bits
        _by_hand(7, 2**32 + 5),
        # only a consumer id (a required field missing: the general decoder's to judge)
        b"\x08\x0b\x5a\x02\x08\x07",
        # the type then another field before flow
        b"\x08\x0b\x10\x01\x5a\x04\x08\x07\x10\x05",
    ],
)
def test_other_shapes_go_to_the_general_decoder(body: bytes) -> None:
    [frame] = FrameDecoder(1 << 20).feed(_wire(body))
    assert frame.__class__ is Frame
    assert frame.command == BaseCommand.FromString(body)


def test_a_flow_with_bytes_after_its_command_is_not_read_by_hand() -> None:
    body = encode_command(_flow(7, 5))[8:]
    wire = U32.pack(4 + len(body) + 14) + U32.pack(len(body)) + body + b"\x0e\x01" + b"\0" * 12
    [frame] = FrameDecoder(1 << 20).feed(wire)
    assert frame.__class__ is Frame and frame.command.flow.message_permits == 5


def test_a_truncated_flow_fails_in_the_general_decoder() -> None:
    body = _by_hand(7, 500)[:-1]  # the permits' varint cut: the length byte promises one more
    with pytest.raises(ProtocolError, match="undecodable"):
        FrameDecoder(1 << 20).feed(_wire(body))


def test_every_decoder_path_reads_the_usual_flow_by_hand_in_order() -> None:
    wires = [encode_command(_flow(3, 500 + i)) for i in range(3)]
    stream = b"".join(wires)
    for cut in range(1, len(stream)):
        decoder = FrameDecoder(1 << 20)
        frames = decoder.feed(stream[:cut]) + decoder.feed(stream[cut:])
        assert [(f.__class__, f.consumer_id, f.message_permits) for f in frames] == [(FlowFrame, 3, 500 + i) for i in range(3)]
    frames = list(FrameDecoder(1 << 20).frames(stream))
    assert [(f.__class__, f.message_permits) for f in frames] == [(FlowFrame, 500 + i) for i in range(3)]
