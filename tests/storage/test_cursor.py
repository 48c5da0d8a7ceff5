"""Tests of cursor acknowledgement state (Pulsar semantics)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnetar.storage import CursorState, RangeSet, longs_to_mask, mask_to_longs

MIN_LONG = -(1 << 63)


def _ack_set(batch_size: int, acked: set[int]) -> list[int]:
    """Ack set a Pulsar client sends: bits set for every message NOT acked by this command."""
    mask = sum(1 << i for i in range(batch_size) if i not in acked)
    return mask_to_longs(mask)


def test_mask_conversion() -> None:
    assert mask_to_longs(0) == []
    assert mask_to_longs(0b1011) == [11]
    assert mask_to_longs(1 << 63) == [MIN_LONG]
    assert mask_to_longs((1 << 64) - 1) == [-1]
    assert mask_to_longs(1 << 64) == [0, 1]
    assert longs_to_mask([-1]) == (1 << 64) - 1
    assert longs_to_mask([MIN_LONG, 3]) == (1 << 63) | (3 << 64)
    with pytest.raises(ValueError):
        mask_to_longs(-1)


def test_initial_state() -> None:
    cursor = CursorState()
    assert cursor.mark_delete == -1
    assert not cursor.dirty
    assert not cursor.is_acked(0)
    assert cursor.next_unacked(0) == 0
    assert cursor.backlog(9) == 10
    assert CursorState(41).next_unacked(0) == 42


def test_individual_acks_in_random_order_advance_mark_delete() -> None:
    rng = random.Random(1234)
    order = list(range(300))
    rng.shuffle(order)
    cursor = CursorState()
    acked: set[int] = set()
    for entry_id in order:
        assert cursor.ack(entry_id)
        acked.add(entry_id)
        expected = -1
        while expected + 1 in acked:
            expected += 1
        assert cursor.mark_delete == expected
        assert all(v > expected for v in cursor.individually_acked.to_list())
        assert len(cursor.individually_acked) == len(acked) - (expected + 1)
        assert cursor.backlog(299) == 300 - len(acked)
    assert cursor.mark_delete == 299
    assert not cursor.individually_acked
    assert not cursor.ack(10), "acking twice is a no-op"


def test_ack_sets_dirty_and_mark_clean() -> None:
    cursor = CursorState()
    cursor.ack(3)
    assert cursor.dirty
    cursor.mark_clean()
    assert not cursor.dirty
    cursor.ack(3)
    assert not cursor.dirty
    cursor.ack_cumulative(1)
    assert cursor.dirty


def test_cumulative_ack() -> None:
    cursor = CursorState()
    cursor.ack(5)
    cursor.ack(6)
    cursor.ack(9)
    cursor.ack_batch_indexes(7, _ack_set(4, {0}), 4)
    assert cursor.ack_cumulative(4)
    assert cursor.mark_delete == 6, "advances through the individually acked 5 and 6"
    assert cursor.individually_acked.ranges() == [(9, 9)]
    assert cursor.unacked_batch_mask(7) == [0b1110]
    assert cursor.ack_cumulative(7)
    assert cursor.unacked_batch_mask(7) is None
    assert cursor.mark_delete == 7
    assert cursor.ack_cumulative(8)
    assert cursor.mark_delete == 9
    assert not cursor.ack_cumulative(3)
    assert cursor.mark_delete == 9


def test_batch_of_five_acked_in_three_steps() -> None:
    cursor = CursorState()
    cursor.ack(0)
    assert not cursor.ack_batch_indexes(1, _ack_set(5, {1}), 5)
    assert cursor.unacked_batch_mask(1) == [0b11101]
    assert cursor.batch_ack_sets == {1: [0b11101]}
    assert cursor.batch_size(1) == 5
    assert not cursor.is_acked(1)
    assert cursor.next_unacked(0) == 1
    assert not cursor.ack_batch_indexes(1, _ack_set(5, {0, 4}), 5)
    assert cursor.unacked_batch_mask(1) == [0b01100]
    assert cursor.ack_set_longs(1) == [0b01100]
    assert cursor.ack_batch_indexes(1, _ack_set(5, {2, 3}), 5)
    assert cursor.is_acked(1)
    assert cursor.unacked_batch_mask(1) is None
    assert cursor.mark_delete == 1
    assert cursor.ack_batch_indexes(1, _ack_set(5, {2}), 5), "already acked"


def test_batch_of_64_leaves_bit_63() -> None:
    cursor = CursorState()
    ack_set = _ack_set(64, set(range(63)))
    assert ack_set == [MIN_LONG]
    assert not cursor.ack_batch_indexes(0, ack_set, 64)
    assert cursor.unacked_batch_mask(0) == [MIN_LONG]
    assert cursor.mark_delete == -1
    assert cursor.ack_batch_indexes(0, _ack_set(64, {63}), 64)
    assert cursor.mark_delete == 0


def test_batch_of_70_needs_two_words() -> None:
    cursor = CursorState()
    first = _ack_set(70, set(range(64)))
    assert first == [0, 0b111111]
    assert not cursor.ack_batch_indexes(3, first, 70)
    assert cursor.unacked_batch_mask(3) == [0, 0b111111]
    second = _ack_set(70, {65})
    assert second == [-1, 0b111101]
    assert not cursor.ack_batch_indexes(3, second, 70)
    assert cursor.unacked_batch_mask(3) == [0, 0b111101]
    assert not cursor.ack_batch_indexes(3, _ack_set(70, {64, 66, 67, 68}), 70)
    assert cursor.unacked_batch_mask(3) == [0, 1 << 5]
    assert cursor.ack_batch_indexes(3, _ack_set(70, {69}), 70)
    assert cursor.is_acked(3)
    assert cursor.individually_acked.ranges() == [(3, 3)]


def test_batch_ack_edge_cases() -> None:
    cursor = CursorState()
    with pytest.raises(ValueError):
        cursor.ack_batch_indexes(0, [1], 0)
    assert cursor.ack_batch_indexes(0, [], 3), "an empty ack set acknowledges everything"
    assert not cursor.ack_batch_indexes(1, [0b111], 3)
    assert cursor.unacked_batch_mask(1) == [0b111]
    cursor.ack(1)
    assert cursor.unacked_batch_mask(1) is None
    assert cursor.mark_delete == 1


def test_reset() -> None:
    cursor = CursorState()
    cursor.ack(5)
    cursor.ack_batch_indexes(7, _ack_set(3, {1}), 3)
    cursor.mark_clean()
    cursor.reset(2)
    assert cursor.dirty
    assert cursor.mark_delete == 2
    assert not cursor.individually_acked
    assert cursor.unacked_batch_mask(7) is None
    assert not cursor.is_acked(5)
    cursor.reset(-1)
    assert cursor.next_unacked(0) == 0


def test_next_unacked_and_counts() -> None:
    cursor = CursorState()
    for entry_id in (0, 1, 3, 4, 5, 8):
        cursor.ack(entry_id)
    assert cursor.mark_delete == 1
    assert cursor.next_unacked(0) == 2
    assert cursor.next_unacked(3) == 6
    assert cursor.next_unacked(7) == 7
    assert cursor.next_unacked(8) == 9
    assert cursor.first_unacked() == 2
    assert cursor.first_unacked(after=2) == 6
    assert cursor.acked_count_between(2, 10) == 4
    assert cursor.acked_count_between(4, 5) == 2
    assert cursor.backlog(10) == 10 - 1 - 4
    assert cursor.backlog(1) == 0
    cursor.ack_batch_indexes(2, _ack_set(2, {0}), 2)
    assert cursor.next_unacked(2) == 2, "a partially acked batch is still unacked"


def test_from_bytes_rejects_garbage() -> None:
    good = CursorState(5).to_bytes()
    with pytest.raises(ValueError):
        CursorState.from_bytes(good[:-1])
    with pytest.raises(ValueError):
        CursorState.from_bytes(good + b"\x00")
    with pytest.raises(ValueError):
        CursorState.from_bytes(b"\x09" + good[1:])
    with pytest.raises(ValueError):
        CursorState.from_bytes(b"")


_cursor_ops = st.lists(
    st.one_of(
        st.tuples(st.just("ack"), st.integers(0, 200), st.just(0), st.just(1)),
        st.tuples(st.just("cumulative"), st.integers(-1, 200), st.just(0), st.just(1)),
        st.tuples(st.just("batch"), st.integers(0, 200), st.integers(0, (1 << 130) - 1), st.integers(1, 130)),
        st.tuples(st.just("reset"), st.integers(-1, 200), st.just(0), st.just(1)),
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(st.integers(-1, 50), _cursor_ops)
def test_serialization_round_trip(start: int, ops: list[tuple[str, int, int, int]]) -> None:
    cursor = CursorState(start)
    for op, entry_id, mask, size in ops:
        if op == "ack":
            cursor.ack(entry_id)
        elif op == "cumulative":
            cursor.ack_cumulative(entry_id)
        elif op == "batch":
            cursor.ack_batch_indexes(entry_id, mask_to_longs(mask), size)
        else:
            cursor.reset(entry_id)
    blob = cursor.to_bytes()
    restored = CursorState.from_bytes(blob)
    assert restored == cursor
    assert not restored.dirty
    assert restored.to_bytes() == blob
    assert restored.mark_delete == cursor.mark_delete
    assert restored.individually_acked == cursor.individually_acked
    assert restored.batch_ack_sets == cursor.batch_ack_sets
    assert isinstance(restored.individually_acked, RangeSet)
    # Invariants hold after any sequence of operations.
    assert cursor.mark_delete + 1 not in cursor.individually_acked
    for entry_id in cursor.batch_ack_sets:
        assert entry_id > cursor.mark_delete and entry_id not in cursor.individually_acked
