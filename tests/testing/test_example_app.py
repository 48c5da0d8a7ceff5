"""The worked example of docs/TESTING.md (examples/testing_app) runs with the suite."""

from __future__ import annotations

from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "testing_app"


@pytest.mark.timeout(300)
def test_the_worked_example_passes(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(str(EXAMPLE), "-p", "no:cacheprovider", "--rootdir", str(EXAMPLE))
    result.assert_outcomes(passed=7)
