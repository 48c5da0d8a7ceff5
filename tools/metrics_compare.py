"""/metrics of magnetar against Apache Pulsar's: the per-topic sample names and label sets, and the values.

One scenario runs with the official Python client against a fresh magnetar and against Apache Pulsar
standalone (`make reference`'s build in /tmp/magnetar-pulsar-reference/lib, started by
tools/pulsar_reference.py's PulsarStandalone): topic ``metrics-compare``, subscription ``s1`` (Exclusive),
a producer without batching sends 3 x 100 B and 2 x 3 KiB, ``s1`` receives and acknowledges the 5. Pulsar
is scraped 65 s later (its storage histograms show the last ``managedLedgerStatsPeriodSeconds`` period,
0 until the first one ends), magnetar 1 s later. Prints the names only one side has, the names whose label
sets differ, and the values that differ (latencies and rates differ by nature: timing).

usage: python tools/metrics_compare.py [--only magnetar|pulsar|none] [--work /tmp/magnetar-metrics-compare]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from stats_compare import log, run_asked, side_arguments, start_broker  # noqa: E402

TOPIC = "persistent://public/default/metrics-compare"
#: seconds between the publishes and the scrape, by side
SCRAPE_AFTER = {"pulsar": 65.0, "magnetar": 1.0}


def run_scenario(service_url: str, http_url: str, wait: float) -> bytes:
    """The publishes and acknowledgments, then the scrape ``wait`` seconds later."""
    import pulsar

    client = pulsar.Client(service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe(TOPIC, "s1")
        producer = client.create_producer(TOPIC, batching_enabled=False)
        for payload in [b"x" * 100] * 3 + [b"y" * 3072] * 2:
            producer.send(payload)
        for _ in range(5):
            consumer.acknowledge(consumer.receive(10_000))
        time.sleep(wait)
        with urllib.request.urlopen(http_url + "/metrics/", timeout=30) as resp:
            return resp.read()
    finally:
        client.close()


def run_side(work: Path, label: str, pulsar_lib: Path) -> None:
    """Run the scenario on one broker; its scrape into WORK/metrics-LABEL.txt."""
    broker = start_broker(work, label, pulsar_lib)
    try:
        log(f"scenario on {label}")
        (work / f"metrics-{label}.txt").write_bytes(run_scenario(broker.service_url, broker.http_url, SCRAPE_AFTER[label]))
    finally:
        broker.stop()


def topic_samples(text: str) -> dict[str, tuple[tuple[str, ...], float]]:
    """The first sample of each name labelled with the scenario's topic: its label names and value."""
    out: dict[str, tuple[tuple[str, ...], float]] = {}
    for line in text.splitlines():
        if line.startswith("#") or f'topic="{TOPIC}"' not in line:
            continue
        name, rest = line.split("{", 1)
        labels, value = rest.rsplit("}", 1)
        keys = tuple(sorted(re.findall(r'(\w+)="', labels)))
        out.setdefault(name, (keys, float(value.split()[0])))
    return out


def main(argv: list[str]) -> int:
    """Run the scenario where asked, then print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    side_arguments(parser, "/tmp/magnetar-metrics-compare")
    work = run_asked(parser.parse_args(argv), run_side)
    pulsar = topic_samples((work / "metrics-pulsar.txt").read_text())
    magnetar = topic_samples((work / "metrics-magnetar.txt").read_text())
    same = [n for n in pulsar if n in magnetar and pulsar[n][0] == magnetar[n][0]]
    print(f"Pulsar's per-topic names: {len(pulsar)}; the same name and labels on magnetar: {len(same)}")
    for name in sorted(set(pulsar) - set(magnetar)):
        print(f"Pulsar's only: {name} {pulsar[name][0]}")
    for name in sorted(set(magnetar) - set(pulsar)):
        print(f"magnetar's only: {name} {magnetar[name][0]}")
    for name in sorted(set(pulsar) & set(magnetar)):
        if pulsar[name][0] != magnetar[name][0]:
            print(f"labels differ: {name} Pulsar {pulsar[name][0]} magnetar {magnetar[name][0]}")
        elif pulsar[name][1] != magnetar[name][1]:
            print(f"value differs: {name} Pulsar {pulsar[name][1]:g} magnetar {magnetar[name][1]:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
