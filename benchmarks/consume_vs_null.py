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
and is measured in the same rounds (before/after comparisons). With ``--client-baseline-src DIR``
magnetar.client from another source tree is measured too (series ``*-magnetar-baseline``: the same
worker with PYTHONPATH=DIR), alternated with the others in every round. ``--unbatched-sizes 100``
adds unbatched runs: the magnetar topic filled by ``magnetar perf produce -db`` (one message per
entry), the null broker feeding plain entries (``-b0``).

usage: python benchmarks/consume_vs_null.py [--count N] [--rounds R] [--sizes 100,1024] [--baseline-src DIR]
       [--client-baseline-src DIR] [--unbatched-sizes 100]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
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


#: CPU seconds (user + system) of each worker process run, by the series key the caller files it
#: under: start-up included, so a figure for comparing one client's trees, not clients
WORKER_CPU: dict[str, list[float]] = {}


def children_cpu() -> float:
    """User + system CPU seconds of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_worker(kind: str, url: str, topic: str, count: int, size: int, src: str | None = None,
               cpu_key: str | None = None) -> float:
    """One client_vs_official.py worker in its own process (``src``: its PYTHONPATH); returns msg/s
    (its CPU seconds go to ``WORKER_CPU[cpu_key]``)."""
    env = None if src is None else {**os.environ, "PYTHONPATH": src}
    before = children_cpu()
    out = subprocess.run(
        [sys.executable, str(HERE / "client_vs_official.py"), "--worker", kind, url, topic, str(count), str(size)],
        capture_output=True, text=True, timeout=600, env=env,
    )
    if cpu_key is not None:
        WORKER_CPU.setdefault(cpu_key, []).append(children_cpu() - before)
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


def fill_unbatched(broker: BrokerProcess, topic: str, count: int, size: int) -> None:
    """``count`` messages of ``size`` bytes, one per entry, by ``magnetar perf produce -db``."""
    subprocess.run(
        [sys.executable, "-m", "magnetar.cli.main", "perf", "produce", "-u", broker.service_url, "-m", str(count),
         "-s", str(size), "-r", "0", "-db", topic],
        capture_output=True, text=True, timeout=600, check=True,
    )


def client_series(args: argparse.Namespace) -> dict[str, tuple[str, str | None]]:
    """Series name -> (worker's client kind, PYTHONPATH or None for this process's)."""
    series: dict[str, tuple[str, str | None]] = {c: (c, None) for c in CLIENTS}
    if args.client_baseline_src:
        series["magnetar-baseline"] = ("magnetar", args.client_baseline_src)
    return series


def measure_size(
    size: int, args: argparse.Namespace, null_url: str, brokers: dict[str, BrokerProcess], batched: bool = True,
) -> dict:
    """Every round of one message size: {series: [msg/s per round]} and CPU per million.

    ``brokers`` maps a name ("magnetar", and "baseline" for another source tree) to a running broker.
    """
    layout = "b1000" if batched else "b0"
    topic = f"consume-s{size}-{layout}-{time.time_ns()}"
    for broker in brokers.values():
        hold_backlog(broker, topic)
        if batched:
            run_worker("produce-official", broker.service_url, topic, args.count, size)
        else:
            fill_unbatched(broker, topic, args.count, size)
    sides = ("null", *brokers)
    series = client_series(args)
    rates: dict[str, list[float]] = {f"{side}-{c}": [] for c in series for side in sides}
    cpu: dict[str, list[float]] = {f"{name}-{c}": [] for c in series for name in brokers}
    for r in range(args.rounds):
        for c, (kind, src) in series.items():
            null_topic = f"null-s{size}-{layout}-{r}"
            rates[f"null-{c}"].append(run_worker(f"consume-{kind}", null_url, null_topic, args.count, size, src,
                                                 f"{size}-{layout}-null-{c}"))
            for name, broker in brokers.items():
                before = cpu_seconds(broker.proc.pid)
                rates[f"{name}-{c}"].append(run_worker(f"consume-{kind}", broker.service_url, topic, args.count, size, src,
                                                       f"{size}-{layout}-{name}-{c}"))
                cpu[f"{name}-{c}"].append((cpu_seconds(broker.proc.pid) - before) / args.count * 1e6)
        print(f"size {size} round {r}: " + ", ".join(f"{k} {v[-1]:,.0f}" for k, v in rates.items()), flush=True)
    med = {k: statistics.median(v) for k, v in rates.items()}
    result = {
        "msg_per_s": {k: [round(x) for x in v] for k, v in rates.items()},
        "median_msg_per_s": {k: round(v) for k, v in med.items()},
        "ratio_official": round(med["magnetar-official"] / med["null-official"], 3),
        "ratio_magnetar_client": round(med["magnetar-magnetar"] / med["null-magnetar"], 3),
        "broker_cpu_seconds_per_million": {k: round(statistics.median(v), 3) for k, v in cpu.items()},
        "client_process_cpu_seconds": {k: round(statistics.median(WORKER_CPU[f"{size}-{layout}-{k}"]), 3) for k in rates},
    }
    if "magnetar-baseline" in series:
        result["ratio_magnetar_client_to_baseline_client"] = {
            side: round(med[f"{side}-magnetar"] / med[f"{side}-magnetar-baseline"], 3) for side in sides
        }
    result["ratio_magnetar_client_to_official"] = {
        side: round(med[f"{side}-magnetar"] / med[f"{side}-official"], 3) for side in sides
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
    parser.add_argument("--client-baseline-src", help="another tree's magnetar.client (PYTHONPATH) measured alongside")
    parser.add_argument("--unbatched-sizes", default="", help="sizes also measured unbatched, e.g. 100")
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
        for size in (int(s) for s in args.unbatched_sizes.split(",") if s):
            results[f"{size}B-unbatched"] = measure_size(size, args, f"pulsar://127.0.0.1:{null_port}", brokers, False)
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
        "client_baseline_src": args.client_baseline_src,
        "goal": "ratio_official >= 0.9",
        "results": results,
    }
    out = Path(args.out)
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["results"], indent=2))


if __name__ == "__main__":
    main()
