"""Replicated subscriptions between magnetar (cluster ``edge``) and an Apache Pulsar standalone
(cluster ``core``), a namespace replicated both ways: a subscription created with
``replicate_subscription_state`` on both, messages produced on one side, the first ones consumed
and acknowledged there, then a consumer on the other side must receive exactly the rest. Both
directions: Pulsar's snapshots answered by magnetar and Pulsar's update applied by magnetar, then
magnetar's snapshots answered by Pulsar and magnetar's update applied by Pulsar. The results table
goes into docs/SCALE-OUT.md. Heavy (a JVM broker): not in CI; ``make replicated-subscriptions-reference``.

usage: python tools/replicated_subscriptions_reference.py [--work DIR] [--pulsar-url pulsar://.. --pulsar-http http://..]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pulsar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
# the brokers started here (child processes) run this checkout's magnetar too
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))

import pulsar_reference  # noqa: E402
from reference_table import write_marked_block  # noqa: E402
from scale_out_reference import client, wait  # noqa: E402
from tests.broker.replication.rest import rest  # noqa: E402

from magnetar.testing import BrokerProcess  # noqa: E402

DOC = ROOT / "docs" / "SCALE-OUT.md"
BEGIN, END = "<!-- replicated-subscriptions-reference:begin -->", "<!-- replicated-subscriptions-reference:end -->"
NS = "rsubs/ns"
#: longer than a snapshot's round trip (one is attempted every second)
SNAPSHOT_WAIT_S = 5.0


def set_up(edge: BrokerProcess, core_url: str, core_http: str, core: str) -> None:
    """Each cluster registered on the other, ``rsubs/ns`` replicated both ways."""
    rest(edge.http_url, "PUT", f"/admin/v2/clusters/{core}", {"serviceUrl": core_http, "brokerServiceUrl": core_url})
    edge_data = {"serviceUrl": edge.http_url, "brokerServiceUrl": edge.service_url}
    if rest(core_http, "PUT", "/admin/v2/clusters/edge", edge_data)[0] == 409:
        rest(core_http, "POST", "/admin/v2/clusters/edge", edge_data)
    for http in (edge.http_url, core_http):
        rest(http, "PUT", "/admin/v2/tenants/rsubs", {"adminRoles": [], "allowedClusters": [core, "edge"]})
        rest(http, "PUT", f"/admin/v2/namespaces/{NS}")
        rest(http, "POST", f"/admin/v2/namespaces/{NS}/replication", [core, "edge"])


def drain(url: str, topic: str) -> list[str]:
    """What subscription ``orders`` delivers now, acknowledging nothing."""
    c = client(url)
    try:
        consumer = c.subscribe(topic, "orders", replicate_subscription_state_enabled=True)
        out: list[str] = []
        with contextlib.suppress(pulsar.Timeout):
            while True:
                out.append(consumer.receive(timeout_millis=3000).data().decode())
        return out
    finally:
        c.close()


def stored(http: str, topic: str, count: int) -> bool:
    """Whether ``count`` messages (or more: markers count too) reached a topic."""
    def check() -> bool:
        stats = rest(http, "GET", f"/admin/v2/persistent/{topic.removeprefix('persistent://')}/stats")[1] or {}
        return stats.get("msgInCounter", 0) >= count

    return wait(check, 120)


def one_direction(acking: tuple[str, str], other: tuple[str, str], topic: str) -> tuple[str, list[str]]:
    """Produce 60 + 40 on the acknowledging side, acknowledge 60 there; what the other side delivers."""
    for url, _ in (other, acking):
        c = client(url)
        for attempt in range(3):  # a loaded Pulsar may time out the first lookup of a new topic
            try:
                c.subscribe(topic, "orders", initial_position=pulsar.InitialPosition.Earliest,
                            replicate_subscription_state_enabled=True).close()
                break
            except pulsar.Timeout:
                if attempt == 2:
                    raise
        c.close()
    c = client(acking[0])
    try:
        producer = c.create_producer(topic, batching_enabled=False)
        for i in range(60):
            producer.send(f"m-{i}".encode())
        stored(other[1], topic, 60)
        time.sleep(SNAPSHOT_WAIT_S)
        for i in range(60, 100):
            producer.send(f"m-{i}".encode())
        stored(other[1], topic, 100)
        time.sleep(SNAPSHOT_WAIT_S)
        consumer = c.subscribe(topic, "orders", replicate_subscription_state_enabled=True)
        got = [consumer.receive(timeout_millis=30_000) for _ in range(60)]
        for m in got:
            consumer.acknowledge(m)
        first = [m.data().decode() for m in got]
        time.sleep(SNAPSHOT_WAIT_S)
        consumer.close()
    finally:
        c.close()
    expected = [f"m-{i}" for i in range(60, 100)]
    rest_of = drain(other[0], topic)
    deadline = time.monotonic() + 60
    while rest_of != expected and time.monotonic() < deadline:
        time.sleep(2)
        rest_of = drain(other[0], topic)
    return ("ok" if first == [f"m-{i}" for i in range(60)] else "FAILED (first 60)"), rest_of


def write_table(rows: list[tuple[str, str]], version: str, core: str) -> None:
    """The results table, between its markers in docs/SCALE-OUT.md."""
    lines = [BEGIN, f"Run by `tools/replicated_subscriptions_reference.py` on "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} against Apache Pulsar {version} standalone "
             f"(cluster `{core}`) and magnetar (cluster `edge`), one machine, a namespace replicated both ways.", "",
             "| check | result |", "|---|---|", *(f"| {check} | {result} |" for check, result in rows), END]
    write_marked_block(DOC, BEGIN, END, lines, "Replicated subscriptions against Apache Pulsar")


def main(argv: list[str]) -> int:
    """Start (or use) Pulsar and a magnetar broker, run both directions, write the table."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", type=Path, default=Path("/tmp/magnetar-pulsar-reference"))
    p.add_argument("--pulsar-url")
    p.add_argument("--pulsar-http")
    p.add_argument("--pulsar-cluster", default="core", help="the running Pulsar's clusterName")
    args = p.parse_args(argv)
    standalone = None
    if args.pulsar_url:
        core_url, core_http = args.pulsar_url, args.pulsar_http
        jar = next((args.work / "lib").glob("pulsar-broker-[0-9]*.jar"), None)
        version = jar.stem.removeprefix("pulsar-broker-") if jar is not None else "?"
    else:
        lib = pulsar_reference.assemble(args.work)
        pulsar_reference.PULSAR_SETTINGS["clusterName"] = "core"
        home = args.work / "rsubs-pulsar"
        shutil.rmtree(home, ignore_errors=True)
        standalone = pulsar_reference.PulsarStandalone(lib, home)
        standalone.start(timeout=600)  # a loaded machine
        core_url, core_http, version = standalone.service_url, standalone.http_url, standalone.version()
    base = Path(tempfile.mkdtemp(prefix="magnetar-rsubs-"))
    (base / "edge").mkdir()
    edge = BrokerProcess(base / "edge" / "data", env={"MAGNETAR_CLUSTER_NAME": "edge"}).start(timeout=90)
    rows: list[tuple[str, str]] = []
    expected = [f"m-{i}" for i in range(60, 100)]
    run = time.strftime("%H%M%S")
    try:
        set_up(edge, core_url, core_http, args.pulsar_cluster)
        for label, acking, other, topic in (
            ("acknowledged on Pulsar, failover consumer on magnetar", (core_url, core_http),
             (edge.service_url, edge.http_url), f"persistent://{NS}/from-core-{run}"),
            ("acknowledged on magnetar, failover consumer on Pulsar", (edge.service_url, edge.http_url),
             (core_url, core_http), f"persistent://{NS}/from-edge-{run}"),
        ):
            first, got = one_direction(acking, other, topic)
            verdict = "ok" if first == "ok" and got == expected else "FAILED"
            rows.append((f"{label}: 100 produced, m-0..m-59 acknowledged, the other side delivers m-60..m-99",
                         f"{verdict} ({len(got)} delivered: {got[:1] + ['...'] + got[-1:] if got else []})"))
    finally:
        edge.stop()
        if standalone is not None:
            standalone.stop()
    for check, result in rows:
        print(f"{result}  {check}")
    write_table(rows, version, args.pulsar_cluster)
    return 0 if all(r.startswith("ok") for _, r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
