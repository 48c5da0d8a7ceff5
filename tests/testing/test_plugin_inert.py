"""The plugin is registered for every pytest run: it must cost nothing to a run that uses none of its fixtures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("magnetar.testing", "magnetar.client",
         "magnetar.broker", "magnetar.protocol", "asyncio", "subprocess", "http.client")


def test_importing_the_plugin_loads_only_pytest_and_the_standard_library() -> None:
    probe = (
        "import sys, json; import pytest; before = set(sys.modules); "
        "import magnetar.pytest_plugin; print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                       check=True).stdout)
    assert [name for name in loaded if name.startswith(HEAVY)] == []
    assert [name for name in loaded if name.startswith("magnetar")] == [
        "magnetar", "magnetar.pytest_plugin"]


def test_a_run_without_its_fixtures_starts_nothing(pytester: pytest.Pytester) -> None:
    record = pytester.path / "record.json"
    pytester.makeconftest(
        f"""
        import json, sys

        def pytest_sessionfinish(session):
            loaded = [name for name in sys.modules if name.startswith({HEAVY[:4]!r})]
            json.dump(loaded, open({str(record)!r}, "w"))
        """
    )
    pytester.makepyfile("def test_plain(tmp_path): assert tmp_path.is_dir()")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["plugins:*magnetar-*"])  # registered, by its entry point
    assert json.loads(Path(record).read_text()) == []
