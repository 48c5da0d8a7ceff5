"""The sync face's send_async hands the core only what was given: a sequence id positionally, and
only the options set."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from magnetar.client import Client, InitialPosition
from magnetar.client.api.config import ProducerConfig
from magnetar.client.sync.producer import Producer

from ..conftest import RECEIVE_MS


class RecordingCore:
    """An asyncio producer stand-in that keeps how ``send_nowait`` was called."""

    def __init__(self) -> None:
        self.config = ProducerConfig()
        self.settled_hook: Any = None
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def send_nowait(self, *args: Any, **options: Any) -> None:
        self.calls.append((args, options))


class LoopThreadStandIn:
    """A loop run by a thread of its own, as the client's loop thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def settle(self) -> None:
        """Wait until the loop ran what was scheduled on it so far."""
        done = threading.Event()
        self.loop.call_soon_threadsafe(done.set)
        assert done.wait(5)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def test_send_async_passes_a_sequence_id_positionally_and_only_the_options_given() -> None:
    thread = LoopThreadStandIn()
    core = RecordingCore()
    producer = Producer(thread, core, lambda coro: None)  # type: ignore[arg-type]
    try:
        producer.send_async(b"plain", None)
        producer.send_async(b"numbered", None, sequence_id=7)
        producer.send_async(b"keyed", None, partition_key="k", sequence_id=8)
        producer.send_async(b"props", None, properties={}, deliver_after=0.5)
        producer.send_async(b"routed", None, replication_clusters=["a"], disable_replication=True)
        producer.send_async(b"defaults", None, replication_clusters=[], disable_replication=False)
        thread.settle()
    finally:
        thread.stop()
    assert core.calls == [
        ((b"plain", None), {}),
        ((b"numbered", None, 7), {}),
        ((b"keyed", None, 8), {"partition_key": "k"}),
        ((b"props", None, None), {"properties": {}, "deliver_after": 0.5}),
        ((b"routed", None, None), {"replication_clusters": ["a"], "disable_replication": True}),
        ((b"defaults", None), {}),
    ]


def test_sequence_ids_and_options_reach_the_consumer(client: Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", initial_position=InitialPosition.Earliest)
    producer = client.create_producer(topic)
    results: list[Any] = []
    for i in range(10):
        producer.send_async(b"s%d" % i, lambda error, mid: results.append(error), sequence_id=100 + i)
    producer.send_async(b"k", lambda error, mid: results.append(error), partition_key="key", sequence_id=200,
                        properties={"a": "b"})
    producer.flush()
    assert results == [None] * 11
    got = [consumer.receive(RECEIVE_MS) for _ in range(11)]
    assert [m.sequence_id() for m in got[:10]] == list(range(100, 110))
    assert got[-1].partition_key() == "key" and got[-1].properties() == {"a": "b"}
    assert [m.data() for m in got[:10]] == [b"s%d" % i for i in range(10)]
    assert producer.last_sequence_id() == 200
