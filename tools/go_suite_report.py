"""Read the output of one Go test run and summarise a whole run of apache/pulsar-client-go's suite.

Used by go_client_suite.py: `parse_go_output` turns what one test binary printed for one top-level
test into a TestResult, `classify` names the cause of a failure, and `render_report` prints the
per-file table, the totals and the failures grouped by cause.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field

#: (cause, pattern over the whole output of a failed test): the first that matches names the cause
CAUSES: list[tuple[str, re.Pattern[str]]] = [
    ("needs Docker (testcontainers restarts a Pulsar container)", re.compile(r"testcontainers|[Dd]ocker")),
    (
        "transactions (magnetar has no transaction coordinator)",
        re.compile(r"[Tt]ransaction|TransactionCoordinator|\btxn\b|NewTransaction"),
    ),
    (
        "admin REST: PUT .../partitions with Content-Type application/vnd.partitioned-topic-metadata+json "
        '({"partitions": N, "properties": {}}, pulsaradmin\'s Topics().Create) answered 400',
        re.compile(r"Invalid request body: body: Input should be a valid integer"),
    ),
    (
        "admin REST route missing (404): PUT .../unload or GET .../ledger/{ledgerId}/entry/{entryId}",
        re.compile(r'rest\.Error\{Reason:"Not Found", Code:404\}'),
    ),
    (
        "SEND of a message of exactly maxMessageSize (metadata + payload) refused",
        re.compile(r"bytes exceeds the maximum of"),
    ),
    (
        "schema version: the client got an empty schema version for a BYTES schema",
        re.compile(r"schema not found for topic: .*schema version : \[ \[\] \]"),
    ),
    (
        "security (TLS / token / basic auth / authorization)",
        re.compile(r"AuthenticationError|AuthorizationError|x509:|tls: |status code: 40[13]\b|Unauthorized"),
    ),
]

#: causes found by reading a test whose output names none of the causes above (checked on magnetar
#: at 328fd6b+, 2026-11; each test passes on Apache Pulsar 4.2.4 with upstream's configuration)
DIAGNOSED: dict[str, str] = {
    "TestNamespaceTopicsNamespaceDoesNotExit": (
        "GET_TOPICS_OF_NAMESPACE of a missing namespace answers an error (MetadataError) the client retries"
        " for 30 s; Pulsar answers an empty list"
    ),
}

_TOP_RESULT = re.compile(r"^--- (PASS|FAIL|SKIP): (\S+) \(([\d.]+)s\)", re.M)
_SUB_FAIL = re.compile(r"^\s+--- FAIL: (\S+)", re.M)
_ASSERT_ERROR = re.compile(r"^\s+Error:\s+(.*?)(?=^\s+(?:Test|Messages):)", re.M | re.S)
_T_LOG = re.compile(r"^\s+(\w+_test\.go:\d+): (.+)$", re.M)
_LOG_ERROR = re.compile(r'level=error msg="([^"]{0,200})', re.M)
_NUMBERS = re.compile(r"\d+")
_HTTP_STATUS = re.compile(r"http error status code: (\d+)")


@dataclass
class TestResult:
    """One top-level Go test: its file, outcome, time and (when it failed) why."""

    package: str
    name: str
    file: str
    status: str = "not run"
    seconds: float = 0.0
    reason: str = ""
    cause: str = ""
    failed_subtests: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """The result as a JSON-ready dict."""
        return asdict(self)


def _squash(text: str) -> str:
    return " ".join(text.split())


def failure_reason(output: str) -> str:
    """The assertion messages (testify `Error:` blocks, t.Fatal lines) of a failed test, joined."""
    reasons = [_squash(m) for m in _ASSERT_ERROR.findall(output)]
    if not reasons:
        reasons = [f"{where}: {_squash(msg)}" for where, msg in _T_LOG.findall(output)]
    if "panic: test timed out" in output:
        reasons.insert(0, "test timed out")
    elif "panic:" in output:
        panic_line = output[output.index("panic:") :].splitlines()[0]
        reasons.insert(0, _squash(panic_line))
    if not reasons:
        reasons = [f"client log: {m}" for m in _LOG_ERROR.findall(output)[-2:]]
    if not reasons:
        tail = [line for line in output.strip().splitlines() if line.strip()][-3:]
        reasons = [_squash(" | ".join(tail))] if tail else ["no output"]
    return " || ".join(dict.fromkeys(reasons))[:600]


def classify(output: str, reason: str, name: str = "") -> str:
    """The cause a failed test is grouped under in the report."""
    for cause, pattern in CAUSES:
        if pattern.search(output):
            return cause
    if name in DIAGNOSED:
        return DIAGNOSED[name]
    status = _HTTP_STATUS.search(output)
    if status:
        return f"an admin REST call answered HTTP {status.group(1)}"
    if reason.startswith("test timed out"):
        return "test timed out (per-test timeout)"
    first = reason.split(" || ")[0]
    first = re.sub(r"\w+_test\.go:\d+: ", "", first)
    first = re.sub(r"(my-|test-|topic-)[\w.-]*", r"\1…", first)
    return _NUMBERS.sub("N", first)[:160]


def parse_go_output(result: TestResult, output: str, exit_code: int | None) -> TestResult:
    """Fill ``result`` from the `-test.v` output of one run of ``-test.run ^Name$``."""
    tops = [m for m in _TOP_RESULT.finditer(output) if m.group(2) == result.name]
    if tops:
        verdict = tops[-1]
        result.status = {"PASS": "passed", "FAIL": "failed", "SKIP": "skipped"}[verdict.group(1)]
        result.seconds = float(verdict.group(3))
    elif exit_code is None:
        result.status = "failed"
        output += "\npanic: test timed out (killed by the runner)"
    elif "no tests to run" in output:
        result.status = "skipped"
    else:
        result.status = "failed"
    if result.status == "failed":
        result.failed_subtests = [s for s in _SUB_FAIL.findall(output) if s != result.name][:20]
        result.reason = failure_reason(output)
        result.cause = classify(output, result.reason, result.name)
    elif result.status == "skipped":
        skip = re.search(r"^\s+\w+_test\.go:\d+: (.+)$", output, re.M)
        result.reason = _squash(skip.group(1)) if skip else ""
    return result


def _table(results: list[TestResult]) -> list[str]:
    per_file: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in results:
        per_file[f"{r.package}/{r.file}"][r.status] += 1
    lines = [f"{'file':58} {'passed':>6} {'failed':>6} {'skipped':>7} {'not run':>7} {'total':>5}"]
    totals: dict[str, int] = defaultdict(int)
    for name in sorted(per_file):
        counts = per_file[name]
        total = sum(counts.values())
        for key, value in counts.items():
            totals[key] += value
        lines.append(
            f"{name:58} {counts['passed']:>6} {counts['failed']:>6} {counts['skipped']:>7} "
            f"{counts['not run']:>7} {total:>5}"
        )
    lines.append(
        f"{'TOTAL':58} {totals['passed']:>6} {totals['failed']:>6} {totals['skipped']:>7} "
        f"{totals['not run']:>7} {sum(totals.values()):>5}"
    )
    return lines


def render_report(
    results: list[TestResult],
    excluded: dict[str, str],
    notes: list[str],
    on_pulsar: dict[str, str] | None = None,
) -> str:
    """The printed summary: per-file counts, totals, and the failures grouped by cause; with
    ``on_pulsar`` (status by test name of a run against Apache Pulsar) each failure says how it did there."""
    lines = [
        "",
        "== apache/pulsar-client-go ./pulsar/... (the broker: magnetar unless a note says otherwise) ==",
    ]
    lines += notes
    lines += ["", *_table(results)]
    if excluded:
        lines.append(
            f"(+ {len(excluded)} test functions in files excluded by build tags, not built: "
            + ", ".join(sorted(set(excluded.values())))
            + ")"
        )
    by_cause: dict[str, list[TestResult]] = defaultdict(list)
    for r in results:
        if r.status == "failed":
            by_cause[r.cause].append(r)
    lines += ["", "== failures by cause =="]
    for cause, failed in sorted(by_cause.items(), key=lambda item: -len(item[1])):
        lines.append(f"[{len(failed)}] {cause}")
        for r in sorted(failed, key=lambda r: (r.file, r.name)):
            subtests = f" (subtests: {', '.join(s.split('/', 1)[-1] for s in r.failed_subtests[:6])})"
            there = f" [on Pulsar: {on_pulsar.get(r.name, 'not run')}]" if on_pulsar is not None else ""
            lines.append(
                f"    {r.file}:{r.name}{there}{subtests if r.failed_subtests else ''}: {r.reason[:300]}"
            )
    return "\n".join(lines)
