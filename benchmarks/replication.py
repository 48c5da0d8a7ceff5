"""Geo-replication magnetar -> magnetar: throughput against a plain produce, and delay at a fixed rate.

Two broker processes (clusters east and west, fsync always, one machine). Figures:

- plain produce: N messages of 100 B, batched, from the official client straight to west (first send
  to flush), messages/s;
- replication: the same N produced to east while its namespace is not replicated, then replication
  to west switched on (replication_start_at = earliest): messages/s from the switch until east's
  replicationBacklog to west is 0 (west stores them as it receives them);
- delay: a producer on east at R messages/s (batched) for S seconds, a consumer on west; each
  message's delay is its receive time on west minus its publish time on east (one clock); p50, p99.

Bounded and short (defaults: N = 20,000, R = 1,000, S = 5). Results: benchmarks/results/replication.json.

usage: python benchmarks/replication.py [--count N] [--rate R] [--seconds S]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import pulsar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.broker.replication.rest import rest  # noqa: E402

from magnetar.testing import BrokerProcess  # noqa: E402

PAYLOAD = b"x" * 100


def start(base: Path, name: str) -> BrokerProcess:
    """A broker of cluster ``name`` whose new replication cursors start at the beginning."""
    (base / name).mkdir(parents=True)
    env = {"MAGNETAR_CLUSTER_NAME": name, "MAGNETAR_REPLICATION_START_AT": "earliest"}
    return BrokerProcess(base / name / "data", env=env).start()


def setup(brokers: dict[str, BrokerProcess], namespace: str) -> None:
    """Clusters registered everywhere, the namespace on each (not replicated yet)."""
    for here in brokers.values():
        for name, there in brokers.items():
            rest(here.http_url, "PUT", f"/admin/v2/clusters/{name}",
                 {"serviceUrl": there.http_url, "brokerServiceUrl": there.service_url})
        rest(here.http_url, "PUT", "/admin/v2/tenants/bench", {"adminRoles": [], "allowedClusters": sorted(brokers)})
        rest(here.http_url, "PUT", f"/admin/v2/namespaces/{namespace}")


def produce(url: str, topic: str, count: int) -> float:
    """Seconds to produce ``count`` batched messages of 100 B (first send to flush)."""
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=5,
                                      block_if_queue_full=True, max_pending_messages=10000)
    started = time.perf_counter()
    for _ in range(count):
        producer.send_async(PAYLOAD, None)
    producer.flush()
    elapsed = time.perf_counter() - started
    client.close()
    return elapsed


def backlog(broker: BrokerProcess, path: str, remote: str) -> int | None:
    """The replication backlog of a topic to ``remote`` (None before the replicator exists)."""
    status, stats = rest(broker.http_url, "GET", f"/admin/v2/persistent/{path}/stats")
    return stats.get("replication", {}).get(remote, {}).get("replicationBacklog") if status == 200 else None


def replication_rate(east: BrokerProcess, namespace: str, count: int) -> float:
    """Messages/s replicated east -> west of ``count`` messages stored before replication was switched on."""
    produce(east.service_url, f"persistent://{namespace}/backlog", count)
    started = time.perf_counter()
    rest(east.http_url, "POST", f"/admin/v2/namespaces/{namespace}/replication", ["east", "west"])
    while backlog(east, f"{namespace}/backlog", "west") != 0:
        time.sleep(0.05)
    return count / (time.perf_counter() - started)


def delays(east: BrokerProcess, west: BrokerProcess, namespace: str, rate: int, seconds: float) -> list[float]:
    """Per-message delay (ms) east -> west at ``rate`` messages/s for ``seconds``."""
    topic = f"persistent://{namespace}/delay"
    west_client = pulsar.Client(west.service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer = west_client.subscribe(topic, "bench")
    east_client = pulsar.Client(east.service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = east_client.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=1)
    total = int(rate * seconds)
    out: list[float] = []

    def receive() -> None:
        while len(out) < total:
            try:
                msg = consumer.receive(timeout_millis=10_000)
            except pulsar.Timeout:
                return
            out.append(time.time() * 1000 - msg.publish_timestamp())
            consumer.acknowledge(msg)

    reader = threading.Thread(target=receive)
    reader.start()
    started = time.perf_counter()
    for i in range(total):
        producer.send_async(PAYLOAD, None)
        pause = started + (i + 1) / rate - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
    producer.flush()
    reader.join(30)
    east_client.close()
    west_client.close()
    return out


def main(argv: list[str]) -> int:
    """Run the three measurements and write the results."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=20_000)
    p.add_argument("--rate", type=int, default=1_000)
    p.add_argument("--seconds", type=float, default=5.0)
    args = p.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="magnetar-replication-"))
    brokers = {name: start(base, name) for name in ("east", "west")}
    try:
        setup(brokers, "bench/plain")
        setup(brokers, "bench/repl")
        plain = args.count / produce(brokers["west"].service_url, "persistent://bench/plain/direct", args.count)
        replicated = replication_rate(brokers["east"], "bench/repl", args.count)
        got = delays(brokers["east"], brokers["west"], "bench/repl", args.rate, args.seconds)
        q = statistics.quantiles(got, n=100) if len(got) >= 2 else [float("nan")] * 99
        result = {
            "count": args.count, "payload_bytes": len(PAYLOAD), "plain_produce_msgs_per_s": round(plain),
            "replication_msgs_per_s": round(replicated), "delay_rate_msgs_per_s": args.rate,
            "delay_messages": len(got), "delay_p50_ms": round(q[49], 1), "delay_p99_ms": round(q[98], 1),
        }
    finally:
        for b in brokers.values():
            b.stop()
    print(json.dumps(result, indent=2))
    out = ROOT / "benchmarks" / "results" / "replication.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
