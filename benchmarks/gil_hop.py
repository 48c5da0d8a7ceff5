"""How long a thread returning from a blocking call waits for the GIL while another thread runs Python,
per switch interval (the commit thread after its fdatasync while the loop dispatches a catch-up).

A "busy" thread runs pure Python (a loop of small dict and arithmetic steps, standing in for the
dispatch of a catch-up), counting its steps. A "blocker" thread repeatedly makes a blocking C call
that releases the GIL (``usleep(--block-us)`` through ctypes, standing in for fdatasync) and stamps
CLOCK_MONOTONIC in C as the call ends, before the thread asks for the GIL back; once it holds the
GIL again it stamps in Python: the difference is the GIL wait of that hop. For each
``sys.setswitchinterval`` value: the wait's p50 / p99 / max (ms), the hops made, and the busy
thread's steps per second (its throughput: what a shorter interval costs it in switches).

usage: python benchmarks/gil_hop.py [--seconds 3] [--intervals-ms 5,1,0.5] [--block-us 300]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

_SHIM = r"""
#include <time.h>
#include <unistd.h>
double sleep_stamped(int us) {
    usleep(us);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}
"""


def build_shim() -> ctypes._CFuncPtr:
    """The C function ``sleep_stamped`` (ctypes.CDLL releases the GIL around it)."""
    folder = Path(tempfile.mkdtemp(prefix="gil-hop-"))
    (folder / "shim.c").write_text(_SHIM)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(folder / "shim.so"), str(folder / "shim.c")],
                   check=True, capture_output=True)
    function = ctypes.CDLL(str(folder / "shim.so")).sleep_stamped
    function.argtypes = (ctypes.c_int,)
    function.restype = ctypes.c_double
    return function


def measure(shim: ctypes._CFuncPtr, interval_ms: float, seconds: float, block_us: int) -> dict:
    """One setting: the blocker's GIL waits and the busy thread's steps per second."""
    sys.setswitchinterval(interval_ms / 1000)
    stop = threading.Event()
    steps = [0]
    waits: list[float] = []

    def busy() -> None:
        table: dict[int, int] = {}
        count = 0
        while not stop.is_set():
            for n in range(1000):
                table[n & 63] = table.get(n & 63, 0) + n
            count += 1
        steps[0] = count

    def blocker() -> None:
        while not stop.is_set():
            ended = shim(block_us)
            waits.append((time.perf_counter() - ended) * 1000)

    threads = [threading.Thread(target=busy), threading.Thread(target=blocker)]
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    ordered = sorted(waits)
    return {"switch_interval_ms": interval_ms, "hops": len(ordered),
            "gil_wait_ms": {"p50": round(ordered[len(ordered) // 2], 3),
                            "p99": round(ordered[int(len(ordered) * 0.99)], 3), "max": round(ordered[-1], 3)},
            "busy_steps_per_s": round(steps[0] / seconds)}


def main() -> None:
    """Measure each switch interval, alternated over ``--rounds``, and print one JSON line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--intervals-ms", default="5,1,0.5")
    parser.add_argument("--block-us", type=int, default=300)
    args = parser.parse_args()
    shim = build_shim()
    intervals = [float(x) for x in args.intervals_ms.split(",")]
    for n in range(args.rounds):
        for interval in intervals if n % 2 == 0 else list(reversed(intervals)):
            print(json.dumps(measure(shim, interval, args.seconds, args.block_us)), flush=True)


if __name__ == "__main__":
    main()
