"""Run the Java (Maven + JUnit 5) and Go (go test) interop suites and read their per-test results.

The suites live in tests/interop/java and tests/interop/go; pytest turns each of their tests into one
item (see test_java.py and test_go.py). Build output goes to pytest's tmp dirs, never into the tree.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

INTEROP_DIR = Path(__file__).resolve().parent
JAVA_DIR = INTEROP_DIR / "java"
GO_DIR = INTEROP_DIR / "go"

#: wall-time limits of one Maven run and one run of the Go test binary (first runs download more)
MAVEN_TIMEOUT_SECONDS = 1200
GO_BUILD_TIMEOUT_SECONDS = 1200
GO_RUN_TIMEOUT_SECONDS = 600

#: the Go test that writes the Go side of the cross-language topics; it runs before Maven
GO_WRITER_TEST = "TestXlangWrite"


class ToolMissing(RuntimeError):
    """mvn, java or go is not installed: the interop suites cannot run on this machine."""


@dataclass
class Outcome:
    """The result of one Java test method or one top-level Go test (all invocations together)."""

    name: str
    status: str = "passed"
    messages: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def merge(self, status: str, message: str, seconds: float) -> None:
        """Fold one invocation (a parameterized case or a subtest) into this outcome."""
        self.seconds += seconds
        if status == "failed":
            self.status = "failed"
        elif status == "skipped" and self.status == "passed":
            self.status = "skipped"
        if message:
            self.messages.append(message)


@dataclass
class SuiteRun:
    """What one suite run produced: outcomes by test name, or why it could not run at all."""

    outcomes: dict[str, Outcome] = field(default_factory=dict)
    error: str | None = None
    log_path: Path | None = None
    seconds: float = 0.0

    def counts(self) -> tuple[int, int]:
        """(passed, total) over the outcomes."""
        passed = sum(1 for o in self.outcomes.values() if o.status == "passed")
        return passed, len(self.outcomes)


def require_tool(name: str, hint: str) -> str:
    """The path of an executable, or ToolMissing with how to install it."""
    path = shutil.which(name)
    if path is None:
        raise ToolMissing(f"'{name}' is not on PATH: the interop tests need it ({hint})")
    return path


_JAVA_TEST = re.compile(r"@(?:Test|ParameterizedTest)\b(?:(?!\bvoid\b).)*?\bvoid\s+(\w+)\s*\(", re.S)
_GO_TEST = re.compile(r"^func\s+(Test\w+)\s*\(\s*t\s+\*testing\.T\s*\)", re.M)


def java_test_names(java_dir: Path = JAVA_DIR) -> list[str]:
    """Every JUnit test method of the Java suite, as Class.method, found in the sources."""
    names = []
    for path in sorted((java_dir / "src" / "test" / "java").rglob("*Test.java")):
        names += [f"{path.stem}.{method}" for method in _JAVA_TEST.findall(path.read_text())]
    return names


def go_test_names(go_dir: Path = GO_DIR) -> list[str]:
    """Every top-level Go test function of the Go suite."""
    names = []
    for path in sorted(go_dir.glob("*_test.go")):
        names += _GO_TEST.findall(path.read_text())
    return names


def _tail(path: Path, lines: int = 60) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def parse_surefire(report_dir: Path) -> dict[str, Outcome]:
    """Outcomes per Class.method from Surefire's TEST-*.xml reports."""
    outcomes: dict[str, Outcome] = {}
    for report in sorted(report_dir.glob("TEST-*.xml")):
        for case in ET.parse(report).getroot().iter("testcase"):
            cls = case.get("classname", "").rsplit(".", 1)[-1]
            method = re.split(r"[(\[]", case.get("name", ""), maxsplit=1)[0]
            name = f"{cls}.{method}"
            status, message = "passed", ""
            for tag in ("failure", "error"):
                node = case.find(tag)
                if node is not None:
                    status = "failed"
                    detail = (node.text or "").strip().splitlines()[:12]
                    message = f"{case.get('name')}: {node.get('message') or node.get('type')}\n" + "\n".join(
                        detail
                    )
            if case.find("skipped") is not None:
                status, message = "skipped", f"{case.get('name')}: skipped by JUnit"
            outcome = outcomes.setdefault(name, Outcome(name))
            outcome.merge(status, message, float(case.get("time") or 0))
    return outcomes


def run_maven(env: dict[str, str], build_dir: Path) -> SuiteRun:
    """`mvn -B -q test` in the Java suite with the broker's variables; per-test outcomes."""
    mvn = require_tool("mvn", "Debian: apt-get install maven openjdk-17-jdk-headless")
    require_tool("java", "Debian: apt-get install openjdk-17-jdk-headless")
    log_path = build_dir / "maven.log"
    cmd = [mvn, "-B", "-q", "-T", "1", f"-Dinterop.buildDir={build_dir / 'target'}", "test"]
    run = SuiteRun(log_path=log_path)
    with open(log_path, "wb") as log:
        try:
            proc = subprocess.run(
                cmd,
                cwd=JAVA_DIR,
                env={**os.environ, **env},
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=MAVEN_TIMEOUT_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired:
            run.error = f"Maven did not finish in {MAVEN_TIMEOUT_SECONDS} s; log tail:\n{_tail(log_path)}"
            return run
    run.outcomes = parse_surefire(build_dir / "target" / "surefire-reports")
    if not run.outcomes:
        run.error = f"Maven exited {proc.returncode} with no test report; log tail:\n{_tail(log_path)}"
    return run


def _go_env(env: dict[str, str]) -> dict[str, str]:
    flags = os.environ.get("GOFLAGS", "")
    if "-p=" not in flags:
        flags = f"{flags} -p=1".strip()
    return {**os.environ, **env, "GOFLAGS": flags}


def build_go(build_dir: Path) -> Path:
    """Compile the Go suite into one test binary (dependencies come from the module proxy)."""
    go = require_tool("go", "install Go 1.24 or later")
    binary = build_dir / "interop.test"
    log_path = build_dir / "go-build.log"
    with open(log_path, "wb") as log:
        proc = subprocess.run(
            [go, "test", "-c", "-o", str(binary), "."],
            cwd=GO_DIR,
            env=_go_env({}),
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=GO_BUILD_TIMEOUT_SECONDS,
            check=False,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"go test -c failed ({proc.returncode}):\n{_tail(log_path)}")
    return binary


def parse_test2json(lines: list[str]) -> dict[str, Outcome]:
    """Outcomes per top-level Go test from `go tool test2json` (or `go test -json`) lines."""
    outcomes: dict[str, Outcome] = {}
    output: dict[str, list[str]] = {}
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        test = event.get("Test")
        if not test:
            continue
        top = test.split("/", 1)[0]
        action = event.get("Action")
        if action == "output":
            output.setdefault(test, []).append(event.get("Output", ""))
        elif action in ("pass", "fail", "skip"):
            status = {"pass": "passed", "fail": "failed", "skip": "skipped"}[action]
            message = ""
            if status != "passed":
                text = [o for o in output.get(test, []) if not o.startswith(("=== ", "--- "))]
                message = f"{test}: " + "".join(text).strip()
            outcome = outcomes.setdefault(top, Outcome(top))
            # a parent test fails whenever a subtest does: report each failure once
            if test == top and status == "failed" and outcome.status == "failed":
                status, message = "failed", ""
            outcome.merge(status, message, float(event.get("Elapsed") or 0) if test == top else 0.0)
    return outcomes


def run_go(
    binary: Path,
    env: dict[str, str],
    build_dir: Path,
    *,
    only: str | None = None,
    skip: str | None = None,
    label: str = "go",
) -> SuiteRun:
    """Run the Go test binary through test2json; per-test outcomes."""
    go = require_tool("go", "install Go 1.24 or later")
    args = [
        go,
        "tool",
        "test2json",
        "-t",
        str(binary),
        "-test.v=test2json",
        "-test.timeout=9m",
        "-test.count=1",
    ]
    if only:
        args.append(f"-test.run={only}")
    if skip:
        args.append(f"-test.skip={skip}")
    log_path = build_dir / f"{label}.jsonl"
    run = SuiteRun(log_path=log_path)
    with open(log_path, "wb") as log:
        try:
            proc = subprocess.run(
                args,
                cwd=GO_DIR,
                env=_go_env(env),
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=GO_RUN_TIMEOUT_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired:
            run.error = f"the Go tests did not finish in {GO_RUN_TIMEOUT_SECONDS} s; tail:\n{_tail(log_path)}"
            return run
    run.outcomes = parse_test2json(log_path.read_text(errors="replace").splitlines())
    if not run.outcomes:
        run.error = f"the Go test binary exited {proc.returncode} with no result; tail:\n{_tail(log_path)}"
    return run


def describe(outcome: Outcome | None, run: SuiteRun, name: str) -> str | None:
    """Why a test counts as failed (None when it passed)."""
    if run.error:
        return run.error
    if outcome is None:
        return f"{name} was not reported by its suite (log: {run.log_path})"
    if outcome.status == "passed":
        return None
    return "\n\n".join(outcome.messages) or f"{name} {outcome.status}"
