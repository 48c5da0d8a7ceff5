"""MurmurHash3 x86_32: protocol/hashing.py's ``murmur3_32`` side by side across source trees, and the
bare ``mmh3`` call.

The hot paths that hash: the broker's Key_Shared selectors (``sticky_key_hash``: one hash per
message with a key, keys of a few to a few dozen bytes) and the client's Murmur3_32Hash
partition routing (``partition_for_key``: one per keyed message). Both hash short keys, so the
figure that decides is the cost of one call on keys of 8, 16, 36 (a UUID) and 64 bytes, plus a
4 KiB input to see where a pure-Python loop stops keeping up. Each tree (``--compare NAME=SRC``,
e.g. the tree before hashing.py took mmh3, with its pure-Python loop, extracted with ``git
archive``) runs in a child process with PYTHONPATH=SRC, the trees alternated round by round; every
value is checked equal to ``mmh3.mmh3_32_uintdigest`` first. Figures are the measuring thread's CPU
time (on a shared machine wall time would count the waits for a core), bounded by ``--calls``.

usage: python benchmarks/murmur3.py [--calls 200000] [--rounds 5] [--compare before=/tmp/before/src]

Prints JSON: per key size, the best ns per call of each tree's ``murmur3_32`` and of the bare
``mmh3`` call, and the ratios to this tree.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

SIZES = (8, 16, 36, 64, 4096)
SRC = Path(__file__).resolve().parent.parent / "src"


def per_call_ns(fn: Callable[[bytes], int], keys: list[bytes], calls: int) -> float:
    """``calls`` calls of ``fn`` over ``keys`` in turn, in ns per call."""
    n = len(keys)
    start = time.thread_time_ns()
    for i in range(calls):
        fn(keys[i % n])
    return (time.thread_time_ns() - start) / calls


def child(calls: int) -> dict[str, float]:
    """ns per call of this process's ``murmur3_32`` (and of the bare mmh3 call) per key size."""
    import mmh3

    from magnetar.protocol.hashing import murmur3_32

    rng = random.Random(3)
    out = {}
    for size in SIZES:
        keys = [rng.randbytes(size) for _ in range(256)]
        assert all(murmur3_32(k) == mmh3.mmh3_32_uintdigest(k, 0) for k in keys), f"values differ at {size} bytes"
        n = calls if size < 1024 else max(1, calls // 50)
        out[f"{size} B"] = per_call_ns(murmur3_32, keys, n)
        out[f"{size} B mmh3"] = per_call_ns(lambda k: mmh3.mmh3_32_uintdigest(k, 0), keys, n)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200_000, help="calls per round and key size (4 KiB: a 50th)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--compare", action="append", default=[], metavar="NAME=SRC", help="another source tree")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.calls)))
        return
    trees = {"this": SRC, **{name: Path(src) for name, _, src in (c.partition("=") for c in args.compare)}}
    best: dict[str, dict[str, float]] = {name: {} for name in trees}
    for _ in range(args.rounds):
        for name, src in trees.items():
            done = subprocess.run([sys.executable, __file__, "--child", "--calls", str(args.calls)], check=True,
                                  env={**os.environ, "PYTHONPATH": str(src)}, capture_output=True, text=True, timeout=600)
            for key, ns in json.loads(done.stdout).items():
                best[name][key] = min(ns, best[name].get(key, float("inf")))
    results = {}
    for size in SIZES:
        row = {f"{name} ns": round(best[name][f"{size} B"], 1) for name in trees}
        row["bare mmh3 ns"] = round(best["this"][f"{size} B mmh3"], 1)
        for name in trees:
            if name != "this":
                row[f"{name} / this"] = round(best[name][f"{size} B"] / best["this"][f"{size} B"], 2)
        results[f"{size} B"] = row
    print(json.dumps({"benchmark": "murmur3_32 per call", "mmh3": importlib.metadata.version("mmh3"),
                      "calls": args.calls, "rounds": args.rounds, "trees": {n: str(s) for n, s in trees.items()},
                      "results": results}, indent=2))


if __name__ == "__main__":
    main()
