"""protocol/uniform_batch.py: a uniform batch read a column at a time, against the message by message
reading (batch_reading.split_each_message) of the same bytes."""

from __future__ import annotations

import pytest

from magnetar.protocol.batch import BatchMessage, encode_batch
from magnetar.protocol.batch_reading import split_batch_payload, split_each_message
from magnetar.protocol.schema import SingleMessageMetadata
from magnetar.protocol.uniform_batch import uniform_bodies, uniform_layout


def numbered(count: int, size: int, first: int) -> bytes:
    """A batch as the official producers write it: each message with its sequence id."""
    return encode_batch([BatchMessage(bytes([i % 251]) * size, sequence_id=first + i) for i in range(count)])


def bare(count: int, size: int) -> bytes:
    """A batch whose messages carry nothing but their payload size."""
    return encode_batch([BatchMessage(bytes([i % 251]) * size) for i in range(count)])


def check_same(payload: bytes, count: int, first: int, start: int = 0, end: int | None = None) -> list[bytes] | None:
    """uniform_bodies' answer, after checking it equals the message by message reading and what
    uniform_layout says."""
    end = len(payload) if end is None else end
    bodies = uniform_bodies(payload, count, first, start, end)
    layout = uniform_layout(payload, count, first, start, end)
    assert (layout is None) == (bodies is None)
    if bodies is not None:
        # where uniform_layout says the payloads lie, row by row, is what uniform_bodies sliced
        at, stride, size = layout
        assert [payload[at + i * stride : at + i * stride + size] for i in range(count)] == bodies
        singles, each = split_each_message(payload, count, first, start, end)
        assert bodies == each
        # what the loop keeps (sequence ids of four varint bytes or more, serialized) is nothing but
        # the payload size and the id the entry's first plus the index gives
        for index, single in singles.items():
            kept = SingleMessageMetadata.FromString(single) if isinstance(single, bytes) else single
            assert kept == SingleMessageMetadata(payload_size=len(each[index]), sequence_id=first + index)
    return bodies


@pytest.mark.parametrize("size", [0, 1, 100, 127, 128, 1024, 16383])
@pytest.mark.parametrize(("first", "count"), [(0, 2), (0, 128), (5, 100), (128, 1000), (16384, 128),
                                              (200_000, 1000), (2**21 - 128, 128), (2**21, 1000),
                                              (5_000_000, 1000), (2**35 + 77, 300), (2**63 - 1000, 1000)])
def test_numbered_batches_within_one_varint_length_are_uniform(size: int, first: int, count: int) -> None:
    payload = numbered(count, size, first)
    bodies = check_same(payload, count, first)
    assert bodies == [bytes([i % 251]) * size for i in range(count)]


@pytest.mark.parametrize(("first", "count"), [(0, 129), (100, 1000), (16000, 1000), (2**21 - 5, 10), (2**28 - 3, 8)])
def test_sequence_ids_across_a_varint_length_are_read_message_by_message(first: int, count: int) -> None:
    payload = numbered(count, 100, first)
    assert check_same(payload, count, first) is None
    singles, bodies = split_batch_payload(payload, count, first)
    assert bodies == [bytes([i % 251]) * 100 for i in range(count)]


@pytest.mark.parametrize("size", [0, 100, 1024, 16383])
def test_bare_batches_are_uniform_whatever_the_first_sequence(size: int) -> None:
    payload = bare(300, size)
    for first in (-1, 0, 7):
        assert check_same(payload, 300, first) == [bytes([i % 251]) * size for i in range(300)]


def test_a_batch_read_where_it_lies_in_a_larger_buffer() -> None:
    payload = numbered(128, 1024, 4000)
    buffer = b"head" * 10 + payload + b"tail"
    assert check_same(buffer, 128, 4000, 40, 40 + len(payload)) == [bytes([i % 251]) * 1024 for i in range(128)]


def test_what_is_not_uniform_is_left_to_the_message_by_message_reading() -> None:
    # one size differs
    mixed = encode_batch([BatchMessage(b"x" * (100 if i != 50 else 99), sequence_id=500 + i) for i in range(100)])
    assert check_same(mixed, 100, 500) is None
    # a sequence id that is not the first's plus its index
    skipped = encode_batch([BatchMessage(b"x" * 100, sequence_id=500 + i + (i >= 60)) for i in range(100)])
    assert check_same(skipped, 100, 500) is None
    # numbered messages while the entry gives no first sequence id: their ids are their own
    assert check_same(numbered(100, 100, 500), 100, -1) is None
    # a field of their own (a key) on every message
    keyed = encode_batch([BatchMessage(b"x" * 100, partition_key="k") for _ in range(100)])
    assert check_same(keyed, 100, -1) is None
    # sizes of three varint bytes; sequence ids of ten (2 ** 63 and over) or crossing 2 ** 63
    assert check_same(bare(3, 16384), 3, -1) is None
    assert check_same(numbered(3, 10, 2**63), 3, 2**63) is None
    assert check_same(numbered(3, 10, 2**63 - 2), 3, 2**63 - 2) is None
    # bytes of another type (the reading compares bytes columns)
    payload = numbered(100, 100, 500)
    assert uniform_bodies(bytearray(payload), 100, 500, 0, len(payload)) is None
    assert split_batch_payload(memoryview(payload), 100, 500)[1] == [bytes([i % 251]) * 100 for i in range(100)]
    # one message, the count wrong, bytes left over, a batch cut short
    assert check_same(numbered(1, 100, 5), 1, 5) is None
    assert check_same(numbered(10, 100, 5), 11, 5) is None
    assert check_same(numbered(10, 100, 5) + b"\x00", 10, 5) is None
    assert check_same(numbered(10, 100, 5)[:-1], 10, 5) is None


def test_a_row_with_a_different_head_in_a_batch_of_one_stride() -> None:
    payload = bytearray(numbered(100, 100, 500))
    stride = len(payload) // 100
    row = 70 * stride
    assert payload[row + 4] == 0x18
    payload[row + 4] = 0x20  # another field where the size should be, the stride unchanged
    assert uniform_bodies(bytes(payload), 100, 500, 0, len(payload)) is None
