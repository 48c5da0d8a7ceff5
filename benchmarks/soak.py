"""Soak: one `magnetar standalone` child under mixed work for a long run, its resources sampled.

The broker runs on 127.0.0.1 (free ports, a fresh data directory, 256 KiB segments so segments
roll and retention deletes them, lifecycle checks every 5 s). Worker threads in this process,
half with the official client and half with magnetar.client, keep it busy until the end:

- steady: a producer and a Shared consumer per client on their own topic (the official one in a
  namespace with a small retention policy, magnetar's with keys, for compaction); the consumer
  acknowledges 9 messages in 10, negatively acknowledges the tenth, and seeks back 5 s every minute
- reconnect: every 10 s a fresh client (alternating official / magnetar) produces, consumes,
  acknowledges and closes; and every 45 s the subscriptions of two resident consumers are deleted
  by force (REST), so those consumers are disconnected and must reconnect by themselves
- churn: every 15 s a topic is created (REST), written, read and deleted (REST, every other one by
  force while its producer is still connected)
- compaction: every 30 s compaction of the keyed topic is triggered (REST) and its status read

Every 10 s it samples the broker's RSS (/proc/PID/status), open descriptors (/proc/PID/fd), the
tasks on its event loop (``magnetar_asyncio_tasks`` in /metrics) and the ERROR lines of its log.
At the end it writes benchmarks/results/soak.json and soak.png.

Verdict (exit 1 on failure): no ERROR / CRITICAL / Traceback in the broker log, and no resource
growing without bound. Growth is the least-squares slope over the samples after the warm-up
(the first quarter of the run, at least 2 minutes), which excludes caches and pools filling up.
Thresholds, per hour, chosen from what a leak at this load would cost:

- RSS 32 MiB/h: the steady producers store ~200 messages/s (720,000 an hour), so a leak of 48
  bytes per message, or 8 KiB per reconnect / churn cycle (~1,000 an hour), exceeds it, while the
  allocator's drift over a healthy run stays well below.
- descriptors 30/h and tasks 60/h: ~1,000 connections, topics and subscriptions are opened and
  closed an hour, so a single descriptor or task leaked by one of those paths in 30 (descriptors)
  or 15 (tasks) exceeds it; a healthy broker's counts only vary with what is open at sample time.

    python benchmarks/soak.py                 # 30 minutes
    python benchmarks/soak.py --minutes 2     # a quick check
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pulsar

import magnetar.client as mclient
from magnetar.testing import BrokerProcess

RESULTS = Path(__file__).resolve().parent / "results"
RETENTION_NS = "public/soak-retention"
STEADY_OFFICIAL = f"persistent://{RETENTION_NS}/steady-official"
STEADY_MAGNETAR = "persistent://public/default/steady-magnetar"
RECONNECT_TOPIC = "persistent://public/default/soak-reconnect"
DISCONNECT_TOPIC = "persistent://public/default/soak-disconnect"
BROKER_ENV = {
    "MAGNETAR_SEGMENT_MAX_BYTES": str(256 * 1024),
    # small segments roll over as soon as they are full, so that trimming runs all along the soak
    # (the default keeps a segment at least 10 minutes, as Pulsar keeps a ledger)
    "MAGNETAR_SEGMENT_MIN_ROLLOVER_MINUTES": "0",
    "MAGNETAR_LIFECYCLE_CHECK_INTERVAL_SECONDS": "5",
    # Pulsar's default (brokerDeleteInactiveTopicsEnabled, 60 s): a producer disconnected by a forced
    # deletion reconnects and so re-creates the topic, which then stays, one open segment each, until
    # it expires
    "MAGNETAR_INACTIVE_TOPIC_EXPIRY_SECONDS": "60",
}
#: slope limits per hour after the warm-up (see the module docstring)
LIMITS = {"rss_mib": 32.0, "fds": 30.0, "tasks": 60.0}
LOG_ERROR = re.compile(r"\b(ERROR|CRITICAL)\b|Traceback")
TASKS_METRIC = re.compile(rb"^magnetar_asyncio_tasks ([0-9.e+]+)", re.M)
TOPICS_METRIC = re.compile(rb"^magnetar_topics_loaded ([0-9.e+]+)", re.M)


@dataclass
class Tally:
    """Operations done and errors met by the workers (thread-safe)."""

    ops: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    last_errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, n: int = 1) -> None:
        """Count ``n`` operations of kind ``name``."""
        with self.lock:
            self.ops[name] = self.ops.get(name, 0) + n

    def error(self, name: str, exc: BaseException | str) -> None:
        """Count an error of worker ``name``, keeping the last few messages."""
        with self.lock:
            self.errors[name] = self.errors.get(name, 0) + 1
            self.last_errors = [*self.last_errors[-19:], f"{name}: {exc!r}"]


class Rest:
    """The REST admin calls of the soak (urllib, 127.0.0.1)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def call(self, method: str, path: str, body: Any = None, timeout: float = 30.0) -> tuple[int, bytes]:
        """(status, body) of one request; HTTP errors are returned, not raised."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as reply:
                return reply.status, reply.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def ok(self, method: str, path: str, body: Any = None) -> bytes:
        """The body of a request that must succeed (2xx), else RuntimeError."""
        status, data = self.call(method, path, body)
        if not 200 <= status < 300:
            raise RuntimeError(f"{method} {path} -> {status} {data[:200]!r}")
        return data


@dataclass
class Soak:
    """What every worker shares: the broker, the stop signal, the tally."""

    broker: BrokerProcess
    rest: Rest
    stop: threading.Event
    tally: Tally
    rate: float

    def new_client(self, module: ModuleType) -> Any:
        """A client of the broker from ``module`` (``pulsar`` or ``magnetar.client``)."""
        quiet = {"logger": pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)} if module is pulsar else {}
        return module.Client(self.broker.service_url, operation_timeout_seconds=30, **quiet)

    def pause(self, seconds: float) -> bool:
        """Sleep unless stopped; whether the soak goes on."""
        return not self.stop.wait(seconds)


def client_name(module: ModuleType) -> str:
    """'official' or 'magnetar'."""
    return "official" if module is pulsar else "magnetar"


def guarded(soak: Soak, name: str, body: Callable[[], None], retry_after: float = 2.0) -> None:
    """Run a worker body until the soak stops, counting (and surviving) what it raises."""
    while not soak.stop.is_set():
        try:
            body()
        except Exception as exc:  # noqa: BLE001 - every failure is counted and reported
            soak.tally.error(name, exc)
            if len(soak.tally.last_errors) <= 20:
                traceback.print_exc(file=sys.stderr)
            soak.pause(retry_after)


def steady_producer(soak: Soak, module: ModuleType, topic: str, keyed: bool) -> None:
    """Synchronous sends at ``soak.rate`` per second (keys 0..99 when ``keyed``), default send timeout."""
    name = f"produce-{client_name(module)}"

    def body() -> None:
        client = soak.new_client(module)
        producer = client.create_producer(topic, batching_enabled=False)
        i, started = 0, time.monotonic()
        try:
            while not soak.stop.is_set():
                key = {"partition_key": f"k{i % 100}"} if keyed else {}
                producer.send(f"{name}-{i}".encode() + b"x" * 200, **key)
                soak.tally.add(name)
                i += 1
                soak.pause(max(0.0, started + i / soak.rate - time.monotonic()))
        finally:
            producer.close()
            client.close()

    guarded(soak, name, body)


def steady_consumer(soak: Soak, module: ModuleType, topic: str) -> None:
    """Receive; acknowledge 9 in 10, negatively acknowledge the tenth; seek back 5 s every minute."""
    name = f"consume-{client_name(module)}"

    def body() -> None:
        client = soak.new_client(module)
        consumer = client.subscribe(topic, "steady", consumer_type=module.ConsumerType.Shared,
                                    initial_position=module.InitialPosition.Earliest,
                                    negative_ack_redelivery_delay_ms=500)
        rng, next_seek = random.Random(topic), time.monotonic() + 60
        try:
            while not soak.stop.is_set():
                if time.monotonic() > next_seek:
                    consumer.seek(int(time.time() * 1000) - 5000)
                    soak.tally.add(f"seek-{client_name(module)}")
                    next_seek += 60
                try:
                    msg = consumer.receive(timeout_millis=500)
                except module.Timeout:
                    continue
                if rng.random() < 0.1:
                    consumer.negative_acknowledge(msg)
                    soak.tally.add(f"nack-{client_name(module)}")
                else:
                    consumer.acknowledge(msg)
                    soak.tally.add(name)
        finally:
            consumer.close()
            client.close()

    guarded(soak, name, body)


def receive_count(consumer: Any, module: ModuleType, wanted: set[bytes], timeout: float) -> set[bytes]:
    """Receive and acknowledge until every payload of ``wanted`` came (or ``timeout``); what is missing."""
    deadline = time.monotonic() + timeout
    missing = set(wanted)
    while missing and time.monotonic() < deadline:
        try:
            msg = consumer.receive(timeout_millis=500)
        except module.Timeout:
            continue
        missing.discard(msg.data())
        consumer.acknowledge(msg)
    return missing


def reconnecting_clients(soak: Soak) -> None:
    """Every 10 s a fresh client (alternating) produces 20, consumes them, acknowledges, closes."""
    cycle = 0

    def body() -> None:
        nonlocal cycle
        while soak.pause(10):
            cycle += 1
            module = pulsar if cycle % 2 else mclient
            client = soak.new_client(module)
            try:
                consumer = client.subscribe(RECONNECT_TOPIC, "reconnect", consumer_type=module.ConsumerType.Shared)
                producer = client.create_producer(RECONNECT_TOPIC)
                sent = {f"reconnect-{cycle}-{i}".encode() for i in range(20)}
                for data in sorted(sent):
                    producer.send(data)
                missing = receive_count(consumer, module, sent, 30)
                if missing:
                    soak.tally.error("reconnect", f"cycle {cycle}: {len(missing)} of 20 not received")
                producer.close()
                consumer.close()
                soak.tally.add("reconnect-cycles")
            finally:
                client.close()

    guarded(soak, "reconnect", body)


def forced_disconnects(soak: Soak) -> None:
    """Two resident consumers (one per client) whose subscriptions are deleted by force every 45 s:
    they reconnect by themselves and receive what is sent afterwards."""
    path = "/admin/v2/persistent/" + DISCONNECT_TOPIC.split("://", 1)[1]
    cycle = 0

    def body() -> None:
        nonlocal cycle
        clients = {module: soak.new_client(module) for module in (pulsar, mclient)}
        consumers = {module: client.subscribe(DISCONNECT_TOPIC, f"resident-{client_name(module)}",
                                              initial_position=module.InitialPosition.Earliest)
                     for module, client in clients.items()}
        producer = clients[mclient].create_producer(DISCONNECT_TOPIC)
        try:
            while soak.pause(45):
                cycle += 1
                for module in consumers:
                    soak.rest.ok("DELETE", f"{path}/subscription/resident-{client_name(module)}?force=true")
                sent = {f"disconnect-{cycle}-{i}".encode() for i in range(5)}
                for data in sorted(sent):
                    producer.send(data)
                for module, consumer in consumers.items():
                    missing = receive_count(consumer, module, sent, 30)
                    if missing:
                        soak.tally.error("disconnect", f"{client_name(module)} cycle {cycle}: {len(missing)} missing")
                soak.tally.add("forced-disconnects")
        finally:
            producer.close()
            for module, client in clients.items():
                consumers[module].close()
                client.close()

    guarded(soak, "disconnect", body)


def topic_churn(soak: Soak) -> None:
    """Every 15 s: create a topic (REST), write and read it, delete it (REST; every other by force)."""
    clients = {module: soak.new_client(module) for module in (pulsar, mclient)}
    cycle = 0

    def body() -> None:
        nonlocal cycle
        while soak.pause(15):
            cycle += 1
            module = pulsar if cycle % 2 else mclient
            topic = f"persistent://public/default/soak-churn-{cycle}"
            path = "/admin/v2/persistent/" + topic.split("://", 1)[1]
            soak.rest.ok("PUT", path)
            client = clients[module]
            producer = client.create_producer(topic)
            for i in range(20):
                producer.send(b"churn-%d" % i)
            reader = client.create_reader(topic, module.MessageId.earliest)
            got = 0
            while got < 20:
                reader.read_next(timeout_millis=10_000)
                got += 1
            reader.close()
            force = cycle % 4 < 2
            if not force:
                producer.close()
            soak.rest.ok("DELETE", path + ("?force=true" if force else ""))
            if force:
                producer.close()
            soak.tally.add("topics-churned")

    try:
        guarded(soak, "churn", body)
    finally:
        for client in clients.values():
            client.close()


def compaction_triggers(soak: Soak) -> None:
    """Every 30 s: trigger compaction of the keyed topic (409 while one runs is fine), read its status."""
    path = "/admin/v2/persistent/" + STEADY_MAGNETAR.split("://", 1)[1] + "/compaction"

    def body() -> None:
        while soak.pause(30):
            status, data = soak.rest.call("PUT", path)
            if status not in (204, 409):
                raise RuntimeError(f"compaction trigger -> {status} {data[:200]!r}")
            soak.rest.ok("GET", path)
            soak.tally.add("compactions" if status == 204 else "compactions-busy")

    guarded(soak, "compaction", body)


def sample(soak: Soak, started: float) -> dict[str, float]:
    """The broker's RSS (MiB), open descriptors, event-loop tasks, topics loaded and log errors, now."""
    pid = soak.broker.proc.pid if soak.broker.proc is not None else 0
    rss_kib = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss_kib = int(line.split()[1])
    fds = len(list(Path(f"/proc/{pid}/fd").iterdir()))
    tasks = topics = -1.0
    try:
        text = soak.rest.ok("GET", "/metrics")
        tasks = float(match.group(1)) if (match := TASKS_METRIC.search(text)) else -1.0
        topics = float(match.group(1)) if (match := TOPICS_METRIC.search(text)) else -1.0
    except (OSError, RuntimeError) as exc:
        soak.tally.error("sampler", exc)
    return {
        "minute": round((time.monotonic() - started) / 60, 3),
        "rss_mib": round(rss_kib / 1024, 2),
        "fds": fds,
        "tasks": tasks,
        "topics_loaded": topics,
        "log_errors": len(log_errors(soak.broker)),
    }


def log_errors(broker: BrokerProcess) -> list[str]:
    """The lines of the broker's log that say ERROR, CRITICAL or Traceback."""
    return [line for line in broker.log().splitlines() if LOG_ERROR.search(line)]


def slope_per_hour(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (minute, value) points, per hour (0 with fewer than 2 points)."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    var = sum((x - mx) ** 2 for x, _ in points)
    if var == 0:
        return 0.0
    return 60 * sum((x - mx) * (y - my) for x, y in points) / var


def figures(samples: list[dict[str, float]], minutes: float) -> dict[str, dict[str, float]]:
    """Start / end / min / max and slopes (whole run, after the warm-up) of each sampled quantity."""
    warmup = max(2.0, minutes / 4)
    out = {}
    for key in LIMITS:
        values = [s[key] for s in samples if s[key] >= 0]
        points = [(s["minute"], s[key]) for s in samples if s[key] >= 0]
        steady = [p for p in points if p[0] >= warmup]
        out[key] = {
            "start": values[0] if values else -1, "end": values[-1] if values else -1,
            "min": min(values, default=-1), "max": max(values, default=-1),
            "slope_per_hour": round(slope_per_hour(points), 2),
            "slope_per_hour_after_warmup": round(slope_per_hour(steady), 2),
            "limit_per_hour": LIMITS[key], "warmup_minutes": warmup,
        }
    return out


def plot(samples: list[dict[str, float]], path: Path, title: str) -> bool:
    """Curves of RSS, descriptors, tasks and topics loaded to a PNG; False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(4, 1, figsize=(9, 10), sharex=True)
    minutes = [s["minute"] for s in samples]
    for ax, (key, label) in zip(axes, (("rss_mib", "RSS (MiB)"), ("fds", "open descriptors"),
                                       ("tasks", "asyncio tasks"), ("topics_loaded", "topics loaded")), strict=True):
        ax.plot(minutes, [s[key] for s in samples], marker=".", linewidth=1)
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("minutes")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def start_workers(soak: Soak) -> list[threading.Thread]:
    """Every worker, each on a daemon thread."""
    targets: list[tuple[Callable[..., None], tuple]] = [
        (steady_producer, (soak, pulsar, STEADY_OFFICIAL, False)),
        (steady_consumer, (soak, pulsar, STEADY_OFFICIAL)),
        (steady_producer, (soak, mclient, STEADY_MAGNETAR, True)),
        (steady_consumer, (soak, mclient, STEADY_MAGNETAR)),
        (reconnecting_clients, (soak,)),
        (forced_disconnects, (soak,)),
        (topic_churn, (soak,)),
        (compaction_triggers, (soak,)),
    ]
    threads = [threading.Thread(target=fn, args=args, name=fn.__name__, daemon=True) for fn, args in targets]
    for t in threads:
        t.start()
    return threads


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Start the broker, run the workers for ``args.minutes`` while sampling; the results."""
    work = Path(tempfile.mkdtemp(prefix="magnetar-soak-"))
    broker = BrokerProcess(work / "data", env=BROKER_ENV, log_path=work / "broker.log").start()
    rest = Rest(broker.http_url)
    rest.ok("PUT", f"/admin/v2/namespaces/{RETENTION_NS}", {})
    rest.ok("POST", f"/admin/v2/namespaces/{RETENTION_NS}/retention",
            {"retentionTimeInMinutes": 1, "retentionSizeInMB": 1})
    soak = Soak(broker, rest, threading.Event(), Tally(), args.rate)
    started = time.monotonic()
    samples = [sample(soak, started)]
    threads = start_workers(soak)
    end = started + args.minutes * 60
    while time.monotonic() < end:
        time.sleep(max(0.0, min(args.interval, end - time.monotonic())))
        samples.append(sample(soak, started))
        last = samples[-1]
        print(f"{last['minute']:6.1f} min: rss {last['rss_mib']} MiB, fds {last['fds']}, tasks {last['tasks']:.0f}, "
              f"topics {last['topics_loaded']:.0f}, "
              f"log errors {last['log_errors']}, ops {sum(soak.tally.ops.values())}, "
              f"client errors {sum(soak.tally.errors.values())}", file=sys.stderr, flush=True)
    soak.stop.set()
    for t in threads:
        t.join(60)
    still_running = [t.name for t in threads if t.is_alive()]
    exit_code = broker.stop()
    errors = log_errors(broker)
    return {
        "minutes": args.minutes, "interval_seconds": args.interval, "rate_per_producer": args.rate,
        "data_dir": str(work / "data"), "broker_log": str(broker.log_path), "broker_exit_code": exit_code,
        "figures": figures(samples, args.minutes), "log_error_lines": errors[:50], "log_errors": len(errors),
        "ops": dict(sorted(soak.tally.ops.items())), "client_errors": dict(sorted(soak.tally.errors.items())),
        "last_client_errors": soak.tally.last_errors, "workers_not_stopped": still_running, "samples": samples,
    }


def verdict(result: dict[str, Any]) -> list[str]:
    """Why the soak failed (empty when it passed)."""
    problems = [f"{result['log_errors']} ERROR lines in the broker log"] if result["log_errors"] else []
    for key, fig in result["figures"].items():
        if fig["slope_per_hour_after_warmup"] > fig["limit_per_hour"]:
            problems.append(f"{key} grows {fig['slope_per_hour_after_warmup']}/h after the warm-up "
                            f"(limit {fig['limit_per_hour']}/h)")
    return problems


def main() -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--rate", type=float, default=100.0, help="messages per second of each steady producer")
    parser.add_argument("--output", type=Path, default=RESULTS / "soak", help="path without suffix of .json / .png")
    args = parser.parse_args()
    result = run(args)
    problems = verdict(result)
    result["passed"], result["problems"] = not problems, problems
    args.output.parent.mkdir(parents=True, exist_ok=True)
    title = f"magnetar soak, {args.minutes:g} min: {'passed' if not problems else 'FAILED'}"
    result["png"] = str(args.output.with_suffix(".png")) if plot(result["samples"], args.output.with_suffix(".png"),
                                                                 title) else None
    args.output.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    summary = {k: v for k, v in result.items() if k not in ("samples", "log_error_lines")}
    print(json.dumps(summary, indent=2))
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
