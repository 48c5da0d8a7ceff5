"""A broker restart in the middle of a stream: producers and consumers reconnect, nothing is lost."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from magnetar.client import Client, ConsumerType, InitialPosition, Timeout
from magnetar.testing import BrokerProcess, free_port

TOTAL = 3000


def test_broker_restart_mid_stream_loses_nothing(
    dedicated_broker: Callable[..., BrokerProcess], client_factory: Callable[..., Client]
) -> None:
    broker = dedicated_broker(port=free_port(), http_port=free_port())
    topic = "persistent://public/default/restart-stream"
    consumer_client = client_factory(broker.service_url)
    producer_client = client_factory(broker.service_url)
    consumer = consumer_client.subscribe(topic, "sub", consumer_type=ConsumerType.Exclusive, initial_position=InitialPosition.Earliest)
    producer = producer_client.create_producer(
        topic, block_if_queue_full=True, max_pending_messages=200, batching_max_publish_delay_ms=5,
    )
    errors: list[Any] = []
    acked: list[int] = []
    received: list[int] = []
    restarted = threading.Event()
    stop = threading.Event()

    def produce() -> None:
        for i in range(TOTAL):
            def done(err: Any, mid: Any, i: int = i) -> None:
                if err is not None:
                    errors.append((i, err))
                else:
                    acked.append(i)
            producer.send_async(b"%d" % i, done)
            if i % 100 == 0:
                time.sleep(0.03)  # a steady stream, so the restart falls in the middle of it
        producer.flush()

    def consume() -> None:
        while not stop.is_set():
            try:
                msg = consumer.receive(200)
            except Timeout:
                continue
            received.append(int(msg.data()))
            consumer.acknowledge(msg)

    threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 20
        while len(received) < TOTAL // 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(received) >= TOTAL // 4, "the stream did not start"
        sent_before_restart = len(acked)
        assert broker.stop() == 0
        broker.start()  # same data directory, same ports
        restarted.set()
        threads[0].join(60)
        assert not threads[0].is_alive(), "the producer did not get through the restart"
        deadline = time.monotonic() + 30
        while len(set(received)) < TOTAL and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    assert sent_before_restart < TOTAL // 2, "the restart came after the stream, not in the middle of it"
    assert errors == []
    assert sorted(acked) == list(range(TOTAL))
    assert set(received) == set(range(TOTAL)), f"missing: {sorted(set(range(TOTAL)) - set(received))[:20]}"
    # in order: what arrives again after the restart (redelivered or resent) comes before anything new
    first_seen: list[int] = []
    seen: set[int] = set()
    for value in received:
        if value not in seen:
            seen.add(value)
            first_seen.append(value)
    assert first_seen == list(range(TOTAL))
    assert producer.is_connected() and consumer.is_connected()
