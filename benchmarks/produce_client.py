"""One producer run: send N messages with batching, print msg/s and the client's CPU seconds as JSON.

``--client official`` (the default) uses the official pulsar-client; ``--client magnetar`` uses
magnetar.client's asyncio core as ``magnetar perf produce`` drives it: ``send_nowait`` with a
callback per message, at most ``--max-outstanding`` messages without a receipt. ``cpu_s`` is the
process's CPU time (all threads) from the first send to the last receipt, start-up excluded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
from typing import Any


def run_official(args: argparse.Namespace) -> dict[str, Any]:
    """Send with the official client's send_async; its report."""
    import pulsar

    client = pulsar.Client(args.url, operation_timeout_seconds=30, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(
        args.topic,
        batching_enabled=True,
        batching_max_messages=args.batch,
        batching_max_publish_delay_ms=1,
        max_pending_messages=10000,
        block_if_queue_full=True,
    )
    payload = b"x" * args.size
    done = threading.Event()
    failures = []
    acked = [0]

    def callback(res, _msg_id) -> None:  # noqa: ANN001
        if res != pulsar.Result.Ok:
            failures.append(res)
        acked[0] += 1
        if acked[0] == args.count:
            done.set()

    cpu = time.process_time()
    start = time.perf_counter()
    for _ in range(args.count):
        producer.send_async(payload, callback)
    producer.flush()
    done.wait(120)
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    client.close()
    return {"acked": acked[0], "failures": len(failures), "seconds": elapsed, "cpu_s": cpu}


async def run_magnetar(args: argparse.Namespace) -> dict[str, Any]:
    """Send with magnetar.client's core producer, as ``magnetar perf produce`` does; its report."""
    from magnetar.client import AsyncClient

    async with AsyncClient(args.url, operation_timeout_seconds=30) as client:
        producer = await client.create_producer(
            args.topic,
            batching_enabled=True,
            batching_max_messages=args.batch,
            batching_max_allowed_size_in_bytes=128 * 1024,
            batching_max_publish_delay_ms=args.batch_delay_ms,
            max_pending_messages=0,
            send_timeout_millis=30_000,
        )
        payload = b"x" * args.size
        count, limit = args.count, args.max_outstanding
        state = {"acked": 0, "failures": 0}
        space = asyncio.Event()
        finished = asyncio.Event()

        def settled(error: Exception | None, _msg_id: Any) -> None:
            if error is not None:
                state["failures"] += 1
            state["acked"] += 1
            if state["acked"] == count:
                finished.set()
            space.set()

        cpu = time.process_time()
        start = time.perf_counter()
        sent = 0
        while sent < count:
            end = min(count, state["acked"] + limit, sent + 1000)
            if end <= sent:
                space.clear()
                await space.wait()
                continue
            for _ in range(sent, end):
                producer.send_nowait(payload, settled)
            sent = end
            await asyncio.sleep(0)
        await producer.flush()
        await asyncio.wait_for(finished.wait(), 120)
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu
        await producer.close()
    return {"acked": state["acked"], "failures": state["failures"], "seconds": elapsed, "cpu_s": cpu}


def main() -> None:
    """Command line: produce_client.py URL TOPIC N SIZE [--client official|magnetar]."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url")
    parser.add_argument("topic")
    parser.add_argument("count", type=int)
    parser.add_argument("size", type=int)
    parser.add_argument("--client", choices=("official", "magnetar"), default="official")
    parser.add_argument("--batch", type=int, default=1000, help="batching: messages per batch at most")
    parser.add_argument("--batch-delay-ms", type=float, default=10, help="batching delay (magnetar.client)")
    parser.add_argument("--max-outstanding", type=int, default=50_000, help="messages without a receipt (magnetar.client)")
    args = parser.parse_args()
    if args.client == "official":
        report = run_official(args)
    else:
        try:
            import uvloop

            report = uvloop.run(run_magnetar(args))
        except ImportError:  # pragma: no cover
            report = asyncio.run(run_magnetar(args))
    report.update(count=args.count, client=args.client, msg_per_s=args.count / report["seconds"])
    print(json.dumps(report))


if __name__ == "__main__":
    main()
