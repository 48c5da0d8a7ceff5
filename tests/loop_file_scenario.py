"""A scenario touching every path of a broker that could reach the disk, for the event-loop file probe
(tests/loop_file_probe.py, tests/test_architecture.py): produce and consume (batched and not), a
backlog catch-up out of the cache, redelivery, deduplication, segment roll-over and retention
trimming, compaction and a read_compacted reader, a topic unloaded and reloaded, a schema upload,
transactions committed and aborted, admin reads and writes, a topic deleted.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from magnetar.broker.config import BrokerConfig
from magnetar.testing.admin import Admin, AdminError, topic_path

NS = "public/loopdisk"


def probe_config(data_dir: Any, port: int, http_port: int) -> BrokerConfig:
    """A broker whose every disk path runs within a short scenario: fsync on, no entry cache (every
    catch-up reads the files), small segments rolled over at once, retention checked every 0.2 s, topics
    compacted by the lifecycle past 2 KiB (outside any admin request)."""
    return BrokerConfig(
        data_dir=data_dir, port=port, http_port=http_port, fsync="always", entry_cache_max_bytes=0,
        segment_max_bytes=4096, segment_min_rollover_minutes=0, segment_max_rollover_minutes=0.002,
        lifecycle_check_interval_seconds=0.2, compaction_threshold_bytes=2048,
    )


def _until(condition: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def run_scenario(service_url: str, http_url: str) -> dict[str, Any]:
    """Run the scenario against a broker; what it observed (for the test's own assertions)."""
    from magnetar.client import Client, InitialPosition

    admin = Admin(http_url)
    seen: dict[str, Any] = {}
    admin.create_namespace(NS)
    admin.set_namespace_policy(NS, "deduplication", True)
    admin.set_namespace_policy(NS, "retention", {"retentionTimeInMinutes": 0, "retentionSizeInMB": 0})
    plain = f"persistent://{NS}/plain-{uuid.uuid4().hex[:6]}"
    keyed = f"persistent://{NS}/keyed-{uuid.uuid4().hex[:6]}"
    client = Client(service_url, enable_transaction=True)
    try:
        seen.update(_produce_and_catch_up(client, admin, plain))
        seen.update(_compact(client, admin, keyed))
        seen.update(_transactions(client, plain))
        admin.unload(plain)
        consumer = client.subscribe(plain, "after-unload", initial_position=InitialPosition.Earliest)
        first = consumer.receive(30_000)
        seen["after_unload"] = first.data()
        consumer.close()
    finally:
        client.close()
    schema = {"type": "STRING", "schema": "", "properties": {}}
    admin.request("POST", f"/schemas/{NS}/with-schema/schema", schema)
    seen["schema"] = admin.request("GET", f"/schemas/{NS}/with-schema/schema")["type"]
    seen["stats"] = admin.topic_stats(plain)["msgInCounter"]
    seen["internal"] = len(admin.request("GET", topic_path(plain) + "/internalStats")["ledgers"])
    seen["topics"] = sorted(admin.topics(NS))
    admin.delete_topic(keyed, force=True)
    admin.delete_topic(plain, force=True)
    admin.delete_namespace(NS, force=True)
    return seen


def _produce_and_catch_up(client: Any, admin: Admin, topic: str) -> dict[str, Any]:
    client.subscribe(topic, "behind").close()  # a durable subscription left behind
    batched = client.create_producer(topic, producer_name="batched", batching_enabled=True)
    for i in range(200):
        batched.send_async(b"b%03d" % i, None)
    batched.flush()
    single = client.create_producer(topic, producer_name="single", batching_enabled=False)
    for i in range(100):
        single.send(b"s%03d" % i)
    single.send(b"dup", sequence_id=5)  # deduplication: not stored again
    single.close()
    batched.close()
    consumer = client.subscribe(topic, "behind", negative_ack_redelivery_delay_ms=100)
    got = []
    redelivered = None
    for _ in range(300):
        msg = consumer.receive(30_000)
        got.append(msg.data())
        if redelivered is None:
            redelivered = msg.data()
            consumer.negative_acknowledge(msg)  # redelivered later, from the files
            continue
        consumer.acknowledge(msg)
    again = consumer.receive(30_000)
    consumer.acknowledge(again)
    consumer.close()
    # retention 0 and everything acknowledged: the lifecycle trims the sealed segments
    _until(lambda: len(admin.request("GET", topic_path(topic) + "/internalStats")["ledgers"]) <= 2)
    return {"consumed": len(got), "redelivered": again.data() == redelivered, "dup_stored": b"dup" in got}


def _compact(client: Any, admin: Admin, topic: str) -> dict[str, Any]:
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(60):
        producer.send(b"v%d" % i, partition_key=f"k{i % 5}")
    producer.close()
    while True:  # the lifecycle may be compacting it (past the threshold): 409 until it is done
        try:
            admin.request("PUT", topic_path(topic) + "/compaction")
            break
        except AdminError as exc:
            if exc.status != 409:
                raise
            time.sleep(0.05)
    _until(lambda: admin.request("GET", topic_path(topic) + "/compaction")["status"] == "SUCCESS")
    admin.unload(topic)  # the view is opened again as the topic loads
    reader = client.subscribe(topic, "compacted", is_read_compacted=True, initial_position=1)  # earliest
    values = [reader.receive(30_000).data() for _ in range(5)]
    reader.close()
    return {"compacted": values}


def _transactions(client: Any, topic: str) -> dict[str, Any]:
    producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=0)
    committed = client.new_transaction()
    producer.send(b"in-committed", txn=committed)
    committed.commit()
    aborted = client.new_transaction()
    producer.send(b"in-aborted", txn=aborted)
    aborted.abort()
    producer.close()
    return {"txn": True}
