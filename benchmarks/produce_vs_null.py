"""Side-by-side produce benchmark: magnetar (fsync on) against a broker that only answers.

The official Python client sends 100-byte messages with batching to each target in turn,
alternating rounds, in one run. The result records each target's msg/s, their ratio (goal:
magnetar >= 0.9 of the null broker) and the broker's CPU seconds per million messages (from
/proc, user + system time of the broker process over the run).

usage: python benchmarks/produce_vs_null.py [--count N] [--size BYTES] [--rounds R]
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

from magnetar.testing import BrokerProcess, free_port, wait_for_port

HERE = Path(__file__).resolve().parent


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds used so far by a process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def produce(url: str, topic: str, count: int, size: int) -> dict:
    """Run one producer process and return its JSON report."""
    out = subprocess.run(
        [sys.executable, str(HERE / "produce_client.py"), url, topic, str(count), str(size)],
        capture_output=True, text=True, timeout=300, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Run the benchmark and write benchmarks/results/produce_vs_null.json."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    null_port = free_port()
    null = subprocess.Popen([sys.executable, str(HERE / "null_broker.py"), "--port", str(null_port)])
    tmp = tempfile.TemporaryDirectory()
    broker = BrokerProcess(Path(tmp.name) / "data", args=("--log-level", "WARNING"))
    try:
        wait_for_port(null_port)
        broker.start()
        pid = broker.proc.pid
        rates: dict[str, list[float]] = {"null": [], "magnetar": []}
        cpu_per_million: list[float] = []
        for r in range(args.rounds):
            rep = produce(f"pulsar://127.0.0.1:{null_port}", f"bench-null-{r}", args.count, args.size)
            rates["null"].append(rep["msg_per_s"])
            before = cpu_seconds(pid)
            rep = produce(broker.service_url, f"bench-{r}", args.count, args.size)
            assert rep["failures"] == 0 and rep["acked"] == args.count, rep
            rates["magnetar"].append(rep["msg_per_s"])
            cpu_per_million.append((cpu_seconds(pid) - before) / args.count * 1e6)
            print(f"round {r}: null {rates['null'][-1]:,.0f} msg/s, magnetar {rates['magnetar'][-1]:,.0f} msg/s, "
                  f"broker cpu {cpu_per_million[-1]:.2f} s per million", flush=True)
        null_rate = statistics.median(rates["null"])
        mag_rate = statistics.median(rates["magnetar"])
        result = {
            "benchmark": "official pulsar-client produce, batching on, send_async",
            "date": time.strftime("%Y-%m-%d"),
            "machine": f"{platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}",
            "message_bytes": args.size,
            "messages_per_round": args.count,
            "rounds": args.rounds,
            "fsync": "always",
            "null_broker_msg_per_s": rates["null"],
            "magnetar_msg_per_s": rates["magnetar"],
            "ratio_median": mag_rate / null_rate,
            "magnetar_cpu_seconds_per_million_messages": statistics.median(cpu_per_million),
        }
        out = HERE / "results" / "produce_vs_null.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(result, indent=2))
    finally:
        broker.stop()
        null.terminate()
        null.wait()
        tmp.cleanup()


if __name__ == "__main__":
    main()
