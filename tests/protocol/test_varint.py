"""The varint codec against protobuf's own encoding."""

from __future__ import annotations

import random

import pytest

from magnetar.protocol.schema import MessageIdData
from magnetar.protocol.varint import SMALL_VARINTS, encode_varint, read_varint, unzigzag, write_varint, zigzag


@pytest.mark.parametrize("value", [0, 1, 127, 128, 16383, 16384, 300_000, 2**32, 2**63 - 1, 2**64 - 1])
def test_varints_match_protobuf_and_round_trip(value: int) -> None:
    # MessageIdData field 1 (ledger_id, uint64) is tag 0x08 followed by the varint
    assert b"\x08" + encode_varint(value) == MessageIdData(ledger_id=value, entry_id=0).SerializeToString()[
        : 1 + len(encode_varint(value))
    ]
    assert read_varint(encode_varint(value)) == (value, len(encode_varint(value)))
    out = bytearray(b"x")
    write_varint(value, out)
    assert bytes(out) == b"x" + encode_varint(value)


def test_every_length_and_random_values_match_protobuf() -> None:
    # the table paths (one or two continued bytes + SMALL_VARINTS) cover 16384 .. 2**28 - 1; each length's edges
    edges = [v for bits in range(7, 71, 7) for v in (2**bits - 1, 2**bits, 2**bits + 1) if v < 2**64]
    rng = random.Random(22)
    values = [*edges, *(rng.getrandbits(rng.choice([14, 20, 28, 35, 64])) for _ in range(3000))]
    for value in values:
        assert encode_varint(value) == MessageIdData(ledger_id=value).SerializeToString()[1:], value


def test_negative_values_are_written_as_their_twos_complement() -> None:
    assert encode_varint(-1) == b"\xff" * 9 + b"\x01"
    assert read_varint(encode_varint(-1))[0] == 2**64 - 1


def test_small_table_and_reading_at_an_offset() -> None:
    assert SMALL_VARINTS[300] == b"\xac\x02"
    # every entry of the table (built from ranges of 16-bit integers) is protobuf's encoding of its index
    assert len(SMALL_VARINTS) == 16384
    assert all(b"\x08" + SMALL_VARINTS[value] == MessageIdData(ledger_id=value).SerializeToString() for value in range(16384))
    assert read_varint(b"\x00\xac\x02\x07", 1) == (300, 3)


def test_truncated_or_overlong_varints_are_refused() -> None:
    with pytest.raises(ValueError, match="ends inside"):
        read_varint(b"\x80\x80")
    with pytest.raises(ValueError, match="longer than ten bytes"):
        read_varint(b"\xff" * 11)


@pytest.mark.parametrize(("signed", "mapped"), [(0, 0), (-1, 1), (1, 2), (-2, 3), (2**63 - 1, 2**64 - 2), (-(2**63), 2**64 - 1)])
def test_zigzag(signed: int, mapped: int) -> None:
    assert zigzag(signed) == mapped
    assert unzigzag(mapped) == signed
