"""Tests of a ledger's segment chain: when the active segment rolls over (Pulsar's minimum and
maximum ledger lifetime), and which sealed segments trimming may drop."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from magnetar.storage.files import default_file_layer
from magnetar.storage.segment import Segment, segment_file_name
from magnetar.storage.segment_chain import RolloverPolicy, SegmentChain


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _chain(directory: Path, policy: RolloverPolicy, clock: FakeClock, records: int = 0) -> SegmentChain:
    """A chain of one segment at base 0 holding ``records`` records of 100 bytes."""
    directory.mkdir(parents=True, exist_ok=True)
    segment = Segment.open(directory / segment_file_name(0), 0, writable=True)
    for _ in range(records):
        segment.append(b"x" * 100, 0)
    return SegmentChain(directory, [segment], policy, default_file_layer(), threading.Lock(), clock)


def _hold(chain: SegmentChain, count: int, size: int) -> None:
    """Account ``count`` queued records of ``size`` bytes to the active segment (as the ledger does)."""
    chain.active_count += count
    chain.active_bytes += count * size


def test_policy_refuses_bad_limits() -> None:
    with pytest.raises(ValueError):
        RolloverPolicy(max_bytes=0)
    with pytest.raises(ValueError):
        RolloverPolicy(min_seconds=-1)
    with pytest.raises(ValueError):
        RolloverPolicy(max_seconds=-1)


def test_without_a_minimum_age_a_full_segment_rolls_at_once(tmp_path: Path) -> None:
    chain = _chain(tmp_path, RolloverPolicy(max_bytes=1000), FakeClock())
    assert not chain.roll_due(2000)  # an empty segment takes any record
    _hold(chain, 9, 100)
    assert not chain.roll_due(100)
    assert chain.roll_due(101)


def test_a_full_segment_waits_for_the_minimum_age(tmp_path: Path) -> None:
    clock = FakeClock()
    chain = _chain(tmp_path, RolloverPolicy(max_bytes=1000, min_seconds=600), clock)
    _hold(chain, 50, 100)
    assert not chain.roll_due(100)
    clock.now += 599
    assert not chain.roll_due(100)
    clock.now += 1
    assert chain.roll_due(100)
    segment = chain.roll(50)
    assert chain.active is segment and chain.bases == [0, 50] and chain.dir_dirty
    assert (chain.active_bytes, chain.active_count) == (0, 0)
    _hold(chain, 20, 100)
    assert not chain.roll_due(100)  # the new segment's age counts from its start
    clock.now += 600
    assert chain.roll_due(100)


def test_an_old_segment_rolls_over_though_not_full(tmp_path: Path) -> None:
    clock = FakeClock()
    chain = _chain(tmp_path, RolloverPolicy(max_bytes=10**9, max_seconds=3600, min_seconds=600), clock)
    clock.now += 4000
    assert not chain.roll_due(0)  # nothing in it: nothing to close
    _hold(chain, 1, 100)
    assert chain.roll_due(0)
    chain.roll(1)
    _hold(chain, 1, 100)
    clock.now += 3599
    assert not chain.roll_due(0)
    clock.now += 1
    assert chain.roll_due(0)


def test_a_reopened_segment_counts_its_age_from_the_open_unless_it_is_full(tmp_path: Path) -> None:
    clock = FakeClock()
    policy = RolloverPolicy(max_bytes=1000, min_seconds=600)
    not_full = _chain(tmp_path / "a", policy, clock, records=5)
    assert (not_full.active_count, not_full.active_bytes) == (5, 5 * 108)
    assert not not_full.roll_due(1000)
    full = _chain(tmp_path / "b", policy, clock, records=10)
    assert full.roll_due(100)  # Pulsar closes the ledger at every open


def test_trimming_drops_only_whole_sealed_segments(tmp_path: Path) -> None:
    chain = _chain(tmp_path, RolloverPolicy(max_bytes=1000), FakeClock(), records=3)
    chain.roll(3)
    chain.active.append(b"y" * 100, 0)
    chain.roll(4)
    assert chain.bases == [0, 3, 4]
    assert chain.sealed_before(2) == 0
    assert chain.sealed_before(3) == 1
    assert chain.sealed_before(100) == 2  # never the active segment
    sealed = chain.sealed_infos(lambda segment: segment.size_bytes)
    assert [(s.base_entry_id, s.last_entry_id, s.size_bytes) for s in sealed] == [(0, 2, 324), (3, 3, 108)]
    assert chain.bytes_from(3, 4, lambda segment: segment.size_bytes) == 108
    with chain.lock:
        doomed = chain.drop_oldest(1)
    assert [s.base_entry_id for s in doomed] == [0]
    assert chain.bases == [3, 4] and chain.segment_for(3).base_entry_id == 3
