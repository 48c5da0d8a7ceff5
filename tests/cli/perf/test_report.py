"""Formatting of the progress line, the summary and the JSON document."""

from __future__ import annotations

import json

from magnetar.cli.perf.recorder import LatencySummary
from magnetar.cli.perf.report import Rate, Snapshot, progress_line, result_document, summary_text

LATENCY = LatencySummary(count=100, mean=1.5, p50=1.25, p95=2.5, p99=3.75, p999=5.0, p9999=6.0, max=7.125)


def test_rates_per_second() -> None:
    rate = Rate(messages=10_000, bytes=2_000_000, seconds=2.0)
    assert rate.msg_per_s == 5000 and rate.mb_per_s == 1.0
    assert Rate(5, 5, 0).msg_per_s == 0.0
    assert rate.as_dict() == {"messages": 10_000, "bytes": 2_000_000, "msg_per_s": 5000.0, "mb_per_s": 1.0}


def test_progress_line_shows_rates_counters_and_latency_percentiles() -> None:
    snapshot = Snapshot(3.0, {"produced": Rate(10_001, 1_000_100, 1.0)}, {"pending": 12, "errors": 0},
                        {"publish": LATENCY})
    assert progress_line(snapshot) == (
        "[    3.0 s] produced   10,001.0 msg/s    1.000 MB/s | pending 12 | errors 0"
        " | publish ms p50 1.250 p95 2.500 p99 3.750 p99.9 5.000 max 7.125"
    )


def test_end_to_end_progress_names_both_latencies() -> None:
    snapshot = Snapshot(1.0, {"produced": Rate(1, 1, 1.0), "consumed": Rate(1, 1, 1.0)}, {"in_flight": 3},
                        {"publish": LATENCY, "end_to_end": LATENCY})
    line = progress_line(snapshot)
    assert "| in_flight 3 |" in line
    assert line.index("publish ms p50") < line.index("end-to-end ms p50")


def test_summary_has_totals_counters_and_full_percentiles() -> None:
    total = Snapshot(3.05, {"sent": Rate(6000, 600_000, 3.0), "produced": Rate(6000, 600_000, 3.05)},
                     {"pending": 0, "errors": 0}, {"publish": LATENCY})
    text = summary_text("produce", total, target_rate=2000)
    lines = text.splitlines()
    assert lines[0] == "magnetar perf produce: 3.05 s (target 2,000 msg/s)"
    assert lines[1].split() == ["sent", "6,000", "msg", "2,000.0", "msg/s", "0.200", "MB/s"]
    assert lines[2].split()[:4] == ["produced", "6,000", "msg", "1,967.2"]
    assert lines[3].strip() == "pending 0  errors 0"
    assert lines[4].split() == ["publish", "latency", "ms", "mean", "1.500", "p50", "1.250", "p95", "2.500", "p99",
                                "3.750", "p99.9", "5.000", "p99.99", "6.000", "max", "7.125"]


def test_json_document_fields() -> None:
    interval = Snapshot(1.0, {"produced": Rate(2000, 200_000, 1.0)}, {"pending": 1, "errors": 0}, {"publish": LATENCY})
    total = Snapshot(3.0, {"sent": Rate(6000, 600_000, 3.0), "produced": Rate(6000, 600_000, 3.0)},
                     {"pending": 0, "errors": 0}, {"publish": LATENCY})
    doc = result_document("produce", {"rate": 2000.0}, total, [interval], target_rate=2000)
    assert json.loads(json.dumps(doc)) == doc
    assert doc["command"] == "produce" and doc["settings"] == {"rate": 2000.0} and doc["target_rate"] == 2000
    assert doc["duration_s"] == 3.0
    assert doc["sent"]["msg_per_s"] == 2000.0 and doc["produced"]["messages"] == 6000
    assert doc["pending"] == 0 and doc["errors"] == 0
    assert doc["latency_ms"]["publish"] == {"count": 100, "mean": 1.5, "p50": 1.25, "p95": 2.5, "p99": 3.75,
                                            "p99_9": 5.0, "p99_99": 6.0, "max": 7.125}
    assert doc["intervals"] == [{"elapsed_s": 1.0, "produced": {"messages": 2000, "bytes": 200_000,
                                                                "msg_per_s": 2000.0, "mb_per_s": 0.2},
                                 "pending": 1, "errors": 0, "latency_ms": {"publish": LATENCY.as_dict()}}]
