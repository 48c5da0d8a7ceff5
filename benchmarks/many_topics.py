"""Many topics: the broker's memory with 10,000 topics in use, and throughput as topics multiply.

1. ``memory``: one `magnetar standalone` (default configuration: fsync always, HTTP on) and
   ``--clients`` magnetar.client AsyncClients (one connection each). Topics are added in batches;
   each gets a producer and an Exclusive consumer, sends one 100 B message and receives and
   acknowledges it. At 1k / 2k / 5k / 10k topics the broker's RSS, open descriptors and the elapsed
   time are recorded. Bounded by ``--deadline`` seconds (what was reached is recorded).
2. ``throughput``: for 1 / 10 / 100 / 500 topics, a fresh broker with fsync always; the same total of
   ``--messages`` 100 B messages, spread evenly over one producer per topic (batching 1,000 messages
   / 10 ms), sent as fast as they go; msg/s until the last receipt, plus the broker's group-commit
   fsync rounds and the seconds spent in them (from /metrics), which show where the time goes.
   ``--compare NAME=SRC`` runs another magnetar source tree (PYTHONPATH=SRC) side by side, round by
   round, e.g. a tree with a different commit path.
3. ``creation``: how fast topics are created and what it costs the loop: a broker run under
   benchmarks/loop_probe.py; ``--topics`` topics set up as in ``memory`` (``--batch`` at a time),
   while one producer of a topic created before publishes one message every 10 ms and times each
   send (how long a publish of another topic waits while topics load). Recorded: ms per topic, the
   broker's CPU seconds, its loop lag and stalls (loop_probe), the other topic's send latency.
   With ``--compare NAME=SRC`` the systems alternate round by round (``--rounds``), every other round
   in the reverse order.

Results: benchmarks/results/many_topics.json.

usage: python benchmarks/many_topics.py [--only memory|throughput|creation] [--topics 10000] [--messages 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from startup import VENV, free_port, python_env, rss_mb, try_connect, try_http, warm_bytecode  # noqa: E402

CHECKPOINTS = (1000, 2000, 5000, 10000)
PRODUCER_OPTIONS = {"batching_enabled": True, "batching_max_messages": 1000, "batching_max_publish_delay_ms": 10,
                    "max_pending_messages": 10000, "block_if_queue_full": True}


class Broker:
    """A `magnetar standalone` child process on free ports with a fresh data dir."""

    def __init__(self, src: str | None = None, args: tuple[str, ...] = (), probe: bool = False) -> None:
        self.port, self.http_port = free_port(), free_port()
        self.data = Path(tempfile.mkdtemp(prefix="many-topics-"))
        warm_bytecode(src)
        env = python_env(src)
        #: where benchmarks/loop_probe.py appends a record at each probe_dump() (with ``probe``)
        self.probe_out = self.data / "probe.jsonl"
        entry = [str(HERE / "loop_probe.py")] if probe else ["-c", "from magnetar.cli.main import main; main()"]
        if probe:
            env["MAGNETAR_PROBE_OUT"] = str(self.probe_out)
        argv = [str(VENV / "python"), *entry, "standalone",
                "--data-dir", str(self.data / "data"), "--port", str(self.port), "--http-port", str(self.http_port),
                "--log-level", "WARNING", *args]
        self.log = open(self.data / "broker.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(argv, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not (try_connect(self.port) and try_http(self.http_port)):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"broker did not start: {(self.data / 'broker.log').read_text()[-2000:]}")
            time.sleep(0.05)

    @property
    def url(self) -> str:
        """pulsar:// URL."""
        return f"pulsar://127.0.0.1:{self.port}"

    def fds(self) -> int:
        """Open descriptors of the broker."""
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def metric(self, name: str) -> float | None:
        """One unlabelled value of /metrics."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/metrics", timeout=30) as resp:
                text = resp.read().decode()
        except OSError:
            return None
        match = re.search(rf"^{re.escape(name)}(?:{{[^}}]*}})? ([0-9.e+-]+)$", text, re.M)
        return float(match.group(1)) if match else None

    def probe_dump(self) -> dict:
        """What the loop probe saw since the previous dump (it starts afresh)."""
        count = len(self.probe_out.read_text().splitlines()) if self.probe_out.exists() else 0
        for _ in range(3):  # a signal now and then goes unanswered: ask again
            os.kill(self.proc.pid, signal.SIGUSR1)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                lines = self.probe_out.read_text().splitlines() if self.probe_out.exists() else []
                if len(lines) > count:
                    return json.loads(lines[-1])
                time.sleep(0.05)
        log = (self.data / "broker.log").read_text()[-3000:]
        raise RuntimeError(f"the loop probe wrote nothing (broker alive: {self.proc.poll() is None}): {log}")

    def stop(self) -> None:
        """SIGTERM (SIGKILL after 60 s), remove the data."""
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.data, ignore_errors=True)


async def add_topics(clients: list, start: int, count: int, run: str, payload: bytes) -> list:
    """Topics start..start+count: a producer and a consumer each, one message through; returns the pairs."""

    async def one(index: int) -> tuple:
        client = clients[index % len(clients)]
        topic = f"persistent://public/default/many-{run}-{index}"
        consumer = await client.subscribe(topic, "sub")
        producer = await client.create_producer(topic, batching_enabled=False)
        await producer.send(payload)
        message = await consumer.receive()
        await consumer.acknowledge(message)
        return producer, consumer

    return list(await asyncio.gather(*(one(i) for i in range(start, start + count))))


async def memory_run(topics: int, clients_count: int, deadline_s: float, batch: int) -> dict:
    """Phase 1: RSS of the broker at each checkpoint up to ``topics`` topics."""
    from magnetar.client import AsyncClient

    broker = Broker()
    started = time.perf_counter()
    out: dict = {"baseline_rss_mb": rss_mb(broker.proc.pid), "checkpoints": []}
    clients = [AsyncClient(broker.url, operation_timeout_seconds=120) for _ in range(clients_count)]
    pairs: list = []
    run = str(int(time.time()))
    try:
        while len(pairs) < topics:
            if time.perf_counter() - started > deadline_s:
                out["stopped"] = f"deadline {deadline_s} s reached at {len(pairs)} topics"
                break
            step = min(batch, topics - len(pairs))
            pairs += await add_topics(clients, len(pairs), step, run, b"x" * 100)
            if len(pairs) in CHECKPOINTS or len(pairs) == topics:
                await asyncio.sleep(1)
                point = {"topics": len(pairs), "elapsed_s": round(time.perf_counter() - started, 1),
                         "broker_rss_mb": rss_mb(broker.proc.pid), "broker_fds": broker.fds(),
                         "client_rss_mb": rss_mb(os.getpid())}
                out["checkpoints"].append(point)
                print(f"memory: {point}", file=sys.stderr, flush=True)
    finally:
        for client in clients:
            await client.close()
        broker.stop()
    return out


async def throughput_run(url: str, topics: int, messages: int) -> dict:
    """Phase 2: ``messages`` 100 B messages over ``topics`` producers, as fast as they go."""
    from magnetar.client import AsyncClient

    client = AsyncClient(url, operation_timeout_seconds=120)
    run = f"{int(time.time() * 1000)}"
    producers = await asyncio.gather(*(
        client.create_producer(f"persistent://public/default/tp-{run}-{i}", **PRODUCER_OPTIONS) for i in range(topics)
    ))
    payload = b"x" * 100
    per_topic = messages // topics
    started = time.perf_counter()

    async def feed(producer: object) -> list:
        return [await producer.send_async(payload) for _ in range(per_topic)]  # type: ignore[attr-defined]

    futures = [f for batch in await asyncio.gather(*(feed(p) for p in producers)) for f in batch]
    for producer in producers:
        await producer.flush()
    await asyncio.gather(*futures)
    elapsed = time.perf_counter() - started
    await client.close()
    return {"topics": topics, "messages": per_topic * topics, "seconds": round(elapsed, 3),
            "msg_per_s": round(per_topic * topics / elapsed)}


def throughput_phase(topic_counts: list[int], messages: int, rounds: int, systems: dict[str, str | None]) -> dict:
    """Every system and topic count, alternated, ``rounds`` times; fsync rounds from /metrics."""
    results: dict = {name: {str(t): [] for t in topic_counts} for name in systems}
    for round_no in range(rounds):
        for topics in topic_counts:
            for name, src in systems.items():
                broker = Broker(src)
                try:
                    outcome = asyncio.run(throughput_run(broker.url, topics, messages))
                    outcome["fsync_rounds"] = broker.metric("magnetar_fsync_rounds_total")
                    outcome["fsync_seconds"] = broker.metric("magnetar_fsync_seconds_total")
                finally:
                    broker.stop()
                results[name][str(topics)].append(outcome)
                print(f"throughput round {round_no + 1} {name}: {outcome}", file=sys.stderr, flush=True)
    return results


async def creation_run(broker: Broker, topics: int, clients_count: int, batch: int, deadline_s: float) -> dict:
    """Phase 3: create ``topics`` topics (a producer, a consumer, one message each) while another topic's
    producer sends every 10 ms; the creation time and the other topic's send latencies."""
    from magnetar.client import AsyncClient

    clients = [AsyncClient(broker.url, operation_timeout_seconds=120) for _ in range(clients_count)]
    other = await clients[0].create_producer(f"persistent://public/default/other-{time.time_ns()}", batching_enabled=False)
    await other.send(b"warm")
    latencies: list[float] = []
    stop = asyncio.Event()

    async def tick() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            await other.send(b"y" * 100)
            latencies.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.01)

    broker.probe_dump()  # start the probe afresh: startup and the warm-up are not counted
    ticker = asyncio.create_task(tick())
    run, done, started = str(time.time_ns()), 0, time.perf_counter()
    while done < topics and time.perf_counter() - started < deadline_s:
        step = min(batch, topics - done)
        await add_topics(clients, done, step, run, b"x" * 100)
        done += step
    elapsed = time.perf_counter() - started
    stop.set()
    await ticker
    probe = broker.probe_dump()
    for client in clients:
        await client.close()
    stalls = probe["stalls"]
    return {"topics": done, "seconds": round(elapsed, 2), "ms_per_topic": round(elapsed * 1000 / max(done, 1), 2),
            "broker_cpu_s": probe["cpu_s"], "loop_lag_ms": probe["loop_lag_ms"],
            "stalls_over_10ms": len(stalls), "worst_stalls_ms": [round(s[0], 1) for s in stalls[:5]],
            "stall_stacks": probe["stall_stacks"][:3],
            "other_topic_send_ms": percentiles(latencies)}


def percentiles(values: list[float]) -> dict:
    """p50 / p99 / max of ``values`` and how many."""
    if not values:
        return {"count": 0}
    ordered = sorted(values)
    return {"count": len(ordered), "p50": round(ordered[len(ordered) // 2], 2),
            "p99": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 2), "max": round(ordered[-1], 2)}


def creation_phase(args: argparse.Namespace, systems: dict[str, str | None], runner: object) -> dict:
    """Every system, alternated round by round; medians of ms per topic and broker CPU seconds."""
    runs: dict = {name: [] for name in systems}
    for round_no in range(args.rounds):
        # every other round in the reverse order: the first system of a round is not always the same
        order = list(systems.items())[:: -1 if round_no % 2 else 1]
        for name, src in order:
            broker = Broker(src, probe=True)
            try:
                outcome = runner(creation_run(broker, args.topics, args.clients, args.batch, args.deadline))  # type: ignore[operator]
            finally:
                broker.stop()
            runs[name].append(outcome)
            print(f"creation round {round_no + 1} {name}: "
                  f"{ {k: v for k, v in outcome.items() if k != 'stall_stacks'} }", file=sys.stderr, flush=True)
    return {"topics": args.topics, "clients": args.clients, "batch": args.batch,
            "median_ms_per_topic": {n: statistics.median(r["ms_per_topic"] for r in rs) for n, rs in runs.items()},
            "median_broker_cpu_s": {n: statistics.median(r["broker_cpu_s"] for r in rs) for n, rs in runs.items()},
            "runs": runs}


def main() -> None:
    """Run the phases and write the results JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("memory", "throughput", "creation"), default=None)
    parser.add_argument("--topics", type=int, default=10000)
    parser.add_argument("--clients", type=int, default=4, help="client connections of the memory phase")
    parser.add_argument("--batch", type=int, default=500, help="topics set up concurrently")
    parser.add_argument("--deadline", type=float, default=900.0, help="seconds for the memory phase")
    parser.add_argument("--messages", type=int, default=100000)
    parser.add_argument("--topic-counts", default="1,10,100,500")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--compare", action="append", default=[], help="NAME=SRC: another magnetar tree")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "many_topics.json")
    args = parser.parse_args()
    try:
        import uvloop

        runner = uvloop.run
    except ImportError:  # pragma: no cover
        runner = asyncio.run
    report: dict = json.loads(args.output.read_text()) if args.output.exists() else {}
    report["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(),
                         "python": platform.python_version(), "load_avg_at_end": None}
    report["note"] = "one machine shared with other work; systems alternated round by round"
    if args.only in (None, "memory"):
        report["memory"] = runner(memory_run(args.topics, args.clients, args.deadline, args.batch))
    systems: dict[str, str | None] = {"magnetar": None}
    systems.update(dict(spec.split("=", 1) for spec in args.compare))
    if args.only == "creation":
        report["creation"] = creation_phase(args, systems, runner)
    if args.only in (None, "throughput"):
        counts = [int(c) for c in args.topic_counts.split(",")]
        runs = throughput_phase(counts, args.messages, args.rounds, systems)
        report["throughput"] = {
            "messages": args.messages, "size": 100, "fsync": "always", "producer": PRODUCER_OPTIONS,
            "median_msg_per_s": {name: {t: round(statistics.median(r["msg_per_s"] for r in rs)) for t, rs in per.items()}
                                 for name, per in runs.items()},
            "median_fsync_seconds": {
                name: {t: round(statistics.median(r["fsync_seconds"] or 0 for r in rs), 3) for t, rs in per.items()}
                for name, per in runs.items()
            },
            "runs": runs,
        }
    report["machine"]["load_avg_at_end"] = os.getloadavg()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "runs"}, indent=2)[:3000])


if __name__ == "__main__":
    main()
