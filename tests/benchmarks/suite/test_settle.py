"""The suite's clean disk before each measurement (benchmarks/suite/settle.py)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from benchmarks.suite import settle


def test_dirty_mb_adds_dirty_and_writeback(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24683648 kB\nDirty:              2048 kB\nWriteback:          1024 kB\n"
                       "WritebackTmp:          0 kB\n")
    assert settle.dirty_mb(meminfo) == 3.0


def test_dirty_mb_is_zero_when_unreadable(tmp_path: Path) -> None:
    assert settle.dirty_mb(tmp_path / "missing") == 0.0


def test_settle_disk_waits_for_the_sync(monkeypatch: pytest.MonkeyPatch) -> None:
    synced = threading.Event()
    monkeypatch.setattr(settle.os, "sync", synced.set)
    figures = settle.settle_disk(timeout=5)
    assert synced.is_set()
    assert set(figures) == {"dirty_mb_before", "settle_s"}
    assert 0 <= figures["settle_s"] < 5


def test_settle_disk_gives_up_after_its_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    monkeypatch.setattr(settle.os, "sync", lambda: release.wait(10))
    try:
        figures = settle.settle_disk(timeout=0.05)
    finally:
        release.set()
    assert figures["settle_timed_out"] is True
    assert 0.05 <= figures["settle_s"] < 5
