"""Auto-split hash range selector: the worked examples of Pulsar's Key_Shared documents."""

from __future__ import annotations

import pytest

from magnetar.broker.errors import BrokerError
from magnetar.broker.subscriptions.selectors import HashRangeAutoSplitSelector, sticky_key_hash
from magnetar.protocol.enums import ServerError

from .conftest import FakeConsumer


def layout(selector: HashRangeAutoSplitSelector) -> list[tuple[str, int, int]]:
    """(owner, start, end inclusive) of every region, in slot order."""
    return sorted(
        ((c.name, s, e) for c, spans in selector.ranges().items() for s, e in spans), key=lambda t: t[1]
    )


@pytest.fixture
def four() -> tuple[HashRangeAutoSplitSelector, dict[str, FakeConsumer]]:
    selector = HashRangeAutoSplitSelector()
    consumers = {n: FakeConsumer(n) for n in ("C1", "C2", "C3", "C4")}
    for c in consumers.values():
        selector.add_consumer(c)
    return selector, consumers


def test_empty_selects_nobody() -> None:
    assert HashRangeAutoSplitSelector().select(12345) is None
    assert HashRangeAutoSplitSelector().ranges() == {}


def test_documents_example_one_to_four_consumers() -> None:
    selector = HashRangeAutoSplitSelector()
    c1, c2, c3, c4 = (FakeConsumer(n) for n in ("C1", "C2", "C3", "C4"))
    selector.add_consumer(c1)
    assert layout(selector) == [("C1", 0, 65535)]
    selector.add_consumer(c2)  # lower half of the only region
    assert layout(selector) == [("C2", 0, 32767), ("C1", 32768, 65535)]
    selector.add_consumer(c3)  # two equal largest regions: the lower one is split
    assert layout(selector) == [("C3", 0, 16383), ("C2", 16384, 32767), ("C1", 32768, 65535)]
    selector.add_consumer(c4)  # C1's region is the largest
    assert layout(selector) == [
        ("C3", 0, 16383),
        ("C2", 16384, 32767),
        ("C4", 32768, 49151),
        ("C1", 49152, 65535),
    ]


def test_documents_example_key_order_3459134(four) -> None:
    selector, consumers = four
    h = sticky_key_hash(b"Order-3459134")
    assert h % 65536 == 6067
    assert selector.select(h) is consumers["C3"]


def test_documents_example_removals_merge_right(four) -> None:
    selector, consumers = four
    selector.remove_consumer(consumers["C4"])  # merges into C1 on its right
    assert layout(selector) == [("C3", 0, 16383), ("C2", 16384, 32767), ("C1", 32768, 65535)]
    selector.remove_consumer(consumers["C1"])  # the last region: its left neighbour takes it
    assert layout(selector) == [("C3", 0, 16383), ("C2", 16384, 65535)]
    selector.remove_consumer(consumers["C3"])
    assert layout(selector) == [("C2", 0, 65535)]
    selector.remove_consumer(consumers["C2"])
    assert layout(selector) == []
    assert selector.select(1) is None


def test_remove_middle_merges_into_right_neighbour(four) -> None:
    selector, consumers = four
    selector.remove_consumer(consumers["C2"])
    assert layout(selector) == [("C3", 0, 16383), ("C4", 16384, 49151), ("C1", 49152, 65535)]


def test_remove_unknown_and_add_twice_are_harmless(four) -> None:
    selector, consumers = four
    before = layout(selector)
    selector.remove_consumer(FakeConsumer("stranger"))
    selector.add_consumer(consumers["C1"])
    assert layout(selector) == before


def test_select_matches_ranges_for_every_slot(four) -> None:
    selector, _ = four
    owners = {}
    for consumer, spans in selector.ranges().items():
        for start, end in spans:
            for slot in range(start, end + 1):
                owners[slot] = consumer
    assert len(owners) == 65536
    for slot in range(0, 65536, 97):
        assert selector.select(slot) is owners[slot]
        assert selector.select(slot + 65536 * 1234) is owners[slot]  # only the slot matters


def test_no_range_left_is_refused_without_change() -> None:
    selector = HashRangeAutoSplitSelector(range_size=4)
    consumers = [FakeConsumer(f"c{i}") for i in range(4)]
    for c in consumers:
        selector.add_consumer(c)
    assert sorted(e - s for spans in selector.ranges().values() for s, e in spans) == [0, 0, 0, 0]
    before = layout(selector)
    with pytest.raises(BrokerError) as exc:
        selector.add_consumer(FakeConsumer("late"))
    assert exc.value.code == ServerError.ConsumerAssignError
    assert "no hash range left" in exc.value.message
    assert layout(selector) == before
