"""Tests of cursor acknowledgement state (Pulsar semantics) and of the managed cursor over a ledger."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnetar.storage import (
    CompactedView,
    CompactedWriter,
    CursorState,
    CursorStore,
    ManagedCursor,
    ManagedLedger,
    MetadataStore,
    NoEntries,
    RangeSet,
    longs_to_mask,
    mask_to_longs,
)

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


# -- the managed cursor --------------------------------------------------------------------------
TOPIC = "persistent://public/default/t"


def _ledger(tmp_path: Path, count: int) -> ManagedLedger:
    ledger = ManagedLedger.open(tmp_path / "ledger", 1, segment_max_bytes=256)
    for i in range(count):
        assert ledger.append(b"m%03d" % i + bytes(40)) == i
    ledger.flush()
    return ledger


def _ids(entries: list) -> list[int]:
    return [e.entry_id for e in entries]


def test_read_position_starts_at_the_first_unacked_entry_and_moves_past_reads(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, 10)
    state = CursorState(2)
    state.ack(4)
    cursor = ManagedCursor(ledger, TOPIC, "s", state)
    assert cursor.read_position == 3
    assert not cursor.durable
    assert _ids(cursor.read_entries(2, last_readable=9)) == [3, 4]
    assert cursor.read_position == 5
    assert _ids(cursor.read_entries(100, last_readable=6)) == [5, 6], "never beyond the last readable entry"
    assert cursor.read_entries(5, last_readable=6) == []
    assert cursor.read_position == 7
    cursor.rewind_to(6)  # entry 6 was read but not dispatched
    assert _ids(cursor.read_entries(5, last_readable=9)) == [6, 7, 8, 9]
    cursor.rewind_to(12)  # never forward
    assert cursor.read_position == 10
    # redelivery reads by id and leaves the read position alone
    assert _ids(cursor.read_ids([8, 3, 42])) == [8, 3]
    assert cursor.read_position == 10
    ledger.close()


def test_seek_and_skip_acknowledged(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, 10)
    cursor = ManagedCursor(ledger, TOPIC, "s")
    cursor.read_entries(3, last_readable=9)
    cursor.ack(7)
    cursor.seek(5)
    assert cursor.mark_delete == 4 and cursor.read_position == 5
    assert not cursor.is_acked(7), "a seek forgets acknowledgements after it"
    cursor.seek(1)
    assert cursor.read_position == 1
    cursor.ack_cumulative(3)
    assert cursor.read_position == 1, "acknowledging does not move the read position by itself"
    cursor.skip_acknowledged()
    assert cursor.read_position == 4
    cursor.skip_acknowledged()
    assert cursor.read_position == 4
    ledger.close()


def test_reads_skip_trimmed_entries(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, 30)
    cursor = ManagedCursor(ledger, TOPIC, "s")
    freed = ledger.trim_before(12)
    assert freed > 0 and ledger.first_entry_id > 0
    entries = cursor.read_entries(3, last_readable=29)
    assert _ids(entries) == list(range(ledger.first_entry_id, ledger.first_entry_id + 3))
    assert _ids(cursor.read_ids([0, ledger.first_entry_id])) == [ledger.first_entry_id]
    ledger.close()


class _NoBatches:
    def batch_size(self, data: bytes) -> int | None:
        return None

    def survivors(self, data: bytes) -> list[int] | None:
        return None


def test_reads_through_a_compacted_view_then_the_ledger(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, 10)
    writer = CompactedWriter(tmp_path / "compacted" / "1", 1, 1 << 20)
    for entry_id in (1, 4, 5):
        writer.add(entry_id, b"c%d" % entry_id, None)
    writer.finish(6)
    view = CompactedView.open(tmp_path / "compacted" / "1", 1, 6, _NoBatches())
    cursor = ManagedCursor(ledger, TOPIC, "s")
    assert [(e.entry_id, e.data) for e in cursor.read_entries(2, 9, view)] == [(1, b"c1"), (4, b"c4")]
    assert cursor.read_position == 5
    assert _ids(cursor.read_entries(5, 9, view)) == [5]
    assert _ids(cursor.read_entries(2, 9, view)) == [7, 8], "after the horizon: the ledger"
    assert [(e.entry_id, e.data[:2]) for e in cursor.read_ids([4, 6, 8], view)] == [(4, b"c4"), (8, b"m0")]
    view.close()
    ledger.close()


def test_backlog_and_trim_position(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, 10)
    cursor = ManagedCursor(ledger, TOPIC, "s", CursorState(1))
    assert cursor.trim_position == 2
    assert cursor.backlog(9) == 8
    assert cursor.backlog_bytes() == ledger.bytes_from(2)
    assert cursor.is_behind(5) and not cursor.is_behind(2)
    cursor.ack(3)
    assert cursor.trim_position == 2, "an individual ack above a gap does not move the trim point"
    assert cursor.first_unacked() == 2
    cursor.ack(2)
    assert cursor.trim_position == 4 and cursor.first_unacked() == 4
    assert cursor.backlog(9) == 6
    ledger.close()


def test_durable_cursor_persists_itself_through_the_metadata_store(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, 10)
    with MetadataStore(tmp_path / "meta") as metadata:
        store = CursorStore(metadata)
        assert not store.pending
        cursor = store.open(ledger, TOPIC, "s", 1)
        assert cursor.durable and cursor.dirty and store.pending, "a new durable cursor is persisted soon"
        batch = store.take_batch()
        assert batch.topics == {TOPIC} and not cursor.dirty and not store.pending
        batch.write(metadata)
        assert metadata.load_cursors(TOPIC) == {"s": CursorState(1).to_bytes()}

        assert not cursor.ack(1)
        assert not store.pending, "no change, nothing to persist"
        cursor.ack(3)
        cursor.ack_batch_indexes(5, _ack_set(4, {2}), 4)
        assert cursor.dirty
        expected = cursor.state.to_bytes()
        store.take_batch().write(metadata)
        assert metadata.load_cursors(TOPIC)["s"] == expected, "the persisted bytes are CursorState's"

        restored = store.load(ledger, TOPIC)
        assert [(c.name, c.mark_delete, c.read_position, c.dirty) for c in restored] == [("s", 1, 2, False)]
        assert restored[0].state == cursor.state
        assert restored[0].unacked_batch_mask(5) == [0b1011]

        cursor.delete()
        cursor.ack(2)
        assert not cursor.durable and not cursor.dirty
        batch = store.take_batch()
        assert batch.saved == [] and batch.deleted == [(TOPIC, "s")]
        batch.write(metadata)
        assert metadata.load_cursors(TOPIC) == {}
    ledger.close()


def test_one_batch_holds_every_changed_cursor_and_a_deleted_topic_drops_out(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, 4)
    with MetadataStore(tmp_path / "meta") as metadata:
        store = CursorStore(metadata)
        a = store.open(ledger, TOPIC, "a", -1)
        b = store.open(ledger, TOPIC, "b", -1)
        other = store.open(ledger, TOPIC + "2", "a", -1)
        store.take_batch().write(metadata)
        a.ack(0)
        b.ack_cumulative(2)
        other.ack(1)
        a.ack(1)
        store.forget_topic(TOPIC + "2")
        batch = store.take_batch()
        assert sorted((t, n) for t, n, _ in batch.saved) == [(TOPIC, "a"), (TOPIC, "b")]
        batch.write(metadata)
        assert {n: CursorState.from_bytes(d).mark_delete for n, d in metadata.load_cursors(TOPIC).items()} == {
            "a": 1,
            "b": 2,
        }
        a.mark_dirty()
        assert [n for _, n, _ in store.take_batch().saved] == ["a"], "forced persistence (closing)"
    ledger.close()


def test_a_cursor_over_nothing() -> None:
    cursor = ManagedCursor(NoEntries(), "non-persistent://public/default/t", "s")
    assert cursor.read_entries(10, last_readable=5) == []
    assert cursor.read_ids([0, 1]) == []
    assert cursor.backlog_bytes() == 0
    cursor.mark_dirty()
    assert not cursor.dirty, "a non-durable cursor is never persisted"


# -- damaged entries -----------------------------------------------------------------------------
def _damage(ledger_dir: Path, entry_ids: set[int], count: int) -> None:
    """Flip a data byte of the given entries in a one-segment ledger of ``count`` entries."""
    from magnetar.storage.segment import RECORD_OVERHEAD, segment_file_name

    path = ledger_dir / segment_file_name(0)
    raw = bytearray(path.read_bytes())
    pos = 0
    for entry_id in range(count):
        length = int.from_bytes(raw[pos : pos + 4], "big")
        if entry_id in entry_ids:
            raw[pos + RECORD_OVERHEAD + 1] ^= 0xFF
        pos += RECORD_OVERHEAD + length
    path.write_bytes(bytes(raw))


def test_a_damaged_entry_is_skipped_and_acknowledged_never_served(tmp_path: Path) -> None:
    from magnetar.storage.health import storage_health

    storage_health.reset()
    with ManagedLedger.open(tmp_path / "ledger", 1) as ledger:
        for i in range(8):
            ledger.append(b"m%03d" % i + bytes(40))
    _damage(tmp_path / "ledger", {2, 5, 6}, 8)
    ledger = ManagedLedger.open(tmp_path / "ledger", 1, cache_max_bytes=0)
    cursor = ManagedCursor(ledger, TOPIC, "s")
    got = []
    for _ in range(10):  # the dispatcher's loop: never stalls on the damage
        entries = cursor.read_entries(4, last_readable=7)
        if not entries:
            break
        got.extend(entries)
    assert _ids(got) == [0, 1, 3, 4, 7]
    assert all(bytes(e.data).startswith(b"m%03d" % e.entry_id) for e in got)
    assert cursor.is_acked(2) and cursor.is_acked(5) and cursor.is_acked(6)
    assert storage_health.damaged_entries_skipped == 3
    assert _ids(cursor.read_ids([1, 2, 3])) == [1, 3], "redelivery skips damage too"
    ledger.close()
    storage_health.reset()


def test_a_range_of_only_damaged_entries_does_not_end_the_read(tmp_path: Path) -> None:
    with ManagedLedger.open(tmp_path / "ledger", 1) as ledger:
        for i in range(6):
            ledger.append(b"m%03d" % i + bytes(40))
    _damage(tmp_path / "ledger", {0, 1, 2, 3}, 6)
    ledger = ManagedLedger.open(tmp_path / "ledger", 1, cache_max_bytes=0)
    cursor = ManagedCursor(ledger, TOPIC, "s")
    assert _ids(cursor.read_entries(2, last_readable=5)) == [4, 5]
    assert cursor.mark_delete == 3
    ledger.close()


def test_ack_many_equals_acking_each_entry() -> None:
    rng = random.Random(7)
    for _ in range(200):
        ids = [rng.randrange(0, 120) for _ in range(rng.randrange(0, 80))]
        start = rng.randrange(-1, 10)
        partial = rng.randrange(0, 120)
        each, many = CursorState(start), CursorState(start)
        for state in (each, many):
            state.ack_batch_indexes(partial, [0b1010], 4)  # a partly acknowledged batch
        for entry_id in ids:
            each.ack(entry_id)
        cursor = ManagedCursor(NoEntries(), "t", "s", many)
        changed = cursor.ack_many(ids)
        assert many.to_bytes() == each.to_bytes()
        assert changed == any(e > start for e in ids)


def test_ack_many_moves_the_mark_delete_position_over_a_run() -> None:
    cursor = ManagedCursor(NoEntries(), "t", "s", CursorState(-1))
    cursor.ack_many(range(500, 1000))
    assert cursor.mark_delete == -1
    cursor.ack_many(reversed(range(0, 500)))
    assert cursor.mark_delete == 999
    assert not cursor.individually_acked
    assert not cursor.ack_many([3, 999])
