"""Side-by-side produce benchmark: magnetar (fsync on) against a broker that only answers.

A producer process (``produce_client.py``: the official client, or magnetar.client with
``--client magnetar``) sends batched messages to each target in turn, in rounds whose order
turns, in one run. Each target's msg/s, its ratio to the null broker (goal: magnetar >= 0.9),
and the CPU seconds per million messages of the client (its process time from the first send
to the last receipt) and of the broker (user + system time from /proc over the run) are
recorded. With ``--baseline-src DIR`` a second magnetar broker runs from another source tree
(PYTHONPATH=DIR), and its producers use that tree's client too: before/after in one run.

usage: python benchmarks/produce_vs_null.py [--client official|magnetar] [--count N] [--sizes 100,1024]
       [--rounds R] [--baseline-src DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from magnetar.testing import BrokerProcess, free_port, wait_for_port

HERE = Path(__file__).resolve().parent


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds used so far by a process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def produce(url: str, topic: str, count: int, size: int, client: str, src: str | None = None) -> dict[str, Any]:
    """Run one producer process (from source tree ``src`` when given) and return its JSON report."""
    env = {**os.environ, "PYTHONPATH": src} if src else None
    out = subprocess.run(
        [sys.executable, str(HERE / "produce_client.py"), url, topic, str(count), str(size), "--client", client],
        capture_output=True, text=True, timeout=300, check=True, env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(name: str, url: str, pid: int | None, args: argparse.Namespace, size: int, run: int, src: str | None) -> dict:
    """One measured run against one target: msg/s, client and broker CPU seconds per million."""
    before = cpu_seconds(pid) if pid else 0.0
    rep = produce(url, f"bench-{name}-{size}-{run}", args.count, size, args.client, src)
    assert rep["failures"] == 0 and rep["acked"] == args.count, rep
    broker_cpu = cpu_seconds(pid) - before if pid else 0.0
    return {
        "msg_per_s": rep["msg_per_s"],
        "client_cpu_s_per_million": rep["cpu_s"] / args.count * 1e6,
        "broker_cpu_s_per_million": broker_cpu / args.count * 1e6,
    }


def summarize(runs: dict[str, list[dict]]) -> dict[str, Any]:
    """Medians per target, and the ratios to the null broker and to the baseline."""
    med = {
        name: {key: statistics.median(r[key] for r in rs) for key in rs[0]} for name, rs in runs.items() if rs
    }
    out: dict[str, Any] = {"medians": med, "runs": runs}
    out["ratio_to_null"] = {n: m["msg_per_s"] / med["null"]["msg_per_s"] for n, m in med.items() if n != "null"}
    if "baseline" in med:
        # per round: the changed tree against the baseline of the same round
        per_round = [a["msg_per_s"] / b["msg_per_s"] for a, b in zip(runs["magnetar"], runs["baseline"], strict=True)]
        out["ratio_to_baseline_per_round"] = per_round
        out["ratio_to_baseline_median"] = statistics.median(per_round)
    return out


def main() -> None:
    """Run the benchmark and write its JSON result."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--client", choices=("official", "magnetar"), default="official")
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--sizes", default="100", help="message sizes, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline-src", help="another magnetar source tree (PYTHONPATH), broker and client")
    parser.add_argument("--out", type=Path, help="result file (default results/produce_vs_null[_magnetar_client].json)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    out_path = args.out or HERE / "results" / (
        "produce_vs_null.json" if args.client == "official" else "produce_vs_null_magnetar_client.json"
    )

    null_port = free_port()
    null = subprocess.Popen([sys.executable, str(HERE / "null_broker.py"), "--port", str(null_port)])
    tmp = tempfile.TemporaryDirectory()
    brokers = {"magnetar": BrokerProcess(Path(tmp.name) / "data", args=("--log-level", "WARNING"))}
    if args.baseline_src:
        brokers["baseline"] = BrokerProcess(
            Path(tmp.name) / "baseline", args=("--log-level", "WARNING"), env={"PYTHONPATH": args.baseline_src}
        )
    try:
        wait_for_port(null_port)
        for broker in brokers.values():
            broker.start(timeout=60)
        targets: list[tuple[str, str, int | None, str | None]] = [("null", f"pulsar://127.0.0.1:{null_port}", None, None)]
        for name, broker in brokers.items():
            targets.append((name, broker.service_url, broker.proc.pid, args.baseline_src if name == "baseline" else None))
        results: dict[str, Any] = {}
        for size in sizes:
            for name, url, _pid, src in targets:  # warm-up: first segment, first connection
                produce(url, f"warm-{name}-{size}", min(args.count, 20_000), size, args.client, src)
            runs: dict[str, list[dict]] = {t[0]: [] for t in targets}
            for r in range(args.rounds):
                order = targets[r % len(targets):] + targets[: r % len(targets)]
                for name, url, pid, src in order:
                    runs[name].append(measure(name, url, pid, args, size, r, src))
                print(f"{size} B round {r}: " + ", ".join(
                    f"{n} {rs[-1]['msg_per_s']:,.0f} msg/s (client {rs[-1]['client_cpu_s_per_million']:.2f},"
                    f" broker {rs[-1]['broker_cpu_s_per_million']:.2f} cpu s/M)" for n, rs in runs.items()
                ), flush=True)
            results[str(size)] = summarize(runs)
        result = {
            "benchmark": f"produce with {args.client} client, batching on (1000 messages), send_async",
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}",
            "load_average": os.getloadavg(),
            "messages_per_round": args.count,
            "rounds": args.rounds,
            "fsync": "always",
            "baseline_src": args.baseline_src,
            "sizes": results,
        }
        out_path.parent.mkdir(exist_ok=True)
        out_path.write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps({s: {k: v for k, v in r.items() if k != "runs"} for s, r in results.items()}, indent=2))
    finally:
        for broker in brokers.values():
            broker.stop()
        null.terminate()
        null.wait()
        tmp.cleanup()


if __name__ == "__main__":
    main()
