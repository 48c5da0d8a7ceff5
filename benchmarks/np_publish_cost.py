"""CPU per message of a non-persistent topic's publish (``NonPersistentTopic.publish``), in process:
one producer, one subscription whose consumer always has permits, a message of 100 bytes; the
thread's CPU time over ``--count`` publishes, best of ``--repeat``. Run it against several trees in
alternating rounds (each a subprocess with its PYTHONPATH) to see what a change costs the hot path.

With ``--replicated`` the topic replicates to one remote whose producer takes every SEND without
sending it anywhere: the cost of reading, rewriting and offering each message (Pulsar's
NonPersistentReplicator path), without the socket.

usage: python benchmarks/np_publish_cost.py [--count 200000] [--repeat 5] [--rounds 3] [--replicated]
       NAME=PYTHONPATH ...   (without trees: one measurement of the tree imported)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


class _Context:
    """A publish context that only counts its receipts."""

    num_messages = 1
    done = 0

    def completed(self, ledger_id: int, entry_id: int) -> None:
        _Context.done += 1


class _Session:
    """A session that takes every MESSAGE and producer notice without doing anything."""

    peer = "127.0.0.1:1"
    client_version = "bench"
    writable = True

    def send_message(self, *args: object) -> None:
        pass

    def producer_ready(self, producer_id: int) -> None:
        pass

    def send_active_consumer_change(self, consumer_id: int, active: bool) -> None:
        pass


class _Outbound:
    """A remote producer that takes every SEND and forgets it."""

    closed = False
    in_flight = 0

    def send(self, *args: object) -> None:
        pass


def replicate(topic: object) -> None:
    """Make ``topic`` replicate to one remote through an :class:`_Outbound` producer."""
    from magnetar.broker.replication.credentials import ClientCredentials
    from magnetar.broker.replication.link import RemoteCluster
    from magnetar.broker.replication.live import LiveReplication, NonPersistentReplicator

    replicator = NonPersistentReplicator(topic, "east", RemoteCluster("west", "pulsar://x:1", "", ClientCredentials()),  # type: ignore[arg-type]
                                         1000)
    replicator.producer = _Outbound()  # type: ignore[assignment]
    topic.replication = LiveReplication("east", {"west": replicator})  # type: ignore[attr-defined]


def measure(count: int, repeat: int, replicated: bool = False) -> float:
    """Best CPU microseconds per publish of ``repeat`` runs of ``count``."""
    from magnetar.broker.config import BrokerConfig
    from magnetar.broker.subscriptions.consumer import Consumer
    from magnetar.broker.topics.nonpersistent import NonPersistentTopic
    from magnetar.broker.topics.producer import Producer
    from magnetar.protocol.enums import InitialPosition, ProducerAccessMode, SubType
    from magnetar.protocol.topic_name import TopicName

    with tempfile.TemporaryDirectory() as data:
        topic = NonPersistentTopic(TopicName.parse("non-persistent://public/default/bench"), 1 << 40,
                                   config=BrokerConfig(data_dir=Path(data)), producer_name_prefix="bench")
        producer = Producer(_Session(), 1, "p", topic, ProducerAccessMode.Shared, True)  # type: ignore[arg-type]
        topic.add_producer(producer)
        if replicated:
            replicate(topic)
        sub = topic.subscribe("s", durable=False, initial_position=InitialPosition.Latest, start_message_id=None)
        consumer = Consumer(_Session(), 7, "c", sub, SubType.Exclusive)  # type: ignore[arg-type]
        sub.add_consumer(consumer)
        entry = _entry()
        context = _Context()
        best = float("inf")
        for _ in range(repeat):
            sub.flow(consumer, count)
            start = time.thread_time()
            for _ in range(count):
                topic.publish(producer, entry, 0, context)  # type: ignore[arg-type]
            best = min(best, time.thread_time() - start)
        return best / count * 1e6


def _entry() -> bytes:
    """A 100-byte message with its metadata, as a producer sends it."""
    from magnetar.protocol.schema import MessageMetadata

    meta = MessageMetadata(producer_name="p", sequence_id=1, publish_time=int(time.time() * 1000)).SerializeToString()
    return len(meta).to_bytes(4, "big") + meta + b"x" * 100


def main() -> None:
    """Measure this tree, or several trees in alternating rounds."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="*", help="NAME=PYTHONPATH")
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--replicated", action="store_true")
    args = parser.parse_args()
    if not args.trees:
        print(json.dumps({"us_per_publish": measure(args.count, args.repeat, args.replicated)}))
        return
    results: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for tree in args.trees:
            name, path = tree.split("=", 1)
            extra = ["--replicated"] if args.replicated else []
            out = subprocess.run([sys.executable, __file__, "--count", str(args.count), "--repeat", str(args.repeat),
                                  *extra],
                                 env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True, check=True)
            results.setdefault(name, []).append(json.loads(out.stdout)["us_per_publish"])
    load = os.getloadavg()
    print(json.dumps({"load": [round(x, 2) for x in load], "rounds": results,
                      "median_us_per_publish": {n: round(statistics.median(v), 3) for n, v in results.items()}}, indent=1))


if __name__ == "__main__":
    main()
