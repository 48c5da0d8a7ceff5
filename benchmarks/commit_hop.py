"""The group committer's own cost per round, the committed tree's against the working tree's, side by side.

One topic appends one entry and waits for ``on_durable`` before the next (one-at-a-time durable
sends without the network), on a uvloop loop, in one process. Two ledgers:

- ``noop``: ``sync()`` returns at once: what remains is the committer's hand-off to its thread and
  back (thread hops, futures, loop iterations);
- ``fdatasync``: ``sync()`` writes 100 bytes and fdatasyncs a file on the disk of ``--dir``.

A bare fdatasync loop on the same file system runs in each round too: the floor for ``fdatasync``.
Each round runs every variant for ``--seconds`` in turn; the per-round rates and the ratios of the
medians are printed as JSON.

usage: python benchmarks/commit_hop.py --baseline-src /tmp/x-before/src [--seconds 2] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import inspect
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent


def load_commit_module(src: Path, name: str) -> ModuleType:
    """Load ``magnetar/broker/commit.py`` of the tree ``src`` under its own module name."""
    spec = importlib.util.spec_from_file_location(name, src / "magnetar" / "broker" / "commit.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BenchLedger:
    """What the committer syncs: nothing (``fd`` None) or one small write + fdatasync."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd
        self.last_entry_id = -1
        self.taken = -1

    def sync(self) -> int:
        covered = self.last_entry_id
        if self.fd is not None:
            os.write(self.fd, b"x" * 100)
            os.fdatasync(self.fd)
        return covered

    @property
    def sync_needed(self) -> bool:
        """(pipelined committers) Whether an append came after the last sync began."""
        return self.last_entry_id > self.taken

    def begin_sync(self) -> BenchSync:
        """(pipelined committers) The sync in parts: write now, fdatasync in ``run``."""
        self.taken = self.last_entry_id
        if self.fd is not None:
            os.write(self.fd, b"x" * 100)
        return BenchSync(self.fd, self.taken)

    def end_sync(self, pending: BenchSync) -> int:
        """(pipelined committers) What the sync covered."""
        return pending.covered


class BenchSync:
    """A begun sync of a BenchLedger: its run is the fdatasync."""

    def __init__(self, fd: int | None, covered: int) -> None:
        self.fd = fd
        self.covered = covered
        self.needed = fd is not None

    def run(self) -> None:
        if self.fd is not None:
            os.fdatasync(self.fd)


class BenchTopic:
    """A topic that wakes its waiter when its last append is durable."""

    def __init__(self, ledger: BenchLedger) -> None:
        self.name = "bench"
        self.closed = False
        self.ledger = ledger
        self.waiter: asyncio.Future | None = None

    def on_durable(self, last: int) -> None:
        if self.waiter is not None and last >= self.ledger.last_entry_id and not self.waiter.done():
            self.waiter.set_result(None)

    def on_sync_failed(self, error: BaseException) -> None:
        raise error


async def rounds_per_second(module: ModuleType, fd: int | None, seconds: float) -> float:
    """One append at a time through ``module``'s GroupCommitter: durable appends per second."""
    from concurrent.futures import ThreadPoolExecutor

    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(1)
    # the committed tree's committer took a thread pool; this tree's runs its own thread
    takes_pool = "executor" in inspect.signature(module.GroupCommitter).parameters
    committer = module.GroupCommitter(loop, pool, True) if takes_pool else module.GroupCommitter(loop, fsync=True)
    topic = BenchTopic(BenchLedger(fd))
    count = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        topic.waiter = loop.create_future()
        topic.ledger.last_entry_id += 1
        committer.appended(topic)
        await topic.waiter
        count += 1
    elapsed = time.perf_counter() - start
    await committer.drain()
    if hasattr(committer, "close"):
        committer.close()
    pool.shutdown()
    return count / elapsed


def bare_fdatasync(fd: int, seconds: float) -> float:
    """write(100 B) + fdatasync in a loop: per second."""
    count = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        os.write(fd, b"x" * 100)
        os.fdatasync(fd)
        count += 1
    return count / (time.perf_counter() - start)


def main() -> None:
    """Run the rounds and print the rates and ratios."""
    import uvloop

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline-src", required=True, type=Path)
    parser.add_argument("--src", type=Path, default=HERE.parent / "src")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", default=os.environ.get("BENCH_DIR"))
    args = parser.parse_args()
    trees = {"before": load_commit_module(args.baseline_src, "commit_before"),
             "after": load_commit_module(args.src, "commit_after")}
    rates: dict[str, list[float]] = {}
    cpu: dict[str, float] = {}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        fd = os.open(Path(tmp) / "sync", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for r in range(args.rounds):
                order = list(trees.items()) if r % 2 == 0 else list(reversed(trees.items()))
                for ledger_kind, ledger_fd in (("noop", None), ("fdatasync", fd)):
                    for tree, module in order:
                        key = f"{tree}-{ledger_kind}"
                        cpu0 = time.process_time()
                        rate = uvloop.run(rounds_per_second(module, ledger_fd, args.seconds))
                        cpu[key] = cpu.get(key, 0.0) + time.process_time() - cpu0
                        rates.setdefault(key, []).append(rate)
                rates.setdefault("bare-fdatasync", []).append(bare_fdatasync(fd, args.seconds))
                print(f"round {r}: " + ", ".join(f"{k} {v[-1]:,.0f}/s" for k, v in rates.items()), flush=True)
        finally:
            os.close(fd)
    medians = {k: statistics.median(v) for k, v in rates.items()}
    counts = {k: sum(v) * args.seconds for k, v in rates.items()}
    report = {
        "per_second": {k: [round(x) for x in v] for k, v in rates.items()},
        "median_per_second": {k: round(v) for k, v in medians.items()},
        "median_us_per_round": {k: round(1e6 / v, 1) for k, v in medians.items()},
        "cpu_us_per_round": {k: round(1e6 * cpu[k] / counts[k], 1) for k in cpu},
        "ratio_after_before": {kind: round(medians[f"after-{kind}"] / medians[f"before-{kind}"], 3)
                               for kind in ("noop", "fdatasync")},
        "fdatasync_vs_bare": {tree: round(medians[f"{tree}-fdatasync"] / medians["bare-fdatasync"], 3)
                              for tree in trees},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
