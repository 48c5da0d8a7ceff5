"""Side-by-side cost of persisting acknowledgements with the commit cadence (issue 13).

Two magnetar standalone brokers (fsync always) run at once: one with ``cursor_persist =
"commit"`` (acknowledgements persisted in their own rounds right after they change, the
default) and one with ``cursor_persist = "delay"`` (at most every
``cursor_persist_delay_seconds``, 1 s: the old behaviour). Rounds alternate between them (the
order flips every round) and, in each, both clients consume and acknowledge N messages one by one
from a topic holding them (produced beforehand without batching, so that every message is an
entry and every acknowledgement a cursor change). Each consumer runs in its own process.

Figures: consume+ack rate (messages/s, from the first receive to the last acknowledge call,
then close(), which flushes), and the broker process's CPU seconds during the consumption. Results: benchmarks/results/ack_cadence.json (medians, and commit/delay ratios).

usage: python benchmarks/ack_cadence.py [--count N] [--rounds R]
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
import uuid
from pathlib import Path

from magnetar.testing import BrokerProcess

HERE = Path(__file__).resolve().parent
SETTINGS = ("commit", "delay")
CLIENTS = ("official", "magnetar")


# -- worker (its own process) -----------------------------------------------------------------
def consume(client_name: str, url: str, topic: str, count: int) -> dict:
    """Receive and acknowledge ``count`` messages one by one; returns the timings."""
    if client_name == "official":
        import pulsar

        client = pulsar.Client(url, operation_timeout_seconds=30, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    else:
        import magnetar.client as pulsar

        client = pulsar.Client(url, operation_timeout_seconds=30)
    consumer = client.subscribe(topic, "bench", consumer_type=pulsar.ConsumerType.Shared,
                                initial_position=pulsar.InitialPosition.Earliest)
    first = consumer.receive(30_000)
    started = time.perf_counter()
    consumer.acknowledge(first)
    for _ in range(count - 1):
        consumer.acknowledge(consumer.receive(30_000))
    acked = time.perf_counter()
    consumer.close()
    closed = time.perf_counter()
    client.close()
    return {"seconds": acked - started, "close_seconds": closed - acked, "rate": (count - 1) / (acked - started)}


# -- driver -----------------------------------------------------------------------------------
def produce(url: str, topic: str, count: int) -> None:
    """``count`` messages of 100 bytes, one entry each."""
    import magnetar.client as pulsar

    client = pulsar.Client(url, operation_timeout_seconds=60)
    producer = client.create_producer(topic, batching_enabled=False, max_pending_messages=5000, block_if_queue_full=True)
    payload = b"x" * 100
    for _ in range(count):
        producer.send_async(payload, None)
    producer.flush()
    producer.close()
    client.close()


def cpu_seconds(broker: BrokerProcess) -> float:
    """User + system CPU seconds the broker process used so far (Linux /proc)."""
    assert broker.proc is not None
    fields = Path(f"/proc/{broker.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_broker(root: Path, setting: str, src: Path | None) -> BrokerProcess:
    """A broker persisting acknowledgements with ``setting`` (run from ``src`` when given)."""
    conf = root / f"{setting}.toml"
    conf.write_text(f'cursor_persist = "{setting}"\ncursor_persist_delay_seconds = 1.0\n')
    args = ("--fsync", "always", "--log-level", "WARNING", "--config", str(conf))
    env = {"PYTHONPATH": str(src)} if src else None
    return BrokerProcess(root / f"data-{setting}", args=args, env=env).start()


def measure(broker: BrokerProcess, client_name: str, count: int) -> dict:
    """Produce a fresh topic, then consume+ack it with one client in its own process."""
    topic = f"persistent://public/default/ack-cadence-{uuid.uuid4().hex[:8]}"
    produce(broker.service_url, topic, count)
    cpu_before = cpu_seconds(broker)
    out = subprocess.run(
        [sys.executable, __file__, "--worker", client_name, broker.service_url, topic, str(count)],
        check=True, capture_output=True, text=True, timeout=600,
    )
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    figures["broker_cpu_seconds"] = round(cpu_seconds(broker) - cpu_before, 2)
    return figures


def summarize(runs: dict) -> dict:
    """Medians per setting and client, and the commit/delay ratios."""
    summary: dict = {}
    for client_name in CLIENTS:
        med = {s: statistics.median(r["rate"] for r in runs[s][client_name]) for s in SETTINGS}
        summary[client_name] = {
            "commit_rate_median": round(med["commit"]), "delay_rate_median": round(med["delay"]),
            "commit_over_delay": round(med["commit"] / med["delay"], 3),
            "commit_broker_cpu_s_median": statistics.median(r["broker_cpu_seconds"] for r in runs["commit"][client_name]),
            "delay_broker_cpu_s_median": statistics.median(r["broker_cpu_seconds"] for r in runs["delay"][client_name]),
        }
    return summary


def main() -> int:
    """Command line entry point."""
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(consume(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=HERE / "results" / "ack_cadence.json")
    parser.add_argument("--broker-src", type=Path, help="run the brokers from this source directory (PYTHONPATH)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ack-cadence-"))
    brokers = {s: start_broker(root, s, args.broker_src) for s in SETTINGS}
    runs: dict = {s: {c: [] for c in CLIENTS} for s in SETTINGS}
    try:
        for r in range(args.rounds):
            order = SETTINGS if r % 2 == 0 else SETTINGS[::-1]
            for setting in order:
                for client_name in CLIENTS:
                    figures = measure(brokers[setting], client_name, args.count)
                    runs[setting][client_name].append(figures)
                    print(f"round {r + 1} {setting:6} {client_name:8}: {figures['rate']:9.0f} msg/s, "
                          f"close {figures['close_seconds']:.3f} s, broker cpu {figures['broker_cpu_seconds']:.2f} s",
                          file=sys.stderr)
    finally:
        for broker in brokers.values():
            broker.stop()
    result = {
        "what": "benchmarks/ack_cadence.py: consume+ack of N unbatched messages, acknowledgements persisted "
                "with the commit cadence vs at most every 1 s (cursor_persist = commit | delay)",
        "date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, 2 cores shared with other work; "
        "both settings alternate in the same run (order flipped each round): compare the ratios",
        "count": args.count, "rounds": args.rounds, "summary": summarize(runs), "runs": runs,
    }
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["summary"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
