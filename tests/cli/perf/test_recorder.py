"""Latency recording: counts folded into HDR histograms, per interval and for the whole run."""

from __future__ import annotations

import pytest

from magnetar.cli.perf.recorder import HIGHEST_MICROS, LatencyRecorder, LatencySummary, new_histogram


def test_percentiles_in_milliseconds_of_microsecond_values() -> None:
    recorder = LatencyRecorder()
    for micros in range(1, 1001):  # 1 µs .. 1 ms
        recorder.record(micros * 10)
    total = recorder.total()
    assert total.count == 1000
    assert total.p50 == pytest.approx(5.0, rel=0.01)
    assert total.p99 == pytest.approx(9.9, rel=0.01)
    assert total.max == pytest.approx(10.0, rel=0.01)
    assert total.mean == pytest.approx(5.005, rel=0.01)


def test_each_interval_starts_empty_while_the_total_keeps_everything() -> None:
    recorder = LatencyRecorder()
    recorder.record(1000)
    recorder.record(1000)
    first = recorder.interval()
    recorder.record(3000)
    second = recorder.interval()
    assert (first.count, first.max) == (2, pytest.approx(1.0, rel=0.01))
    assert (second.count, second.p50) == (1, pytest.approx(3.0, rel=0.01))
    assert recorder.interval().count == 0
    assert recorder.total().count == 3


def test_out_of_range_values_are_clamped_not_lost() -> None:
    recorder = LatencyRecorder()
    recorder.record(-5)  # clocks apart
    recorder.record(HIGHEST_MICROS * 10)
    total = recorder.total()
    assert total.count == 2
    assert total.max >= HIGHEST_MICROS / 1000 * 0.99


def test_an_empty_histogram_summarises_as_zeros() -> None:
    summary = LatencySummary.of(new_histogram())
    assert summary.count == 0 and summary.max == 0.0
    assert summary.as_dict() == {"count": 0, "mean": 0.0, "p50": 0.0, "p95": 0.0, "p99": 0.0,
                                 "p99_9": 0.0, "p99_99": 0.0, "max": 0.0}
