"""The Go client (github.com/apache/pulsar-client-go) against magnetar: one item per Go test."""

from __future__ import annotations

import pytest

from . import harness
from .known_bugs import params

GO_TESTS = harness.go_test_names()

#: the first item also pays for building and running the suites (first runs download dependencies)
pytestmark = pytest.mark.timeout(2400)


@pytest.mark.parametrize("name", params(GO_TESTS))
def test_go(name: str, go_run: harness.SuiteRun) -> None:
    failure = harness.describe(go_run.outcomes.get(name), go_run, name)
    if failure:
        pytest.fail(failure, pytrace=False)


def test_go_suite_reports_every_test(go_run: harness.SuiteRun) -> None:
    """The Go binary reported exactly the test functions found in the sources."""
    assert go_run.error is None, go_run.error
    assert sorted(go_run.outcomes) == sorted(GO_TESTS)
    passed, total = go_run.counts()
    print(f"interop go: {passed} passed / {total} total")
