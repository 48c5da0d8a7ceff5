"""PUT .../unload (clients reconnect) and GET .../ledger/{ledgerId}/entry/{entryId} (a message by
its id), as pulsar-admin and the Go client's pulsaradmin use them."""

from __future__ import annotations

import time

import pulsar

from magnetar.protocol.batch import decode_batch

from .admin_http import Http
from .helpers import wait_until

NS = "public/default"
RECEIVE_MS = 10_000


def _topic(name: str) -> str:
    return f"persistent://{NS}/{name}"


def _path(name: str) -> str:
    return f"/admin/v2/persistent/{NS}/{name}"


def _connected_since(http: Http, name: str) -> tuple[list[str], list[str]]:
    """connectedSince of the topic's producers and of its consumers."""
    stats = http.get(_path(name) + "/stats").json()
    producers = [p["connectedSince"] for p in stats["publishers"]]
    consumers = [c["connectedSince"] for s in stats["subscriptions"].values() for c in s["consumers"]]
    return producers, consumers


def test_message_by_id(http: Http, client: pulsar.Client, name: str) -> None:
    producer = client.create_producer(_topic(name), batching_enabled=False)
    ids = [producer.send(f"payload-{i}".encode(), properties={"k": str(i)}) for i in range(3)]
    for i, msg_id in enumerate(ids):
        r = http.get(_path(name) + f"/ledger/{msg_id.ledger_id()}/entry/{msg_id.entry_id()}")
        assert r.status == 200
        assert r.body == f"payload-{i}".encode()
        assert r.header("X-Pulsar-Message-ID") == f"{msg_id.ledger_id()}:{msg_id.entry_id()}"
        assert r.header("X-Pulsar-PROPERTY-k") == str(i)
    last = ids[-1]
    assert http.get(_path(name) + f"/ledger/{last.ledger_id()}/entry/{last.entry_id() + 1}").status == 404
    assert http.get(_path(name) + f"/ledger/{last.ledger_id() + 1}/entry/0").status == 404
    assert http.get(_path(name + "-missing") + "/ledger/1/entry/0").status == 404
    # a batch comes back whole, with its message count (pulsaradmin splits it)
    batcher = client.create_producer(_topic(name), batching_enabled=True, batching_max_publish_delay_ms=50)
    sent = []
    for i in range(4):
        batcher.send_async(f"b{i}".encode(), lambda res, mid: sent.append(mid))
    batcher.flush()
    wait_until(lambda: len(sent) == 4)
    r = http.get(_path(name) + f"/ledger/{sent[0].ledger_id()}/entry/{sent[0].entry_id()}")
    count = int(r.header("X-Pulsar-num-batch-message"))
    assert [payload for _, payload in decode_batch(r.body, count)] == [f"b{i}".encode() for i in range(count)]


def test_message_by_id_of_a_partitioned_topic_is_refused(http: Http, name: str) -> None:
    assert http.put(_path(name) + "/partitions", 2).status == 204
    assert http.get(_path(name) + "/ledger/1/entry/0").status == 405


def test_unload_makes_producers_and_consumers_reconnect(http: Http, client: pulsar.Client, name: str) -> None:
    topic = _topic(name)
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(5):
        producer.send(f"before-{i}".encode())
    before = _connected_since(http, name)
    assert len(before[0]) == 1 and len(before[1]) == 1
    time.sleep(0.01)  # connectedSince has millisecond resolution
    assert http.put(_path(name) + "/unload").status == 204

    def reconnected() -> bool:
        producers, consumers = _connected_since(http, name)
        return len(producers) == 1 and len(consumers) == 1 and producers != before[0] and consumers != before[1]

    wait_until(reconnected, timeout=20)
    producer.send(b"after")
    got = set()
    while len(got) < 6:
        msg = consumer.receive(timeout_millis=RECEIVE_MS)
        got.add(msg.data())
        consumer.acknowledge(msg)
    assert got == {f"before-{i}".encode() for i in range(5)} | {b"after"}


def test_unload_of_a_partitioned_topic_unloads_every_partition(
    http: Http, client: pulsar.Client, name: str
) -> None:
    assert http.put(_path(name) + "/partitions", 2).status == 204
    producer = client.create_producer(_topic(name))
    for i in range(4):
        producer.send(f"m{i}".encode(), partition_key=str(i))
    before = [_connected_since(http, f"{name}-partition-{p}")[0] for p in range(2)]
    assert all(len(b) == 1 for b in before)
    time.sleep(0.01)
    assert http.put(_path(name) + "/unload").status == 204

    def every_partition_reconnected() -> bool:
        now = [_connected_since(http, f"{name}-partition-{p}")[0] for p in range(2)]
        return all(len(n) == 1 and n != b for n, b in zip(now, before, strict=True))

    wait_until(every_partition_reconnected, timeout=20)
    producer.send(b"after")


def test_unload_of_a_missing_topic_is_404(http: Http, name: str) -> None:
    assert http.put(_path(name) + "/unload").status == 404
