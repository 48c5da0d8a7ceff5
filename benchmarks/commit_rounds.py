"""The commit thread's cost per round of many topics, without the network: two trees side by side.

Each run is a subprocess on one tree (``PYTHONPATH``): ``--ledgers`` real ledgers on ``--dir``;
a round appends one entry of ``--size`` bytes to ``--per-round`` of them (in turn) and runs that
tree's ``magnetar.broker.commit._sync_all`` over them, as the commit thread does, with the
committer's own pool. It reports the process CPU seconds (every thread) and the wall time per
round. Runs alternate between the trees, the order flipping every round.

usage: python benchmarks/commit_rounds.py --baseline-src /tmp/x-before/src [--fsync never]
       [--rounds 4] [--round-count 300] [--ledgers 100] [--per-round 30]
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

ROOT = Path(__file__).resolve().parent.parent


def one_run(args: argparse.Namespace) -> None:
    """(subprocess) Time ``--round-count`` rounds of this tree's ``_sync_all``; print JSON."""
    from concurrent.futures import ThreadPoolExecutor

    from magnetar.broker import commit
    from magnetar.storage import ManagedLedger

    class Topic:
        def __init__(self, ledger: ManagedLedger) -> None:
            self.ledger = ledger

    with tempfile.TemporaryDirectory(dir=args.dir) as work:
        topics = [Topic(ManagedLedger.open(Path(work) / str(i), i)) for i in range(args.ledgers)]
        for topic in topics:
            topic.ledger.sync()
        pool = ThreadPoolExecutor(commit.SYNC_CONCURRENCY, thread_name_prefix="magnetar-fsync")
        data = os.urandom(args.size)
        walls = []
        cpu_start = time.process_time()
        for number in range(args.round_count):
            chosen = [topics[(number * args.per_round + k) % args.ledgers] for k in range(args.per_round)]
            for topic in chosen:
                topic.ledger.append(data)
            start = time.perf_counter()
            results, _ = commit._sync_all(chosen, pool, args.fsync == "always")
            walls.append(time.perf_counter() - start)
            assert not [r for r in results if isinstance(r, BaseException)], results
        cpu = time.process_time() - cpu_start
        pool.shutdown()
        for topic in topics:
            topic.ledger.close()
    print(json.dumps({"cpu_us_per_round": cpu / args.round_count * 1e6, "wall_us_per_round": statistics.median(walls) * 1e6}))


def main() -> None:
    """Alternate runs of the two trees; print every run and the ratios of the medians as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-src", type=Path)
    parser.add_argument("--fsync", choices=("always", "never"), default="always")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--round-count", type=int, default=300)
    parser.add_argument("--ledgers", type=int, default=100)
    parser.add_argument("--per-round", type=int, default=30)
    parser.add_argument("--size", type=int, default=18_000)
    parser.add_argument("--dir", default=None, help="where the ledgers go (default: the temporary directory)")
    parser.add_argument("--one-run", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_run:
        one_run(args)
        return
    trees = {"before": str(args.baseline_src.resolve()), "after": str(ROOT / "src")}
    forwarded = [a for a in sys.argv[1:] if a != "--one-run"]
    runs: dict[str, list[dict[str, float]]] = {label: [] for label in trees}
    for number in range(args.rounds):
        order = list(trees) if number % 2 == 0 else list(trees)[::-1]
        for label in order:
            env = dict(os.environ, PYTHONPATH=trees[label])
            out = subprocess.run([sys.executable, __file__, *forwarded, "--one-run"], env=env, capture_output=True, text=True, check=True)
            runs[label].append(json.loads(out.stdout))
            print(label, out.stdout.strip(), file=sys.stderr)
    medians = {label: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for label, rs in runs.items()}
    ratios = {k: medians["after"][k] / medians["before"][k] for k in medians["after"]}
    print(json.dumps({"fsync": args.fsync, "runs": runs, "medians": medians, "ratios_after_over_before": ratios}, indent=1))


if __name__ == "__main__":
    main()
