"""Reconnect speed: from a restarted broker accepting connections to the first confirmed send.

Each measurement kills `magnetar standalone` with SIGKILL while a producer is sending, waits a
random down time (0.5-2.5 s, as the crash instrument), restarts it on the same data directory and
ports, and records how long after its binary port first accepted a connection (polled every 2 ms)
the first send since the kill was confirmed. Modes, alternated round by round:

- ``magnetar-sync-existing`` / ``official-existing``: one client and producer live across the
  kill; a thread calls ``send()`` in a loop (a failed send is retried at once);
- ``magnetar-sync-new`` / ``official-new``: once the broker is gone, a thread opens a new client and
  producer and sends, closing it and starting again at once on any failure (what the crash
  instrument's producer does);
- ``magnetar-asyncio-existing`` / ``magnetar-asyncio-new``: the same with ``magnetar.client.asyncio``.

    python benchmarks/reconnect.py --rounds 3
    python benchmarks/reconnect.py --rounds 2 --modes magnetar-sync-existing,official-existing

Bounded: each measurement gives up after --max-seconds (counted as a failure), broker starts wait
at most 120 s. Prints one line per measurement and a table (median, min, max per mode).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from magnetar.testing import BrokerProcess

MODES = (
    "magnetar-sync-existing",
    "official-existing",
    "magnetar-asyncio-existing",
    "magnetar-sync-new",
    "official-new",
    "magnetar-asyncio-new",
)

#: what a sender records: monotonic times of confirmed sends
Record = Callable[[float], None]


def quiet_logger() -> logging.Logger:
    """A logger for the official client that says nothing below errors."""
    log = logging.getLogger("reconnect-bench-official")
    log.setLevel(logging.CRITICAL)
    return log


def sync_client(mode: str, url: str):  # noqa: ANN201 - pulsar.Client or magnetar's
    """A client of the mode's library."""
    if mode.startswith("official"):
        import pulsar  # noqa: PLC0415 - only when measured

        return pulsar.Client(url, operation_timeout_seconds=30, logger=quiet_logger())
    from magnetar.client import Client  # noqa: PLC0415

    return Client(url, operation_timeout_seconds=30)


def sync_existing(mode: str, url: str, topic: str, stop: threading.Event, record: Record, ready: threading.Event) -> None:
    """One producer across the kill; send in a loop."""
    client = sync_client(mode, url)
    producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=60000)
    try:
        while not stop.is_set():
            try:
                producer.send(b"x")
                record(time.monotonic())
                ready.set()
            except Exception:  # noqa: BLE001 - a send lost with the broker: try again
                pass
            time.sleep(0.005)
    finally:
        client.close()


def sync_new(mode: str, url: str, topic: str, stop: threading.Event, record: Record, ready: threading.Event) -> None:
    """New client and producer until a send is confirmed."""
    ready.set()
    while not stop.is_set():
        client = None
        try:
            client = sync_client(mode, url)
            producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=60000)
            producer.send(b"x")
            record(time.monotonic())
            return
        except Exception:  # noqa: BLE001 - the broker is not back yet: start again
            pass
        finally:
            if client is not None:
                try:
                    client.close()
                except Exception:  # noqa: BLE001, S110
                    pass


async def asyncio_existing(url: str, topic: str, stop: threading.Event, record: Record, ready: threading.Event) -> None:
    """The asyncio face: one producer across the kill."""
    from magnetar.client import asyncio as pa  # noqa: PLC0415

    client = pa.Client(url, operation_timeout_seconds=30)
    producer = await client.create_producer(topic, batching_enabled=False, send_timeout_millis=60000)
    try:
        while not stop.is_set():
            try:
                await producer.send(b"x")
                record(time.monotonic())
                ready.set()
            except Exception:  # noqa: BLE001
                pass
            await asyncio.sleep(0.005)
    finally:
        await client.close()


async def asyncio_new(url: str, topic: str, stop: threading.Event, record: Record, ready: threading.Event) -> None:
    """The asyncio face: new client and producer until a send is confirmed."""
    from magnetar.client import asyncio as pa  # noqa: PLC0415

    ready.set()
    while not stop.is_set():
        client = pa.Client(url, operation_timeout_seconds=30)
        try:
            producer = await client.create_producer(topic, batching_enabled=False, send_timeout_millis=60000)
            await producer.send(b"x")
            record(time.monotonic())
            return
        except Exception:  # noqa: BLE001, S110
            pass
        finally:
            try:
                await client.close()
            except Exception:  # noqa: BLE001, S110
                pass


def sender(mode: str, url: str, topic: str, stop: threading.Event, record: Record, ready: threading.Event) -> threading.Thread:
    """The thread that sends for ``mode``."""
    if mode.startswith("magnetar-asyncio"):
        coro = asyncio_existing if mode.endswith("existing") else asyncio_new

        def target() -> None:
            asyncio.run(coro(url, topic, stop, record, ready))
    else:
        fn = sync_existing if mode.endswith("existing") else sync_new

        def target() -> None:
            fn(mode, url, topic, stop, record, ready)
    return threading.Thread(target=target, name=mode, daemon=True)


def accepting_at(port: int, deadline: float) -> float:
    """The monotonic time at which ``port`` first accepted a connection (polled every 2 ms)."""
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return time.monotonic()
        except OSError:
            time.sleep(0.002)
    raise TimeoutError(f"port {port} did not open")


def measure(broker: BrokerProcess, mode: str, rnd: int, down: float, max_seconds: float) -> float | None:
    """One kill and restart with ``mode`` sending: seconds to the first confirmed send, or None."""
    topic = f"persistent://public/default/reconnect-{mode}-{rnd}"
    confirmed: list[float] = []
    stop, ready = threading.Event(), threading.Event()
    existing = mode.endswith("existing")
    thread = sender(mode, broker.service_url, topic, stop, confirmed.append, ready) if existing else None
    if thread is not None:
        thread.start()
        if not ready.wait(60):
            stop.set()
            raise RuntimeError(f"{mode}: no send confirmed before the kill")
    broker.kill()
    killed = time.monotonic()
    if thread is None:
        thread = sender(mode, broker.service_url, topic, stop, confirmed.append, ready)
        thread.start()
    time.sleep(down)
    # the broker is started from this thread (it dies with the thread that started it), the port
    # watched from another
    opened: list[float] = []
    watcher = threading.Thread(target=lambda: opened.append(accepting_at(broker.port, time.monotonic() + 120)))
    watcher.start()
    try:
        broker.start(timeout=120.0)
        watcher.join()
        back = opened[0]
        deadline = back + max_seconds
        while time.monotonic() < deadline and not any(t > killed for t in confirmed):
            time.sleep(0.002)
    finally:
        stop.set()
        thread.join(30)
    after = [t for t in confirmed if t > killed]
    return (after[0] - back) if after else None


def main() -> int:
    """Run the rounds and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--max-seconds", type=float, default=45.0)
    parser.add_argument("--seed", type=int, default=29)
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    unknown = set(modes) - set(MODES)
    if unknown:
        parser.error(f"unknown modes: {', '.join(sorted(unknown))}")
    logging.getLogger("magnetar.client").setLevel(logging.WARNING)
    rng = random.Random(args.seed)
    results: dict[str, list[float | None]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory(prefix="magnetar-reconnect-") as work:
        broker = BrokerProcess(Path(work) / "data", args=("--log-level", "WARNING")).start(timeout=120.0)
        try:
            for rnd in range(args.rounds):
                order = modes[rnd % len(modes):] + modes[:rnd % len(modes)]
                for mode in order:
                    down = rng.uniform(0.5, 2.5)
                    took = measure(broker, mode, rnd, down, args.max_seconds)
                    results[mode].append(took)
                    shown = f"{took * 1000:8.0f} ms" if took is not None else "  failed"
                    print(f"round {rnd + 1} {mode:26s} down {down:4.2f} s  first send confirmed {shown}", flush=True)
        finally:
            broker.stop()
    print(f"\n{'mode':26s} {'median ms':>10s} {'min':>8s} {'max':>8s} failed")
    for mode, took in results.items():
        ok = [t * 1000 for t in took if t is not None]
        if ok:
            print(f"{mode:26s} {statistics.median(ok):10.0f} {min(ok):8.0f} {max(ok):8.0f} {len(took) - len(ok):6d}")
        else:
            print(f"{mode:26s} {'-':>10s} {'-':>8s} {'-':>8s} {len(took):6d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
