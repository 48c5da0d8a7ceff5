"""The Java client (org.apache.pulsar:pulsar-client 4.x) against magnetar: one item per JUnit test."""

from __future__ import annotations

import pytest

from . import harness
from .known_bugs import params

JAVA_TESTS = harness.java_test_names()

#: the first item also pays for building and running the suites (first runs download dependencies)
pytestmark = pytest.mark.timeout(2400)


@pytest.mark.parametrize("name", params(JAVA_TESTS))
def test_java(name: str, java_run: harness.SuiteRun) -> None:
    failure = harness.describe(java_run.outcomes.get(name), java_run, name)
    if failure:
        pytest.fail(failure, pytrace=False)


def test_java_suite_reports_every_test(java_run: harness.SuiteRun) -> None:
    """Surefire reported exactly the test methods found in the sources (nothing lost or renamed)."""
    assert java_run.error is None, java_run.error
    assert sorted(java_run.outcomes) == sorted(JAVA_TESTS)
    passed, total = java_run.counts()
    print(f"interop java: {passed} passed / {total} total")
