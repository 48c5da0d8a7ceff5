"""Side-by-side consume benchmark: magnetar (fsync on) against a broker that only feeds pre-built batches.

For each message size (100 B and 1 KiB), one magnetar topic is filled once with the official client
(batching: 1,000 messages / 10 ms / 128 KiB). Then, in alternating rounds, each client (the
official pulsar-client and magnetar.client's sync facade) receives and acknowledges N messages
from a new subscription (earliest position) on magnetar, and N messages from the null broker
(benchmarks/null_broker.py), which answers every FLOW with MESSAGE frames of one pre-built batch
of the same layout (each message with its sequence id, as the official producer that filled the
magnetar topic writes it: clients decode that layout more slowly than a bare payload size).
Every run is its own process (the workers of client_vs_official.py).

The result records each side's msg/s, the ratio magnetar / null per client (goal with the official
client: >= 0.9, the broker is never the bottleneck) and the broker's CPU seconds per million
messages consumed. Written to benchmarks/results/consume_vs_null.json.

With ``--baseline-src DIR`` a second magnetar broker runs from another source tree (PYTHONPATH=DIR)
and is measured in the same rounds (before/after comparisons).

usage: python benchmarks/consume_vs_null.py [--count N] [--rounds R] [--sizes 100,1024] [--baseline-src DIR]
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
import urllib.request
from pathlib import Path

from magnetar.testing import BrokerProcess, free_port, wait_for_port

HERE = Path(__file__).resolve().parent
CLIENTS = ("official", "magnetar")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds used so far by a process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_worker(kind: str, url: str, topic: str, count: int, size: int) -> float:
    """One client_vs_official.py worker in its own process; returns msg/s."""
    out = subprocess.run(
        [sys.executable, str(HERE / "client_vs_official.py"), "--worker", kind, url, topic, str(count), str(size)],
        capture_output=True, text=True, timeout=600,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{kind} failed:\n{out.stderr[-3000:]}")
    report = json.loads(out.stdout.strip().splitlines()[-1])
    if kind.startswith("produce") and (report["failures"] or report["acked"] != count):
        raise RuntimeError(f"{kind}: {report}")
    return report.get("count_timed", count) / report["seconds"]


def hold_backlog(broker: BrokerProcess, topic: str) -> None:
    """A subscription that never acknowledges, so the topic keeps its messages for every round."""
    url = f"{broker.http_url}/admin/v2/persistent/public/default/{topic}/subscription/hold"
    urllib.request.urlopen(urllib.request.Request(url, method="PUT"), timeout=30).read()


def measure_size(size: int, args: argparse.Namespace, null_url: str, brokers: dict[str, BrokerProcess]) -> dict:
    """Every round of one message size: {series: [msg/s per round]} and CPU per million.

    ``brokers`` maps a name ("magnetar", and "baseline" for another source tree) to a running broker.
    """
    topic = f"consume-s{size}-b1000-{time.time_ns()}"
    for broker in brokers.values():
        hold_backlog(broker, topic)
        run_worker("produce-official", broker.service_url, topic, args.count, size)
    sides = ("null", *brokers)
    rates: dict[str, list[float]] = {f"{side}-{c}": [] for c in CLIENTS for side in sides}
    cpu: dict[str, list[float]] = {f"{name}-{c}": [] for c in CLIENTS for name in brokers}
    for r in range(args.rounds):
        for c in CLIENTS:
            rates[f"null-{c}"].append(run_worker(f"consume-{c}", null_url, f"null-s{size}-b1000-{r}", args.count, size))
            for name, broker in brokers.items():
                before = cpu_seconds(broker.proc.pid)
                rates[f"{name}-{c}"].append(run_worker(f"consume-{c}", broker.service_url, topic, args.count, size))
                cpu[f"{name}-{c}"].append((cpu_seconds(broker.proc.pid) - before) / args.count * 1e6)
        print(f"size {size} round {r}: " + ", ".join(f"{k} {v[-1]:,.0f}" for k, v in rates.items()), flush=True)
    med = {k: statistics.median(v) for k, v in rates.items()}
    result = {
        "msg_per_s": {k: [round(x) for x in v] for k, v in rates.items()},
        "median_msg_per_s": {k: round(v) for k, v in med.items()},
        "ratio_official": round(med["magnetar-official"] / med["null-official"], 3),
        "ratio_magnetar_client": round(med["magnetar-magnetar"] / med["null-magnetar"], 3),
        "broker_cpu_seconds_per_million": {k: round(statistics.median(v), 3) for k, v in cpu.items()},
    }
    if "baseline" in brokers:
        result["baseline_ratio_official"] = round(med["baseline-official"] / med["null-official"], 3)
        result["baseline_ratio_magnetar_client"] = round(med["baseline-magnetar"] / med["null-magnetar"], 3)
    return result


def main() -> None:
    """Run the benchmark and write benchmarks/results/consume_vs_null.json."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="100,1024")
    parser.add_argument("--baseline-src", help="another magnetar source tree (PYTHONPATH) measured alongside")
    parser.add_argument("--out", default=str(HERE / "results" / "consume_vs_null.json"))
    args = parser.parse_args()

    null_port = free_port()
    null = subprocess.Popen([sys.executable, str(HERE / "null_broker.py"), "--port", str(null_port)])
    tmp = tempfile.TemporaryDirectory()
    broker_args = ("--fsync", "always", "--log-level", "WARNING")
    brokers = {"magnetar": BrokerProcess(Path(tmp.name) / "data", args=broker_args)}
    if args.baseline_src:
        brokers["baseline"] = BrokerProcess(
            Path(tmp.name) / "baseline", args=broker_args, env={"PYTHONPATH": args.baseline_src}
        )
    results: dict[str, dict] = {}
    try:
        wait_for_port(null_port)
        for broker in brokers.values():
            broker.start()
        for size in (int(s) for s in args.sizes.split(",")):
            results[f"{size}B"] = measure_size(size, args, f"pulsar://127.0.0.1:{null_port}", brokers)
    finally:
        for broker in brokers.values():
            broker.stop()
        null.terminate()
        null.wait()
        tmp.cleanup()
    report = {
        "benchmark": "consume (receive + acknowledge each message, sync API) from magnetar vs a broker feeding pre-built batches",
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}",
        "broker": "magnetar standalone, fsync always; null broker: benchmarks/null_broker.py consume mode",
        "null_layout": "batches as the official producer writes them: payload_size and sequence_id per message",
        "messages_per_run": args.count,
        "rounds": args.rounds,
        "alternated": "each round, per client: null, magnetar (and the baseline tree), in one run",
        "baseline_src": args.baseline_src,
        "goal": "ratio_official >= 0.9",
        "results": results,
    }
    out = Path(args.out)
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["results"], indent=2))


if __name__ == "__main__":
    main()
