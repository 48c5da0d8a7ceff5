"""Whether the loaded phase of loop_isolation.py makes the ledger's fdatasync slower, and what it
overlaps: the benchmark run with ``perf trace -a -e fdatasync,fsync`` beside it (issue 22).

``benchmarks/loop_isolation.py`` (one round, the arguments after ``--``) runs as usual; once its
measured broker started (after the backlog is written) every fdatasync and fsync on the machine is
traced with its duration (``perf trace``: kernel tracepoints, the traced threads are never stopped).
The broker's threads are told apart from other processes by their thread ids, the ledger's syncs
from the broker's others (metadata log, cursors) as those of the thread with the most fdatasyncs
(the commit thread; not by descriptor: a sync round fdatasyncs a duplicate of the segment's
descriptor, whose number changes as the metadata thread opens and closes the log for its syncs). Printed and written to ``--out`` (JSON):

- per second of the trace: the ledger's fdatasyncs (count, p50, max, how many took 10 ms or more)
  and the broker's other syncs (count, total ms): the alone phase, then the loaded one;
- for the ledger's fdatasyncs of 5 / 10 / 20 ms or more: how many overlapped in time a sync of the
  broker's own metadata, a sync of another process, or neither (a long sync overlaps more by its
  length alone, so also:)
- within the seconds the broker made 10 or more other syncs (the namespace script's), the ledger's
  fdatasyncs that started while one of those was in flight against the others: count, p50 / p90 /
  p99 / mean ms, and the broker's other syncs' p50 and mean (what a concurrent metadata sync adds);
- per second, the commit thread's time waiting for a CPU while runnable (``/proc/<pid>/task/<tid>/
  schedstat``, sampled every 100 ms): a sync's duration as traced runs from its call to its return,
  so it includes the wait for a CPU after the disk answered;
- the broker's ``/proc/<pid>/io`` at the end of each phase (``read_bytes``: whether the catch-up
  read the disk or the page cache);
- the benchmark's own lines (publish latency alone and loaded).

Needs ``perf`` and the right to trace every process (root, or ``kernel.perf_event_paranoid`` -1).

usage: python benchmarks/sync_trace.py [--out FILE] -- [loop_isolation.py arguments]
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: a completed sync: perf trace prints a call that another traced call interrupted in two lines, the
#: second (``... [continued]: fsync())``) with the call's start and duration
SYNC_LINE = re.compile(r"^\s*([\d.]+) \(\s*([\d.]+) ms\): [^/]+/(\d+)\s+(?:\.\.\. \[continued\]: )?(?:fdatasync|fsync)\(")
#: perf trace prints an unfinished call's duration as a wrapped-around unsigned value
MAX_PLAUSIBLE_MS = 1e6


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (its main thread's)."""
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def new_broker(parent: int, old: set[int], timeout: float = 30.0) -> int:
    """The first child of ``parent`` running ``standalone`` that is not in ``old``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in children(parent):
            try:
                if pid not in old and b"standalone" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return pid
            except OSError:
                continue
        time.sleep(0.02)
    raise RuntimeError("the benchmark's broker did not start")


def proc_io(pid: int) -> dict[str, int]:
    """``/proc/<pid>/io`` as numbers (empty once the process is gone)."""
    try:
        lines = Path(f"/proc/{pid}/io").read_text().splitlines()
    except OSError:
        return {}
    return {key: int(value) for key, value in (line.split(": ") for line in lines)}


def thread_ids(pid: int) -> set[str]:
    """The thread ids of ``pid`` now."""
    try:
        return set(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return set()


def sample_schedstat(pid: int, stop: threading.Event, into: list[tuple[float, dict[str, int]]]) -> None:
    """Every 100 ms until ``stop``: (seconds since the call, {thread id: ns waited runnable})."""
    started = time.monotonic()
    while not stop.wait(0.1):
        waited = {}
        for tid in thread_ids(pid):
            try:
                waited[tid] = int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[1])
            except (OSError, IndexError, ValueError):
                continue
        into.append((time.monotonic() - started, waited))


def run_traced(trace: Path, bench_args: list[str]) -> dict:
    """Run loop_isolation.py with ``bench_args``, the machine's syncs traced into ``trace`` from
    the measured broker's start; the broker's thread ids, its I/O counters and the printed lines."""
    bench = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "loop_isolation.py"), *bench_args],
                             stdout=subprocess.PIPE, text=True)
    assert bench.stdout is not None
    lines, io, tids = [], {}, set()
    waits: list[tuple[float, dict[str, int]]] = []
    stop = threading.Event()
    tracer: subprocess.Popen | None = None
    try:
        first = bench.stdout.readline()
        lines.append(first.strip())
        if not first.startswith("backlog"):
            raise RuntimeError(f"loop_isolation.py said {first!r}")
        broker = new_broker(bench.pid, set(children(bench.pid)))
        tracer = subprocess.Popen(["perf", "trace", "-a", "-e", "fdatasync,fsync", "-o", str(trace)])
        threading.Thread(target=sample_schedstat, args=(broker, stop, waits), daemon=True).start()
        for line in bench.stdout:
            if line.startswith("round"):
                tids |= thread_ids(broker)
                io[line.split(":")[0]] = proc_io(broker)
                lines.append(line.strip())
        if bench.wait() != 0:
            raise RuntimeError(f"loop_isolation.py failed with {bench.returncode}")
    finally:
        stop.set()
        if tracer is not None:
            tracer.send_signal(signal.SIGINT)
            tracer.wait(30)
        if bench.poll() is None:
            bench.kill()
    return {"lines": lines, "broker_io": io, "tids": sorted(tids), "waits": waits}


def parse(trace: Path, tids: set[str]) -> list[tuple[float, float, bool, str]]:
    """(start ms, duration ms, the broker's, thread id) for every completed sync in ``trace``."""
    events = []
    for line in trace.read_text(errors="replace").splitlines():
        m = SYNC_LINE.search(line)
        if m and float(m.group(2)) < MAX_PLAUSIBLE_MS:
            events.append((float(m.group(1)), float(m.group(2)), m.group(3) in tids, m.group(3)))
    return events


def overlapping(event: tuple, others: list[tuple]) -> bool:
    """Whether ``event`` ran at the same time as any of ``others``."""
    start, end = event[0], event[0] + event[1]
    return any(o[0] < end and start < o[0] + o[1] for o in others)


def runqueue_ms_per_second(waits: list[tuple[float, dict[str, int]]], tid: str) -> dict[int, float]:
    """Per second since the trace started, how long thread ``tid`` waited runnable for a CPU (ms)."""
    per_second: dict[int, float] = defaultdict(float)
    for (_, before), (at, after) in zip(waits, waits[1:], strict=False):
        if tid in before and tid in after:
            per_second[int(at)] += (after[tid] - before[tid]) / 1e6
    return per_second


def quantiles(values: list[float]) -> dict[str, float | int | None]:
    """count, p50 / p90 / p99 and mean of ``values`` (ms)."""
    ordered = sorted(values)
    if not ordered:
        return {"count": 0}

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)

    return {"count": len(ordered), "p50": at(0.5), "p90": at(0.9), "p99": at(0.99),
            "mean": round(sum(ordered) / len(ordered), 3)}


def started_during(ledger: list[tuple], own: list[tuple], start: float) -> dict:
    """Within the seconds with 10 or more of the broker's other syncs: the ledger's fdatasyncs that
    started while one of those was in flight, against the rest (no bias for long syncs: only the
    start counts)."""
    own = sorted(own)
    per_second = Counter(int((o[0] - start) // 1000) for o in own)
    dense = [second for second, n in per_second.items() if n >= 10]
    if not dense:
        return {"seconds": 0}
    low, high = start + min(dense) * 1000, start + (max(dense) + 1) * 1000
    starts = [o[0] for o in own]

    def in_flight(t: float) -> bool:
        i = bisect.bisect_right(starts, t)
        return any(own[k][0] + own[k][1] > t for k in range(max(0, i - 20), i))

    window = [e for e in ledger if low <= e[0] < high]
    return {"seconds": round((high - low) / 1000),
            "broker_other_syncs": quantiles([o[1] for o in own if low <= o[0] < high]),
            "ledger_started_during_one": quantiles([e[1] for e in window if in_flight(e[0])]),
            "ledger_started_outside": quantiles([e[1] for e in window if not in_flight(e[0])])}


def summarize(events: list[tuple[float, float, bool, str]], waits: list[tuple[float, dict[str, int]]]) -> dict:
    """Per second and slow-sync overlap figures (see the module's docstring); seconds count from
    the trace's first event (perf trace's clock starts there, the samples of ``waits`` at about
    the same time)."""
    broker = [e for e in events if e[2]]
    if not broker:
        return {"error": "no sync of the broker traced"}
    counts = Counter(e[3] for e in broker)
    ledger_key = max(counts, key=counts.__getitem__)
    ledger = [e for e in broker if e[3] == ledger_key]
    own = [e for e in broker if e[3] != ledger_key]
    others = [e for e in events if not e[2]]
    start = events[0][0]
    runqueue = runqueue_ms_per_second(waits, ledger_key)
    seconds: dict[int, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for e in broker:
        seconds[int((e[0] - start) // 1000)][0 if e[3] == ledger_key else 1].append(e[1])
    per_second = []
    for second in sorted(s for s in seconds if s >= 0):
        mine, rest = seconds[second]
        mine.sort()
        per_second.append({"s": second, "ledger_syncs": len(mine), "ledger_p50_ms": mine[len(mine) // 2] if mine else None,
                           "ledger_max_ms": mine[-1] if mine else None, "ledger_10ms_or_more": sum(d >= 10 for d in mine),
                           "broker_other_syncs": len(rest), "broker_other_ms": round(sum(rest), 1),
                           "commit_thread_runqueue_ms": round(runqueue.get(second, 0.0), 1)})
    slow = {}
    for threshold in (5, 10, 20):
        hits = [e for e in ledger if e[1] >= threshold]
        with_own = [overlapping(e, own) for e in hits]
        with_others = [overlapping(e, others) for e in hits]
        slow[f"{threshold}ms_or_more"] = {
            "count": len(hits), "overlapping_broker_metadata_sync": sum(with_own),
            "overlapping_other_process_sync": sum(with_others),
            "neither": sum(not a and not b for a, b in zip(with_own, with_others, strict=True))}
    return {"commit_thread": ledger_key, "ledger_fdatasyncs": len(ledger), "broker_other_syncs": len(own),
            "other_process_syncs": len(others), "slow_ledger_syncs": slow,
            "while_metadata_syncs": started_during(ledger, own, start), "per_second": per_second}


def main() -> None:
    """Run, summarize, print and write the record."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "sync_trace.json")
    parser.add_argument("--trace-out", type=Path, help="keep perf trace's output there")
    args, bench_args = parser.parse_known_args()
    bench_args = [a for a in bench_args if a != "--"]
    with tempfile.TemporaryDirectory() as tmp:
        run = run_traced(Path(tmp) / "trace.txt", [*bench_args, "--rounds", "1", "--out", str(Path(tmp) / "li.json")])
        tids, waits = set(run.pop("tids")), run.pop("waits")
        record = {**run, **summarize(parse(Path(tmp) / "trace.txt", tids), waits),
                  "loop_isolation": json.loads((Path(tmp) / "li.json").read_text())}
        if args.trace_out is not None:
            args.trace_out.write_bytes((Path(tmp) / "trace.txt").read_bytes())
    for row in record["per_second"]:
        print(json.dumps(row))
    print(json.dumps({k: record[k] for k in ("broker_io", "slow_ledger_syncs", "while_metadata_syncs", "lines")}, indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
