"""The pytest plugin's tests run example test files as users write them, with pytester."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def _quiet_pytester_ini(request: pytest.FixtureRequest) -> None:
    """pytester runs get the ini setting pytest-asyncio otherwise warns about at every run."""
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester").makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
