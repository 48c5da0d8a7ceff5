"""Side-by-side client benchmark: magnetar's Python client against the official pulsar-client.

One magnetar standalone broker (fsync always) serves both clients in the same run. For each
message size (100 B and 1 KiB) and each round, each client in turn

- produces N messages with batching on (send_async with a callback, block_if_queue_full,
  the same batching settings for both) and waits for every receipt, then
- consumes N messages from a topic holding them (a new subscription from the earliest
  position), acknowledging each one.

Every run is a separate process, so the two clients never share an interpreter. The sync
facade of magnetar's client is measured against the official (sync) client; the asyncio API of
magnetar's client is measured as well, for information. The result goes to
benchmarks/results/client_vs_official.json with the medians and the ratios (goal: magnetar >= 3x
the official produce rate and >= 1x its consume rate).

usage: python benchmarks/client_vs_official.py [--count N] [--rounds R] [--sizes 100,1024]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
PRODUCER_OPTIONS = {
    "batching_enabled": True,
    "batching_max_messages": 1000,
    "batching_max_allowed_size_in_bytes": 128 * 1024,
    "batching_max_publish_delay_ms": 10,
    "max_pending_messages": 10000,
    "block_if_queue_full": True,
}


# -- workers (run in their own process) ------------------------------------------------------
def produce_official(url: str, topic: str, count: int, size: int) -> dict:
    import threading

    import pulsar

    client = pulsar.Client(url, operation_timeout_seconds=30, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(topic, **PRODUCER_OPTIONS)
    payload = b"x" * size
    done = threading.Event()
    state = {"acked": 0, "failures": 0}

    def callback(res, _msg_id) -> None:  # noqa: ANN001
        if res != pulsar.Result.Ok:
            state["failures"] += 1
        state["acked"] += 1
        if state["acked"] == count:
            done.set()

    start = time.perf_counter()
    for _ in range(count):
        producer.send_async(payload, callback)
    producer.flush()
    done.wait(300)
    elapsed = time.perf_counter() - start
    client.close()
    return {**state, "seconds": elapsed}


def produce_magnetar(url: str, topic: str, count: int, size: int) -> dict:
    import threading

    from magnetar.client import Client

    client = Client(url, operation_timeout_seconds=30)
    producer = client.create_producer(topic, **PRODUCER_OPTIONS)
    payload = b"x" * size
    done = threading.Event()
    state = {"acked": 0, "failures": 0}

    def callback(err, _msg_id) -> None:  # noqa: ANN001
        if err is not None:
            state["failures"] += 1
        state["acked"] += 1
        if state["acked"] == count:
            done.set()

    start = time.perf_counter()
    send_async = producer.send_async
    for _ in range(count):
        send_async(payload, callback)
    producer.flush()
    done.wait(300)
    elapsed = time.perf_counter() - start
    client.close()
    return {**state, "seconds": elapsed}


def produce_magnetar_async(url: str, topic: str, count: int, size: int) -> dict:
    import asyncio

    from magnetar.client import AsyncClient

    async def main() -> dict:
        async with AsyncClient(url, operation_timeout_seconds=30) as client:
            producer = await client.create_producer(topic, **PRODUCER_OPTIONS)
            payload = b"x" * size
            state = {"acked": 0, "failures": 0}

            def callback(err, _msg_id) -> None:  # noqa: ANN001
                if err is not None:
                    state["failures"] += 1
                state["acked"] += 1

            start = time.perf_counter()
            send = producer.send_nowait
            pending = PRODUCER_OPTIONS["max_pending_messages"]
            for i in range(count):
                if producer._pending_messages >= pending:
                    await producer.flush()
                send(payload, callback)
                if i % 1000 == 999:
                    await asyncio.sleep(0)
            await producer.flush()
            return {**state, "seconds": time.perf_counter() - start}

    try:
        import uvloop

        return uvloop.run(main())
    except ImportError:
        return asyncio.run(main())


def consume_official(url: str, topic: str, count: int, size: int) -> dict:
    import pulsar

    client = pulsar.Client(url, operation_timeout_seconds=30, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer = client.subscribe(topic, f"bench-{time.time_ns()}", initial_position=pulsar.InitialPosition.Earliest)
    first = consumer.receive(30000)
    consumer.acknowledge(first)
    start = time.perf_counter()
    receive, acknowledge = consumer.receive, consumer.acknowledge
    for _ in range(count - 1):
        acknowledge(receive(30000))
    elapsed = time.perf_counter() - start
    client.close()
    return {"received": count, "seconds": elapsed, "count_timed": count - 1}


def consume_magnetar(url: str, topic: str, count: int, size: int) -> dict:
    from magnetar.client import Client, InitialPosition

    client = Client(url, operation_timeout_seconds=30)
    consumer = client.subscribe(topic, f"bench-{time.time_ns()}", initial_position=InitialPosition.Earliest)
    first = consumer.receive(30000)
    consumer.acknowledge(first)
    start = time.perf_counter()
    receive, acknowledge = consumer.receive, consumer.acknowledge
    for _ in range(count - 1):
        acknowledge(receive(30000))
    elapsed = time.perf_counter() - start
    client.close()
    return {"received": count, "seconds": elapsed, "count_timed": count - 1}


def consume_magnetar_async(url: str, topic: str, count: int, size: int) -> dict:
    import asyncio

    from magnetar.client import AsyncClient, InitialPosition

    async def main() -> dict:
        async with AsyncClient(url, operation_timeout_seconds=30) as client:
            consumer = await client.subscribe(topic, f"bench-{time.time_ns()}", initial_position=InitialPosition.Earliest)
            consumer.acknowledge(await consumer.receive(30000))
            start = time.perf_counter()
            receive, acknowledge = consumer.receive, consumer.acknowledge
            for _ in range(count - 1):
                acknowledge(await receive(30000))
            return {"received": count, "seconds": time.perf_counter() - start, "count_timed": count - 1}

    try:
        import uvloop

        return uvloop.run(main())
    except ImportError:
        return asyncio.run(main())


def consume_magnetar_face(url: str, topic: str, count: int, size: int) -> dict:
    """As consume_magnetar_async, through the ``pulsar.asyncio`` face (``magnetar.client.asyncio``):
    ``await consumer.acknowledge(await consumer.receive())`` as code written for the official
    asyncio client does."""
    import asyncio

    from magnetar.client import InitialPosition
    from magnetar.client import asyncio as pulsar_asyncio

    async def main() -> dict:
        client = pulsar_asyncio.Client(url, operation_timeout_seconds=30)
        try:
            consumer = await client.subscribe(topic, f"bench-{time.time_ns()}", initial_position=InitialPosition.Earliest)
            await consumer.acknowledge(await consumer.receive(30000))
            start = time.perf_counter()
            receive, acknowledge = consumer.receive, consumer.acknowledge
            for _ in range(count - 1):
                await acknowledge(await receive(30000))
            return {"received": count, "seconds": time.perf_counter() - start, "count_timed": count - 1}
        finally:
            await client.close()

    try:
        import uvloop

        return uvloop.run(main())
    except ImportError:
        return asyncio.run(main())


WORKERS = {
    "produce-official": produce_official,
    "produce-magnetar": produce_magnetar,
    "produce-magnetar-async": produce_magnetar_async,
    "consume-official": consume_official,
    "consume-magnetar": consume_magnetar,
    "consume-magnetar-async": consume_magnetar_async,
    "consume-magnetar-face": consume_magnetar_face,
}


def hold_backlog(http_url: str, topic: str) -> None:
    """Create ``topic`` with a subscription at its start, so that none of what the fill writes is
    trimmed (as acknowledged by every subscription) before the measured consumer subscribes."""
    path = f"{http_url}/admin/v2/persistent/public/default/{topic}/subscription/hold"
    request = urllib.request.Request(path, data=b"", method="PUT")
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


def run_worker(kind: str, url: str, topic: str, count: int, size: int) -> float:
    """Run one measurement in a child process; returns msg/s."""
    out = subprocess.run(
        [sys.executable, __file__, "--worker", kind, url, topic, str(count), str(size)],
        capture_output=True, text=True, timeout=600,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{kind} failed:\n{out.stderr[-3000:]}")
    report = json.loads(out.stdout.strip().splitlines()[-1])
    if kind.startswith("produce") and (report["failures"] or report["acked"] != count):
        raise RuntimeError(f"{kind}: {report}")
    timed = report.get("count_timed", count)
    return timed / report["seconds"]


def main() -> None:
    """Run the benchmark and write benchmarks/results/client_vs_official.json."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sizes", default="100,1024")
    parser.add_argument("--worker", nargs=5, metavar=("KIND", "URL", "TOPIC", "COUNT", "SIZE"))
    args = parser.parse_args()
    if args.worker:
        kind, url, topic, count, size = args.worker
        print(json.dumps(WORKERS[kind](url, topic, int(count), int(size))))
        return

    sys.path.insert(0, str(HERE.parent / "src"))
    from magnetar.testing import BrokerProcess

    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = tempfile.TemporaryDirectory()
    broker = BrokerProcess(Path(tmp.name) / "data", args=("--fsync", "always", "--log-level", "WARNING"))
    broker.start()
    clients = ["official", "magnetar", "magnetar-async"]
    results: dict[str, dict] = {}
    try:
        for size in sizes:
            rates: dict[str, list[float]] = {f"{op}-{c}": [] for op in ("produce", "consume") for c in clients}
            for r in range(args.rounds):
                for c in clients:
                    topic = f"bench-{size}-{c}-{r}-{time.time_ns()}"
                    rates[f"produce-{c}"].append(run_worker(f"produce-{c}", broker.service_url, topic, args.count, size))
                    # every client consumes the same kind of topic: one filled by the official client
                    fill = f"bench-fill-{size}-{c}-{r}-{time.time_ns()}"
                    hold_backlog(broker.http_url, fill)
                    run_worker("produce-official", broker.service_url, fill, args.count, size)
                    rates[f"consume-{c}"].append(run_worker(f"consume-{c}", broker.service_url, fill, args.count, size))
                print(f"size {size} round {r}: " + ", ".join(f"{k} {v[-1]:,.0f}" for k, v in rates.items()), flush=True)
            med = {k: statistics.median(v) for k, v in rates.items()}
            results[f"{size}B"] = {
                "msg_per_s": {k: [round(x) for x in v] for k, v in rates.items()},
                "median_msg_per_s": {k: round(v) for k, v in med.items()},
                "produce_ratio": round(med["produce-magnetar"] / med["produce-official"], 2),
                "consume_ratio": round(med["consume-magnetar"] / med["consume-official"], 2),
                "produce_ratio_async_api": round(med["produce-magnetar-async"] / med["produce-official"], 2),
                "consume_ratio_async_api": round(med["consume-magnetar-async"] / med["consume-official"], 2),
            }
    finally:
        broker.stop()
        tmp.cleanup()
    report = {
        "benchmark": "magnetar client vs official pulsar-client: produce (batching on, send_async) and consume (receive + ack)",
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}",
        "broker": "magnetar standalone, fsync always",
        "messages_per_run": args.count,
        "rounds": args.rounds,
        "producer_options": PRODUCER_OPTIONS,
        "goal": "produce_ratio >= 3, consume_ratio >= 1 (ratios: magnetar sync facade / official)",
        "results": results,
    }
    out = HERE / "results" / "client_vs_official.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["results"], indent=2))


if __name__ == "__main__":
    main()
