"""The peer suite: install and start every peer on 127.0.0.1, run every scenario against every system
in alternating rounds (each measurement in its own process), stop the peers, write the results.

usage: python -m benchmarks.suite [--quick] [--peers magnetar,redis,...] [--rounds N] [--only KEY,...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as benchmarks/suite/run.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.suite.peers import REPO_ROOT, Peer, client_versions, install_debian, log, make_peers
from benchmarks.suite.probe import BrokerProbe, entry_figures
from benchmarks.suite.scenarios import FULL, PULSAR_DRIVERS, QUICK, SYSTEMS, Scenario, System, scenarios
from benchmarks.suite.settle import settle_disk

from benchmarks.suite import report

ALL_PEERS = ["magnetar", "pulsar", "pulsar-lite", "redis", "nats", "rabbitmq"]
DEBIAN_OF = {"redis": ["redis-server"], "nats": ["nats-server"], "rabbitmq": ["rabbitmq-server"],
             "pulsar": ["default-jdk-headless", "maven"]}
RESULTS = REPO_ROOT / "benchmarks" / "results"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one round: a smoke run of a few minutes")
    parser.add_argument("--peers", default=",".join(ALL_PEERS), help=f"comma-separated, of {','.join(ALL_PEERS)}")
    parser.add_argument("--only", default="", help="comma-separated scenario keys (e.g. produce-100,rate-10k)")
    parser.add_argument("--rounds", type=int, default=0, help="rounds (default: 2, --quick: 1)")
    parser.add_argument("--no-redis-always", action="store_true", help="skip the appendfsync always Redis")
    parser.add_argument("--no-install", action="store_true", help="do not apt-get install missing servers")
    parser.add_argument("--work", type=Path, default=Path("/tmp/magnetar-bench"), help="data of the peers")
    parser.add_argument("--output", type=Path, default=RESULTS, help="where suite.md/.json/-*.png go")
    parser.add_argument("--timeout", type=float, default=0, help="seconds for one measurement (default 900/300)")
    parser.add_argument("--pin-brokers", default="", metavar="CPUS",
                        help="pin every server (all its threads) to these CPUs with taskset, e.g. 0: an edge box")
    parser.add_argument("--keep-data", action="store_true",
                        help="keep the peers' data directories and logs under --work (default: removed after the run)")
    return parser.parse_args(argv)


def machine() -> dict[str, Any]:
    """What the run ran on."""
    cpu = "?"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpu": cpu, "cpus": os.cpu_count(), "memory_gib": round(mem, 1), "kernel": platform.release(),
            "python": platform.python_version(), "load_average_at_start": os.getloadavg()}


def fsync_rate(directory: Path, seconds: float = 2.0) -> float:
    """This disk's rate of 100-byte appends each followed by fsync: the ceiling of one-at-a-time
    durable sends."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        count, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            os.write(fd, b"x" * 100)
            os.fsync(fd)
            count += 1
        return round(count / (time.perf_counter() - started), 1)
    finally:
        os.close(fd)
        path.unlink()


def pin(peer: Peer, cpus: str) -> str:
    """Pin the server's process, every thread of it, to ``cpus`` (``taskset -a -p -c``; threads it
    starts later inherit it); a note when it cannot."""
    pid = peer.pid()
    if pid is None:
        return "not running"
    proc = subprocess.run(["taskset", "-a", "-p", "-c", cpus, str(pid)], capture_output=True, text=True, check=False)
    return "" if proc.returncode == 0 else f"taskset failed: {proc.stderr.strip()[-200:]}"


def start_peers(peers: list[Peer], pin_cpus: str = "") -> tuple[list[Peer], dict[str, str]]:
    """Start each peer (pinned to ``pin_cpus`` when given); those that fail are left out with a note."""
    started, notes = [], {}
    for peer in peers:
        log(f"starting {peer.name}")
        try:
            peer.start()
        except Exception as exc:  # noqa: BLE001 - a peer that cannot start is reported, the rest go on
            notes[peer.name] = f"did not start: {type(exc).__name__}: {str(exc)[-500:]}"
            log(f"{peer.name}: {notes[peer.name]}")
            peer.stop()
            continue
        if pin_cpus:
            failed = pin(peer, pin_cpus)
            peer.info["pinned_to_cpus"] = pin_cpus if not failed else failed
        peer.info["version"] = peer.version()
        peer.info["startup_s"] = round(peer.startup_s, 3)
        started.append(peer)
    time.sleep(3)
    for peer in started:
        peer.info["rss_mb_idle"] = round(peer.rss_mb(), 1)
    return started, notes


#: glibc keeps up to 32 MiB of freed heap in every client process of the suite, whichever client it
#: runs: ``magnetar perf consume`` sets it for itself (``keep_freed_heap``, benchmarks/PROFILES.md §41),
#: and the official client's process gets the same, so that the comparison stays even
CLIENT_HEAP_ENV = {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "33554432"}


def measure(system: System, peer: Peer, scenario: Scenario, round_no: int, timeout: float) -> dict[str, Any]:
    """One scenario against one system, in a worker process, with the broker's CPU seconds and resident
    memory over the measurement (probe.py); it starts once the machine's dirty pages are written
    (settle.py: no run pays for the writeback of the one before)."""
    topic = f"bench-{scenario.key}-{round_no}-{uuid.uuid4().hex[:8]}"
    params = {"address": peer.address, "topic": topic, **scenario.params}
    cmd = [sys.executable, "-m", "benchmarks.suite.worker", system.driver, scenario.function, json.dumps(params)]
    settled = settle_disk()
    broker = BrokerProbe(peer.pid()).start()
    try:
        proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, check=False,
                              env={**os.environ, **CLIENT_HEAP_ENV})
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s", **broker.stop(0), **settled}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        # a refused run (duplicates) still used the broker's memory: kept, its CPU is not per message
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip()[-600:]}", **broker.stop(0), **settled}
    result = json.loads(lines[-1])
    result = {**result, **broker.stop(result.get("messages", 0)), **settled}
    return {**result, **entry_figures(result)}


def warm_up(systems: list[tuple[System, Peer]], timeout: float) -> None:
    """A small produce + consume + ack run against every Pulsar-protocol system before the rounds, not
    recorded: what a broker loads on its first topic (magnetar imports its topic modules then; a JVM
    compiles its hot paths) is start-up, not the cost per message the first scenario reports."""
    warm = Scenario("warm-up", "warm-up", "cost", {"count": 2000, "size": 100, "batch": 1000, "batch_delay_ms": 10},
                    kind="cost")
    for system, peer in systems:
        if system.driver in PULSAR_DRIVERS:
            result = measure(system, peer, warm, 0, timeout)
            log(f"warm-up {system.label:<36} {report.brief(result)}")


def run_rounds(systems: list[tuple[System, Peer]], plan: list[Scenario], rounds: int,
               timeout: float) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Every scenario against every system, round after round; the order of the systems turns each
    round so that no system always runs first (or last) on a machine shared with other work."""
    results: dict[str, dict[str, list[dict[str, Any]]]] = {s.key: {} for s in plan}
    for round_no in range(rounds):
        for scenario in plan:
            shift = round_no % len(systems)
            for system, peer in systems[shift:] + systems[:shift]:
                if scenario.drivers and system.driver not in scenario.drivers:
                    continue
                result = measure(system, peer, scenario, round_no, timeout)
                results[scenario.key].setdefault(system.label, []).append(result)
                log(f"round {round_no + 1}/{rounds} {scenario.key:<12} {system.label:<36} {report.brief(result)}")
    return results


def main(argv: list[str] | None = None) -> int:
    """Install, start, measure, stop, report."""
    args = parse_args(argv)
    sizes = QUICK if args.quick else FULL
    rounds = args.rounds or sizes.rounds
    timeout = args.timeout or (300 if args.quick else 900)
    wanted = [name.strip() for name in args.peers.split(",") if name.strip()]
    notes: dict[str, str] = {}
    if not args.no_install:
        notes.update(install_debian([pkg for name in wanted for pkg in DEBIAN_OF.get(name, [])]))
    run_dir = args.work / f"run-{time.strftime('%Y%m%d-%H%M%S')}"
    peers = make_peers(wanted, run_dir, with_redis_always=not args.no_redis_always)
    plan = scenarios(sizes)
    if args.only:
        keys = set(args.only.split(","))
        plan = [s for s in plan if s.key in keys]
    started_at = time.time()
    started: list[Peer] = []
    try:
        started, start_notes = start_peers(peers, args.pin_brokers)
        notes.update(start_notes)
        by_name = {peer.name: peer for peer in started}
        systems = [(system, by_name[system.peer]) for system in SYSTEMS if system.peer in by_name]
        fsync_before = fsync_rate(run_dir)
        warm_up(systems, timeout)
        results = run_rounds(systems, plan, rounds, timeout)
        fsync_rates = [fsync_before, fsync_rate(run_dir)]
        for peer in started:
            peer.info["rss_mb_end"] = round(peer.rss_mb(), 1)
    finally:
        for peer in started:
            log(f"stopping {peer.name}")
            peer.stop()
        if not args.keep_data:
            # a full run leaves several GB of topic data per peer: repeated runs filled a 250 GB disk
            shutil.rmtree(run_dir, ignore_errors=True)
    document = {
        "suite": "magnetar peer suite (benchmarks/suite)",
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime(started_at)),
        "duration_s": round(time.time() - started_at, 1),
        "mode": "quick" if args.quick else "full",
        "rounds": rounds,
        "command": "python -m benchmarks.suite " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": {**machine(), "fsync_per_s_before_and_after": fsync_rates,
                    "servers_pinned_to_cpus": args.pin_brokers or None},
        "note": "the machine is shared with other work (tests, a soak run): the systems run side by side, "
                "in alternating rounds, and the ratios between them are what this file reports",
        "client_versions": client_versions(),
        "peers": {peer.name: {**peer.info, "durability": peer.durability, "address": peer.address,
                              "command": " ".join(peer.command())} for peer in started},
        "notes": notes,
        "systems": [{"label": s.label, "peer": s.peer, "client": s.client} for s, _ in systems],
        "scenarios": [{"key": s.key, "title": s.title, "kind": s.kind, "params": s.params, "drivers": s.drivers}
                      for s in plan],
        "results": results,
    }
    report.write(document, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
