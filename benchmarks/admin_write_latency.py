"""Latency of admin writes (a namespace policy PUT), side by side for two or more source trees.

Each tree (``NAME=PYTHONPATH``) gets a broker of its own (``magnetar standalone`` in a child
process, that tree first on its path, ledgers without fsync; the metadata store syncs its log as
always), one at a time, alternated round by round so that all share the machine's load equally.
A round is ``--writes`` sequential POSTs of a namespace's message TTL (each a different value,
on one kept-alive connection) after 20 unmeasured ones; each call's wall time is recorded from
the request's first byte sent to the answer's last byte read. Printed: per tree, the p50 / p99 of
every round and of all rounds together, in milliseconds.

usage: python benchmarks/admin_write_latency.py before=/tmp/before/src after=src [--rounds 3] [--writes 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def one_round(pythonpath: str, writes: int) -> list[float]:
    """Start a broker of the tree at ``pythonpath``, time ``writes`` policy POSTs, stop it."""
    from magnetar.testing import Admin, BrokerProcess

    with tempfile.TemporaryDirectory() as tmp:
        env = {"PYTHONPATH": pythonpath}
        broker = BrokerProcess(Path(tmp) / "data", args=("--fsync", "never"), env=env).start(timeout=60)
        try:
            admin = Admin(broker.http_url)
            admin.tenants()
            for i in range(20):  # the app built, the routes warm
                admin.set_namespace_policy("public/default", "messageTTL", 1000 + i)
            times = []
            for i in range(writes):
                started = time.perf_counter()
                admin.set_namespace_policy("public/default", "messageTTL", 10 + i)
                times.append((time.perf_counter() - started) * 1000)
            assert admin.namespace_policy("public/default", "messageTTL") == 10 + writes - 1
            admin.close()
            return times
        finally:
            broker.stop()


def main() -> None:
    """Run the rounds and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", help="NAME=PYTHONPATH")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--writes", type=int, default=200)
    args = parser.parse_args()
    trees = [tree.split("=", 1) for tree in args.trees]
    results: dict[str, list[list[float]]] = {name: [] for name, _ in trees}
    for _ in range(args.rounds):
        for name, path in trees:
            results[name].append(one_round(os.path.abspath(path), args.writes))
    for name, rounds in results.items():
        each = ", ".join(f"{percentile(r, 0.5):.2f} / {percentile(r, 0.99):.2f}" for r in rounds)
        every = [t for r in rounds for t in r]
        print(f"{name}: p50 / p99 ms per round {each}; all {percentile(every, 0.5):.2f} / "
              f"{percentile(every, 0.99):.2f} (mean {statistics.fmean(every):.2f}, n={len(every)})")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
