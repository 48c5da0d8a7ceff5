"""Crash instrument: random `kill -9` cycles of `magnetar standalone` under live traffic.

A producer sends messages one at a time with synchronous sends and an acknowledging consumer
reads them, through one client that lives across every crash (it reconnects by itself, as
applications do). The main thread kills the broker with SIGKILL at random moments and restarts it
on the same data directory and ports; each cycle's random delay starts once traffic flows again
(a send confirmed and a message received since the restart, waited for at most 4 cycles). Afterwards the subscription is drained and the topic read
from the start, and the run prints:

- confirmed: messages whose send returned success
- consumed: distinct messages the consumer received; lost: confirmed but never received
- corrupt: received payloads that do not match their index
- duplicates: deliveries beyond the first of a message (redelivered after a crash)
- stored duplicates: messages stored more than once in the topic (0 expected with --dedup)
- duplicate causes: each duplicate classified by what its previous delivery had seen of the kill
  that came between them (acknowledged how long before it, after it, not acknowledged, no kill),
  and, for the magnetar client, what the consumer held at each kill (grouped acknowledgements not
  yet sent, receiver queue, the sync face's buffer)

``--ack-group-ms`` sets the consumer's acknowledgement grouping time with either client (the
official Python client has no such option: the instrument sets it on the C++ configuration).

    python benchmarks/crash_cycles.py --client official --cycles 50
    python benchmarks/crash_cycles.py --client magnetar --cycles 50 --dedup

Exit status 1 when anything confirmed was lost or anything was corrupt (or, with --dedup, stored
twice). Bounded: every cycle lasts at most --max-cycle-seconds, the drain at most 60 s.
"""

from __future__ import annotations

import argparse
import bisect
import ctypes
import glob
import hashlib
import importlib
import json
import os
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from magnetar.testing import BrokerProcess

TOPIC = "persistent://public/default/crash-cycles"
#: seconds a (re)start may take: generous, a loaded machine has taken over 15 s
START_TIMEOUT = 120.0


def payload(i: int) -> bytes:
    """A payload whose content can be checked from its index alone."""
    head = f"crash-{i:08d}:".encode()
    return head + hashlib.sha256(head).digest() * (1 + i % 3)


def index_of(data: bytes) -> int | None:
    """The index a payload was made from, or None when it is corrupt."""
    try:
        i = int(data[6:14])
    except ValueError:
        return None
    return i if data == payload(i) else None


@dataclass
class Tally:
    """What the producer and the consumer saw."""

    confirmed: set[int] = field(default_factory=set)
    send_failures: int = 0
    received: set[int] = field(default_factory=set)
    deliveries: int = 0
    corrupt: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: monotonic times of the kills
    kills: list[float] = field(default_factory=list)
    #: per message, (last delivered at, acknowledged at or None)
    last_delivery: dict[int, tuple[float, float | None]] = field(default_factory=dict)
    #: duplicates by cause (see :func:`duplicate_cause`)
    causes: Counter = field(default_factory=Counter)
    #: what the magnetar consumer held at the kills, summed over them
    at_kills: Counter = field(default_factory=Counter)

    def record_delivery(self, data: bytes) -> int | None:
        """Count one delivery; returns the message's index (None when corrupt)."""
        i = index_of(data)
        now = time.monotonic()
        with self.lock:
            self.deliveries += 1
            if i is None:
                self.corrupt += 1
                return None
            if i in self.received:
                self.causes[duplicate_cause(self.last_delivery.get(i), self.kills, now)] += 1
            self.received.add(i)
            self.last_delivery[i] = (now, None)
        return i

    def record_ack(self, i: int | None) -> None:
        """The application acknowledged message ``i``."""
        if i is not None:
            self.last_delivery[i] = (self.last_delivery[i][0], time.monotonic())


def duplicate_cause(previous: tuple[float, float | None] | None, kills: list[float], now: float) -> str:
    """Why a message came again: what its previous delivery saw of the last kill since."""
    if previous is None:
        return "unknown"
    delivered, acked = previous
    k = bisect.bisect_right(kills, now) - 1
    if k < 0 or kills[k] < delivered:
        return "no_kill_between"
    kill = kills[k]
    if acked is None:
        return "not_acked"
    if acked > kill:
        return "acked_after_kill"
    age = kill - acked
    if age <= 0.15:
        return "acked_0_150ms_before_kill"
    return "acked_150ms_1s_before_kill" if age <= 1.0 else "acked_over_1s_before_kill"


def produce(pulsar, client, stop: threading.Event, tally: Tally) -> None:  # noqa: ANN001
    """Synchronous sends until told to stop; a send that fails is retried as a new message."""
    producer = client.create_producer(TOPIC, producer_name="crash-producer", send_timeout_millis=30000,
                                      batching_enabled=False)
    i = 0
    while not stop.is_set():
        try:
            producer.send(payload(i))
            tally.confirmed.add(i)
        except Exception:  # noqa: BLE001 - a send that failed across a crash is not confirmed
            tally.send_failures += 1
        i += 1
    producer.close()


#: extra subscribe options (``--ack-group-ms`` for the magnetar client)
CONSUMER_OPTIONS: dict = {}
#: the running consumer, for :func:`held_at_kill`
CONSUMERS: list = []


def held_at_kill(tally: Tally) -> None:
    """Add what the magnetar consumer holds now to ``tally.at_kills`` (nothing for the official client)."""
    for consumer in CONSUMERS:
        core = getattr(consumer, "core", None)
        if core is None:
            continue
        tracker = core._acks
        pending = tracker.pending_count() if hasattr(tracker, "pending_count") else len(tracker._individual)
        tally.at_kills["pending_acks"] += pending
        tally.at_kills["receiver_queue"] += core.queued()
        tally.at_kills["sync_buffer"] += len(consumer._buffer)


def official_ack_grouping(client: Any, group_ms: int) -> None:
    """Set the C++ acknowledgement grouping time of the official client's next subscriptions.

    The Python wrapper builds a ``_pulsar.ConsumerConfiguration`` and does not expose
    ``setAckGroupingTimeMs``; this calls it through ctypes on the wrapped C++ object (pybind11
    keeps the value pointer right after the object header)."""
    import pulsar  # noqa: PLC0415 - only with the official client

    libs = glob.glob(os.path.join(os.path.dirname(pulsar.__file__), "..", "pulsar_client.libs", "libpulsar-*.so"))
    lib = ctypes.CDLL(libs[0])
    setter = lib._ZN6pulsar21ConsumerConfiguration20setAckGroupingTimeMsEl
    setter.argtypes = [ctypes.c_void_p, ctypes.c_long]
    getter = lib._ZNK6pulsar21ConsumerConfiguration20getAckGroupingTimeMsEv
    getter.argtypes, getter.restype = [ctypes.c_void_p], ctypes.c_long
    inner = client._client

    class Subscriber:
        def __getattr__(self, name: str) -> Any:
            return getattr(inner, name)

        def subscribe(self, topic: str, subscription: str, conf: Any) -> Any:
            ptr = ctypes.c_void_p.from_address(id(conf) + 16).value
            setter(ptr, group_ms)
            assert getter(ptr) == group_ms
            return inner.subscribe(topic, subscription, conf)

    client._client = Subscriber()


def consume(pulsar, client, stop: threading.Event, tally: Tally) -> None:  # noqa: ANN001
    """Receive and acknowledge until told to stop."""
    consumer = client.subscribe(TOPIC, "crash-sub", consumer_type=pulsar.ConsumerType.Shared,
                                initial_position=pulsar.InitialPosition.Earliest, **CONSUMER_OPTIONS)
    CONSUMERS.append(consumer)
    while not stop.is_set():
        try:
            msg = consumer.receive(timeout_millis=200)
        except Exception:  # noqa: BLE001 - timeouts and disconnections
            continue
        i = tally.record_delivery(msg.data())
        try:
            consumer.acknowledge(msg)
            tally.record_ack(i)
        except Exception:  # noqa: BLE001 - an ack lost in a crash means a redelivery, counted above
            pass
    CONSUMERS.clear()
    consumer.close()


def drain(pulsar, client, tally: Tally, confirmed: int) -> None:  # noqa: ANN001
    """Consume what is left on the subscription (bounded)."""
    consumer = client.subscribe(TOPIC, "crash-sub", consumer_type=pulsar.ConsumerType.Shared)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not tally.confirmed <= tally.received:
        try:
            msg = consumer.receive(timeout_millis=1000)
        except Exception:  # noqa: BLE001
            continue
        i = tally.record_delivery(msg.data())
        consumer.acknowledge(msg)
        tally.record_ack(i)
    consumer.close()


def stored_duplicates(pulsar, client) -> tuple[int, int]:  # noqa: ANN001
    """(entries stored, messages stored more than once), reading the topic from the start."""
    reader = client.create_reader(TOPIC, pulsar.MessageId.earliest)
    seen: dict[int, int] = {}
    stored = 0
    while True:
        try:
            msg = reader.read_next(timeout_millis=2000)
        except Exception:  # noqa: BLE001 - the end of the topic
            break
        stored += 1
        i = index_of(msg.data())
        if i is not None:
            seen[i] = seen.get(i, 0) + 1
    reader.close()
    return stored, sum(1 for n in seen.values() if n > 1)


def run(args: argparse.Namespace) -> dict:
    """Run the cycles; returns the figures."""
    pulsar = importlib.import_module("pulsar" if args.client == "official" else "magnetar.client")
    rng = random.Random(args.seed)
    data_dir = Path(tempfile.mkdtemp(prefix="crash-cycles-")) / "data"
    broker_args = ("--fsync", "always") + (("--config", str(_dedup_conf(data_dir.parent))) if args.dedup else ())
    # (a fixed copy of the broker's source keeps edits made to the tree during the run out of it)
    env = {"PYTHONPATH": str(args.broker_src)} if args.broker_src else None
    broker = BrokerProcess(data_dir, args=broker_args, env=env).start(START_TIMEOUT)
    quiet = {"logger": pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)} if args.client == "official" else {}
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=30, **quiet)
    if args.client == "official" and args.ack_group_ms is not None:
        official_ack_grouping(client, args.ack_group_ms)
    tally, stop = Tally(), threading.Event()
    threads = [threading.Thread(target=fn, args=(pulsar, client, stop, tally), daemon=True) for fn in (produce, consume)]
    for t in threads:
        t.start()
    started = time.monotonic()
    for cycle in range(args.cycles):
        wait_for_traffic(tally, args.max_cycle_seconds * 4)
        time.sleep(rng.uniform(args.min_cycle_seconds, args.max_cycle_seconds))
        held_at_kill(tally)
        tally.kills.append(time.monotonic())
        broker.kill()
        broker = BrokerProcess(data_dir, port=broker.port, http_port=broker.http_port, args=broker_args, env=env)
        broker.start(START_TIMEOUT)
        print(f"cycle {cycle + 1}/{args.cycles}: confirmed {len(tally.confirmed)}, received {len(tally.received)}",
              file=sys.stderr)
    time.sleep(args.max_cycle_seconds)
    stop.set()
    for t in threads:
        t.join(60)
    drain(pulsar, client, tally, len(tally.confirmed))
    stored, stored_dups = stored_duplicates(pulsar, client)
    client.close()
    broker.stop()
    lost = len(tally.confirmed - tally.received)
    return {
        "client": args.client, "cycles": args.cycles, "dedup": args.dedup, "seconds": round(time.monotonic() - started, 1),
        "confirmed": len(tally.confirmed), "send_failures": tally.send_failures, "consumed": len(tally.received),
        "lost": lost, "corrupt": tally.corrupt, "deliveries": tally.deliveries,
        "duplicates": tally.deliveries - len(tally.received) - tally.corrupt,
        "duplicates_pct": round(100 * (tally.deliveries - len(tally.received)) / max(1, len(tally.confirmed)), 2),
        "stored_entries": stored, "stored_duplicates": stored_dups,
        "duplicate_causes": dict(sorted(tally.causes.items())), "held_at_kills": dict(tally.at_kills),
    }


def wait_for_traffic(tally: Tally, timeout: float) -> None:
    """Wait (bounded) until a send is confirmed and a message received after the restart, so
    that every kill falls under live traffic, not into the clients' reconnection backoff (on a
    loaded machine a restart can outlast the shortest cycles)."""
    confirmed, deliveries = len(tally.confirmed), tally.deliveries
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (len(tally.confirmed) == confirmed or tally.deliveries == deliveries):
        time.sleep(0.01)


def _dedup_conf(directory: Path) -> Path:
    path = directory / "dedup.toml"
    path.write_text("deduplication_enabled = true\n")
    return path


def main() -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--client", choices=("official", "magnetar"), default="official")
    parser.add_argument("--cycles", type=int, default=50)
    parser.add_argument("--dedup", action="store_true", help="broker-side deduplication on")
    parser.add_argument("--min-cycle-seconds", type=float, default=0.5)
    parser.add_argument("--max-cycle-seconds", type=float, default=2.5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--broker-src", type=Path, help="run the broker from this source directory (PYTHONPATH)")
    parser.add_argument("--ack-group-ms", type=int, default=None,
                        help="the consumer's ack grouping time (default: the client's, 100 ms)")
    args = parser.parse_args()
    if args.ack_group_ms is not None and args.client == "magnetar":
        CONSUMER_OPTIONS["ack_group_time_ms"] = args.ack_group_ms
    figures = run(args)
    figures["ack_group_ms"] = args.ack_group_ms
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    bad = figures["lost"] or figures["corrupt"] or (args.dedup and figures["stored_duplicates"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
