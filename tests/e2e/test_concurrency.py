"""Several producers and consumers at once on one topic: nothing lost, nothing doubled."""

from __future__ import annotations

import threading
import time

import pulsar

from .helpers import RECEIVE_MS


def test_many_producers_and_shared_consumers(
    client: pulsar.Client, client2: pulsar.Client, topic: str
) -> None:
    consumers = [
        client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=50),
        client2.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=50),
        client2.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=50),
    ]
    per_producer, producers = 400, 4
    expected = {f"p{p}-{i}".encode() for p in range(producers) for i in range(per_producer)}
    got: list[list[bytes]] = [[] for _ in consumers]
    stop = threading.Event()

    def consume(k: int) -> None:
        consumer = consumers[k]
        while not stop.is_set():
            try:
                msg = consumer.receive(timeout_millis=100)
            except pulsar.Timeout:
                continue
            got[k].append(msg.data())
            consumer.acknowledge(msg)

    def produce(p: int) -> None:
        # half the producers batch, the others do not
        producer = (client if p % 2 else client2).create_producer(topic, batching_enabled=bool(p % 2))
        for i in range(per_producer):
            producer.send_async(f"p{p}-{i}".encode(), None)
        producer.flush()

    threads = [threading.Thread(target=consume, args=(k,)) for k in range(len(consumers))]
    for t in threads:
        t.start()
    try:
        senders = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
        for t in senders:
            t.start()
        for t in senders:
            t.join(30)
        deadline = time.monotonic() + 20
        while sum(map(len, got)) < len(expected) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # anything extra (a duplicate) would show up now
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    everything = [m for part in got for m in part]
    assert len(everything) == len(expected)
    assert set(everything) == expected
    assert sum(1 for part in got if part) >= 2
    # per producer, each consumer sees that producer's messages in publish order
    for part in got:
        for p in range(producers):
            mine = [int(m.split(b"-")[1]) for m in part if m.startswith(f"p{p}-".encode())]
            assert mine == sorted(mine)


def test_shared_consumer_leaving_mid_stream_loses_nothing(
    client: pulsar.Client, client2: pulsar.Client, topic: str
) -> None:
    leaving = client.subscribe(
        topic, "sub", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=100
    )
    staying = client2.subscribe(
        topic, "sub", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=100
    )
    producer = client2.create_producer(topic)
    n = 1000
    for i in range(n):
        producer.send_async(f"m{i}".encode(), None)

    acked: set[bytes] = set()
    # the leaving consumer acknowledges some and leaves with more in flight
    for _ in range(100):
        msg = leaving.receive(timeout_millis=RECEIVE_MS)
        leaving.acknowledge(msg)
        acked.add(msg.data())
    leaving.close()
    producer.flush()

    deadline = time.monotonic() + 20
    while len(acked) < n and time.monotonic() < deadline:
        try:
            msg = staying.receive(timeout_millis=200)
        except pulsar.Timeout:
            continue
        assert msg.data() not in acked, f"{msg.data()!r} was acknowledged before and came back"
        acked.add(msg.data())
        staying.acknowledge(msg)
    assert acked == {f"m{i}".encode() for i in range(n)}
