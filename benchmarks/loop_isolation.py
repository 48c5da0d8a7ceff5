"""Whether disk work for one client stalls another's publishes: a 1,000 msg/s topic's publish latency
alone, and the same while another subscription catches up on a backlog and a script creates and
deletes namespaces, side by side in one run (issue 22's goal: p99.9 within 1.5x of alone).

One broker (``--broker-src``: the tree whose ``magnetar`` it runs; fsync always, its default). First a
backlog of ``--backlog`` messages of 100 B (in batches of ``--batch``, so ``backlog / batch``
entries) is written to topic ``backlog`` behind a durable subscription that read none of it, and the
broker restarted so that nothing of it is in the entry cache (and left ``--settle`` seconds after its
first admin request to finish starting). Then, per round, two phases of ``--seconds`` each:

- alone: a producer sends one 100 B message every millisecond (no batching) to topic ``probe``; each
  send's latency (send to receipt) is recorded;
- loaded: the same, while a consumer process (another connection) reads the backlog from its start
  (the dispatch reads segment files: the entries left the cache) acknowledging as it goes, and
  another process creates and deletes ``--namespaces`` namespaces through the REST API.

Printed and written to ``--out`` (default benchmarks/results/loop_isolation.json): per phase p50 /
p99 / p99.9 / max in ms, the sends counted, the load average (1 min) at its start and end, and for
the loaded phase how long the catch-up and the namespace script took.

The two load processes run at a lower CPU priority (``--load-policy``: ``nice``, the default,
``os.nice(--load-nice)``, 19 by default; ``idle``: Linux's ``SCHED_IDLE``), the broker and the probe's
client at normal priority: on a machine with fewer cores than processes in the loaded phase, a probe send
otherwise waits whenever its own client process is off the CPU, which measures the scheduler, not the
broker. ``idle`` gives the load clients only CPU time nobody else wants (the catch-up took 4.2-5.4 s
against 3.7-4.2 s at nice 19 on the ninth session's quiet machine), with the same result within the
rounds' spread there (benchmarks/README.md "Ninth session"; ``wake_latency.py`` resolved no difference in
how fast a woken process gets a CPU behind either). The broker still serves the catch-up and the admin
calls at full speed when they run; their completion times (each process timed from its start to its
exit, not floored at the probe's window) show whether they were starved.

``--probe``: the broker runs under benchmarks/loop_probe.py, and each phase's record adds what it saw
(loop lag percentiles, the ten longest stalls and the loop's stacks during stalls): where the loaded
tail comes from; each round adds the broker's loop lag p99.9 loaded / alone, and (``settle``) what the
probe saw from the broker's start to the alone phase (kept out of the alone phase's record).

usage: python benchmarks/loop_isolation.py [--backlog 1000000] [--batch 10] [--seconds 20]
       [--namespaces 200] [--rounds 1] [--load-policy nice|idle] [--load-nice 19] [--broker-src DIR] [--probe] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from benchmarks.publish_tail import ProbedBroker  # noqa: E402

from magnetar.client import AsyncClient  # noqa: E402
from magnetar.testing import BrokerProcess  # noqa: E402
from magnetar.testing.admin import Admin  # noqa: E402

PAYLOAD = b"x" * 100
BACKLOG_TOPIC = "persistent://public/default/backlog"
PROBE_TOPIC = "persistent://public/default/probe"
CATCHUP_SUB = "catchup"
#: sends before the measured ones (sequence ids 0 .. WARM_UP - 1)
WARM_UP = 50


def percentile(sorted_values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of sorted values, nearest rank."""
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


async def fill_backlog(url: str, count: int, batch: int) -> None:
    """Create the catch-up subscription, then write ``count`` messages in batches of ``batch``."""
    client = AsyncClient(url)
    try:
        consumer = await client.subscribe(BACKLOG_TOPIC, CATCHUP_SUB)
        await consumer.close()  # a durable subscription that read none of what follows
        producer = await client.create_producer(
            BACKLOG_TOPIC, batching_enabled=batch > 1, batching_max_messages=max(1, batch),
            batching_max_publish_delay_ms=50, max_pending_messages=0)
        pending = []
        for _ in range(count):
            pending.append(await producer.send_async(PAYLOAD))
            if len(pending) >= 20_000:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
        await producer.close()
    finally:
        await client.close()


async def probe(url: str, seconds: float, rate: int) -> tuple[list[float], dict[int, tuple[float, float]]]:
    """Send one message every 1/rate s for ``seconds``; each send's latency in ms, and per sequence id
    (the producer's n-th send has sequence id n) when it was sent and when its receipt came
    (``time.perf_counter``: the broker's hop probe stamps on the same clock)."""
    client = AsyncClient(url)
    latencies: list[float] = []
    stamps: dict[int, tuple[float, float]] = {}
    try:
        producer = await client.create_producer(PROBE_TOPIC, batching_enabled=False, max_pending_messages=0)
        for _ in range(WARM_UP):  # warm the connection and the topic
            await producer.send(PAYLOAD)
        loop = asyncio.get_running_loop()
        interval = 1.0 / rate
        start = loop.time()
        total = int(seconds * rate)
        waits = []

        def done(sequence_id: int, sent: float, _: asyncio.Future) -> None:
            now = time.perf_counter()
            latencies.append((now - sent) * 1000)
            stamps[sequence_id] = (sent, now)

        for n in range(total):
            delay = start + n * interval - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            sent = time.perf_counter()
            future = await producer.send_async(PAYLOAD)
            future.add_done_callback(lambda f, q=WARM_UP + n, s=sent: done(q, s, f))
            waits.append(future)
        await asyncio.gather(*waits)
        await producer.close()
    finally:
        await client.close()
    return latencies, stamps


def hop_breakdown(client: dict[int, tuple[float, float]], broker: dict[str, list[float | None]]) -> dict:
    """Where each probed send's time went: the broker's hops (benchmarks/hop_probe.py) with the
    client's two (its send to the loop's read of it, the receipt's write to the client's callback):
    percentiles per hop, and the mean of each hop over the slowest 1% and 0.1% of the sends."""
    names = ("read", "pub", "start", "got", "kernel", "synced", "done", "rcpt", "flush")
    rows = []
    order: dict[str, None] = {}
    for sequence_id, (sent, received) in client.items():
        stamps = broker.get(str(sequence_id))
        if stamps is None or None in (stamps[0], stamps[-1]):
            continue
        chain = [("client", sent), *[(n, t) for n, t in zip(names, stamps, strict=True) if t is not None],
                 ("client", received)]
        hops = {f"{a}>{b}": (tb - ta) * 1000 for (a, ta), (b, tb) in itertools.pairwise(chain)}
        order.update(dict.fromkeys(hops))
        rows.append(((received - sent) * 1000, hops))
    rows.sort(key=lambda row: row[0])

    def slowest(fraction: float) -> dict[str, float]:
        part = rows[-max(1, int(len(rows) * fraction)):]
        return {"latency": round(sum(r[0] for r in part) / len(part), 3),
                **{hop: round(sum(h.get(hop, 0.0) for _, h in part) / len(part), 3) for hop in order}}

    def quantiles(values: list[float]) -> dict[str, float]:
        ordered = sorted(values)
        return {q: round(percentile(ordered, v), 3) for q, v in (("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999))}

    if not rows:
        return {"matched": 0}
    return {"matched": len(rows), "per_hop_ms": {hop: quantiles([h[hop] for _, h in rows if hop in h]) for hop in order},
            "slowest_1pct_mean_ms": slowest(0.01), "slowest_01pct_mean_ms": slowest(0.001)}


async def catch_up(url: str, expected: int) -> None:
    """(child process) Read the backlog from its start, acknowledging every 1,000 messages."""
    client = AsyncClient(url)
    try:
        consumer = await client.subscribe(BACKLOG_TOPIC, CATCHUP_SUB, receiver_queue_size=2000)
        received = 0
        while received < expected:
            msg = await consumer.receive(60_000)  # raises (the benchmark fails) when the backlog is gone
            received += 1
            if received % 1000 == 0 or received == expected:
                consumer.acknowledge_cumulative(msg)
        await consumer.close()
    finally:
        await client.close()


def churn_namespaces(http_url: str, count: int) -> None:
    """(child process) Create and delete ``count`` namespaces, one after the other."""
    admin = Admin(http_url)
    try:
        for n in range(count):
            name = f"public/churn-{os.getpid()}-{n}"
            admin.create_namespace(name)
            admin.delete_namespace(name)
    finally:
        admin.close()


def stats(latencies: list[float]) -> dict[str, float]:
    """p50 / p99 / p99.9 / max (ms) and the count."""
    values = sorted(latencies)
    return {
        "sends": len(values),
        "p50_ms": round(percentile(values, 0.5), 3),
        "p99_ms": round(percentile(values, 0.99), 3),
        "p999_ms": round(percentile(values, 0.999), 3),
        "max_ms": round(values[-1], 3) if values else float("nan"),
    }


def child(role: str, load: dict, *args: str) -> subprocess.Popen:
    """This script in another process, playing ``role`` as background work (``load``'s policy and nice)."""
    return subprocess.Popen([sys.executable, __file__, "--role", role, "--load-policy", load["policy"],
                             "--load-nice", str(load["nice"]), *args])


def become_background(policy: str, nice: int) -> None:
    """Lower this (load) process's CPU priority: ``SCHED_IDLE`` (preempted by any other task as it wakes)
    or niceness ``nice``."""
    if policy == "idle":
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    elif nice:
        os.nice(nice)


def timed(proc: subprocess.Popen, started: float, finished: dict[str, float], name: str) -> threading.Thread:
    """A thread that records in ``finished[name]`` how long after ``started`` ``proc`` exited."""
    def wait() -> None:
        proc.wait()
        finished[name] = time.perf_counter() - started

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    return thread


def phase(broker: BrokerProcess, seconds: float, rate: int, load: dict | None) -> dict:
    """One phase: the probe alone, or (``load``: backlog and namespaces) beside the two loads."""
    load_before = os.getloadavg()[0]
    children: list[tuple[str, subprocess.Popen, threading.Thread]] = []
    finished: dict[str, float] = {}
    if load is not None:
        started = time.perf_counter()
        for name, proc in (("catchup", child("catchup", load, broker.service_url, str(load["backlog"]))),
                           ("namespaces", child("churn", load, broker.http_url, str(load["namespaces"])))):
            children.append((name, proc, timed(proc, started, finished, name)))
    latencies, client_stamps = asyncio.run(probe(broker.service_url, seconds, rate))
    result = {"load_avg_start": round(load_before, 2), **stats(latencies)}
    for name, proc, waiter in children:
        waiter.join(1800)
        if waiter.is_alive():
            raise RuntimeError(f"the {name} process did not finish in 30 minutes")
        if proc.returncode != 0:
            raise RuntimeError(f"{name} process failed with {proc.returncode}")
        result[f"{name}_seconds"] = round(finished[name], 1)
    result["load_avg_end"] = round(os.getloadavg()[0], 2)
    if isinstance(broker, ProbedBroker):
        seen = probes_of(broker)
        stalls = seen["stalls"]
        result["probe"] = {"loop_lag_ms": seen["loop_lag_ms"], "gc_ms": seen["gc_ms"],
                           "gc_objects": seen.get("gc_objects", {}),
                           "gc_census": seen.get("gc_census", []),
                           "gc_young_census": seen.get("gc_young_census", []),
                           "route_builds": seen.get("route_builds", []),
                           "fdatasync_ms": seen["broker_fdatasync_ms"], "cpu_s": seen["cpu_s"],
                           # the loop's stalls (up to the 200 longest): how long, how much of it the loop
                           # thread ran (its own work) and how much it was runnable with no CPU free
                           "stall_summary": {"count": len(stalls), "ms": round(sum(s[0] for s in stalls), 1),
                                             "loop_cpu_ms": round(sum(s[3].get("MainThread", 0) for s in stalls), 1),
                                             "loop_waiting_for_cpu_ms":
                                                 round(sum(s[3].get("MainThread wait", 0) for s in stalls), 1)},
                           "stalls": stalls[:10], "stall_stacks": seen["stall_stacks"][:8],
                           # how long the loop's dispatch runs, reads and round outcomes each ran
                           "turns_ms": seen.get("turns_ms", {})}
        if "hop_sends" in seen:
            result["probe"]["hops"] = hop_breakdown(client_stamps, seen["hop_sends"])
    return result


def probes_of(broker: ProbedBroker, wait: float = 120.0) -> dict:
    """What the broker's loop probe saw since the previous call (as ``ProbedBroker.probes``, waiting up
    to ``wait`` s for its answer: a busy broker may take more than that method's 10 s, and asking
    again would split the phase's record in two)."""
    assert broker.proc is not None

    def complete_lines() -> list[str]:
        text = broker.probe_out.read_text() if broker.probe_out.exists() else ""
        return text[:text.rfind("\n") + 1].splitlines()  # not a line still being written

    before = len(complete_lines())
    broker.proc.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        lines = complete_lines()
        if len(lines) > before:
            return json.loads(lines[-1])
        time.sleep(0.05)
    raise RuntimeError(f"the loop probe did not answer in {wait:.0f} s")


def settle(broker: BrokerProcess, seconds: float) -> None:
    """Let a fresh broker finish starting (its admin API built on the first request, its deferred
    imports and start-up collections) before the alone phase measures it. The namespaces' routes are
    asked for too: the admin app builds each route group at the first request that needs it, in a
    thread that holds the GIL for about 200 ms (FastAPI's route analysis), which starved the loop in
    the loaded phase when the namespace script's first request came (a one-time start-up cost, not
    what this benchmark is about)."""
    admin = Admin(broker.http_url)
    try:
        admin.tenants()
        admin.namespaces("public")
    finally:
        admin.close()
    time.sleep(seconds)


def settle_record(seen: dict) -> dict:
    """What the probe saw from the broker's start to the alone phase: its collections (the start-up's and
    the admin app's freezes), what they walked, the route groups built, the loop's stalls."""
    stalls = seen["stalls"]
    return {"gc_ms": seen["gc_ms"], "gc_census": seen.get("gc_census", []), "route_builds": seen.get("route_builds", []),
            "gc_objects": seen.get("gc_objects", {}),
            "stall_summary": {"count": len(stalls), "ms": round(sum(s[0] for s in stalls), 1)}, "stalls": stalls[:5]}


def round_record(alone: dict, loaded: dict) -> dict:
    """A round's two phases, the publish p99.9 loaded / alone, the load processes' completion times
    and (probed) the broker's own loop lag p99.9 loaded / alone."""
    record = {"alone": alone, "loaded": loaded, "p999_ratio": round(loaded["p999_ms"] / alone["p999_ms"], 2),
              "catchup_seconds": loaded.get("catchup_seconds"), "namespaces_seconds": loaded.get("namespaces_seconds")}
    if "probe" in alone and "probe" in loaded:
        lag_alone, lag_loaded = alone["probe"]["loop_lag_ms"]["p99.9"], loaded["probe"]["loop_lag_ms"]["p99.9"]
        record["loop_lag_p999_ms"] = {"alone": lag_alone, "loaded": lag_loaded}
        record["loop_lag_p999_ratio"] = round(lag_loaded / lag_alone, 2) if lag_alone else None
    return record


def start_broker(data: Path, src: Path, probe: bool, broker: BrokerProcess | None = None) -> BrokerProcess:
    """A broker on ``data`` running ``src``'s magnetar (through the loop probe with ``probe``), on
    ``broker``'s ports when given."""
    if probe:
        new: BrokerProcess = ProbedBroker(data, src, data.with_name("probe.jsonl"))
    else:
        new = BrokerProcess(data, env={"PYTHONPATH": str(src)})
    if broker is not None:
        new.port, new.http_port = broker.port, broker.http_port
    return new.start()


def main() -> None:
    """Fill the backlog, restart the broker, run the phases, print and record the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backlog", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--namespaces", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--broker-src", type=Path, default=ROOT / "src")
    parser.add_argument("--label", default="")
    parser.add_argument("--settle", type=float, default=3.0,
                        help="seconds between the broker's start (and a first admin request) and the alone phase")
    parser.add_argument("--load-policy", choices=("nice", "idle"), default="nice",
                        help="the catch-up and namespace processes' CPU priority: --load-nice, or SCHED_IDLE")
    parser.add_argument("--load-nice", type=int, default=19,
                        help="with --load-policy nice: their niceness (0: normal priority)")
    parser.add_argument("--probe", action="store_true", help="run the broker under benchmarks/loop_probe.py")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "loop_isolation.json")
    parser.add_argument("--role", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.role is not None:
        become_background(args.load_policy, args.load_nice)
    if args.role == "catchup":
        asyncio.run(catch_up(rest[0], int(rest[1])))
        return
    if args.role == "churn":
        churn_namespaces(rest[0], int(rest[1]))
        return
    src = args.broker_src.resolve()
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        broker = start_broker(data, src, args.probe)
        try:
            # kept after the catch-up acknowledged it, for the next round (Pulsar's default retention is none)
            Admin(broker.http_url).set_namespace_policy("public/default", "retention",
                                                        {"retentionTimeInMinutes": -1, "retentionSizeInMB": -1})
            filled = time.perf_counter()
            asyncio.run(fill_backlog(broker.service_url, args.backlog, args.batch))
            print(f"backlog of {args.backlog:,} messages written in {time.perf_counter() - filled:.1f} s", flush=True)
        finally:
            broker.stop()
        for n in range(args.rounds):
            # a fresh start: the backlog is on disk only (and the catch-up reads it from its start)
            broker = start_broker(data, src, args.probe, broker)
            try:
                settle(broker, args.settle)
                # the start and the settling apart: the alone phase's probe record is the alone phase's
                settled = settle_record(probes_of(broker)) if args.probe else None
                alone = phase(broker, args.seconds, args.rate, None)
                print(f"round {n + 1} alone:  {json.dumps(alone)}", flush=True)
                loaded = phase(broker, args.seconds, args.rate,
                               {"backlog": args.backlog, "namespaces": args.namespaces,
                                "policy": args.load_policy, "nice": args.load_nice})
                print(f"round {n + 1} loaded: {json.dumps(loaded)}", flush=True)
                if n + 1 < args.rounds:  # the next round's catch-up starts from the backlog's start again
                    Admin(broker.http_url).request(
                        "POST", f"/persistent/public/default/backlog/subscription/{CATCHUP_SUB}/resetcursor/0")
            finally:
                broker.stop()
            rounds.append(round_record(alone, loaded))
            if settled is not None:
                rounds[-1]["settle"] = settled
    result = {"label": args.label, "broker_src": str(args.broker_src), "backlog": args.backlog,
              "batch": args.batch, "seconds": args.seconds, "rate": args.rate, "namespaces": args.namespaces,
              "load_policy": args.load_policy, "load_nice": args.load_nice, "settle_seconds": args.settle,
              "priorities": ("catch-up consumer and namespace script "
                             + ("SCHED_IDLE" if args.load_policy == "idle" else f"at nice {args.load_nice}")
                             + "; broker and probe client at normal priority"),
              "rounds": rounds}
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
