"""The broker's cost per batch when many topics publish: the committed tree's broker against the
working tree's, side by side, with the same client.

Two brokers run at once (``--baseline-src`` and this tree's ``src``), each with its own data
directory and free ports, both with ``--fsync``. Every round runs ``magnetar perf produce`` once
against each broker (the order flips every round) on the same ``--topics`` topic names, which a
warm-up round loaded first. Per run it records the rate the client reports, the broker's CPU
seconds (utime + stime of the whole process, from /proc), the client's CPU seconds, the entries
(batches) the run stored (records counted in the segment files) and the commit rounds with fsync
(the broker's ``magnetar_fsync_rounds``). ``--profile-dir`` records a py-spy profile (no native
frames, with threads) of each broker during its last round.

usage: python benchmarks/topics_publish.py --baseline-src /tmp/x-before/src [--fsync never]
       [--rounds 4] [--messages 1000000] [--topics 100] [--profile-dir DIR] [--sync-concurrency N]
       [--baseline-fsync never] (one tree, fsync always against never: --baseline-src src)
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PYTHON = str(ROOT / ".venv" / "bin" / "python")
PY_SPY = str(ROOT / ".venv" / "bin" / "py-spy")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
RECORD_HEADER = struct.Struct(">II")


def free_port() -> int:
    """A TCP port nobody listens on now (127.0.0.1)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def thread_cpu_seconds(pid: int) -> dict[int, float]:
    """utime + stime of each thread of ``pid`` so far, by native thread id."""
    seconds: dict[int, float] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended
            continue
        seconds[int(tid)] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return seconds


def thread_groups(pid: int) -> dict[int, str]:
    """Native thread id -> the Python thread's name without its number (from ``py-spy dump``)."""
    dump = subprocess.run([PY_SPY, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=60).stdout
    groups: dict[int, str] = {}
    for line in dump.splitlines():
        if line.startswith("Thread ") and '"' in line:
            tid = int(line.split()[1])
            groups[tid] = line.split('"')[1].rstrip("0123456789").rstrip("_")
    return groups


def count_records(data_dir: Path) -> int:
    """Records stored in every segment file under ``data_dir`` (headers walked, data skipped)."""
    total = 0
    for path in data_dir.rglob("*.log"):
        with path.open("rb") as file:
            size = path.stat().st_size
            pos = 0
            while pos + RECORD_HEADER.size <= size:
                file.seek(pos)
                length, _ = RECORD_HEADER.unpack(file.read(RECORD_HEADER.size))
                pos += RECORD_HEADER.size + length
                total += 1
    return total


class Broker:
    """One ``magnetar standalone`` of a source tree, on free ports, with its own data directory."""

    def __init__(self, label: str, src: Path, fsync: str, work: Path, sync_concurrency: int | None = None) -> None:
        self.label = label
        self.port = free_port()
        self.http_port = free_port()
        self.data_dir = work / label
        env = dict(os.environ, PYTHONPATH=str(src))
        start = ["-m", "magnetar.cli.main"]
        if sync_concurrency is not None:  # set before the broker starts its committer
            start = ["-c", f"import runpy, sys, magnetar.broker.commit as c; c.SYNC_CONCURRENCY = {sync_concurrency}; "
                     "sys.argv[0] = 'magnetar'; runpy.run_module('magnetar.cli.main', run_name='__main__')"]
        command = [PYTHON, *start, "standalone", "--data-dir", str(self.data_dir),
                   "--port", str(self.port), "--http-port", str(self.http_port), "--fsync", fsync]
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                self.fsync_rounds()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"broker {self.label} did not start")

    def fsync_rounds(self) -> tuple[float, float]:
        """The broker's ``magnetar_fsync_rounds`` and ``magnetar_fsync_seconds`` counters."""
        found = {"magnetar_fsync_rounds_total": 0.0, "magnetar_fsync_seconds_total": 0.0}
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/metrics", timeout=10) as answer:
            for line in answer.read().decode().splitlines():
                name, _, value = line.partition(" ")
                if name in found:
                    found[name] = float(value)
        return found["magnetar_fsync_rounds_total"], found["magnetar_fsync_seconds_total"]

    def stop(self) -> None:
        """Stop the broker process this harness started."""
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def run_perf(broker: Broker, args: argparse.Namespace, messages: int, profile: Path | None) -> dict[str, float]:
    """One ``perf produce`` run against ``broker``; its figures."""
    command = [PYTHON, "-m", "magnetar.cli.main", "perf", "produce", "-u", f"pulsar://127.0.0.1:{broker.port}",
               "-m", str(messages), "-s", str(args.size), "-r", "0", "-bm", "1000", "-b", str(args.batch_delay_ms),
               "--num-topics", str(args.topics), "--json", "persistent://public/default/many"]
    env = dict(os.environ, PYTHONPATH=str(args.client_src or ROOT / "src"))
    records_before, (rounds_before, round_seconds_before) = count_records(broker.data_dir), broker.fsync_rounds()
    spy = None
    if profile is not None:
        spy = subprocess.Popen([PY_SPY, "record", "--threads", "--rate", "250", "--format", "raw", "-o", str(profile),
                                "--pid", str(broker.process.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
    cpu_before = process_cpu_seconds(broker.process.pid)
    threads_before = thread_cpu_seconds(broker.process.pid)
    start = time.monotonic()
    client = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = client.stdout.read() if client.stdout is not None else b""
    _, status, usage = os.wait4(client.pid, 0)
    client.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - start
    broker_cpu = process_cpu_seconds(broker.process.pid) - cpu_before
    threads_after = thread_cpu_seconds(broker.process.pid)
    if spy is not None:
        spy.send_signal(2)
        spy.wait(30)
    if client.returncode != 0:
        raise RuntimeError(f"perf produce against {broker.label} exited {client.returncode}")
    summary = json.loads(out)
    batches = count_records(broker.data_dir) - records_before
    rounds, round_seconds = broker.fsync_rounds()
    by_group: dict[str, float] = {}
    groups = thread_groups(broker.process.pid)
    for tid, seconds in threads_after.items():
        group = "cpu_" + groups.get(tid, "other")
        by_group[group] = by_group.get(group, 0.0) + seconds - threads_before.get(tid, 0.0)
    return {**by_group,
        "rate": next((float(v["msg_per_s"]) for v in summary.values() if isinstance(v, dict) and "msg_per_s" in v), 0.0),
        "wall": wall,
        "broker_cpu": broker_cpu,
        "client_cpu": usage.ru_utime + usage.ru_stime,
        "batches": batches,
        "fsync_rounds": rounds - rounds_before,
        "ms_per_round": (round_seconds - round_seconds_before) / (rounds - rounds_before) * 1e3 if rounds > rounds_before else 0.0,
        "broker_us_per_batch": broker_cpu / batches * 1e6 if batches else 0.0,
    }


def main() -> None:
    """Run the rounds and print every run and the medians' ratios (working tree / baseline) as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-src", type=Path, required=True)
    parser.add_argument("--fsync", choices=("always", "never"), default="always")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--batch-delay-ms", type=float, default=10.0)
    parser.add_argument("--profile-dir", type=Path)
    parser.add_argument("--client-src", type=Path, help="the tree of the perf client (default: this tree's src)")
    parser.add_argument("--work-dir", help="where the data directories go (e.g. /dev/shm: fdatasync costs nothing)")
    parser.add_argument("--sync-between", action="store_true", help="os.sync() before every run")
    parser.add_argument("--src", type=Path, help="the tree of the broker labelled after (default: this tree's src)")
    parser.add_argument("--baseline-fsync", choices=("always", "never"), help="the baseline broker's --fsync (default: --fsync)")
    parser.add_argument("--sync-concurrency", type=int, help="SYNC_CONCURRENCY of the working tree's broker")
    parser.add_argument("--only", choices=("before", "after"), help="run one broker only (profiling)")
    args = parser.parse_args()
    trees = {"before": args.baseline_src.resolve(), "after": (args.src or ROOT / "src").resolve()}
    if args.only:
        trees = {args.only: trees[args.only]}
    results: dict[str, list[dict[str, float]]] = {label: [] for label in trees}
    with tempfile.TemporaryDirectory(prefix="topics-publish-", dir=args.work_dir) as work:
        brokers = [
            Broker(
                label,
                src,
                args.fsync if label == "after" else args.baseline_fsync or args.fsync,
                Path(work),
                args.sync_concurrency if label == "after" else None,
            )
            for label, src in trees.items()
        ]
        try:
            for broker in brokers:
                run_perf(broker, args, args.messages // 10, None)
            for number in range(args.rounds):
                order = brokers if number % 2 == 0 else brokers[::-1]
                for broker in order:
                    profile = None
                    if args.profile_dir is not None and number == args.rounds - 1:
                        args.profile_dir.mkdir(parents=True, exist_ok=True)
                        profile = args.profile_dir / f"{broker.label}-{args.fsync}.txt"
                    if args.sync_between:
                        os.sync()  # a never broker's dirty pages would be written by the next run's journal commits
                    run = run_perf(broker, args, args.messages, profile)
                    results[broker.label].append(run)
                    print(broker.label, json.dumps({k: round(v, 4) for k, v in run.items()}), file=sys.stderr)
        finally:
            for broker in brokers:
                broker.stop()
    medians = {
        label: {key: statistics.median(run.get(key, 0.0) for run in runs) for key in sorted({k for run in runs for k in run})}
        for label, runs in results.items()
    }
    report: dict[str, object] = {"fsync": args.fsync, "runs": results, "medians": medians}
    if len(medians) == 2:
        report["ratios_after_over_before"] = {
            key: medians["after"][key] / medians["before"][key] for key in medians["after"] if medians["before"].get(key)
        }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
