"""The suite's cost scenario (produce, then receive + acknowledge) against several brokers side by
side: magnetar brokers of different trees (``NAME=PYTHONPATH``) and pulsar-lite, in alternating
rounds, each with a new topic; the broker's CPU seconds per million messages (from /proc, all
threads) around each worker run. ``--batch 50`` stands for a loaded machine, where the official
client's batching producer fills 40-90 messages per 10 ms batch instead of 1,000: the broker's cost
per entry then decides.

usage: python benchmarks/cost_ab.py [--driver official|magnetar-client] [--batch 50] [--count 100000]
       [--rounds 3] [--pulsar-lite] [--pin CPUS] NAME=PYTHONPATH[,MAGNETAR_SETTING=VALUE...] ...
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

from benchmarks.suite.peers import MagnetarPeer, Peer, PulsarLitePeer  # noqa: E402
from benchmarks.suite.probe import cpu_seconds  # noqa: E402


def _pin(pid: int, cpus: str | None) -> None:
    """Pin every thread of ``pid`` to ``cpus`` (taskset -a)."""
    if cpus and pid:
        subprocess.run(["taskset", "-a", "-p", "-c", cpus, str(pid)], capture_output=True, check=False)


def run_worker(address: str, driver: str, count: int, batch: int, size: int) -> dict:
    """One cost worker run (its own process); its JSON result."""
    params = {"address": address, "topic": f"ab-{time.time_ns()}", "count": count, "size": size,
              "batch": batch, "batch_delay_ms": 10 if batch > 1 else 0}
    proc = subprocess.run([sys.executable, "-m", "benchmarks.suite.worker", driver, "cost", json.dumps(params)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"worker failed: {proc.stderr[-800:]}")
    return json.loads(lines[-1])


def start_peers(specs: list[str], lite: bool, work: Path) -> list[tuple[str, Peer]]:
    """Start one magnetar per ``NAME=PYTHONPATH`` (its own tree) and pulsar-lite if asked."""
    peers: list[tuple[str, Peer]] = []
    saved = os.environ.get("PYTHONPATH")
    for spec in specs:
        name, _, rest = spec.partition("=")
        path, *settings = rest.split(",")
        os.environ["PYTHONPATH"] = path
        extra = dict(setting.split("=", 1) for setting in settings)
        os.environ.update(extra)
        peer = MagnetarPeer(work / name)
        peer.start()
        for key in extra:
            del os.environ[key]
        peers.append((name, peer))
    if saved is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = saved
    if lite:
        peer = PulsarLitePeer(work / "pulsar-lite")
        peer.start()
        peers.append(("pulsar-lite", peer))
    return peers


def main() -> int:
    """Start the brokers, warm each up, alternate the rounds, print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="*", help="NAME=PYTHONPATH of a magnetar tree, then ,MAGNETAR_X=V settings")
    parser.add_argument("--driver", default="official")
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pulsar-lite", action="store_true")
    parser.add_argument("--pin", help="pin every broker to these CPUs (taskset), e.g. 0")
    args = parser.parse_args()
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        peers = start_peers(args.trees, args.pulsar_lite, Path(tmp))
        try:
            for name, peer in peers:
                _pin(peer.pid() or 0, args.pin)  # all its threads, before the warm-up starts more
                run_worker(peer.address, args.driver, 2000, args.batch, args.size)
                results[name] = []
            for rnd in range(args.rounds):
                for name, peer in peers if rnd % 2 == 0 else list(reversed(peers)):
                    pid = peer.pid() or 0
                    load = os.getloadavg()[0]
                    before = cpu_seconds(pid) or 0.0
                    out = run_worker(peer.address, args.driver, args.count, args.batch, args.size)
                    cpu = (cpu_seconds(pid) or 0.0) - before
                    per_m = cpu * 1e6 / args.count
                    results[name].append(per_m)
                    print(f"round {rnd + 1} {name:12} {per_m:6.2f} s/M  produce {out.get('produce_msg_per_s', 0):>9,.0f}/s"
                          f"  consume {out.get('consume_msg_per_s', 0):>9,.0f}/s  load {load:.1f}", flush=True)
        finally:
            for _, peer in peers:
                peer.stop()
    for name, values in results.items():
        print(f"{name:12} median {statistics.median(values):.2f} s/M  ({', '.join(f'{v:.2f}' for v in values)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
