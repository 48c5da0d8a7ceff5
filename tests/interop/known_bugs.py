"""Interop tests that fail because of a magnetar defect, with the observed failure.

Each entry marks the pytest item of that Java or Go test as xfail: the run still counts it as not
passing. An entry is strict (the item fails once the test passes, so the entry must go) unless a fix is
under way, when it shows as XPASS once fixed: remove the entry then.
Never list a test here to hide a missing feature or a wrong test.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest


class KnownBug(NamedTuple):
    """What fails, why, and whether a passing run must fail until the entry is removed."""

    reason: str
    strict: bool = True


#: "Class.method" (Java) or "TestName" (Go) -> the defect
KNOWN_MAGNETAR_BUGS: dict[str, KnownBug] = {}


def params(names: list[str]) -> list[object]:
    """pytest params for test names, the known magnetar defects marked xfail."""
    out: list[object] = []
    for name in names:
        bug = KNOWN_MAGNETAR_BUGS.get(name)
        marks = [pytest.mark.xfail(strict=bug.strict, reason=f"magnetar defect: {bug.reason}")] if bug else []
        out.append(pytest.param(name, id=name, marks=marks))
    return out
