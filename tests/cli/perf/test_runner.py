"""``frozen_heap`` keeps the objects alive at a run's start out of the collector's passes for the run only."""

from __future__ import annotations

import gc

import pytest

from magnetar.cli.perf.runner import frozen_heap


def test_the_heap_is_frozen_for_the_block_and_handed_back_after() -> None:
    gc.unfreeze()
    kept = [object() for _ in range(10)]  # a tracked container alive before the block
    with frozen_heap():
        assert gc.get_freeze_count() > 0
        assert not any(x is kept for x in gc.get_objects())  # frozen: in no generation the collector walks
        made = [object()]  # made inside the block: collected as usual
        assert any(x is made for x in gc.get_objects())
    assert gc.get_freeze_count() == 0
    assert any(x is kept for x in gc.get_objects())


def test_the_heap_is_handed_back_when_the_run_fails() -> None:
    gc.unfreeze()
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("the run failed")
    assert gc.get_freeze_count() == 0
