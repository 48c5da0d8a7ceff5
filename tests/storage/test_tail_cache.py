"""The tail cache: entries leave by size, by the shared budget and by age."""

from __future__ import annotations

from magnetar.storage.entries import CacheBudget
from magnetar.storage.tail_cache import TailCache


def _filled(cache: TailCache, first: int, last: int) -> None:
    for entry_id in range(first, last + 1):
        cache.put(entry_id, b"x" * 10, entry_id)


def test_entries_leave_once_cached_longer_than_the_threshold() -> None:
    budget = CacheBudget(1 << 20)
    cache = TailCache(1 << 20, budget, 0)
    _filled(cache, 0, 4)
    budget.age_out(100.0, 1.0)  # marks 0..4 at t=100
    _filled(cache, 5, 7)
    budget.age_out(100.5, 1.0)  # marks 0..7 at t=100.5; nothing is a second old yet
    assert sorted(cache.entries) == list(range(8))
    budget.age_out(101.0, 1.0)  # 0..4 were cached at t=100: gone
    assert sorted(cache.entries) == [5, 6, 7]
    assert (cache.first, cache.bytes, budget.used) == (5, 30, 30)
    budget.age_out(101.6, 1.0)
    assert cache.entries == {} and cache.first == 8 and budget.used == 0
    _filled(cache, 8, 9)  # the cache goes on from where it was
    assert sorted(cache.entries) == [8, 9] and budget.used == 20


def test_a_cache_emptied_meanwhile_is_aged_without_error() -> None:
    budget = CacheBudget(1 << 20)
    cache = TailCache(1 << 20, budget, 0)
    _filled(cache, 0, 9)
    budget.age_out(10.0, 1.0)
    cache.trim_before(6)
    cache.cut_from(8)
    assert sorted(cache.entries) == [6, 7]
    budget.age_out(11.0, 1.0)
    assert cache.entries == {} and budget.used == 0
    cache.clear()
    assert not cache.marks


def test_a_closed_ledgers_cache_leaves_the_budget() -> None:
    budget = CacheBudget(1 << 20)
    cache = TailCache(1 << 20, budget, 0)
    assert list(budget.caches) == [cache]
    del cache
    assert list(budget.caches) == []
