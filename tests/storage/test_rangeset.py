"""Tests of RangeSet, including a property test against a plain Python set."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnetar.storage import RangeSet


def test_add_merges_overlapping_and_adjacent() -> None:
    rs = RangeSet()
    rs.add(5, 7)
    rs.add(10, 12)
    assert rs.ranges() == [(5, 7), (10, 12)]
    rs.add(8, 9)
    assert rs.ranges() == [(5, 12)]
    rs.add(1, 3)
    rs.add_one(4)
    assert rs.ranges() == [(1, 12)]
    assert len(rs) == 12
    rs.add(0, 20)
    assert rs.ranges() == [(0, 20)]
    assert len(rs) == 21


def test_add_rejects_empty_interval() -> None:
    with pytest.raises(ValueError):
        RangeSet().add(3, 2)


def test_remove_range_splits() -> None:
    rs = RangeSet([(0, 10), (20, 30)])
    rs.remove_range(5, 22)
    assert rs.ranges() == [(0, 4), (23, 30)]
    assert len(rs) == 13
    rs.remove_range(0, 4)
    assert rs.ranges() == [(23, 30)]
    rs.remove_range(40, 50)
    rs.remove_range(9, 3)
    assert rs.ranges() == [(23, 30)]


def test_contains_len_bool_first_last() -> None:
    rs = RangeSet()
    assert not rs
    assert rs.first() is None and rs.last() is None and rs.first_range() is None
    assert 3 not in rs
    rs.add(3, 4)
    rs.add_one(9)
    assert rs
    assert 3 in rs and 4 in rs and 9 in rs
    assert 5 not in rs and 2 not in rs and "3" not in rs
    assert len(rs) == 3
    assert rs.first() == 3 and rs.last() == 9
    assert rs.first_range() == (3, 4)
    assert rs.range_count() == 2


def test_remove_below_and_clear() -> None:
    rs = RangeSet([(1, 5), (8, 10)])
    rs.remove_below(4)
    assert rs.ranges() == [(4, 5), (8, 10)]
    rs.remove_below(9)
    assert rs.ranges() == [(9, 10)]
    rs.remove_below(0)
    assert rs.ranges() == [(9, 10)]
    rs.clear()
    assert not rs and len(rs) == 0


def test_next_missing() -> None:
    rs = RangeSet([(0, 4), (6, 6)])
    assert rs.next_missing(0) == 5
    assert rs.next_missing(3) == 5
    assert rs.next_missing(5) == 5
    assert rs.next_missing(6) == 7
    assert rs.next_missing(100) == 100
    assert rs.next_missing(-3) == -3


def test_count_between() -> None:
    rs = RangeSet([(0, 4), (10, 14)])
    assert rs.count_between(0, 100) == 10
    assert rs.count_between(3, 11) == 4
    assert rs.count_between(5, 9) == 0
    assert rs.count_between(9, 3) == 0


def test_equality_and_serialization() -> None:
    a = RangeSet([(1, 2), (3, 4), (10, 10)])
    b = RangeSet([(10, 10), (1, 4)])
    assert a == b
    assert a.to_list() == [1, 4, 10, 10]
    assert RangeSet.from_list(a.to_list()) == a
    assert a != RangeSet([(1, 4)])
    copy = a.copy()
    copy.add_one(7)
    assert copy != a
    with pytest.raises(ValueError):
        RangeSet.from_list([1, 2, 3])


_values = st.integers(min_value=-20, max_value=60)
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), _values, st.integers(0, 15)),
        st.tuples(st.just("add_one"), _values, st.just(0)),
        st.tuples(st.just("remove"), _values, st.integers(-2, 15)),
        st.tuples(st.just("remove_below"), _values, st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(_ops)
def test_matches_python_set_model(ops: list[tuple[str, int, int]]) -> None:
    rs = RangeSet()
    model: set[int] = set()
    for op, x, span in ops:
        if op == "add":
            rs.add(x, x + span)
            model.update(range(x, x + span + 1))
        elif op == "add_one":
            rs.add_one(x)
            model.add(x)
        elif op == "remove":
            rs.remove_range(x, x + span)
            model.difference_update(range(x, x + span + 1))
        else:
            rs.remove_below(x)
            model = {v for v in model if v >= x}
        assert len(rs) == len(model)
        assert bool(rs) == bool(model)
    for v in range(-25, 80):
        assert (v in rs) == (v in model)
        expected_missing = v
        while expected_missing in model:
            expected_missing += 1
        assert rs.next_missing(v) == expected_missing
    assert rs.first() == (min(model) if model else None)
    ranges = rs.ranges()
    for (_, hi), (lo2, _) in zip(ranges, ranges[1:], strict=False):
        assert lo2 > hi + 1, "intervals must be disjoint and non-adjacent"
    assert RangeSet.from_list(rs.to_list()) == rs
    assert rs.count_between(0, 30) == len([v for v in model if 0 <= v <= 30])


def _runs_of(values: set[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for v in sorted(values):
        if runs and runs[-1][1] == v - 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    return runs


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(0, 300)), st.sets(st.integers(0, 300)))
def test_add_runs_equals_adding_each_interval(existing: set[int], added: set[int]) -> None:
    one_pass = RangeSet(_runs_of(existing))
    one_pass.add_runs(_runs_of(added))
    each = RangeSet(_runs_of(existing))
    for lo, hi in _runs_of(added):
        each.add(lo, hi)
    assert one_pass == each
    assert len(one_pass) == len(existing | added)
    assert one_pass.ranges() == _runs_of(existing | added)


def test_add_runs_merges_many_holes_in_one_pass() -> None:
    evens = RangeSet((i, i) for i in range(0, 2000, 2))
    evens.add_runs([(i, i) for i in range(1, 2000, 2)])
    assert evens.ranges() == [(0, 1999)]
    assert len(evens) == 2000
