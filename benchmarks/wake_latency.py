"""How long a woken process waits for a CPU while background processes hold every core: the question
behind benchmarks/loop_isolation.py's ``--load-policy``.

A sender writes its ``time.perf_counter()`` into a pipe every millisecond; a receiver process at normal
priority, blocked in ``os.read``, records how late it ran (CLOCK_MONOTONIC is shared by processes). Per
round, three settings side by side: nothing else running (``none``), one spinning process per core at
niceness 19 (``nice``), and the same spinning processes under ``SCHED_IDLE`` (``idle``). Printed per
setting: the wait's p50 / p99 / p99.9 / max in ms and the 1-minute load average.

usage: python benchmarks/wake_latency.py [--rounds 2] [--wakes 5000] [--settings none nice idle]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import struct
import time

STAMP = struct.Struct("d")


def spin(policy: str, seconds: float) -> None:
    """(child) Use a CPU for ``seconds`` as background work of ``policy`` (``nice`` or ``idle``)."""
    if policy == "idle":
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    else:
        os.nice(19)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def receive(reader: int, count: int, out: multiprocessing.Queue) -> None:
    """(child) Read ``count`` stamps and put the sorted delays (ms) in ``out``."""
    delays = []
    for _ in range(count):
        (sent,) = STAMP.unpack(os.read(reader, STAMP.size))
        delays.append((time.perf_counter() - sent) * 1000)
    out.put(sorted(delays))


def measure(policy: str, wakes: int) -> dict[str, float]:
    """One setting: ``wakes`` wake-ups a millisecond apart beside one spinning process per core."""
    spinners = [] if policy == "none" else [
        multiprocessing.Process(target=spin, args=(policy, wakes / 1000 * 2 + 5)) for _ in range(os.cpu_count() or 1)]
    for process in spinners:
        process.start()
    time.sleep(0.5)
    reader, writer = os.pipe()
    out: multiprocessing.Queue = multiprocessing.Queue()
    receiver = multiprocessing.Process(target=receive, args=(reader, wakes, out))
    receiver.start()
    try:
        for _ in range(wakes):
            time.sleep(0.001)
            os.write(writer, STAMP.pack(time.perf_counter()))
        delays = out.get(timeout=60)
    finally:
        receiver.join(10)
        for process in spinners:
            process.terminate()
            process.join()
        os.close(reader)
        os.close(writer)
    return {"p50": round(delays[len(delays) // 2], 3), "p99": round(delays[int(len(delays) * 0.99)], 3),
            "p99.9": round(delays[int(len(delays) * 0.999)], 3), "max": round(delays[-1], 3),
            "load_avg": round(os.getloadavg()[0], 2)}


def main() -> None:
    """Run the settings alternated ``--rounds`` times and print each as a JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--wakes", type=int, default=5000)
    parser.add_argument("--settings", nargs="+", choices=("none", "nice", "idle"), default=["none", "nice", "idle"])
    args = parser.parse_args()
    for round_number in range(1, args.rounds + 1):
        for policy in args.settings:
            print(json.dumps({"round": round_number, "setting": policy, **measure(policy, args.wakes)}), flush=True)


if __name__ == "__main__":
    main()
