"""The hand-written MESSAGE frame head and SEND_RECEIPT are byte for byte what protobuf writes."""

from __future__ import annotations

import random

import pytest

from magnetar.protocol import commands
from magnetar.protocol.enums import CommandType
from magnetar.protocol.framing import FrameDecoder, encode_command, encode_entry_header
from magnetar.protocol.hot_frames import message_frame_head, send_receipt_frame
from magnetar.protocol.schema import BaseCommand


def protobuf_head(
    consumer_id: int, ledger_id: int, entry_id: int, partition: int, redelivery_count: int, size: int, crc: int
) -> bytes:
    cmd = BaseCommand(type=CommandType.MESSAGE)
    m = cmd.message
    m.consumer_id = consumer_id
    m.message_id.ledger_id = ledger_id
    m.message_id.entry_id = entry_id
    if partition >= 0:
        m.message_id.partition = partition
    if redelivery_count:
        m.redelivery_count = redelivery_count
    return encode_entry_header(cmd, size, crc)


EDGES = [0, 1, 127, 128, 16383, 16384, (1 << 31) - 1, (1 << 32) - 1, (1 << 63) - 1, (1 << 64) - 1]


@pytest.mark.parametrize("value", EDGES)
def test_edge_values_match_protobuf(value: int) -> None:
    small = min(value, (1 << 31) - 1)
    for args in [
        (value, 1, 2, -1, 0),
        (1, value, 2, -1, 0),
        (1, 2, value, -1, 0),
        (1, 2, 3, small, 0),
        (1, 2, 3, -1, min(value, (1 << 32) - 1)),
    ]:
        assert message_frame_head(*args, 100, 0xDEADBEEF) == protobuf_head(*args, 100, 0xDEADBEEF)


def test_random_values_match_protobuf() -> None:
    rng = random.Random(14)
    for _ in range(5000):
        bits = rng.choice([7, 14, 21, 32, 63, 64])
        args = (
            rng.getrandbits(bits),
            rng.getrandbits(rng.choice([7, 20, 40, 64])),
            rng.getrandbits(rng.choice([7, 20, 40, 64])),
            rng.choice([-1, 0, 1, rng.getrandbits(20)]),
            rng.choice([0, 0, 1, rng.getrandbits(31)]),
        )
        size, crc = rng.getrandbits(26), rng.getrandbits(32)
        assert message_frame_head(*args, size, crc) == protobuf_head(*args, size, crc), args


def test_the_frame_decodes_to_what_was_sent() -> None:
    entry = b"\x00\x00\x00\x02\x08\x01payload"
    frames = FrameDecoder(1 << 20).feed(message_frame_head(9, 77, 12345, 3, 2, len(entry), 0x1234) + entry)
    assert len(frames) == 1
    frame = frames[0]
    message = frame.command.message
    assert frame.command.type == CommandType.MESSAGE
    assert (message.consumer_id, message.message_id.ledger_id, message.message_id.entry_id) == (9, 77, 12345)
    assert (message.message_id.partition, message.redelivery_count) == (3, 2)
    assert frame.checksum == 0x1234 and bytes(frame.entry) == entry


def test_receipts_match_protobuf() -> None:
    rng = random.Random(7)
    cases = [(1, 0, 0, 0, 0), (0, 5, 0, -1, -1), (3, 9, 12, 17, 4), *[(v, v, v, v, v) for v in EDGES]]
    for _ in range(5000):
        cases.append(tuple(rng.getrandbits(rng.choice([7, 14, 32, 64])) for _ in range(5)))
    for producer_id, sequence_id, highest, ledger_id, entry_id in cases:
        expected = encode_command(commands.send_receipt(producer_id, sequence_id, highest, ledger_id, entry_id))
        assert send_receipt_frame(producer_id, sequence_id, highest, ledger_id, entry_id) == expected


def test_a_duplicate_receipt_decodes_as_minus_one() -> None:
    frame = FrameDecoder(1 << 20).feed(send_receipt_frame(2, 41, 0, -1, -1))[0]
    receipt = frame.command.send_receipt
    assert frame.command.type == CommandType.SEND_RECEIPT
    assert (receipt.producer_id, receipt.sequence_id, receipt.HasField("highest_sequence_id")) == (2, 41, False)
    assert (receipt.message_id.ledger_id, receipt.message_id.entry_id) == ((1 << 64) - 1, (1 << 64) - 1)
