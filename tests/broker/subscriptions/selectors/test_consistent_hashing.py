"""Consistent hashing selector: points as the documents place them, balance, and stability."""

from __future__ import annotations

import random
from collections import Counter

from magnetar.broker.subscriptions.selectors import ConsistentHashingSelector, sticky_key_hash
from magnetar.broker.subscriptions.selectors.consistent_hashing import RING_MAX
from magnetar.protocol.hashing import murmur3_32

from .conftest import FakeConsumer


def keys(n: int) -> list[int]:
    rng = random.Random(7)
    return [sticky_key_hash(f"key-{rng.random()}".encode()) for _ in range(n)]


def test_documents_point_values() -> None:
    # the documents' example: points of "orders-aggregator-pod-2345-consumer" at name + i, i = 1..100
    name = "orders-aggregator-pod-2345-consumer"
    assert murmur3_32(f"{name}1".encode()) == 1003084738
    assert murmur3_32(f"{name}2".encode()) == 373317202
    assert murmur3_32(f"{name}100".encode()) == 320276078
    selector = ConsistentHashingSelector()
    consumer = FakeConsumer(name)
    selector.add_consumer(consumer)
    assert selector.select(1003084738) is consumer
    ranges = selector.ranges()[consumer]
    assert ranges == [(0, RING_MAX)]


def test_each_point_serves_hashes_up_to_it() -> None:
    selector = ConsistentHashingSelector(points=1)
    a, b = FakeConsumer("a"), FakeConsumer("b")
    selector.add_consumer(a)
    selector.add_consumer(b)
    pa, pb = sticky_key_hash(b"a1"), sticky_key_hash(b"b1")
    low, high = (a, b) if pa < pb else (b, a)
    lo_p, hi_p = min(pa, pb), max(pa, pb)
    assert selector.select(lo_p) is low
    assert selector.select(lo_p + 1) is high
    assert selector.select(hi_p) is high
    assert selector.select(hi_p + 1) is low  # wraps around to the first point
    assert selector.select(0) is low


def test_distribution_is_roughly_even() -> None:
    selector = ConsistentHashingSelector()
    consumers = [FakeConsumer(f"consumer-{i}") for i in range(4)]
    for c in consumers:
        selector.add_consumer(c)
    counts = Counter(selector.select(h).name for h in keys(20000))
    assert set(counts) == {c.name for c in consumers}
    for n in counts.values():
        assert 0.12 * 20000 < n < 0.38 * 20000, counts


def test_only_the_leaving_consumers_keys_move() -> None:
    selector = ConsistentHashingSelector()
    consumers = [FakeConsumer(f"consumer-{i}") for i in range(5)]
    for c in consumers:
        selector.add_consumer(c)
    hashes = keys(5000)
    before = {h: selector.select(h) for h in hashes}
    leaving = consumers[2]
    selector.remove_consumer(leaving)
    after = {h: selector.select(h) for h in hashes}
    moved = [h for h in hashes if before[h] is not after[h]]
    assert moved
    assert all(before[h] is leaving for h in moved)
    assert all(after[h] is not leaving for h in hashes)
    # and back: the same consumer name gets the same keys again
    selector.add_consumer(leaving)
    assert {h: selector.select(h) for h in hashes} == before


def test_joining_consumer_only_takes_keys() -> None:
    selector = ConsistentHashingSelector()
    for i in range(3):
        selector.add_consumer(FakeConsumer(f"consumer-{i}"))
    hashes = keys(5000)
    before = {h: selector.select(h) for h in hashes}
    newcomer = FakeConsumer("newcomer")
    selector.add_consumer(newcomer)
    for h in hashes:
        now = selector.select(h)
        assert now is before[h] or now is newcomer


def test_same_name_consumers_share_points() -> None:
    selector = ConsistentHashingSelector()
    a, b = FakeConsumer("same"), FakeConsumer("same")
    selector.add_consumer(a)
    selector.add_consumer(b)
    counts = Counter(id(selector.select(h)) for h in keys(4000))
    assert counts[id(a)] > 1000 and counts[id(b)] > 1000
    selector.remove_consumer(a)
    assert all(selector.select(h) is b for h in keys(200))
    selector.remove_consumer(b)
    assert selector.select(5) is None
    assert selector.ranges() == {}


def test_ranges_cover_the_ring_once() -> None:
    selector = ConsistentHashingSelector(points=10)
    for i in range(3):
        selector.add_consumer(FakeConsumer(f"c{i}"))
    spans = sorted(s for ranges in selector.ranges().values() for s in ranges)
    assert spans[0][0] == 0 and spans[-1][1] == RING_MAX
    for (_, e1), (s2, _) in zip(spans, spans[1:], strict=False):
        assert s2 == e1 + 1
    for consumer, ranges in selector.ranges().items():
        for start, end in ranges:
            assert selector.select(start) is consumer
            assert selector.select(end) is consumer
