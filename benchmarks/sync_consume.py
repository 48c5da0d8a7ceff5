"""Side-by-side benchmark of the synchronous consume path: receive() + acknowledge() per message.

One magnetar standalone broker (fsync always) holds two topics filled once with the official
client: one unbatched (every message its own entry) and one batched (1,000 messages / 10 ms /
128 KiB). A subscription that never acknowledges keeps them. Then, in alternating rounds, each
client receives and acknowledges N messages one by one from a new subscription (earliest):

- ``official``: the official pulsar-client,
- ``magnetar``: magnetar.client's sync face from this tree,
- ``baseline`` (with ``--baseline-src DIR``): magnetar.client's sync face from another source
  tree (PYTHONPATH=DIR), for before/after comparisons.

Every run is its own process. Recorded per run: msg/s and the client process's CPU seconds per
million messages (user + system, all its threads), which holds up better than throughput on a
loaded machine, and the broker's CPU seconds per million over the same timed loop (with its share
of the loop's wall time: a broker below 1.0 waited for the client part of the time). Written to
benchmarks/results/sync_consume.json.

With ``--null-broker`` the rounds consume batches (1,000 messages of ``--size`` bytes, each with
its sequence id, as the official producer writes them) from benchmarks/null_broker.py instead: the
broker's cost taken out, what is left is the client's; ``--layouts unbatched`` there: plain
entries of one message each (the unbatched client's own ceiling). ``--layouts batched`` measures
only the batched topic on magnetar.

usage: python benchmarks/sync_consume.py [--count N] [--rounds R] [--size 100] [--baseline-src DIR] [--label NAME]
[--null-broker] [--layouts unbatched,batched]
(``--label``: the report becomes that block of the results file, whose other blocks are kept;
``--broker-src``: the broker runs from that source tree, e.g. the committed one, while others edit
this one; the client processes' garbage collections per generation are recorded too)
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
BATCHED = {
    "batching_enabled": True,
    "batching_max_messages": 1000,
    "batching_max_allowed_size_in_bytes": 128 * 1024,
    "batching_max_publish_delay_ms": 10,
}
UNBATCHED = {"batching_enabled": False}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _process_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` (0 when it cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def consume(kind: str, url: str, topic: str, count: int, broker_pid: int = 0) -> dict:
    """Receive and acknowledge ``count`` messages one by one (the first one is not timed)."""
    if kind == "official":
        import pulsar

        client = pulsar.Client(url, operation_timeout_seconds=30, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        initial = pulsar.InitialPosition.Earliest
    else:
        import magnetar.client as pulsar

        client = pulsar.Client(url, operation_timeout_seconds=30)
        initial = pulsar.InitialPosition.Earliest
    consumer = client.subscribe(topic, f"bench-{time.time_ns()}", initial_position=initial)
    consumer.acknowledge(consumer.receive(30000))
    receive, acknowledge = consumer.receive, consumer.acknowledge
    collections = [g["collections"] for g in gc.get_stats()]
    broker_cpu = _process_cpu(broker_pid)
    cpu = _cpu()
    start = time.perf_counter()
    for _ in range(count - 1):
        acknowledge(receive(30000))
    elapsed = time.perf_counter() - start
    cpu = _cpu() - cpu
    broker_cpu = _process_cpu(broker_pid) - broker_cpu
    collections = [g["collections"] - before for g, before in zip(gc.get_stats(), collections, strict=True)]
    client.close()
    return {
        "seconds": elapsed, "cpu_seconds": cpu, "count_timed": count - 1, "gc_collections": collections,
        "broker_cpu_seconds": broker_cpu,
    }


def fill(url: str, topic: str, count: int, size: int, batched: bool) -> None:
    """Publish ``count`` messages with the official client and wait for every receipt."""
    import threading

    import pulsar

    client = pulsar.Client(url, operation_timeout_seconds=30, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(
        topic, max_pending_messages=10000, block_if_queue_full=True, **(BATCHED if batched else UNBATCHED)
    )
    done = threading.Event()
    acked = [0]

    def callback(res, _msg_id) -> None:  # noqa: ANN001
        acked[0] += 1
        if acked[0] == count:
            done.set()

    payload = b"x" * size
    for _ in range(count):
        producer.send_async(payload, callback)
    producer.flush()
    if not done.wait(600):
        raise RuntimeError(f"fill of {topic}: {acked[0]} of {count} receipts")
    client.close()


def run_consume(kind: str, url: str, topic: str, count: int, env: dict[str, str], broker_pid: int) -> dict:
    """One consume run in its own process: {msg_per_s, cpu_s_per_million, broker_...}."""
    client = "official" if kind == "official" else "magnetar"
    out = subprocess.run(
        [sys.executable, __file__, "--worker", client, url, topic, str(count), "--broker-pid", str(broker_pid)],
        capture_output=True, text=True, timeout=600, env={**os.environ, **env},
    )
    if out.returncode != 0:
        raise RuntimeError(f"{kind} failed:\n{out.stderr[-3000:]}")
    report = json.loads(out.stdout.strip().splitlines()[-1])
    return {
        "msg_per_s": report["count_timed"] / report["seconds"],
        "cpu_s_per_million": report["cpu_seconds"] / report["count_timed"] * 1e6,
        "gc_collections": report["gc_collections"],
        "broker_cpu_s_per_million": report["broker_cpu_seconds"] / report["count_timed"] * 1e6,
        "broker_busy": report["broker_cpu_seconds"] / report["seconds"],
    }


def summarize(runs: dict[str, list[dict]]) -> dict:
    """The results block of one layout: every run, the medians and the ratios to the official client."""
    med = {s: statistics.median(x["msg_per_s"] for x in v) for s, v in runs.items()}
    cpu = {s: statistics.median(x["cpu_s_per_million"] for x in v) for s, v in runs.items()}
    entry: dict = {
        "msg_per_s": {s: [round(x["msg_per_s"]) for x in v] for s, v in runs.items()},
        "client_cpu_s_per_million": {s: [round(x["cpu_s_per_million"], 2) for x in v] for s, v in runs.items()},
        "client_gc_collections_per_generation": {s: [x["gc_collections"] for x in v] for s, v in runs.items()},
        "broker_cpu_s_per_million": {s: [round(x["broker_cpu_s_per_million"], 2) for x in v] for s, v in runs.items()},
        "broker_busy": {s: [round(x["broker_busy"], 2) for x in v] for s, v in runs.items()},
        "median_msg_per_s": {s: round(v) for s, v in med.items()},
        "median_client_cpu_s_per_million": {s: round(v, 2) for s, v in cpu.items()},
        "ratio_magnetar_to_official": round(med["magnetar"] / med["official"], 2),
        "ratio_magnetar_to_official_per_round": [
            round(m["msg_per_s"] / o["msg_per_s"], 2) for m, o in zip(runs["magnetar"], runs["official"], strict=True)
        ],
        "cpu_ratio_magnetar_to_official": round(cpu["magnetar"] / cpu["official"], 2),
    }
    if "baseline" in med:
        entry["ratio_baseline_to_official"] = round(med["baseline"] / med["official"], 2)
        entry["speedup_magnetar_over_baseline"] = round(med["magnetar"] / med["baseline"], 2)
        entry["cpu_ratio_magnetar_to_baseline"] = round(cpu["magnetar"] / cpu["baseline"], 2)
        entry["ratio_baseline_to_official_per_round"] = [
            round(b["msg_per_s"] / o["msg_per_s"], 2) for b, o in zip(runs["baseline"], runs["official"], strict=True)
        ]
    return entry


def alternate(sides: dict[str, dict[str, str]], url: str, topic: str, label: str, args: argparse.Namespace, pid: int) -> dict:
    """``args.rounds`` rounds, each side once per round in turn, on ``topic``: the results block."""
    runs: dict[str, list[dict]] = {side: [] for side in sides}
    for r in range(args.rounds):
        for side, env in sides.items():
            runs[side].append(run_consume(side, url, topic, args.count, env, pid))
        print(f"{label} round {r}: " + ", ".join(
            f"{s} {v[-1]['msg_per_s']:,.0f} msg/s {v[-1]['cpu_s_per_million']:.2f} cpu-s/M"
            f" (broker {v[-1]['broker_cpu_s_per_million']:.2f}, busy {v[-1]['broker_busy']:.2f})"
            for s, v in runs.items()
        ) + f" load {os.getloadavg()[0]:.1f}", flush=True)
    return summarize(runs)


def against_null(sides: dict[str, dict[str, str]], args: argparse.Namespace) -> dict[str, dict]:
    """The rounds against benchmarks/null_broker.py (the broker's cost taken out): batched unless
    ``--layouts`` says otherwise."""
    from magnetar.testing import free_port, wait_for_port

    port = free_port()
    null = subprocess.Popen([sys.executable, str(HERE / "null_broker.py"), "--port", str(port)])
    try:
        wait_for_port(port)
        results = {}
        for layout in (args.layouts or "batched").split(","):
            topic = f"sync-null-s{args.size}-b{1000 if layout == 'batched' else 0}-{time.time_ns()}"
            results[layout] = alternate(sides, f"pulsar://127.0.0.1:{port}", topic, f"null {layout}", args, null.pid)
        return results
    finally:
        null.terminate()
        null.wait(30)


def against_magnetar(sides: dict[str, dict[str, str]], args: argparse.Namespace, broker_src: str) -> dict[str, dict]:
    """The rounds against a magnetar standalone broker (fsync always), one topic per layout."""
    from magnetar.testing import BrokerProcess

    tmp = tempfile.TemporaryDirectory()
    broker = BrokerProcess(
        Path(tmp.name) / "data", args=("--fsync", "always", "--log-level", "WARNING"), env={"PYTHONPATH": broker_src}
    )
    results: dict[str, dict] = {}
    try:
        broker.start()
        for layout in args.layouts.split(","):
            topic = f"sync-{layout}-{time.time_ns()}"
            hold = f"{broker.http_url}/admin/v2/persistent/public/default/{topic}/subscription/hold"
            urllib.request.urlopen(urllib.request.Request(hold, method="PUT"), timeout=30).read()
            fill(broker.service_url, topic, args.count, args.size, layout == "batched")
            results[layout] = alternate(sides, broker.service_url, topic, layout, args, broker.proc.pid)
    finally:
        broker.stop()
        tmp.cleanup()
    return results


def main() -> None:
    """Run the benchmark and write benchmarks/results/sync_consume.json."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--layouts", help="the topics measured: unbatched,batched (default: both on magnetar, "
                        "batched on the null broker, whose unbatched entries are plain ones of one message each)")
    parser.add_argument("--null-broker", action="store_true", help="consume batches from benchmarks/null_broker.py instead")
    parser.add_argument("--baseline-src", help="another magnetar source tree (PYTHONPATH) measured alongside")
    parser.add_argument("--out", default=str(HERE / "results" / "sync_consume.json"))
    parser.add_argument("--label", help="write the report as this block of the results file, keeping the rest")
    parser.add_argument("--broker-src", help="the source tree the broker runs from (default: this tree)")
    parser.add_argument("--worker", nargs=4, metavar=("CLIENT", "URL", "TOPIC", "COUNT"))
    parser.add_argument("--broker-pid", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        client, url, topic, count = args.worker
        print(json.dumps(consume(client, url, topic, int(count), args.broker_pid)))
        return

    tree = str(HERE.parent / "src")
    sides: dict[str, dict[str, str]] = {"official": {}, "magnetar": {"PYTHONPATH": tree}}
    if args.baseline_src:
        sides["baseline"] = {"PYTHONPATH": args.baseline_src}
    broker_src = args.broker_src or tree
    if args.null_broker:
        results = against_null(sides, args)
        broker_text = "benchmarks/null_broker.py (feeds one pre-built batch per FLOW'd entry; ACKs ignored)"
    else:
        args.layouts = args.layouts or "unbatched,batched"
        results = against_magnetar(sides, args, broker_src)
        broker_text = f"magnetar standalone, fsync always (source: {broker_src})"
    report = {
        "benchmark": "sync consume: receive() + acknowledge() one by one, magnetar.client sync face vs official client",
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}",
        "load_average_at_end": os.getloadavg(),
        "broker": broker_text,
        "messages_per_run": args.count,
        "message_size": args.size,
        "rounds": args.rounds,
        "alternated": "each round: " + ", ".join(sides) + " on the same topic, one process each",
        "baseline_src": args.baseline_src,
        "results": results,
    }
    out = Path(args.out)
    out.parent.mkdir(exist_ok=True)
    if args.label:
        document = json.loads(out.read_text()) if out.exists() else {}
        document[args.label] = report
        report_text = json.dumps(document, indent=2)
    else:
        report_text = json.dumps(report, indent=2)
    out.write_text(report_text + "\n")
    print(json.dumps(report["results"], indent=2))


if __name__ == "__main__":
    main()
