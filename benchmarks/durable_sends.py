"""One-at-a-time durable sends against the machine's fsync rate, side by side.

Each round runs, one after the other on the same disk (the broker's data directory):

- the baseline: a tiny loop appending 100 bytes to a file and calling fdatasync, for T seconds;
- magnetar (fsync always): one producer sending 100-byte messages one at a time, each send
  waiting for its receipt (which magnetar only sends after the fsync covering the message), for
  T seconds, with magnetar.client and with the official pulsar-client (batching off).

The ratio send rate / fsync rate (goal >= 0.8) is taken per round and its median reported, so
the disk's mood, which changes from second to second on a shared machine, affects both sides of
one ratio alike. Written to benchmarks/results/durable_sends.json.

usage: python benchmarks/durable_sends.py [--seconds T] [--rounds R]
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

from magnetar.testing import BrokerProcess

HERE = Path(__file__).resolve().parent


def fsync_loop(directory: Path, seconds: float) -> float:
    """Appends of 100 bytes, each followed by fdatasync, for ``seconds``: returns fsyncs per second."""
    path = directory / f"fsync-baseline-{time.time_ns()}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        count = 0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            os.write(fd, b"x" * 100)
            os.fdatasync(fd)
            count += 1
        return count / (time.perf_counter() - start)
    finally:
        os.close(fd)
        path.unlink()


def send_magnetar(url: str, topic: str, seconds: float) -> dict:
    """One-at-a-time sends with magnetar.client (sync facade, batching off)."""
    from magnetar.client import Client

    client = Client(url, operation_timeout_seconds=30)
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"w" * 100)  # warm-up: topic loaded, connection ready
    count = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        producer.send(b"x" * 100)
        count += 1
    elapsed = time.perf_counter() - start
    client.close()
    return {"sent": count, "seconds": elapsed}


def send_official(url: str, topic: str, seconds: float) -> dict:
    """One-at-a-time sends with the official pulsar-client (batching off)."""
    import pulsar

    client = pulsar.Client(url, operation_timeout_seconds=30, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"w" * 100)
    count = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        producer.send(b"x" * 100)
        count += 1
    elapsed = time.perf_counter() - start
    client.close()
    return {"sent": count, "seconds": elapsed}


WORKERS = {"magnetar": send_magnetar, "official": send_official}


def run_worker(kind: str, url: str, topic: str, seconds: float) -> float:
    """One sender in its own process; returns sends per second."""
    out = subprocess.run(
        [sys.executable, __file__, "--worker", kind, url, topic, str(seconds)],
        capture_output=True, text=True, timeout=300,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{kind} failed:\n{out.stderr[-3000:]}")
    report = json.loads(out.stdout.strip().splitlines()[-1])
    return report["sent"] / report["seconds"]


def main() -> None:
    """Run the benchmark and write benchmarks/results/durable_sends.json."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=str(HERE / "results" / "durable_sends.json"))
    parser.add_argument("--worker", nargs=4, metavar=("KIND", "URL", "TOPIC", "SECONDS"))
    args = parser.parse_args()
    if args.worker:
        kind, url, topic, seconds = args.worker
        print(json.dumps(WORKERS[kind](url, topic, float(seconds))))
        return

    tmp = tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR"))
    data = Path(tmp.name) / "data"
    broker = BrokerProcess(data, args=("--fsync", "always", "--log-level", "WARNING"))
    rates: dict[str, list[float]] = {"fsync": [], **{k: [] for k in WORKERS}}
    try:
        broker.start()
        for r in range(args.rounds):
            for kind in WORKERS:
                rates["fsync"].append(fsync_loop(data, args.seconds))
                rates[kind].append(run_worker(kind, broker.service_url, f"durable-{kind}-{r}", args.seconds))
            print(f"round {r}: " + ", ".join(f"{k} {v[-1]:,.0f}/s" for k, v in rates.items()), flush=True)
    finally:
        broker.stop()
        tmp.cleanup()
    # each sender's ratio is taken against the fsync loop run just before it
    ratios = {kind: [rates[kind][r] / rates["fsync"][2 * r + i] for r in range(args.rounds)] for i, kind in enumerate(WORKERS)}
    report = {
        "benchmark": "one-at-a-time durable sends (100 B, each waits for its receipt) vs an fdatasync loop on the same disk",
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}",
        "broker": "magnetar standalone, fsync always (a receipt only after the fsync covering the entry)",
        "seconds_per_run": args.seconds,
        "rounds": args.rounds,
        "alternated": "each round: fsync loop, magnetar.client sends, fsync loop, official client sends",
        "per_second": {k: [round(x) for x in v] for k, v in rates.items()},
        "ratio_per_round": {k: [round(x, 3) for x in v] for k, v in ratios.items()},
        "ratio_median": {k: round(statistics.median(v), 3) for k, v in ratios.items()},
        "goal": "ratio >= 0.8",
    }
    out = Path(args.out)
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: report[k] for k in ("per_second", "ratio_median")}, indent=2))


if __name__ == "__main__":
    main()
