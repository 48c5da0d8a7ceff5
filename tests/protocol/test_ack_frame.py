"""The hand-written ACK frame against protobuf's encoding of the same command, byte for byte."""

from __future__ import annotations

import random

from magnetar.protocol.ack_frame import encode_ack_frame
from magnetar.protocol.enums import AckType, CommandType
from magnetar.protocol.framing import FrameDecoder, encode_command
from magnetar.protocol.schema import BaseCommand, MessageIdData

_U64 = (1 << 64) - 1


def _protobuf_frame(consumer_id: int, ack_type: AckType, acks: dict[tuple[int, int], MessageIdData | None]) -> bytes:
    cmd = BaseCommand(type=CommandType.ACK)
    cmd.ack.consumer_id = consumer_id
    cmd.ack.ack_type = ack_type
    for (ledger_id, entry_id), data in acks.items():
        if data is None:
            cmd.ack.message_id.add(ledger_id=ledger_id & _U64, entry_id=entry_id & _U64)
        else:
            cmd.ack.message_id.append(data)
    return encode_command(cmd)


def _random_value(rng: random.Random) -> int:
    bits = rng.choice((3, 7, 8, 14, 15, 21, 22, 28, 29, 35, 42, 56, 63))
    return rng.randrange(1 << bits)


def _random_acks(rng: random.Random) -> dict[tuple[int, int], MessageIdData | None]:
    acks: dict[tuple[int, int], MessageIdData | None] = {}
    ledgers = [_random_value(rng) for _ in range(rng.randint(1, 3))]
    for _ in range(rng.randint(1, 40)):
        ledger_id = rng.choice(ledgers)
        entry_id = _random_value(rng) if rng.random() < 0.5 else rng.randrange(1 << 20)
        if rng.random() < 0.15:
            data = MessageIdData(ledger_id=ledger_id, entry_id=entry_id)
            data.ack_set.extend(rng.randrange(-(1 << 63), 1 << 63) for _ in range(rng.randint(0, 3)))
            if rng.random() < 0.5:
                data.batch_size = rng.randint(1, 200)
            acks[(ledger_id, entry_id)] = data
        else:
            acks[(ledger_id, entry_id)] = None
    return acks


def test_random_acks_match_protobuf_byte_for_byte() -> None:
    rng = random.Random(14)
    for _ in range(3000):
        acks = _random_acks(rng)
        consumer_id = _random_value(rng)
        ack_type = rng.choice((AckType.Individual, AckType.Cumulative))
        assert encode_ack_frame(consumer_id, ack_type, acks) == _protobuf_frame(consumer_id, ack_type, acks)


def test_a_full_frame_of_consecutive_entries_decodes_to_the_exact_ids() -> None:
    for first in (0, 16_380, 2_097_100, 268_435_400, 1 << 40):
        acks: dict[tuple[int, int], MessageIdData | None] = {(77, e): None for e in range(first, first + 1000)}
        frame = encode_ack_frame(3, AckType.Individual, acks)
        assert frame == _protobuf_frame(3, AckType.Individual, acks)
        (decoded,) = FrameDecoder(1 << 20).feed(frame)
        ack = decoded.command.ack
        assert ack.consumer_id == 3 and ack.ack_type == AckType.Individual
        assert [(m.ledger_id, m.entry_id) for m in ack.message_id] == list(acks)
        assert not any(m.HasField("batch_index") or m.ack_set for m in ack.message_id)


def test_negative_ids_are_written_as_the_wire_uint64() -> None:
    acks: dict[tuple[int, int], MessageIdData | None] = {(-1, -1): None, (5, -2): None}
    assert encode_ack_frame(1, AckType.Individual, acks) == _protobuf_frame(1, AckType.Individual, acks)
