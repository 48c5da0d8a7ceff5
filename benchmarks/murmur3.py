"""MurmurHash3 x86_32: protocol/hashing.py's pure-Python ``murmur3_32`` against the ``mmh3`` wheel.

The hot paths that hash: the broker's Key_Shared selectors (``sticky_key_hash``: one hash per
message with a key, keys of a few to a few dozen bytes) and the client's Murmur3_32Hash
partition routing (``partition_for_key``: one per keyed message). Both hash short keys, so the
figure that decides is the cost of one call on keys of 8, 16, 36 (a UUID) and 64 bytes, plus a
4 KiB input to see where a pure-Python loop stops keeping up. Every value is checked equal first
(``mmh3.hash(data, 0, signed=False)``). Only CPU, one process, bounded by ``--calls``.

usage: python benchmarks/murmur3.py [--calls 200000] [--rounds 5]
       (mmh3 importable: ``pip install mmh3``, or PYTHONPATH with a --target install of it)

Prints JSON: per key size, the best-of-rounds ns per call of each, and their ratio.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import time
from collections.abc import Callable

from magnetar.protocol.hashing import murmur3_32

SIZES = (8, 16, 36, 64, 4096)


def per_call_ns(fn: Callable[[bytes], int], keys: list[bytes], calls: int, rounds: int) -> float:
    """The best of ``rounds`` runs of ``calls`` calls of ``fn`` over ``keys`` in turn, in ns per call."""
    best = float("inf")
    n = len(keys)
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for i in range(calls):
            fn(keys[i % n])
        best = min(best, (time.perf_counter_ns() - start) / calls)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200_000, help="calls per round and key size (4 KiB: a 50th)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    import mmh3  # third party, only for this comparison

    def wheel(data: bytes) -> int:
        return mmh3.hash(data, 0, signed=False)

    results = {}
    for size in SIZES:
        keys = [os.urandom(size) for _ in range(256)]
        assert all(murmur3_32(k) == wheel(k) for k in keys), f"values differ at {size} bytes"
        calls = args.calls if size < 1024 else max(1, args.calls // 50)
        ours = per_call_ns(murmur3_32, keys, calls, args.rounds)
        theirs = per_call_ns(wheel, keys, calls, args.rounds)
        results[f"{size} B"] = {"hashing.py ns": round(ours, 1), "mmh3 ns": round(theirs, 1),
                                "hashing.py / mmh3": round(ours / theirs, 2)}
    print(json.dumps({"benchmark": "murmur3_32 per call", "mmh3": importlib.metadata.version("mmh3"),
                      "calls": args.calls, "rounds": args.rounds, "results": results}, indent=2))


if __name__ == "__main__":
    main()
