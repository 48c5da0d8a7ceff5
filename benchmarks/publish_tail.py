"""Publish latency at a fixed rate with fsync, next to the disk's own fdatasync latency, side by side.

Each round, for each broker (this tree's and, with ``--baseline-src``, the baseline tree's, the
order alternating per round):

1. the disk alone: write(100 B) + fdatasync back to back for ``--seconds`` on the brokers' file
   system, each call timed (p50 / p99 / p99.9 / max);
2. ``magnetar perf produce --rate R --size 100 --time T --json`` (the client from ``--client-src``)
   against the broker (fsync always), and what benchmarks/loop_probe.py saw in the broker over the
   run: its loop lag, its garbage collections and its own fdatasyncs.

Medians over the rounds are printed as JSON (``--out`` to keep them).

usage: python benchmarks/publish_tail.py [--rate 10000] [--seconds 8] [--rounds 3] [--baseline-src DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from magnetar.testing import BrokerProcess

HERE = Path(__file__).resolve().parent


class ProbedBroker(BrokerProcess):
    """A broker started through benchmarks/loop_probe.py, which dumps its probes on SIGUSR1."""

    def __init__(self, data_dir: Path, src: Path, probe_out: Path, switch_interval_ms: float | None = None) -> None:
        env = {"PYTHONPATH": str(src), "MAGNETAR_PROBE_OUT": str(probe_out)}
        if switch_interval_ms is not None:
            env["MAGNETAR_PROBE_SWITCH_INTERVAL_MS"] = str(switch_interval_ms)
        super().__init__(data_dir, args=("--fsync", "always", "--log-level", "WARNING"), env=env)
        self.probe_out = probe_out

    def command(self) -> list[str]:
        """The CLI command line, run through the probe launcher."""
        cmd = super().command()
        return [sys.executable, str(HERE / "loop_probe.py"), *cmd[3:]]

    def probes(self) -> dict:
        """What the probe saw since the previous call."""
        assert self.proc is not None
        lines = self.probe_out.read_text().splitlines() if self.probe_out.exists() else []
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            now = self.probe_out.read_text().splitlines() if self.probe_out.exists() else []
            if len(now) > len(lines):
                return json.loads(now[-1])
            time.sleep(0.05)
        raise RuntimeError("the probe did not answer")


def disk_latency(directory: Path, seconds: float) -> dict:
    """write(100 B) + fdatasync back to back, each timed: percentiles in ms and the rate."""
    path = directory / f"disk-{time.time_ns()}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    times: list[float] = []
    try:
        end = time.perf_counter() + seconds
        while (start := time.perf_counter()) < end:
            os.write(fd, b"x" * 100)
            os.fdatasync(fd)
            times.append((time.perf_counter() - start) * 1000)
    finally:
        os.close(fd)
        path.unlink()
    times.sort()
    return {"per_second": round(len(times) / seconds), "p50": round(times[len(times) // 2], 3),
            "p99": round(times[int(len(times) * 0.99)], 3), "p99.9": round(times[int(len(times) * 0.999)], 3),
            "max": round(times[-1], 3)}


def perf_produce(url: str, topic: str, rate: float, seconds: float, client_src: Path) -> dict:
    """``magnetar perf produce`` at ``rate``: its latency summary (ms) and achieved rate."""
    env = {**os.environ, "PYTHONPATH": str(client_src)}
    cmd = [sys.executable, "-m", "magnetar.cli.main", "perf", "produce", topic, "-u", url, "-r", str(rate),
           "-s", "100", "-t", str(seconds), "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds * 10 + 60, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"perf produce failed:\n{out.stderr[-3000:]}")
    text = out.stdout
    return json.JSONDecoder().raw_decode(text[text.index("{"):])[0]


def summary(report: dict) -> dict:
    """The figures of a perf --json report this benchmark keeps: publish latency (ms) and the rate."""
    latencies = report["latency_ms"]
    latency = latencies.get("publish") or next(iter(latencies.values()))
    keep = {"p50": latency["p50"], "p99": latency["p99"], "p99.9": latency["p99_9"], "max": latency["max"]}
    keep["msg_per_second"] = round(latency["count"] / report["duration_s"])
    return keep


def main() -> None:
    """Run the rounds and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rate", type=float, default=10000)
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline-src", type=Path)
    parser.add_argument("--client-src", type=Path, default=HERE.parent / "src")
    parser.add_argument("--switch-interval-ms", type=float,
                        help="instead of two trees: this tree twice, the second broker with this switch interval")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    here = HERE.parent / "src"
    variants: dict[str, tuple[Path, float | None]] = {"broker": (here, None)}
    if args.baseline_src is not None:
        variants = {"before": (args.baseline_src, None), "after": (here, None)}
    elif args.switch_interval_ms is not None:
        variants = {"switch-5ms": (here, None), f"switch-{args.switch_interval_ms:g}ms": (here, args.switch_interval_ms)}
    runs: dict[str, list[dict]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        data = Path(tmp)
        brokers = {name: ProbedBroker(data / name, src, data / f"{name}.probe", interval)
                   for name, (src, interval) in variants.items()}
        try:
            for broker in brokers.values():
                broker.start()
                broker.probes()  # start-up's collections and lags are not the run's
            for r in range(args.rounds):
                order = list(brokers.items()) if r % 2 == 0 else list(reversed(brokers.items()))
                for name, broker in order:
                    disk = disk_latency(data, args.seconds)
                    broker.probes()
                    report = perf_produce(broker.service_url, f"tail-{r}", args.rate, args.seconds, args.client_src)
                    run = {"disk": disk, "publish": summary(report), "broker": broker.probes(), "raw": report}
                    runs[name].append(run)
                    print(json.dumps({"round": r, "broker": name, "disk": disk, "publish": run["publish"],
                                      "probes": run["broker"]}), flush=True)
        finally:
            for broker in brokers.values():
                broker.stop()
    result = {"rate": args.rate, "seconds": args.seconds, "rounds": args.rounds, "runs": runs}
    medians = {}
    for name, items in runs.items():
        medians[name] = {
            "publish_ms": {k: statistics.median(i["publish"][k] for i in items) for k in items[0]["publish"]},
            "disk_fdatasync_ms": {k: statistics.median(i["disk"][k] for i in items) for k in items[0]["disk"]},
            "broker_fdatasync_ms": {k: statistics.median(i["broker"]["broker_fdatasync_ms"].get(k, 0) for i in items)
                                    for k in ("p50", "p99", "p99.9", "max")},
            "loop_lag_ms": {k: statistics.median(i["broker"]["loop_lag_ms"].get(k, 0) for i in items)
                            for k in ("p99", "p99.9", "max", "over_2ms", "over_5ms")},
            "broker_cpu_s": statistics.median(i["broker"].get("cpu_s", 0) for i in items),
            "loop_writev_ms": {k: statistics.median(i["broker"].get("loop_writev_ms", {}).get(k, 0) for i in items)
                               for k in ("count", "p99", "max", "over_2ms")},
            "thread_writev_ms": {k: statistics.median(i["broker"].get("broker_writev_ms", {}).get(k, 0)
                                                      for i in items) for k in ("count", "p99", "max")},
        }
    result["medians"] = medians
    print(json.dumps(medians, indent=2))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
