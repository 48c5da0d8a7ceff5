"""The scenarios with magnetar.client, through ``magnetar perf ... --json`` (the same machinery users
run), against any Pulsar-protocol broker."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from benchmarks.suite.drivers.common import Params, throughput

PERF = [sys.executable, "-m", "magnetar.cli.main", "perf"]
#: how long the fan-out consumers may take after the fill (a full-size run needs a few seconds)
FANOUT_WAIT_S = 300


def perf(command: str, p: Params, *args: str, topic: str | None = None) -> dict[str, Any]:
    """Run one ``magnetar perf`` command; its JSON document."""
    cmd = [*PERF, command, "-u", p.address, "--json", *args, topic or p.topic]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    if proc.returncode != 0 and not proc.stdout.strip().startswith("{"):
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    doc = json.loads(proc.stdout)
    doc.pop("intervals", None)
    doc["cmd"] = " ".join(cmd[2:])
    return doc


def _batching(p: Params) -> list[str]:
    return ["-bm", str(p.batch), "-b", str(p.batch_delay_ms)]


def _fill(p: Params, *extra: str) -> dict[str, Any]:
    return perf("produce", p, "-m", str(p.count), "-s", str(p.size), "-r", "0", *_batching(p), *extra)


def _rate_of(doc: dict[str, Any], direction: str, **extra: Any) -> dict[str, Any]:
    moved = doc.get(direction, {})
    return throughput(moved.get("messages", 0), doc.get("duration_s", 0.0), commands=[doc["cmd"]], **extra)


def produce(p: Params) -> dict[str, Any]:
    """Max produce rate (acknowledged messages / s)."""
    return _rate_of(_fill(p), "produced")


def _hold_backlog(p: Params, subscription: str) -> None:
    """Create the durable subscription before the fill, so the fill is its backlog (a topic without a
    subscription keeps only what retention asks for)."""
    from magnetar.client import Client, ConsumerType, InitialPosition

    client = Client(p.address)
    try:
        client.subscribe(p.topic, subscription, consumer_type=ConsumerType.Exclusive,
                         initial_position=InitialPosition.Earliest).close()
    finally:
        client.close()


def consume(p: Params) -> dict[str, Any]:
    """Fill, then receive + acknowledge from the earliest position."""
    _hold_backlog(p, "bench")
    fill = _fill(p)
    doc = perf("consume", p, "-m", str(p.count), "-sp", "Earliest", "-ss", "bench")
    # every message of the backlog was acknowledged: a message left means the count included duplicates
    left = perf("consume", p, "-t", "1", "-ss", "bench").get("consumed", {}).get("messages", 0)
    if doc.get("consumed", {}).get("messages", 0) < p.count or left:
        raise RuntimeError(f"consume: {doc.get('consumed', {}).get('messages', 0)} of {p.count} messages received, "
                           f"then {left} still there (the count included duplicates, or acknowledgements were lost: "
                           "benchmarks/README.md)")
    result = _rate_of(doc, "consumed")
    result["commands"].insert(0, fill["cmd"])
    return result


def cost(p: Params) -> dict[str, Any]:
    """Fill (batched unless ``batch`` is 1), then receive + acknowledge it all: the whole life of a
    message in the broker, whose CPU seconds the suite reads around this run; messages left on the
    subscription afterwards (delivered twice, or acknowledgements lost) are reported, not refused."""
    _hold_backlog(p, "bench")
    fill = _fill(p) if p.batch > 1 else perf("produce", p, "-m", str(p.count), "-s", str(p.size), "-r", "0", "-db")
    doc = perf("consume", p, "-m", str(p.count), "-sp", "Earliest", "-ss", "bench")
    consumed = doc.get("consumed", {}).get("messages", 0)
    if consumed < p.count:
        raise RuntimeError(f"cost: {consumed} of {p.count} messages received")
    left = perf("consume", p, "-t", "1", "-ss", "bench").get("consumed", {}).get("messages", 0)
    seconds = fill.get("duration_s", 0.0) + doc.get("duration_s", 0.0)
    return throughput(consumed, seconds, left_after=left, commands=[fill["cmd"], doc["cmd"]], entries=doc.get("entries"),
                      produce_msg_per_s=fill.get("produced", {}).get("msg_per_s", 0.0),
                      consume_msg_per_s=doc.get("consumed", {}).get("msg_per_s", 0.0))


def _latency_result(doc: dict[str, Any], direction: str, kind: str, target: float) -> dict[str, Any]:
    result = _rate_of(doc, direction, target_rate=target)
    result["latency_ms"] = doc["latency_ms"][kind]
    return result


def rate(p: Params) -> dict[str, Any]:
    """Publish latency at a fixed rate, batching delay 1 ms."""
    doc = perf("produce", p, "-r", str(p.rate), "-t", str(p.duration_s), "-m", str(p.count), "-s", str(p.size),
               *_batching(p))
    return _latency_result(doc, "produced", "publish", p.rate)


def e2e(p: Params) -> dict[str, Any]:
    """``magnetar perf end-to-end`` at a fixed rate."""
    doc = perf("end-to-end", p, "-r", str(p.rate), "-t", str(p.duration_s), "-m", str(p.count), "-s", str(p.size),
               *_batching(p))
    direction = "received" if "received" in doc else "consumed"
    return _latency_result(doc, direction, "end_to_end", p.rate)


def fanout(p: Params) -> dict[str, Any]:
    """``perf consume`` with N subscriptions from the earliest position while ``perf produce`` runs."""
    cmd = [*PERF, "consume", "-u", p.address, "--json", "-m", str(p.count * p.subscriptions), "-sp", "Earliest",
           "-ss", "fan", "-ns", str(p.subscriptions), p.topic]
    consumer = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    fill = _fill(p)
    try:
        out, _ = consumer.communicate(timeout=FANOUT_WAIT_S)
    except subprocess.TimeoutExpired:
        consumer.kill()
        consumer.communicate()
        raise RuntimeError(f"fan-out: the consumers were still short of {p.count} messages per subscription "
                           f"{FANOUT_WAIT_S} s after the fill (a stall: benchmarks/README.md)") from None
    doc = json.loads(out)
    # perf's own clock (subscribed -> last message): the other drivers subscribe before their clock too,
    # and timing this process from outside would count an interpreter's start-up
    consumed = doc.get("consumed", {})
    expected = p.count * p.subscriptions
    if consumed.get("messages", 0) < expected:  # perf stopped early (e.g. a stalled run ended by the timeout)
        raise RuntimeError(f"fan-out consumed {consumed.get('messages', 0)} of {expected} messages")
    # perf's count is over all subscriptions: duplicates on one would hide a stall on another
    fewest, most = doc.get("fewest_per_subscription", p.count), doc.get("most_per_subscription", p.count)
    if fewest < p.count or most > p.count:
        raise RuntimeError(f"fan-out: per subscription {fewest} to {most} messages received of {p.count} (the broker "
                           "stopped delivering to one, or delivered some twice: benchmarks/README.md)")
    return throughput(consumed.get("messages", 0), consumed.get("messages", 0) / consumed["msg_per_s"]
                      if consumed.get("msg_per_s") else 0.0,
                      produce_msg_per_s=fill.get("produced", {}).get("msg_per_s", 0.0),
                      commands=[fill["cmd"], " ".join(cmd[2:])])


def topics(p: Params) -> dict[str, Any]:
    """``perf produce --num-topics N``."""
    return _rate_of(_fill(p, "--num-topics", str(p.topics)), "produced")


def sync(p: Params) -> dict[str, Any]:
    """One-at-a-time sends: no batching, one message awaiting its receipt."""
    doc = perf("produce", p, "-db", "-o", "1", "-r", "0", "-m", str(p.count), "-t", str(p.duration_s),
               "-s", str(p.size))
    return _latency_result(doc, "produced", "publish", 0)
