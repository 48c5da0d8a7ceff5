"""Tests of a managed ledger's roll-over timing: Pulsar's minimum and maximum ledger lifetime
(``managedLedgerMinLedgerRolloverTimeMinutes`` / ``managedLedgerMaxLedgerRolloverTimeMinutes``)."""

from __future__ import annotations

import time
from pathlib import Path

from magnetar.storage import ManagedLedger


def _fill(ledger: ManagedLedger, count: int) -> None:
    for _ in range(count):
        ledger.append(b"m" * 100)


def test_a_young_segment_grows_past_its_size_and_trimming_keeps_it(tmp_path: Path) -> None:
    with ManagedLedger.open(tmp_path / "l", 1, segment_max_bytes=1000, min_rollover_seconds=600) as ledger:
        _fill(ledger, 100)  # ten times the size limit
        assert ledger.segment_count == 1
        assert ledger.sealed_segments() == []
        assert ledger.trim_before(ledger.next_entry_id) == 0  # what trimming does with no cursor
        assert [e.entry_id for e in ledger.read_range(0, 99)] == list(range(100))


def test_without_a_minimum_lifetime_full_segments_roll_and_go_at_the_next_trim(tmp_path: Path) -> None:
    with ManagedLedger.open(tmp_path / "l", 1, segment_max_bytes=1000, min_rollover_seconds=0) as ledger:
        _fill(ledger, 100)
        assert ledger.segment_count > 10
        assert ledger.trim_before(ledger.next_entry_id) > 0
        assert ledger.segment_count == 1
        assert ledger.first_entry_id > 90


def test_a_full_segment_rolls_once_its_minimum_lifetime_has_passed(tmp_path: Path) -> None:
    with ManagedLedger.open(tmp_path / "l", 1, segment_max_bytes=1000, min_rollover_seconds=0.3) as ledger:
        _fill(ledger, 20)
        assert ledger.segment_count == 1
        time.sleep(0.35)
        _fill(ledger, 1)
        assert ledger.segment_count == 2
        assert [s.last_entry_id for s in ledger.sealed_segments()] == [19]


def test_an_old_segment_rolls_at_the_next_check(tmp_path: Path) -> None:
    with ManagedLedger.open(tmp_path / "l", 1, max_rollover_seconds=0.2) as ledger:
        time.sleep(0.25)
        assert not ledger.roll_if_due()  # empty: nothing to close
        _fill(ledger, 2)
        assert ledger.segment_count == 1  # appends check only the size
        assert ledger.roll_if_due()
        assert ledger.segment_count == 2
        assert [s.last_entry_id for s in ledger.sealed_segments()] == [1]
        _fill(ledger, 1)
        assert not ledger.roll_if_due()  # the new segment is young
        assert [e.entry_id for e in ledger.read_range(0, 2)] == [0, 1, 2]


def test_a_full_segment_held_by_its_minimum_lifetime_rolls_at_the_check_after_it(tmp_path: Path) -> None:
    with ManagedLedger.open(tmp_path / "l", 1, segment_max_bytes=1000, min_rollover_seconds=0.2) as ledger:
        _fill(ledger, 20)
        assert not ledger.roll_if_due()
        time.sleep(0.25)
        assert ledger.roll_if_due()  # no append needed to close it
        assert [s.last_entry_id for s in ledger.sealed_segments()] == [19]


def test_a_segment_reopened_full_rolls_at_the_first_append(tmp_path: Path) -> None:
    directory = tmp_path / "l"
    with ManagedLedger.open(directory, 1, segment_max_bytes=1000, min_rollover_seconds=600) as ledger:
        _fill(ledger, 30)
        ledger.sync()
    with ManagedLedger.open(directory, 1, segment_max_bytes=1000, min_rollover_seconds=600) as ledger:
        assert ledger.segment_count == 1
        _fill(ledger, 1)
        assert ledger.segment_count == 2
        _fill(ledger, 30)
        assert ledger.segment_count == 2
        assert len(ledger.read_range(0, 60)) == 61
