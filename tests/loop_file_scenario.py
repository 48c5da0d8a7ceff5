"""A scenario touching every path of a broker that could reach the disk, for the event-loop file probe
(tests/loop_file_probe.py, tests/test_architecture.py): produce and consume (batched and not), a
backlog catch-up out of the cache, redelivery, deduplication, segment roll-over and retention
trimming, compaction and a read_compacted reader, a topic unloaded and reloaded, transactions
committed and aborted, admin reads and writes, a topic deleted; and every path that writes or reads the metadata store:
schemas registered by a producer, a consumer and GET_OR_CREATE_SCHEMA (binary) and posted, deleted
and force-deleted through the REST API, a dynamic configuration update and its removal, a topic
terminated, lookups (LOOKUP, PARTITIONED_METADATA, GET_TOPICS_OF_NAMESPACE), a namespace's topic list
(admin), the light HTTP server's cluster list, compaction's records, topics deleted, the admin checks
of topics not loaded (their rows read) and of a topic, a namespace and a tenant that do not exist (the
tenant read to tell them apart), a namespace deleted with its stored topics.
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
    seen["clusters"] = admin.request("GET", "clusters")  # the first request: the light HTTP server answers
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
    seen.update(_metadata_paths(service_url, admin, plain))
    seen["not_loaded"] = _not_loaded_and_missing(admin)
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


def _metadata_paths(service_url: str, admin: Admin, plain: str) -> dict[str, Any]:
    """The paths that commit or read the metadata store: schemas (binary and REST), a dynamic setting,
    a termination, lookups and topic lists (``plain``: a topic without a schema)."""
    from magnetar.client import Client
    from magnetar.client.schema import StringSchema

    seen: dict[str, Any] = {}
    topic = f"persistent://{NS}/schemas-{uuid.uuid4().hex[:6]}"
    idle = f"persistent://{NS}/idle-{uuid.uuid4().hex[:6]}"
    client = Client(service_url)
    try:
        producer = client.create_producer(topic, schema=StringSchema())  # PRODUCER: a new version
        producer.send("typed")
        producer.close()
        client.subscribe(idle, "typed", schema=StringSchema()).close()  # SUBSCRIBE registers it (idle topic)
    finally:
        client.close()
    seen["binary"] = _wire_commands(service_url, plain)
    schema = {"type": "STRING", "schema": "", "properties": {}}
    admin.request("POST", f"/schemas/{NS}/with-schema/schema", schema)
    seen["schema"] = admin.request("GET", f"/schemas/{NS}/with-schema/schema")["type"]
    seen["schema_deleted"] = admin.request("DELETE", f"/schemas/{NS}/with-schema/schema")["version"]
    seen["schema_forced"] = admin.request("DELETE", f"/schemas/{NS}/with-schema/schema?force=true")["version"]
    admin.request("POST", "brokers/configuration/maxProducersPerTopic/100")
    seen["dynamic"] = admin.request("GET", "brokers/configuration/values")
    admin.request("DELETE", "brokers/configuration/maxProducersPerTopic")
    seen["terminated"] = admin.request("POST", topic_path(topic) + "/terminate")["entryId"]
    seen["namespace_topics"] = sorted(admin.request("GET", f"namespaces/{NS}/topics"))
    admin.delete_topic(topic, force=True)
    admin.delete_topic(idle, force=True)
    return seen


def _status(admin: Admin, method: str, path: str) -> Any:
    """The answer of a request, or its error status and reason."""
    try:
        return admin.request(method, path)
    except AdminError as exc:
        return exc.status, exc.reason


def _not_loaded_and_missing(admin: Admin) -> dict[str, Any]:
    """The admin checks that meet a topic not loaded (its row read), a topic that does not exist, and a
    namespace that does not exist, in a tenant that exists and in one that does not (the tenant read to
    tell the two apart). The topics are left to the namespace's forced deletion (which lists them)."""
    stored = f"persistent://{NS}/stored-{uuid.uuid4().hex[:6]}"
    parted = f"persistent://{NS}/parted-{uuid.uuid4().hex[:6]}"
    missing = f"persistent://{NS}/missing-{uuid.uuid4().hex[:6]}"
    admin.create_topic(stored)  # a row, never loaded
    admin.create_partitioned_topic(parted, 2)  # its partitions' rows, never loaded
    seen: dict[str, Any] = {}
    for name, topic in (("stored", stored), ("missing", missing)):
        path = topic_path(topic)
        seen[name] = [_status(admin, "GET", path + "/partitions"), _status(admin, "GET", path + "/messageTTL"),
                      _status(admin, "GET", path + "/properties"), _status(admin, "GET", path + "/permissions"),
                      _status(admin, "PUT", path + "/unload")]
    seen["parted"] = sorted(admin.partitioned_stats(parted)["partitions"])
    seen["names"] = {"missing": missing, "parted": parted}
    seen["namespaces"] = [_status(admin, method, path) for method, path in (
        ("GET", "namespaces/public/nowhere/messageTTL"), ("GET", "namespaces/nobody/nowhere/messageTTL"),
        ("GET", "namespaces/public/nowhere/permissions"), ("GET", "namespaces/public/nowhere/properties"),
        ("GET", "persistent/public/nowhere"), ("GET", "namespaces/nobody/nowhere/bundles"),
        ("DELETE", "namespaces/public/nowhere"), ("DELETE", "tenants/nobody"),
    )]
    return seen


def _wire_commands(service_url: str, topic: str) -> dict[str, Any]:
    """GET_OR_CREATE_SCHEMA (a topic without a schema: its first version), LOOKUP, PARTITIONED_METADATA
    and GET_TOPICS_OF_NAMESPACE on a raw connection."""
    from magnetar.protocol.enums import COMMAND_FIELD, CommandType, SchemaType
    from magnetar.protocol.schema import BaseCommand
    from tests.broker.session.test_wire_errors import WireClient

    wire = WireClient(int(service_url.rsplit(":", 1)[1]))

    def ask(kind: CommandType, answer: CommandType, **values: Any) -> Any:
        """One request with ``values`` set, its answer (the command's part)."""
        cmd = BaseCommand(type=kind)
        request = getattr(cmd, COMMAND_FIELD[kind])
        request.request_id = wire.next_request_id()
        for name, value in values.items():
            setattr(request, name, value)
        if kind == CommandType.GET_OR_CREATE_SCHEMA:
            request.schema.name, request.schema.type, request.schema.schema_data = "s", SchemaType.STRING, b""
        wire.send(cmd)
        return getattr(wire.expect(answer).command, COMMAND_FIELD[answer])

    try:
        wire.connect()
        version = ask(CommandType.GET_OR_CREATE_SCHEMA, CommandType.GET_OR_CREATE_SCHEMA_RESPONSE, topic=topic)
        ask(CommandType.LOOKUP, CommandType.LOOKUP_RESPONSE, topic=topic)
        partitions = ask(CommandType.PARTITIONED_METADATA, CommandType.PARTITIONED_METADATA_RESPONSE, topic=topic)
        topics = ask(CommandType.GET_TOPICS_OF_NAMESPACE, CommandType.GET_TOPICS_OF_NAMESPACE_RESPONSE, namespace=NS)
        return {"version": version.schema_version, "partitions": partitions.partitions,
                "listed": topic in topics.topics}
    finally:
        wire.close()
