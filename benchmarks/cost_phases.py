"""The suite's cost run split by phase and by broker thread: a worker process does what the official
driver's ``cost`` does (client, subscribe + close, produce, subscribe, receive + ack, one more
receive, close) and prints the wall clock at each step; meanwhile each broker thread's CPU
(``/proc/PID/task/TID/stat``) is sampled every 10 ms, and each phase is charged what the threads
used between its marks. The window is the suite's: from before the worker starts to after it exits.

usage: python benchmarks/cost_phases.py [--count 200000] [--size 100] [--rounds 2] [--pulsar-lite]
       [--preload-topics 100] [--json FILE] NAME=PYTHONPATH[,MAGNETAR_SETTING=VALUE...] ...
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

from benchmarks.cost_ab import run_worker, start_peers  # noqa: E402
from benchmarks.suite.probe import TICKS  # noqa: E402

SAMPLE_S = 0.01


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of each thread of ``pid``."""
    out: dict[int, float] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / TICKS
    return out


class Sampler:
    """Each broker thread's CPU every ``SAMPLE_S``, with the wall clock."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.samples: list[tuple[float, dict[int, float]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while True:
            self.samples.append((time.time(), thread_cpu(self.pid)))
            if self._stop.wait(SAMPLE_S):
                self.samples.append((time.time(), thread_cpu(self.pid)))
                return

    def start(self) -> Sampler:
        """Start sampling."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop sampling (one last sample)."""
        self._stop.set()
        self._thread.join()

    def at(self, when: float) -> dict[int, float]:
        """The last sample taken at or before ``when``."""
        best = self.samples[0][1]
        for stamp, cpu in self.samples:
            if stamp > when:
                break
            best = cpu
        return best


def worker(address: str, topic: str, count: int, size: int) -> None:
    """The official driver's cost steps, each followed by a mark (phase name, wall clock) on stdout."""
    def mark(name: str) -> None:
        print(json.dumps([name, time.time()]), flush=True)

    mark("python started")
    import pulsar
    from benchmarks.suite.drivers import pulsar_official as drv
    from benchmarks.suite.drivers.common import Params

    mark("imports")
    p = Params(address=address, topic=topic, count=count, size=size, batch=1000, batch_delay_ms=10)
    client = drv._client(p)
    mark("client")
    drv._subscribe(client, p.topic, "bench").close()
    mark("subscribe + close")
    producer = drv._producer(client, p.topic, p)
    mark("producer create")
    data, acked = drv.payload(p.size), drv.Acked(p.count)
    for _ in range(p.count):
        producer.send_async(data, acked)
    producer.flush()
    acked.done.wait(600)
    mark("produce")
    consumer = drv._subscribe(client, p.topic, "bench")
    mark("subscribe")
    entries = drv.EntryCounter()
    received = drv._drain(consumer, p.count, entries)
    mark("receive + ack")
    drv._one_more(consumer)
    mark("one more (300 ms)")
    client.close()
    mark("close")
    print(json.dumps(["result", {"received": received, "entries": entries.count, "pulsar": pulsar.__version__}]),
          flush=True)


def preload(address: str, topics: int) -> None:
    """The suite's topics scenario (official client, 100 messages per topic) on ``topics`` new topics."""
    params = {"address": address, "topic": f"preload-{time.time_ns()}", "count": 100 * topics, "topics": topics,
              "size": 100, "batch": 1000, "batch_delay_ms": 10}
    subprocess.run([sys.executable, "-m", "benchmarks.suite.worker", "official", "topics", json.dumps(params)],
                   cwd=ROOT, capture_output=True, timeout=600, check=True)


def names_of(pid: int) -> dict[int, str]:
    """Thread names from ``py-spy dump`` (Python threads); empty when py-spy is missing or refused."""
    try:
        proc = subprocess.run([shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy"), "dump", "--pid", str(pid), "--json"], capture_output=True, text=True,
                              timeout=30, check=False)
        return {t["os_thread_id"]: t.get("thread_name") or "?" for t in json.loads(proc.stdout)}
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return {}


def one_run(name: str, pid: int, address: str, count: int, size: int) -> dict:
    """One worker run against ``pid``: CPU per phase and per thread."""
    sampler = Sampler(pid).start()
    time.sleep(0.05)
    started = time.time()
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", address, f"phases-{time.time_ns()}",
           str(count), str(size)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    ended = time.time()
    time.sleep(0.05)
    sampler.stop()
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-800:])
    marks = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("[")]
    result = next(m[1] for m in marks if m[0] == "result")
    bounds = [("spawn", started)] + [(m[0], m[1]) for m in marks if m[0] != "result"] + [("exit", ended)]
    phases = []
    for (_, t0), (label, t1) in zip(bounds, bounds[1:], strict=False):
        a, b = sampler.at(t0), sampler.at(t1)
        per_thread = {tid: round(b[tid] - a.get(tid, 0.0), 3) for tid in b if b[tid] - a.get(tid, 0.0) > 0}
        phases.append({"phase": label, "wall_s": round(t1 - t0, 3), "cpu_s": round(sum(per_thread.values()), 3),
                       "threads": per_thread})
    total = sampler.at(ended + 1)
    first = sampler.at(started)
    threads = {tid: round(total[tid] - first.get(tid, 0.0), 3) for tid in total}
    return {"broker": name, "result": result, "phases": phases, "threads": threads,
            "cpu_s": round(sum(threads.values()), 3), "load": os.getloadavg()[0]}


def show(run: dict, names: dict[int, str]) -> None:
    """Print one run's table."""
    print(f"\n{run['broker']}: {run['cpu_s']:.3f} s CPU ({run['cpu_s'] * 1e6 / run['result']['received']:.2f} s per "
          f"million), {run['result']['entries']} entries, load {run['load']:.1f}")
    for ph in run["phases"]:
        top = sorted(ph["threads"].items(), key=lambda kv: -kv[1])[:3]
        where = ", ".join(f"{names.get(tid, tid)} {cpu:.3f}" for tid, cpu in top)
        print(f"  {ph['phase']:<20} wall {ph['wall_s']:7.3f}  cpu {ph['cpu_s']:6.3f}  {where}")
    top = sorted(run["threads"].items(), key=lambda kv: -kv[1])
    print("  threads: " + ", ".join(f"{names.get(tid, tid)} {cpu:.3f}" for tid, cpu in top if cpu > 0))


def summary(runs: list[dict], names: dict[str, dict[int, str]]) -> str:
    """A markdown table: each broker's median CPU seconds per phase over its runs, and per thread
    (by name; threads started after the names were read count as "other")."""
    brokers = list(dict.fromkeys(run["broker"] for run in runs))
    phases = list(dict.fromkeys(ph["phase"] for run in runs for ph in run["phases"]))
    lines = ["| phase | " + " | ".join(f"{b} CPU s (wall s)" for b in brokers) + " |",
             "|---|" + "---|" * len(brokers)]
    for phase in phases:
        cells = []
        for b in brokers:
            rows = [ph for run in runs if run["broker"] == b for ph in run["phases"] if ph["phase"] == phase]
            cells.append(f"{statistics.median(r['cpu_s'] for r in rows):.3f} ({statistics.median(r['wall_s'] for r in rows):.2f})"
                         if rows else "")
        lines.append(f"| {phase} | " + " | ".join(cells) + " |")
    totals = [f"**{statistics.median(r['cpu_s'] for r in runs if r['broker'] == b):.3f}**" for b in brokers]
    lines.append("| **all (the suite's window)** | " + " | ".join(totals) + " |")
    lines += ["", "| thread | " + " | ".join(brokers) + " |", "|---|" + "---|" * len(brokers)]
    by_thread: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        named: dict[str, float] = {}
        for tid, cpu in run["threads"].items():
            label = names.get(run["broker"], {}).get(int(tid), "other")
            named[label] = named.get(label, 0.0) + cpu
        for label, cpu in named.items():
            by_thread.setdefault(label, {}).setdefault(run["broker"], []).append(cpu)
    for label, per_broker in sorted(by_thread.items(), key=lambda kv: -max(map(max, kv[1].values()))):
        if max(map(max, per_broker.values())) > 0:
            lines.append(f"| {label} | " + " | ".join(f"{statistics.median(per_broker[b]):.3f}" if b in per_broker
                                                       else "" for b in brokers) + " |")
    return "\n".join(lines)


def main() -> int:
    """Start the brokers, warm each up, run the phased cost worker in alternated rounds."""
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        address, topic, count, size = sys.argv[2:6]
        worker(address, topic, int(count), int(size))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="*", help="NAME=PYTHONPATH of a magnetar tree")
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--pulsar-lite", action="store_true")
    parser.add_argument("--json", type=Path, help="write every run here")
    parser.add_argument("--preload-topics", type=int, default=0, metavar="N",
                        help="first produce to N more topics (the suite's topics-100 leaves 100 loaded before "
                             "round 2's cost runs): what per-topic periodic work costs a later run")
    args = parser.parse_args()
    runs: list[dict] = []
    names: dict[str, dict[int, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        peers = start_peers(args.trees, args.pulsar_lite, Path(tmp))
        try:
            for _, peer in peers:
                run_worker(peer.address, "official", 2000, 1000, args.size)
                if args.preload_topics:
                    preload(peer.address, args.preload_topics)
            names = {name: names_of(peer.pid() or 0) for name, peer in peers}
            for rnd in range(args.rounds):
                for name, peer in peers if rnd % 2 == 0 else list(reversed(peers)):
                    run = one_run(name, peer.pid() or 0, peer.address, args.count, args.size)
                    show(run, names[name])
                    runs.append(run)
        finally:
            for _, peer in peers:
                peer.stop()
    print("\n" + summary(runs, names))
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "thread_names": names}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
