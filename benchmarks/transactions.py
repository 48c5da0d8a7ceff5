"""What transactions cost a producer: N messages of 100 B in transactions of T messages each,
against the same N without transactions, side by side on one broker (fsync always, its default).

Rounds alternate plain and transactional produce, each on a topic of its own, with magnetar.client's
asyncio core (batching 1,000 messages / 10 ms). A transactional round does what pulsar-perf does with
``--txn-enable``: T sends in a transaction, its commit started, the next transaction opened at once;
the round ends when every commit is answered (so every message is visible). The figure is the
median round time of each kind and their ratio (issue 23's target: at most 1.5x). The CPU seconds
of the client and of the broker process for each round are recorded too (they hold up on a loaded
machine, where round times do not), with the load average at the start and the end.

usage: python benchmarks/transactions.py [--count N] [--per-txn T] [--rounds R] [--out FILE]
Results: benchmarks/results/transactions.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from magnetar.client import AsyncClient  # noqa: E402
from magnetar.testing import BrokerProcess  # noqa: E402

PAYLOAD = b"x" * 100
PRODUCER_OPTIONS = {"batching_max_messages": 1000, "batching_max_publish_delay_ms": 10, "max_pending_messages": 0}


async def produce_plain(client: AsyncClient, topic: str, count: int) -> float:
    """Seconds to send ``count`` messages and have every receipt (as the transactional round: no
    future kept but the last, whose receipt comes last)."""
    producer = await client.create_producer(topic, **PRODUCER_OPTIONS)
    started = time.perf_counter()
    last = None
    for _ in range(count):
        last = await producer.send_async(PAYLOAD)
    await last  # (receipts come in order: the last one means every one; no list of 200,000 futures)
    elapsed = time.perf_counter() - started
    await producer.close()
    return elapsed


async def produce_in_transactions(client: AsyncClient, topic: str, count: int, per_txn: int) -> float:
    """Seconds to send ``count`` messages in transactions of ``per_txn`` and have every commit answered."""
    producer = await client.create_producer(topic, **PRODUCER_OPTIONS)
    started = time.perf_counter()
    commits = []
    for first in range(0, count, per_txn):
        txn = await client.new_transaction(timeout_ms=120_000)
        for _ in range(min(per_txn, count - first)):
            await producer.send_async(PAYLOAD, txn=txn)
        commits.append(asyncio.ensure_future(txn.commit()))
    await asyncio.gather(*commits)
    elapsed = time.perf_counter() - started
    await producer.close()
    return elapsed


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (every thread)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run(url: str, broker_pid: int, count: int, per_txn: int, rounds: int) -> dict[str, dict[str, list[float]]]:
    """Round times and CPU seconds (client, broker) of each kind, alternated."""
    kinds = ("plain", "transactions")
    out: dict[str, dict[str, list[float]]] = {k: {"seconds": [], "client_cpu": [], "broker_cpu": []} for k in kinds}
    client = AsyncClient(url, enable_transaction=True)
    try:
        for n in range(rounds):
            for kind in kinds:
                client_cpu, broker_cpu = time.process_time(), cpu_seconds(broker_pid)
                topic = f"persistent://public/default/{kind}-{n}"
                if kind == "plain":
                    seconds = await produce_plain(client, topic, count)
                else:
                    seconds = await produce_in_transactions(client, topic, count, per_txn)
                out[kind]["seconds"].append(seconds)
                out[kind]["client_cpu"].append(round(time.process_time() - client_cpu, 3))
                out[kind]["broker_cpu"].append(round(cpu_seconds(broker_pid) - broker_cpu, 3))
            print(f"round {n + 1}: plain {out['plain']['seconds'][-1]:.2f} s, "
                  f"transactions {out['transactions']['seconds'][-1]:.2f} s", flush=True)
    finally:
        await client.close()
    return out


def main() -> None:
    """Start a broker, run the rounds, print and record the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--per-txn", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "transactions.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp) / "data").start()
        try:
            assert broker.proc is not None
            runs = asyncio.run(run(broker.service_url, broker.proc.pid, args.count, args.per_txn, args.rounds))
        finally:
            broker.stop()
    plain, txn = (statistics.median(runs[k]["seconds"]) for k in ("plain", "transactions"))
    cpu = {k: round(statistics.median(a + b for a, b in zip(runs[k]["client_cpu"], runs[k]["broker_cpu"], strict=True)), 3)
           for k in runs}
    result = {
        "count": args.count, "per_txn": args.per_txn, "rounds": args.rounds, "runs": runs,
        "load_average": {"start": [round(x, 2) for x in load_before], "end": [round(x, 2) for x in os.getloadavg()]},
        "plain_msg_per_s": round(args.count / plain), "transactions_msg_per_s": round(args.count / txn),
        "cost_ratio": round(txn / plain, 3),
        "cpu_seconds_median": cpu, "cpu_ratio": round(cpu["transactions"] / cpu["plain"], 3),
    }
    print(f"plain {result['plain_msg_per_s']:,} msg/s, in transactions {result['transactions_msg_per_s']:,} msg/s:"
          f" transactions cost {result['cost_ratio']}x the time, {result['cpu_ratio']}x the CPU (target <= 1.5x)")
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
