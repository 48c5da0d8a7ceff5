"""Topic and subscription stats of magnetar against Apache Pulsar's, field by field.

One scenario runs with the official Python client against a fresh magnetar and against Apache Pulsar
standalone (`make reference`'s build in /tmp/magnetar-pulsar-reference/lib, started once by
tools/pulsar_reference.py's PulsarStandalone, stopped after):

- topic ``stats-compare``: subscriptions ``ex`` (Exclusive) and ``sh`` (Shared) made first; a batching
  producer sends 10 x 100 B (2 batches of 5), a plain one 5 x 100 B (5 entries);
- ``ex`` receives all 15 and acknowledges the first 8 one by one; ``sh`` receives all 15, acknowledges
  3, negatively acknowledges the 11th (the first plain one) and receives it again; a reader reads 4;
  ``sh`` has the properties ``{"owner": "stats-compare"}`` (update-subscription-properties) and ``ex``
  its state replicated (replicatedSubscriptionStatus, no remote cluster);
- partitioned topic ``stats-compare-p`` (2 partitions): subscription ``psub`` (Shared), 6 x 100 B
  unbatched (round robin: 3 in each partition), 6 received, the 3 of partition 0 acknowledged;
- with every consumer still connected: ``stats``, ``internalStats`` and ``partitioned-stats``
  (``perPartition``) of both topics.

Each answer is flattened to ``path -> value`` (consumers sorted by subscription, publishers by name) and
compared: counters (integers, booleans, words) exactly; rates only present / absent (Pulsar computes
them every ``statsUpdateFrequencyInSecs``); timestamps as zero / set; addresses, names, versions and
ledger ids as their type. Prints the differing rows; ``--markdown`` prints every row as a table.

usage: python tools/stats_compare.py [--only magnetar] [--work /tmp/magnetar-stats-compare] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

TOPIC = "persistent://public/default/stats-compare"
PARTITIONED = "persistent://public/default/stats-compare-p"
PAYLOAD = b"x" * 100
#: field names whose values are rates: compared by presence only
_RATE = re.compile(r"(Rate|Throughput)(In|Out|Redeliver|Expired)?$|^averageMsgSize$")
#: timestamps and dates: zero / empty against set
_TIME = re.compile(r"(Timestamp|TimeStamp|TimeInBacklogs?|Since|Time)$")
#: values that name this run (addresses, versions, ids, broker names): their type only
_OPAQUE = {"address", "clientVersion", "consumerName", "producerName", "ownerBroker", "ledgerId",
           "lastConfirmedEntry", "markDeletePosition", "readPosition", "individuallyDeletedMessages",
           "cursorLedger", "cursorLedgerLastEntry", "producerId", "connectedSince", "activeConsumerName",
           "topicEpoch", "storageSize", "totalSize", "currentLedgerSize", "size", "backlogSize",
           "bytesInCounter", "bytesOutCounter", "msgThroughputIn", "msgThroughputOut"}


def log(message: str) -> None:
    """A progress line on stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _admin(http_url: str, method: str, path: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(http_url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as resp:
        text = resp.read()
    return json.loads(text) if text else None


def _rest(topic: str) -> str:
    return "/admin/v2/" + topic.replace("://", "/")


def _id(msg: Any) -> tuple[int, int, int]:
    mid = msg.message_id()
    return mid.ledger_id(), mid.entry_id(), mid.batch_index()


def run_scenario(service_url: str, http_url: str) -> dict[str, Any]:
    """The scenario above; the stats answers by name."""
    import pulsar  # the official client, as the tests' other reference runs

    _admin(http_url, "PUT", _rest(PARTITIONED) + "/partitions", 2)
    client = pulsar.Client(service_url, operation_timeout_seconds=30,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        ex = client.subscribe(TOPIC, "ex", consumer_type=pulsar.ConsumerType.Exclusive)
        sh = client.subscribe(TOPIC, "sh", consumer_type=pulsar.ConsumerType.Shared,
                              negative_ack_redelivery_delay_ms=200)
        psub = client.subscribe(PARTITIONED, "psub", consumer_type=pulsar.ConsumerType.Shared)
        # what the subscriptions keep besides positions: sh's properties, ex's state replicated
        _admin(http_url, "PUT", _rest(TOPIC) + "/subscription/sh/properties", {"owner": "stats-compare"})
        _admin(http_url, "POST", _rest(TOPIC) + "/subscription/ex/replicatedSubscriptionStatus", True)
        batched = client.create_producer(TOPIC, producer_name="p-batched", batching_enabled=True,
                                         batching_max_messages=5, batching_max_publish_delay_ms=1000)
        for _ in range(10):
            batched.send_async(PAYLOAD, None)
        batched.flush()
        plain = client.create_producer(TOPIC, producer_name="p-plain", batching_enabled=False)
        for _ in range(5):
            plain.send(PAYLOAD)
        received = [ex.receive(10_000) for _ in range(15)]
        for msg in received[:8]:
            ex.acknowledge(msg)
        shared = [sh.receive(10_000) for _ in range(15)]
        for msg in shared[:3]:
            sh.acknowledge(msg)
        sh.negative_acknowledge(shared[10])
        again = sh.receive(10_000)
        if _id(again) != _id(shared[10]):
            raise RuntimeError(f"redelivered {_id(again)}, not the nacked {_id(shared[10])}")
        reader = client.create_reader(TOPIC, pulsar.MessageId.earliest)
        for _ in range(4):
            reader.read_next(10_000)
        pproducer = client.create_producer(PARTITIONED, producer_name="p-part", batching_enabled=False)
        for _ in range(6):
            pproducer.send(PAYLOAD)
        parts = [psub.receive(10_000) for _ in range(6)]
        for msg in parts:  # round robin, unbatched: 3 in each partition; those of partition 0
            if msg.topic_name().endswith("-partition-0"):
                psub.acknowledge(msg)
        time.sleep(2.0)  # acknowledgements are grouped by the client (100 ms) and applied by the broker
        return {
            "stats": _admin(http_url, "GET", _rest(TOPIC) + "/stats"),
            "internalStats": _admin(http_url, "GET", _rest(TOPIC) + "/internalStats"),
            "partitioned-stats": _admin(http_url, "GET", _rest(PARTITIONED) + "/partitioned-stats?perPartition=true"),
            "partition-0 internalStats": _admin(http_url, "GET", _rest(PARTITIONED + "-partition-0") + "/internalStats"),
        }
    finally:
        client.close()


def _sort_key(item: Any) -> str:
    if isinstance(item, dict):
        return str(item.get("producerName") or item.get("consumerName") or item.get("ledgerId") or "")
    return str(item)


def flatten(value: Any, path: str = "") -> dict[str, Any]:
    """``path -> leaf value``; list items by their position after sorting by name; partition names
    reduced to ``-partition-N``."""
    out: dict[str, Any] = {}
    if isinstance(value, dict):
        if not value:
            out[path] = {}
        for key, item in value.items():
            key = re.sub(r"^persistent://.*(-partition-\d+)$", r"\1", key)
            key = re.sub(r"^reader-[0-9a-f]+$", "reader-*", key)
            out.update(flatten(item, f"{path}.{key}" if path else key))
    elif isinstance(value, list):
        if not value:
            out[path] = []
        for i, item in enumerate(sorted(value, key=_sort_key)):
            out.update(flatten(item, f"{path}[{i}]"))
    else:
        out[path] = value
    return out


def shape(path: str, value: Any) -> Any:
    """What of a leaf is compared (see the module's docstring)."""
    name = re.sub(r"\[\d+\]$", "", path.rsplit(".", 1)[-1])
    if name in _OPAQUE or path.endswith((".metadata", ".properties")) and isinstance(value, dict):
        return f"<{type(value).__name__}>" if value not in (None, "", {}) else value
    if _RATE.search(name):
        return "<rate>"
    if _TIME.search(name):
        return "<set>" if value not in (0, "", None) else value
    return value


def compare(pulsar: dict[str, Any], magnetar: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """Rows ``(path, Pulsar's, magnetar's, verdict)`` of every leaf of either answer."""
    rows = []
    fp, fm = flatten(pulsar), flatten(magnetar)
    for path in sorted(set(fp) | set(fm)):
        if path not in fm:
            rows.append((path, json.dumps(shape(path, fp[path])), "-", "only Pulsar"))
        elif path not in fp:
            rows.append((path, "-", json.dumps(shape(path, fm[path])), "only magnetar"))
        else:
            a, b = shape(path, fp[path]), shape(path, fm[path])
            rows.append((path, json.dumps(a), json.dumps(b), "same" if a == b else "differs"))
    return rows


def start_magnetar(work: Path):  # type: ignore[no-untyped-def]
    """A fresh magnetar (this tree's) on free ports."""
    from magnetar.testing import BrokerProcess

    data = work / "magnetar-data"
    subprocess.run(["rm", "-rf", str(data)], check=True)
    env = {"PYTHONPATH": str(REPO_ROOT / "src"), "MAGNETAR_FSYNC": "never"}
    return BrokerProcess(data, env=env).start(timeout=120)


def start_broker(work: Path, label: str, pulsar_lib: Path):  # type: ignore[no-untyped-def]
    """A fresh broker of one side ("magnetar": this tree's; "pulsar": Apache Pulsar standalone from
    ``pulsar_lib``), started, with its data under ``work``; tools/metrics_compare.py uses it too."""
    if label == "magnetar":
        return start_magnetar(work)
    from pulsar_reference import PulsarStandalone

    subprocess.run(["rm", "-rf", str(work / "pulsar")], check=True)
    broker = PulsarStandalone(pulsar_lib, work / "pulsar")
    log(f"starting Apache Pulsar standalone ({broker.http_url})")
    broker.start()
    return broker


def run_side(work: Path, label: str, pulsar_lib: Path) -> None:
    """Run the scenario on one broker; its answers into WORK/stats-LABEL.json."""
    broker = start_broker(work, label, pulsar_lib)
    try:
        log(f"scenario on {label}")
        answers = run_scenario(broker.service_url, broker.http_url)
    finally:
        broker.stop()
    (work / f"stats-{label}.json").write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")


def side_arguments(parser: argparse.ArgumentParser, work: str) -> None:
    """The options of which side to run and where (``work``: the default directory); tools/metrics_compare.py's too."""
    parser.add_argument("--work", type=Path, default=Path(work))
    parser.add_argument("--only", choices=("pulsar", "magnetar", "none"), help="run one side (or none), reuse the other's last run")
    parser.add_argument("--pulsar-lib", type=Path, default=Path("/tmp/magnetar-pulsar-reference/lib"))


def run_asked(args: argparse.Namespace, run: Callable[[Path, str, Path], None]) -> Path:
    """Run the sides ``args`` asks for with ``run`` (work directory, side, Pulsar's lib dir); the work directory."""
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    for label in ("pulsar", "magnetar"):
        if args.only in (None, label):
            run(work, label, args.pulsar_lib)
    return work


def main(argv: list[str]) -> int:
    """Run the scenario where asked, then print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    side_arguments(parser, "/tmp/magnetar-stats-compare")
    parser.add_argument("--markdown", action="store_true", help="every row, as a Markdown table")
    args = parser.parse_args(argv)
    work = run_asked(args, run_side)
    pulsar = json.loads((work / "stats-pulsar.json").read_text())
    magnetar = json.loads((work / "stats-magnetar.json").read_text())
    differing = 0
    if args.markdown:
        print("| answer | field | Pulsar | magnetar | verdict |\n| --- | --- | --- | --- | --- |")
    for answer in pulsar:
        for path, a, b, verdict in compare(pulsar[answer], magnetar.get(answer, {})):
            differing += verdict != "same"
            if args.markdown or verdict != "same":
                print(f"| {answer} | `{path}` | {a} | {b} | {verdict} |")
    log(f"{differing} rows differ")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
