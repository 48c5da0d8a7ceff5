"""Latency recording: an HDR histogram per reporting interval and one for the whole run.

Recording a value into an ``HdrHistogram`` costs about a microsecond in Python, too much at
hundreds of thousands of messages a second. The hot path only counts values in a dict
(:meth:`LatencyRecorder.record`); each tick groups the counts by histogram bucket and records each
bucket once, with ``record_value(value, count)``, into the interval's histogram, which is then
added to the run's (a native array addition). The mean is kept from the exact values, because the
library computes it by walking every bucket in Python.
"""

from __future__ import annotations

from dataclasses import dataclass

from hdrh.histogram import HdrHistogram

#: microseconds: 1 µs to one hour, three significant digits (HdrHistogram's usual setting)
LOWEST_MICROS = 1
HIGHEST_MICROS = 3_600_000_000
SIGNIFICANT_DIGITS = 3


#: values below 2 ** SUB_BUCKET_BITS are exact; above, a bucket spans 2 ** (bit length - SUB_BUCKET_BITS)
#: (the layout of a 3-significant-digit HdrHistogram)
SUB_BUCKET_BITS = 11


def bucket_of(micros: int) -> int:
    """The lowest value of the histogram bucket that holds ``micros``."""
    if micros < 1 << SUB_BUCKET_BITS:
        return micros
    shift = micros.bit_length() - SUB_BUCKET_BITS
    return (micros >> shift) << shift


@dataclass(frozen=True)
class LatencySummary:
    """Percentiles of a set of latencies, in milliseconds."""

    count: int
    mean: float
    p50: float
    p95: float
    p99: float
    p999: float
    p9999: float
    max: float

    @classmethod
    def of(cls, histogram: HdrHistogram, mean_micros: float | None = None) -> LatencySummary:
        """The summary of a histogram of microseconds (``mean_micros``: the exact mean, if known)."""
        if histogram.get_total_count() == 0:
            return cls(0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        at = histogram.get_percentile_to_value_dict([50, 95, 99, 99.9, 99.99])
        if mean_micros is None:
            mean_micros = histogram.get_mean_value()
        return cls(
            count=histogram.get_total_count(),
            mean=mean_micros / 1000,
            p50=at[50] / 1000,
            p95=at[95] / 1000,
            p99=at[99] / 1000,
            p999=at[99.9] / 1000,
            p9999=at[99.99] / 1000,
            max=histogram.get_max_value() / 1000,
        )

    def as_dict(self) -> dict[str, float | int]:
        """The JSON form: ``count``, ``mean``, ``p50``, ``p95``, ``p99``, ``p99_9``, ``p99_99``, ``max``."""
        return {
            "count": self.count, "mean": round(self.mean, 3), "p50": round(self.p50, 3), "p95": round(self.p95, 3),
            "p99": round(self.p99, 3), "p99_9": round(self.p999, 3), "p99_99": round(self.p9999, 3),
            "max": round(self.max, 3),
        }


def new_histogram() -> HdrHistogram:
    """An empty histogram of microseconds with the recorder's range and precision."""
    return HdrHistogram(LOWEST_MICROS, HIGHEST_MICROS, SIGNIFICANT_DIGITS)


class LatencyRecorder:
    """Latencies in microseconds, summarised per interval and for the whole run."""

    def __init__(self) -> None:
        #: value -> count since the last fold; :meth:`record` is the only hot-path work
        self.counts: dict[int, int] = {}
        self._interval = new_histogram()
        self._total = new_histogram()
        #: sums of the exact values, for the means
        self._interval_sum = 0
        self._total_sum = 0

    def record(self, micros: int) -> None:
        """Count one latency (negative values, from clocks apart, count as 0)."""
        counts = self.counts
        counts[micros] = counts.get(micros, 0) + 1

    def _fold(self) -> None:
        counts, self.counts = self.counts, {}
        buckets: dict[int, int] = {}
        value_sum = 0
        for value, count in counts.items():
            value = min(max(value, LOWEST_MICROS), HIGHEST_MICROS)
            value_sum += value * count
            bucket = bucket_of(value)
            buckets[bucket] = buckets.get(bucket, 0) + count
        interval = self._interval
        for bucket, count in buckets.items():
            interval.record_value(bucket, count)
        self._interval_sum += value_sum

    def interval(self) -> LatencySummary:
        """The latencies recorded since the previous call, then start a new interval."""
        self._fold()
        interval = self._interval
        count = interval.get_total_count()
        summary = LatencySummary.of(interval, self._interval_sum / count if count else 0.0)
        self._total.add(interval)
        self._total_sum += self._interval_sum
        interval.reset()
        self._interval_sum = 0
        return summary

    def histogram(self) -> HdrHistogram:
        """The whole run's histogram (microseconds), e.g. to encode or merge it."""
        self._fold()
        histogram = new_histogram()
        histogram.add(self._total)
        histogram.add(self._interval)
        return histogram

    def total(self) -> LatencySummary:
        """The latencies of the whole run."""
        histogram = self.histogram()
        count = histogram.get_total_count()
        return LatencySummary.of(histogram, (self._total_sum + self._interval_sum) / count if count else 0.0)
