"""``magnetar standalone`` runs its broker with a 0.1 ms switch interval (Python's default is 5 ms)."""

from __future__ import annotations

import sys
import types
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from magnetar.cli import standalone


def test_the_broker_runs_with_the_shorter_switch_interval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[float] = []

    def run(main: Coroutine[Any, Any, Any], **_: Any) -> None:
        seen.append(sys.getswitchinterval())  # what the broker's loop and threads run with
        main.close()

    monkeypatch.setitem(sys.modules, "uvloop", types.SimpleNamespace(run=run))
    before = sys.getswitchinterval()
    try:
        assert standalone.start_standalone({"data_dir": str(tmp_path / "data")}) == 0
    finally:
        sys.setswitchinterval(before)
    assert seen == [pytest.approx(0.0001)]
    assert standalone.SWITCH_INTERVAL_SECONDS == 0.0001
