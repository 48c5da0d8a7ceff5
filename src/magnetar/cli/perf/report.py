"""What ``magnetar perf`` prints: a progress line per interval, the final summary, the JSON document.

Pure formatting of :class:`Snapshot` values, so that it is tested without a broker. Rates are in
messages and megabytes (10^6 bytes) per second; latencies in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from magnetar.cli.perf.recorder import LatencySummary

#: how each latency is named in the text output
LATENCY_LABELS = {"publish": "publish", "end_to_end": "end-to-end"}


@dataclass(frozen=True)
class Rate:
    """Messages and bytes moved in some seconds."""

    messages: int
    bytes: int
    seconds: float

    @property
    def msg_per_s(self) -> float:
        """Messages per second."""
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        """Megabytes (10^6 bytes) per second."""
        return self.bytes / self.seconds / 1e6 if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, float | int]:
        """The JSON form."""
        return {"messages": self.messages, "bytes": self.bytes,
                "msg_per_s": round(self.msg_per_s, 1), "mb_per_s": round(self.mb_per_s, 3)}


@dataclass(frozen=True)
class Snapshot:
    """The figures of one reporting interval, or of the whole run.

    ``rates`` by direction (``sent``, ``received``), ``counters`` such as ``pending`` and
    ``errors``, ``latencies`` by kind (``publish``, ``end_to_end``).
    """

    elapsed_s: float
    rates: dict[str, Rate] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    latencies: dict[str, LatencySummary] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The JSON form of an interval."""
        out: dict[str, Any] = {"elapsed_s": round(self.elapsed_s, 3)}
        out.update({name: rate.as_dict() for name, rate in self.rates.items()})
        out.update(self.counters)
        out["latency_ms"] = {name: summary.as_dict() for name, summary in self.latencies.items()}
        return out


def _latency_text(summary: LatencySummary, full: bool = False) -> str:
    parts = [f"mean {summary.mean:.3f}"] if full else []
    parts += [f"p50 {summary.p50:.3f}", f"p95 {summary.p95:.3f}", f"p99 {summary.p99:.3f}", f"p99.9 {summary.p999:.3f}"]
    if full:
        parts.append(f"p99.99 {summary.p9999:.3f}")
    parts.append(f"max {summary.max:.3f}")
    return " ".join(parts)


def progress_line(snapshot: Snapshot) -> str:
    """One line of an interval: rates, counters, then each latency's percentiles (ms)."""
    parts = [f"{name} {rate.msg_per_s:>10,.1f} msg/s {rate.mb_per_s:8.3f} MB/s" for name, rate in snapshot.rates.items()]
    parts.extend(f"{name} {value:,}" for name, value in snapshot.counters.items())
    line = f"[{snapshot.elapsed_s:7.1f} s] " + " | ".join(parts)
    for name, summary in snapshot.latencies.items():
        line += f" | {LATENCY_LABELS.get(name, name)} ms {_latency_text(summary)}"
    return line


def summary_text(command: str, total: Snapshot, target_rate: float = 0) -> str:
    """The final report: totals and rates over the run, counters, full latency percentiles."""
    target = f" (target {target_rate:,.0f} msg/s)" if target_rate else ""
    lines = [f"magnetar perf {command}: {total.elapsed_s:.2f} s{target}"]
    for name, rate in total.rates.items():
        lines.append(
            f"  {name:<10} {rate.messages:>12,} msg {rate.msg_per_s:>12,.1f} msg/s {rate.mb_per_s:10.3f} MB/s"
        )
    if total.counters:
        lines.append("  " + "  ".join(f"{name} {value:,}" for name, value in total.counters.items()))
    for name, summary in total.latencies.items():
        label = f"{LATENCY_LABELS.get(name, name)} latency ms"
        lines.append(f"  {label:<26} {_latency_text(summary, full=True)}")
    return "\n".join(lines)


def result_document(
    command: str, settings: dict[str, Any], total: Snapshot, intervals: list[Snapshot], target_rate: float = 0
) -> dict[str, Any]:
    """The ``--json`` document: settings, totals, latency percentiles (ms) and every interval."""
    doc: dict[str, Any] = {"command": command, "settings": settings, "target_rate": target_rate,
                           "duration_s": round(total.elapsed_s, 3)}
    doc.update({name: rate.as_dict() for name, rate in total.rates.items()})
    doc.update(total.counters)
    doc["latency_ms"] = {name: summary.as_dict() for name, summary in total.latencies.items()}
    doc["intervals"] = [snapshot.as_dict() for snapshot in intervals]
    return doc
