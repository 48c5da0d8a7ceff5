"""Where a durable one-at-a-time send's round trip goes, hop by hop (issue 27's durable sends).

A broker (fsync always) from ``--broker-src`` runs under benchmarks/loop_probe.py, whose hop probe
(benchmarks/hop_probe.py) stamps each SEND to topic ``probe`` on its way through the broker: the
loop read it, decoded it, handed its commit round to the commit thread, the thread began it, the
kernel returned its fdatasync (before the thread asked for the GIL back), the thread held the GIL
again, the loop ran the round's outcome, queued the receipt and wrote it. A sender (magnetar.client's
asyncio API, ``await producer.send``: no thread hop inside the client) sends 100 B messages one at a
time for ``--seconds`` and stamps each send and receipt on the same clock (CLOCK_MONOTONIC), so
the hops outside the broker (client to the loop's read, the write to the client's wake-up) line up
with the broker's. The fsync loop of durable_sends.py runs first on the same disk for the ratio.

Printed: sends per second, the fsync rate, and per hop its p50 / p99 and mean (µs). With
``--baseline-src`` a second tree is run the same way after the first, alternated ``--rounds`` times.

usage: python benchmarks/durable_hops.py [--seconds 5] [--rounds 2] [--broker-src DIR] [--baseline-src DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from benchmarks.durable_sends import fsync_loop  # noqa: E402
from benchmarks.loop_isolation import PROBE_TOPIC, hop_breakdown, probes_of  # noqa: E402
from benchmarks.publish_tail import ProbedBroker  # noqa: E402

from magnetar.client import AsyncClient  # noqa: E402


async def send_one_at_a_time(url: str, seconds: float) -> dict[int, tuple[float, float]]:
    """Each send awaits its receipt; per sequence id its send and receipt stamps."""
    client = AsyncClient(url)
    stamps: dict[int, tuple[float, float]] = {}
    try:
        producer = await client.create_producer(PROBE_TOPIC, batching_enabled=False)
        sequence_id = 0
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            sent = time.perf_counter()
            await producer.send(b"x" * 100)
            stamps[sequence_id] = (sent, time.perf_counter())
            sequence_id += 1
        await producer.close()
    finally:
        await client.close()
    return stamps


def one_run(src: Path, seconds: float) -> dict:
    """The fsync loop, then a probed broker of ``src`` and the sender: rates and hops."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        fsync_rate = fsync_loop(Path(tmp), seconds)
        broker = ProbedBroker(data, src, Path(tmp) / "probe.jsonl").start()
        try:
            asyncio.run(send_one_at_a_time(broker.service_url, 1.0))  # warm: topic loaded, code paths run
            probes_of(broker)
            stamps = asyncio.run(send_one_at_a_time(broker.service_url, seconds))
            seen = probes_of(broker)
        finally:
            broker.stop()
    rows = hop_breakdown(stamps, seen.get("hop_sends", {}))
    rate = len(stamps) / seconds
    latencies = [(b - a) * 1e6 for a, b in stamps.values()]
    return {"src": str(src), "sends_per_s": round(rate), "fsync_per_s": round(fsync_rate),
            "ratio": round(rate / fsync_rate, 3), "latency_us_p50": round(statistics.median(latencies)),
            "broker_fdatasync_ms": seen.get("broker_fdatasync_ms"), "hops": rows,
            "hop_means_us": hop_means(stamps, seen.get("hop_sends", {}))}


def hop_means(client: dict[int, tuple[float, float]], broker: dict[str, list[float | None]]) -> dict[str, float]:
    """The mean of each hop (µs) over the sends whose every stamp is known."""
    names = ("client", "read", "pub", "start", "got", "kernel", "synced", "done", "rcpt", "flush", "client'")
    sums = dict.fromkeys((f"{a}>{b}" for a, b in zip(names, names[1:], strict=False)), 0.0)
    count = 0
    for sequence_id, (sent, received) in client.items():
        stamps = broker.get(str(sequence_id))
        if stamps is None or None in stamps:
            continue
        chain = [sent, *stamps, received]
        for hop, (a, b) in zip(sums, itertools.pairwise(chain), strict=True):
            sums[hop] += (b - a) * 1e6
        count += 1
    return {hop: round(total / count, 1) for hop, total in sums.items()} if count else {}


def main() -> None:
    """Run the trees alternated and print each run's rates and hop means."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--broker-src", type=Path, default=ROOT / "src")
    parser.add_argument("--baseline-src", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    trees = [args.broker_src.resolve()] + ([args.baseline_src.resolve()] if args.baseline_src else [])
    runs = []
    for n in range(args.rounds):
        for src in trees if n % 2 == 0 else list(reversed(trees)):
            run = one_run(src, args.seconds)
            runs.append(run)
            print(json.dumps({k: v for k, v in run.items() if k != "hops"}), flush=True)
    if args.out:
        args.out.write_text(json.dumps(runs, indent=2) + "\n")


if __name__ == "__main__":
    main()
