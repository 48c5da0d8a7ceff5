"""magnetar <-> Apache Pulsar geo-replication, checked against a real Apache Pulsar standalone
(assembled from Maven Central by tools/pulsar_reference.py), with the results table written into
docs/SCALE-OUT.md. Heavy (a JVM broker): not in CI; ``make scale-out-reference``.

magnetar -> Pulsar (the move of docs/SCALE-OUT.md, by tools/scale_out.py): a magnetar broker of
cluster ``edge`` holds a namespace with messages from two producers (keys, properties, event times),
an Avro topic and a partitioned topic, stored before replication is set up; the script moves it to
Pulsar's cluster ``core``; every message must arrive once with its key, properties, event time and
order per producer and per key, the schema and the partition count too; then a producer writes to
Pulsar directly (the switch) and nothing comes back to magnetar. Throughput: N messages replicated
edge -> core against N produced straight to Pulsar.

Pulsar -> magnetar: a Pulsar namespace replicated to ``core`` and ``edge`` (magnetar registered on
Pulsar as a cluster): what is produced on Pulsar arrives on magnetar, exactly.

usage: python tools/scale_out_reference.py [--work DIR] [--pulsar-url pulsar://.. --pulsar-http http://..]
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pulsar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import pulsar_reference  # noqa: E402
from reference_table import write_marked_block  # noqa: E402
from tests.broker.replication.rest import rest  # noqa: E402

from magnetar.testing import BrokerProcess  # noqa: E402

DOC = ROOT / "docs" / "SCALE-OUT.md"
BEGIN, END = "<!-- scale-out-reference:begin -->", "<!-- scale-out-reference:end -->"
QUIET = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)


class Reading(pulsar.schema.Record):
    """The Avro record of the schema check."""

    sensor = pulsar.schema.String()
    value = pulsar.schema.Double()


def client(url: str) -> pulsar.Client:
    """An official client with quiet logs."""
    return pulsar.Client(url, operation_timeout_seconds=30, logger=QUIET)


def read(url: str, topic: str, expected: int, schema: object = None, timeout: float = 120.0) -> list:
    """Every message of a topic from the start (and one more read, which must time out); with a
    ``schema``, the decoded values."""
    c = client(url)
    try:
        options = {"schema": schema} if schema is not None else {}
        consumer = c.subscribe(topic, f"check-{time.monotonic_ns()}", initial_position=pulsar.InitialPosition.Earliest,
                               **options)
        out: list[pulsar.Message] = []
        deadline = time.monotonic() + timeout
        while len(out) < expected and time.monotonic() < deadline:
            with contextlib.suppress(pulsar.Timeout):
                out.append(consumer.receive(timeout_millis=2000))
        with contextlib.suppress(pulsar.Timeout):
            out.append(consumer.receive(timeout_millis=3000))
        return [m.value() for m in out] if schema is not None else out
    finally:
        c.close()


def produce_events(url: str, topic: str, producer_name: str, count: int) -> None:
    """``count`` messages with keys k0..k9, a property and an event time, batched."""
    c = client(url)
    p = c.create_producer(topic, producer_name=producer_name, batching_enabled=True, block_if_queue_full=True)
    for i in range(count):
        p.send_async(f"{producer_name}-{i}".encode(), None, partition_key=f"k{i % 10}",
                     properties={"i": str(i)}, event_timestamp=1_700_000_000_000 + i)
    p.flush()
    c.close()


def events_ok(messages: list[pulsar.Message], producers: dict[str, int], partitioned: bool = False) -> bool:
    """Each message once, its key, property and event time intact, in order per key and (unless the
    topic is partitioned: a producer's messages are spread over the partitions) per producer."""
    expected = sum(producers.values())
    if len(messages) != expected:
        return False
    per_producer: dict[str, list[int]] = {}
    per_key: dict[str, list[tuple[str, int]]] = {}
    for m in messages:
        name, _, number = m.data().decode().rpartition("-")
        i = int(number)
        if m.partition_key() != f"k{i % 10}" or m.properties() != {"i": str(i)}:
            return False
        if m.event_timestamp() != 1_700_000_000_000 + i:
            return False
        per_producer.setdefault(name, []).append(i)
        per_key.setdefault(m.partition_key(), []).append((name, i))
    in_order = all(v == sorted(v) for v in per_key.values())
    if partitioned:
        per_producer = {name: sorted(numbers) for name, numbers in per_producer.items()}
    return in_order and per_producer == {name: list(range(n)) for name, n in producers.items()}


def wait(check: Callable[[], bool], timeout: float = 180.0) -> bool:
    """Poll until ``check`` holds (False on timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.5)
    return False


def to_pulsar(edge: BrokerProcess, core_url: str, core_http: str, rows: list[tuple[str, str]], count: int) -> None:
    """The move magnetar -> Pulsar, checked."""
    ns = "move/ns"
    rest(edge.http_url, "PUT", "/admin/v2/tenants/move", {"adminRoles": [], "allowedClusters": ["edge"]})
    rest(edge.http_url, "PUT", f"/admin/v2/namespaces/{ns}")
    rest(edge.http_url, "PUT", f"/admin/v2/persistent/{ns}/parts/partitions", 3)
    produce_events(edge.service_url, f"persistent://{ns}/events", "p1", 500)
    produce_events(edge.service_url, f"persistent://{ns}/events", "p2", 500)
    produce_events(edge.service_url, f"persistent://{ns}/parts", "pp", 300)
    c = client(edge.service_url)
    avro = c.create_producer(f"persistent://{ns}/avro", schema=pulsar.schema.AvroSchema(Reading))
    for i in range(50):
        avro.send(Reading(sensor=f"s{i}", value=i / 4))
    c.close()
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "scale_out.py"), "--magnetar-http", edge.http_url, "--magnetar-cluster",
         "edge", "--target-cluster", "core", "--target-http", core_http, "--target-broker", core_url,
         "--namespace", ns, "--timeout", "300"], capture_output=True, text=True, timeout=400, check=False)
    rows.append(("tools/scale_out.py edge -> core (stored before replication was set)",
                 f"exit {done.returncode} in {time.monotonic() - started:.0f} s"))
    if done.returncode != 0:
        print(done.stdout, done.stderr)
        return
    events = read(core_url, f"persistent://{ns}/events", 1000)
    rows.append(("1,000 messages, 2 producers: once each, key, properties, event time, order per producer and key",
                 f"{'ok' if events_ok(events, {'p1': 500, 'p2': 500}) else 'FAILED'} ({len(events)} read)"))
    parts = rest(core_http, "GET", f"/admin/v2/persistent/{ns}/parts/partitions")[1]
    got = read(core_url, f"persistent://{ns}/parts", 300)
    rows.append(("partitioned topic (3 partitions) created on Pulsar, 300 messages",
                 f"{parts}, {'ok' if events_ok(got, {'pp': 300}, partitioned=True) else 'FAILED'} ({len(got)} read)"))
    schema = rest(core_http, "GET", f"/admin/v2/schemas/{ns}/avro/schema")[1] or {}
    records = read(core_url, f"persistent://{ns}/avro", 50, schema=pulsar.schema.AvroSchema(Reading))
    same = [(r.sensor, r.value) for r in records] == [(f"s{i}", i / 4) for i in range(50)]
    rows.append(("Avro topic: schema registered on Pulsar, 50 records decoded", f"{schema.get('type')}, {'ok' if same else 'FAILED'}"))
    produce_events(core_url, f"persistent://{ns}/events", "p1-after", 100)  # the producers switched
    time.sleep(3)
    back = rest(edge.http_url, "GET", f"/admin/v2/persistent/{ns}/events/stats")[1]["msgInCounter"]
    rows.append(("after the switch, messages produced on Pulsar do not come back to magnetar",
                 "ok" if back == 1000 else f"FAILED ({back} on magnetar)"))
    throughput(edge, core_url, core_http, rows, count)


def throughput(edge: BrokerProcess, core_url: str, core_http: str, rows: list[tuple[str, str]], count: int) -> None:
    """N messages replicated edge -> core against N produced straight to Pulsar (100 B, batched)."""
    c = client(core_url)
    p = c.create_producer("persistent://move/ns/plain", batching_enabled=True, block_if_queue_full=True)
    started = time.perf_counter()
    for _ in range(count):
        p.send_async(b"x" * 100, None)
    p.flush()
    plain = count / (time.perf_counter() - started)
    c.close()
    c = client(edge.service_url)
    p = c.create_producer("persistent://move/ns/bulk", batching_enabled=True, block_if_queue_full=True)
    for _ in range(count):
        p.send_async(b"x" * 100, None)
    p.flush()
    c.close()
    started = time.perf_counter()

    def drained() -> bool:
        stats = rest(edge.http_url, "GET", "/admin/v2/persistent/move/ns/bulk/stats")[1]
        return stats.get("replication", {}).get("core", {}).get("replicationBacklog") == 0

    ok = wait(drained)
    rate = count / (time.perf_counter() - started)
    rows.append((f"throughput, {count:,} x 100 B batched: produced straight to Pulsar", f"{plain:,.0f} msg/s"))
    rows.append((f"throughput, {count:,} x 100 B batched: replicated magnetar -> Pulsar (from topic load to backlog 0)",
                 f"{rate:,.0f} msg/s" if ok else "FAILED (backlog not drained)"))


def from_pulsar(edge: BrokerProcess, core_url: str, core_http: str, rows: list[tuple[str, str]]) -> None:
    """Pulsar -> magnetar: magnetar registered on Pulsar as cluster edge, a namespace replicated to it."""
    ns = "core2edge/ns"
    edge_data = {"serviceUrl": edge.http_url, "brokerServiceUrl": edge.service_url}
    if rest(core_http, "PUT", "/admin/v2/clusters/edge", edge_data)[0] == 409:
        rest(core_http, "POST", "/admin/v2/clusters/edge", edge_data)
    rest(core_http, "PUT", "/admin/v2/tenants/core2edge", {"adminRoles": [], "allowedClusters": ["core", "edge"]})
    rest(core_http, "PUT", f"/admin/v2/namespaces/{ns}")
    rest(core_http, "POST", f"/admin/v2/namespaces/{ns}/replication", ["core", "edge"])
    rest(edge.http_url, "PUT", "/admin/v2/tenants/core2edge", {"adminRoles": [], "allowedClusters": ["edge"]})
    rest(edge.http_url, "PUT", f"/admin/v2/namespaces/{ns}")
    produce_events(core_url, f"persistent://{ns}/in", "pulsar-producer", 300)
    got = read(edge.service_url, f"persistent://{ns}/in", 300)
    stats = rest(edge.http_url, "GET", f"/admin/v2/persistent/{ns}/in/stats")[1] or {}
    inbound = stats.get("replication", {}).get("core", {}).get("msgInCount")
    rows.append(("Pulsar -> magnetar: 300 messages produced on Pulsar arrive on magnetar (Pulsar's replicator)",
                 f"{'ok' if events_ok(got, {'pulsar-producer': 300}) else 'FAILED'} ({len(got)} read, "
                 f"replication.core.msgInCount {inbound})"))


def write_table(rows: list[tuple[str, str]], version: str) -> None:
    """The results table, between its markers in docs/SCALE-OUT.md."""
    lines = [BEGIN, f"Run by `tools/scale_out_reference.py` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} "
             f"against Apache Pulsar {version} standalone (cluster `core`) and magnetar (cluster `edge`), one machine.", "",
             "| check | result |", "|---|---|", *(f"| {check} | {result} |" for check, result in rows), END]
    write_marked_block(DOC, BEGIN, END, lines, "Results against Apache Pulsar")


def main(argv: list[str]) -> int:
    """Start (or use) Pulsar and a magnetar broker, run the checks, write the table."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", type=Path, default=Path("/tmp/magnetar-pulsar-reference"))
    p.add_argument("--pulsar-url", help="a running Pulsar standalone of cluster core (else one is started)")
    p.add_argument("--pulsar-http")
    p.add_argument("--count", type=int, default=20_000)
    args = p.parse_args(argv)
    standalone = None
    version = "?"
    if args.pulsar_url:
        core_url, core_http = args.pulsar_url, args.pulsar_http
        jar = next((args.work / "lib").glob("pulsar-broker-[0-9]*.jar"), None)
        version = jar.stem.removeprefix("pulsar-broker-") if jar is not None else "?"
    else:
        lib = pulsar_reference.assemble(args.work)
        pulsar_reference.PULSAR_SETTINGS["clusterName"] = "core"
        home = args.work / "scale-out-pulsar"
        shutil.rmtree(home, ignore_errors=True)  # a fresh cluster: a previous run's topics would be found there
        standalone = pulsar_reference.PulsarStandalone(lib, home)
        standalone.start()
        core_url, core_http, version = standalone.service_url, standalone.http_url, standalone.version()
    base = Path(tempfile.mkdtemp(prefix="magnetar-scale-out-"))
    (base / "edge").mkdir()
    edge = BrokerProcess(base / "edge" / "data", env={"MAGNETAR_CLUSTER_NAME": "edge",
                                                      "MAGNETAR_REPLICATION_START_AT": "earliest"}).start()
    rows: list[tuple[str, str]] = []
    try:
        to_pulsar(edge, core_url, core_http, rows, args.count)
        from_pulsar(edge, core_url, core_http, rows)
    finally:
        edge.stop()
        if standalone is not None:
            standalone.stop()
    for check, result in rows:
        print(f"{result:>40}  {check}")
    write_table(rows, version)
    return 0 if all("FAILED" not in r for _, r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
