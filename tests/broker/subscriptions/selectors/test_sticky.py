"""Sticky selector: declared ranges, and refusals that leave no trace."""

from __future__ import annotations

import pytest

from magnetar.broker.errors import BrokerError
from magnetar.broker.subscriptions.selectors import StickyRangeSelector, sticky_key_hash
from magnetar.protocol.enums import ServerError


def refused(selector: StickyRangeSelector, consumer) -> str:  # noqa: ANN001
    before = selector.ranges()
    with pytest.raises(BrokerError) as exc:
        selector.add_consumer(consumer)
    assert exc.value.code == ServerError.ConsumerAssignError
    assert selector.ranges() == before
    return exc.value.message


def test_documents_example(make_consumer) -> None:
    selector = StickyRangeSelector()
    c1 = make_consumer("C1", (0, 16383), (32768, 49151))
    c2 = make_consumer("C2", (16384, 32767), (49152, 65535))
    selector.add_consumer(c1)
    selector.add_consumer(c2)
    assert selector.select(sticky_key_hash(b"Order-3459134")) is c1  # slot 6067
    for slot, owner in [
        (0, c1),
        (16383, c1),
        (16384, c2),
        (32767, c2),
        (32768, c1),
        (49151, c1),
        (49152, c2),
    ]:
        assert selector.select(slot) is owner
    assert selector.select(65535) is c2
    assert selector.ranges() == {c1: [(0, 16383), (32768, 49151)], c2: [(16384, 32767), (49152, 65535)]}


def test_uncovered_slots_have_no_consumer(make_consumer) -> None:
    selector = StickyRangeSelector()
    c = make_consumer("c", (100, 200))
    selector.add_consumer(c)
    assert selector.select(99) is None
    assert selector.select(100) is c
    assert selector.select(200) is c
    assert selector.select(201) is None
    assert selector.select(65536 + 150) is c


def test_no_ranges_refused(make_consumer) -> None:
    selector = StickyRangeSelector()
    assert "declared no hash ranges" in refused(selector, make_consumer("empty"))


@pytest.mark.parametrize("bad", [(10, 5), (-1, 5), (0, 65536), (70000, 70001)])
def test_invalid_range_refused(make_consumer, bad) -> None:
    selector = StickyRangeSelector()
    selector.add_consumer(make_consumer("ok", (0, 9)))
    message = refused(selector, make_consumer("bad", (20, 30), bad))
    assert "invalid hash range" in message and f"[{bad[0]}, {bad[1]}]" in message


def test_own_ranges_overlapping_refused(make_consumer) -> None:
    selector = StickyRangeSelector()
    message = refused(selector, make_consumer("twice", (0, 100), (100, 200)))
    assert "overlapping hash ranges [0, 100] and [100, 200]" in message


@pytest.mark.parametrize("bad", [(0, 50), (50, 60), (99, 99), (90, 300), (200, 200), (199, 500)])
def test_overlap_with_other_consumer_refused(make_consumer, bad) -> None:
    selector = StickyRangeSelector()
    first = make_consumer("first", (50, 100), (150, 200))
    selector.add_consumer(first)
    message = refused(selector, make_consumer("second", (1000, 2000), bad))
    assert "overlaps" in message and "'first'" in message
    assert selector.select(1500) is None  # none of the refused consumer's ranges were taken


def test_adjacent_ranges_accepted_and_removal_frees_them(make_consumer) -> None:
    selector = StickyRangeSelector()
    a = make_consumer("a", (0, 32767))
    b = make_consumer("b", (32768, 65535))
    selector.add_consumer(a)
    selector.add_consumer(b)
    selector.remove_consumer(a)
    assert selector.select(5) is None
    c = make_consumer("c", (0, 100), (101, 32767))
    selector.add_consumer(c)
    assert selector.select(5) is c
    assert selector.select(40000) is b
