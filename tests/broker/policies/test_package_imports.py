"""The policies package is imported lazily in worker threads: it must import none of its modules
itself, or two threads importing two of them at once deadlock (Python raises ``_DeadlockError`` in
one: a restarted broker's transaction recovery failed so, loading a topic beside another thread)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import magnetar.broker.policies as policies

_RACE = """
import threading
errors = []
def load(name):
    try:
        __import__(name)
    except BaseException as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=load, args=(f"magnetar.broker.policies.{m}",))
           for m in ("registry", "resolution", "rate_limits", "validation")]
for t in threads: t.start()
for t in threads: t.join()
print(errors)
"""


def test_the_package_imports_none_of_its_modules() -> None:
    tree = ast.parse(Path(policies.__file__).read_text())
    imports = [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert [ast.unparse(node) for node in imports] == []


def test_its_modules_import_in_several_threads_at_once() -> None:
    for _ in range(8):  # the old package failed one attempt in four
        run = subprocess.run([sys.executable, "-c", _RACE], capture_output=True, text=True, timeout=60, check=True)
        assert run.stdout.strip() == "[]", run.stdout + run.stderr
