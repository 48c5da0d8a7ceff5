"""encode_payload_frame: a SEND frame written as two pieces is the frame of the joined entry."""

from __future__ import annotations

import random

import pytest

from magnetar.protocol.enums import CommandType
from magnetar.protocol.framing import FrameDecoder, encode_payload_command, encode_payload_frame
from magnetar.protocol.schema import BaseCommand, MessageMetadata


def _send(sequence_id: int, count: int) -> BaseCommand:
    cmd = BaseCommand(type=CommandType.SEND)
    cmd.send.producer_id = 3
    cmd.send.sequence_id = sequence_id
    if count > 1:
        cmd.send.num_messages = count
        cmd.send.highest_sequence_id = sequence_id + count - 1
    return cmd


@pytest.mark.parametrize("payload_size", [0, 1, 100, 4096, 128 * 1024 + 7])
def test_two_pieces_are_the_bytes_of_the_joined_frame(payload_size: int) -> None:
    rng = random.Random(payload_size)
    payload = rng.randbytes(payload_size)
    meta = MessageMetadata(producer_name="p-1", sequence_id=40, publish_time=1_700_000_000_000, num_messages_in_batch=5)
    meta_bytes = meta.SerializeToString()
    cmd = _send(40, 5)
    head, body = encode_payload_frame(cmd, meta_bytes, payload)
    assert body is payload  # the payload is not copied
    entry = len(meta_bytes).to_bytes(4, "big") + meta_bytes + payload
    assert head + body == encode_payload_command(cmd, entry)


def test_decoded_frame_carries_the_entry_and_a_valid_checksum() -> None:
    meta_bytes = MessageMetadata(producer_name="p", sequence_id=7, publish_time=1).SerializeToString()
    payload = b"x" * 1000
    head, body = encode_payload_frame(_send(7, 1), meta_bytes, payload)
    (frame,) = FrameDecoder(1 << 20).feed(head + body)
    assert frame.command.send.sequence_id == 7
    assert frame.checksum_ok()
    assert frame.entry == len(meta_bytes).to_bytes(4, "big") + meta_bytes + payload
