"""Topics over the REST API, with their effects checked through the official client."""

from __future__ import annotations

import threading
import time

import pulsar
import pytest

from magnetar.protocol.batch import decode_batch
from magnetar.testing import BrokerProcess

from .admin_http import Http
from .helpers import wait_until

NS = "public/default"


def _topic(name: str) -> str:
    return f"persistent://{NS}/{name}"


def _path(name: str) -> str:
    return f"/admin/v2/persistent/{NS}/{name}"


def _produce(client: pulsar.Client, topic: str, n: int, prefix: str = "m", **kw) -> list:
    producer = client.create_producer(topic, **kw)
    ids = [producer.send(f"{prefix}{i}".encode()) for i in range(n)]
    producer.close()
    return ids


def _backlog(http: Http, name: str, sub: str) -> int:
    return http.get(_path(name) + "/stats").json()["subscriptions"][sub]["msgBacklog"]


def test_create_list_delete_non_partitioned(http: Http, name: str) -> None:
    assert http.put(_path(name)).status == 204
    r = http.put(_path(name))
    assert (r.status, r.reason) == (409, "This topic already exists")
    r = http.put(_path(name) + "/partitions", 2)
    assert (r.status, r.reason) == (409, "This topic already exists")
    assert _topic(name) in http.get(f"/admin/v2/persistent/{NS}").json()
    assert http.get(_path(name) + "/partitions").json() == {"partitions": 0}
    assert http.get(_path(name) + "/stats").status == 200
    assert http.delete(_path(name)).status == 204
    assert _topic(name) not in http.get(f"/admin/v2/persistent/{NS}").json()
    r = http.get(_path(name) + "/stats")
    assert r.status == 404 and r.reason
    assert http.delete(_path(name)).status == 404
    assert http.get(_path(name) + "/partitions").status == 404
    assert http.get(_path(name) + "/partitions?checkAllowAutoCreation=true").json() == {"partitions": 0}


def test_delete_refused_while_in_use_then_forced(http: Http, client: pulsar.Client, name: str) -> None:
    topic = _topic(name)
    producer = client.create_producer(topic)
    for i in range(5):
        producer.send(f"m{i}".encode())
    old_ledger = http.get(_path(name) + "/internalStats").json()["ledgers"][0]["ledgerId"]
    r = http.delete(_path(name))
    assert (r.status, r.reason) == (412, "Topic has active producers/subscriptions")
    assert http.get(_path(name) + "/internalStats").json()["numberOfEntries"] == 5
    assert http.delete(_path(name) + "?force=true").status == 204
    # the client reconnects its producer, which may create the topic again: but empty, on a new ledger
    internal = http.get(_path(name) + "/internalStats")
    if internal.status == 200:
        assert internal.json()["ledgers"][0]["ledgerId"] != old_ledger
        assert internal.json()["numberOfEntries"] == 0
    else:
        assert internal.status == 404
    producer.close()


def test_partitioned_topic_seen_by_client(http: Http, client: pulsar.Client, name: str) -> None:
    topic = _topic(name)
    assert http.put(_path(name) + "/partitions", 4).status == 204
    assert http.get(_path(name) + "/partitions").json() == {"partitions": 4}
    assert client.get_topic_partitions(topic) == [f"{topic}-partition-{i}" for i in range(4)]
    assert http.get(f"/admin/v2/persistent/{NS}/partitioned").json().count(topic) == 1
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    sent = {f"m{i}".encode() for i in range(40)}
    _produce(client, topic, 40)
    got = set()
    for _ in range(40):
        msg = consumer.receive(10_000)
        got.add(msg.data())
        consumer.acknowledge(msg)
    assert got == sent
    stats = http.get(_path(name) + "/partitioned-stats").json()
    assert stats["metadata"] == {"partitions": 4, "deleted": False}  # Pulsar's PartitionedTopicMetadata
    assert stats["msgInCounter"] == 40
    assert all(p["msgInCounter"] > 0 for p in stats["partitions"].values())
    assert len(stats["partitions"]) == 4
    assert "sub" in stats["subscriptions"]
    assert http.get(_path(name) + "/subscriptions").json() == ["sub"]
    r = http.delete(_path(name) + "/partitions")
    assert (r.status, r.reason) == (412, "Topic has active producers/subscriptions")
    assert http.get(_path(name) + "/partitions").json() == {"partitions": 4}
    consumer.close()
    assert http.delete(_path(name) + "/partitions").status == 204
    assert http.get(_path(name) + "/partitions").status == 404
    assert not [t for t in http.get(f"/admin/v2/persistent/{NS}").json() if t.startswith(topic)]


def test_partitions_increase_while_producing(http: Http, client: pulsar.Client, client_factory, broker, name: str) -> None:
    topic = _topic(name)
    http.put(_path(name) + "/partitions", 2)
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic)
    errors: list[Exception] = []
    sent: list[bytes] = []
    stop = threading.Event()

    def run() -> None:
        i = 0
        while not stop.is_set() and i < 2000:
            try:
                payload = f"a{i}".encode()
                producer.send(payload)
                sent.append(payload)
            except Exception as exc:  # noqa: BLE001 - recorded and asserted below
                errors.append(exc)
            i += 1

    thread = threading.Thread(target=run)
    thread.start()
    wait_until(lambda: len(sent) >= 50)
    before = http.get(_path(name) + "/partitioned-stats").json()["partitions"]
    assert http.post(_path(name) + "/partitions", 4).status == 204
    time.sleep(0.2)
    stop.set()
    thread.join(30)
    assert not errors
    assert http.get(_path(name) + "/partitions").json() == {"partitions": 4}
    after = http.get(_path(name) + "/partitioned-stats").json()["partitions"]
    for p, stats in before.items():
        assert after[p]["msgInCounter"] >= stats["msgInCounter"]
    assert {f"{topic}-partition-{i}" for i in range(4)} <= set(after)
    # a new client sees 4 partitions and reaches the new ones; the subscription was copied to them
    fresh = client_factory(broker.service_url)
    assert len(fresh.get_topic_partitions(topic)) == 4
    late = [f"b{i}".encode() for i in range(20)]
    p2 = fresh.create_producer(topic)
    for payload in late:
        p2.send(payload)
    p2.close()
    final = http.get(_path(name) + "/partitioned-stats").json()["partitions"]
    assert final[f"{topic}-partition-3"]["msgInCounter"] > 0
    assert "sub" in final[f"{topic}-partition-3"]["subscriptions"]
    consumer.close()
    c2 = fresh.subscribe(topic, "sub")
    got = set()
    expected = set(sent) | set(late)
    while got != expected:
        msg = c2.receive(10_000)
        got.add(msg.data())
        c2.acknowledge(msg)
    producer.close()


def test_partition_count_refusals(http: Http, name: str) -> None:
    http.put(_path(name) + "/partitions", 3)
    r = http.post(_path(name) + "/partitions", 2)
    assert (r.status, r.reason) == (422, "Expect partitions 2 can't less than current partitions 3.")
    assert http.post(_path(name) + "/partitions", 3).status == 204
    for bad in (0, -4):
        r = http.post(_path(name) + "/partitions", bad)
        assert (r.status, r.reason) == (406, "Number of partitions should be more than 0")
        r = http.put(_path(name + "x") + "/partitions", bad)
        assert (r.status, r.reason) == (406, "Number of partitions should be more than 0")
    assert http.put(_path(name + "x") + "/partitions", "four").status == 400
    assert http.get(_path(name) + "/partitions").json() == {"partitions": 3}
    assert http.get(_path(name + "x") + "/partitions").status == 404
    http.put(_path(name + "np"))
    r = http.post(_path(name + "np") + "/partitions", 5)
    assert r.status == 409
    r = http.put(_path(name + "-partition-1") + "/partitions", 2)
    assert r.status == 412


def test_backlog_1000_produced_800_acked(http: Http, client: pulsar.Client, name: str) -> None:
    topic = _topic(name)
    assert http.put(_path(name) + "/subscription/sub", {"ledgerId": -1, "entryId": -1}).status == 204
    producer = client.create_producer(topic)
    for i in range(1000):
        producer.send_async(f"m{i}".encode(), None)
    producer.flush()
    producer.close()
    assert _backlog(http, name, "sub") == 1000
    # Shared: as Pulsar, only subscriptions acknowledged message by message count unacked messages
    consumer = client.subscribe(topic, "sub", receiver_queue_size=1000, consumer_type=pulsar.ConsumerType.Shared)
    msgs = [consumer.receive(10_000) for _ in range(1000)]
    for msg in msgs[:800]:
        consumer.acknowledge(msg)
    wait_until(lambda: _backlog(http, name, "sub") == 200)
    stats = http.get(_path(name) + "/stats").json()
    sub = stats["subscriptions"]["sub"]
    assert sub["unackedMessages"] == 200
    assert sub["consumers"][0]["unackedMessages"] == 200
    assert stats["msgInCounter"] == 1000
    assert sub["msgOutCounter"] == 1000
    consumer.close()


def test_skip_and_skip_all(http: Http, client: pulsar.Client, name: str) -> None:
    topic = _topic(name)
    http.put(_path(name) + "/subscription/sub?messageId=earliest")
    _produce(client, topic, 10)
    assert _backlog(http, name, "sub") == 10
    assert http.post(_path(name) + "/subscription/sub/skip/3").status == 204
    assert _backlog(http, name, "sub") == 7
    consumer = client.subscribe(topic, "sub")
    assert consumer.receive(10_000).data() == b"m3"
    consumer.close()  # messages already in its receiver queue would still come out of it
    assert http.post(_path(name) + "/subscription/sub/skip_all").status == 204
    assert _backlog(http, name, "sub") == 0
    assert http.post(_path(name) + "/subscription/nope/skip_all").status == 404
    assert http.post(_path(name) + "/subscription/sub/skip/-1").status == 412
    consumer = client.subscribe(topic, "sub")
    _produce(client, topic, 2, prefix="n")
    assert consumer.receive(10_000).data() == b"n0"
    consumer.close()


def test_expire_messages(http: Http, client: pulsar.Client, name: str) -> None:
    topic = _topic(name)
    http.put(_path(name) + "/subscription/sub", "earliest")
    _produce(client, topic, 5, prefix="old")
    time.sleep(1.5)
    _produce(client, topic, 3, prefix="new")
    assert http.post(_path(name) + "/subscription/sub/expireMessages/1").status == 204
    sub = http.get(_path(name) + "/stats").json()["subscriptions"]["sub"]
    assert sub["msgBacklog"] == 3
    assert sub["totalMsgExpired"] == 5
    consumer = client.subscribe(topic, "sub")
    assert consumer.receive(10_000).data() == b"new0"
    consumer.close()


def test_resetcursor_rewinds_live_consumer(http: Http, client: pulsar.Client, name: str) -> None:
    topic = _topic(name)
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    start = int(time.time() * 1000) - 1000
    ids = _produce(client, topic, 10)
    for _ in range(10):
        consumer.acknowledge(consumer.receive(10_000))
    wait_until(lambda: _backlog(http, name, "sub") == 0)
    assert http.post(_path(name) + f"/subscription/sub/resetcursor/{start}").status == 204
    again = [consumer.receive(10_000).data() for _ in range(10)]
    assert again == [f"m{i}".encode() for i in range(10)]
    mid = ids[6]
    body = {"ledgerId": mid.ledger_id(), "entryId": mid.entry_id()}
    assert http.post(_path(name) + "/subscription/sub/resetcursor", body).status == 204
    assert consumer.receive(10_000).data() == b"m6"
    r = http.post(_path(name) + "/subscription/nope/resetcursor", body)
    assert r.status == 404
    r = http.post(_path(name) + "/subscription/sub/resetcursor", {"ledgerId": "x"})
    assert r.status == 400
    consumer.close()


def test_subscription_create_and_delete(http: Http, client: pulsar.Client, name: str) -> None:
    topic = _topic(name)
    _produce(client, topic, 4)
    assert http.put(_path(name) + "/subscription/late").status == 204
    assert http.put(_path(name) + "/subscription/early", {"ledgerId": -1, "entryId": -1}).status == 204
    r = http.put(_path(name) + "/subscription/early")
    assert (r.status, r.reason) == (409, "Subscription already exists for topic")
    assert sorted(http.get(_path(name) + "/subscriptions").json()) == ["early", "late"]
    assert _backlog(http, name, "late") == 0
    assert _backlog(http, name, "early") == 4
    consumer = client.subscribe(topic, "early")
    assert consumer.receive(10_000).data() == b"m0"
    r = http.delete(_path(name) + "/subscription/early")
    assert (r.status, r.reason) == (412, "Subscription has active connected consumers")
    assert "early" in http.get(_path(name) + "/subscriptions").json()
    assert http.delete(_path(name) + "/subscription/early?force=true").status == 204
    assert http.delete(_path(name) + "/subscription/late").status == 204
    assert http.delete(_path(name) + "/subscription/late").status == 404
    consumer.close()


def test_stats_fields_and_rates(http: Http, client: pulsar.Client, name: str) -> None:
    topic = _topic(name)
    consumer = client.subscribe(topic, "sub", consumer_name="c1", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic, producer_name="p1")
    for i in range(200):
        producer.send_async(f"m{i}".encode(), None)
    producer.flush()
    for _ in range(200):
        consumer.acknowledge(consumer.receive(10_000))
    time.sleep(1.3)
    stats = http.get(_path(name) + "/stats").json()
    assert stats["msgInCounter"] == 200
    assert stats["msgOutCounter"] == 200
    assert stats["msgRateIn"] > 0 and stats["msgThroughputIn"] > 0
    assert stats["msgRateOut"] > 0 and stats["msgThroughputOut"] > 0
    assert stats["storageSize"] > 0
    [pub] = stats["publishers"]
    assert pub["producerName"] == "p1" and pub["msgRateIn"] > 0
    sub = stats["subscriptions"]["sub"]
    assert sub["type"] == "Exclusive"
    assert sub["msgRateOut"] > 0
    assert sub["msgBacklog"] == 0
    assert sub["blockedSubscriptionOnUnackedMsgs"] is False
    [c] = sub["consumers"]
    assert c["consumerName"] == "c1"
    assert c["availablePermits"] > 0
    assert c["blockedConsumerOnUnackedMsgs"] is False
    assert c["msgRateOut"] > 0
    producer.close()
    consumer.close()
    time.sleep(1.2)
    # counters of producers and consumers that left stay in the totals
    stats = http.get(_path(name) + "/stats").json()
    assert stats["msgOutCounter"] == 200
    assert stats["subscriptions"]["sub"]["msgOutCounter"] == 200


def test_internal_stats_and_last_message_id(http: Http, client: pulsar.Client, name: str) -> None:
    topic = _topic(name)
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    ids = _produce(client, topic, 6)
    msgs = [consumer.receive(10_000) for _ in range(6)]
    for i in (0, 2, 3):
        consumer.acknowledge(msgs[i])
    ledger = ids[0].ledger_id()
    internal = wait_until(
        lambda: (s := http.get(_path(name) + "/internalStats").json())["cursors"]["sub"]["markDeletePosition"]
        == f"{ledger}:0" and s["cursors"]["sub"]["individuallyDeletedMessages"] != "[]" and s
    )
    assert internal["numberOfEntries"] == 6
    assert internal["entriesAddedCounter"] == 6
    assert internal["ledgers"][0]["ledgerId"] == ledger
    assert internal["lastConfirmedEntry"] == f"{ledger}:5"
    assert internal["cursors"]["sub"]["individuallyDeletedMessages"] == f"[({ledger}:1..{ledger}:3]]"
    last = http.get(_path(name) + "/lastMessageId").json()
    assert (last["ledgerId"], last["entryId"]) == (ledger, ids[-1].entry_id())
    consumer.close()


def test_peek_and_examine(http: Http, client: pulsar.Client, name: str) -> None:
    topic = _topic(name)
    http.put(_path(name) + "/subscription/sub?messageId=earliest")
    producer = client.create_producer(topic)
    for i in range(3):
        producer.send(f"payload-{i}".encode(), properties={"k": f"v{i}"}, partition_key=f"key{i}")
    producer.close()
    r = http.get(_path(name) + "/subscription/sub/position/1")
    assert r.status == 200
    assert r.body == b"payload-0"
    assert r.header("X-Pulsar-PROPERTY-k") == "v0"
    assert r.header("X-Pulsar-partition-key") == "key0"
    assert r.header("X-Pulsar-Message-ID").endswith(":0")
    assert r.header("X-Pulsar-publish-time")
    assert http.get(_path(name) + "/subscription/sub/position/3").body == b"payload-2"
    r = http.get(_path(name) + "/subscription/sub/position/4")
    assert (r.status, r.reason) == (404, "Message not found")
    assert http.get(_path(name) + "/subscription/sub/position/0").status == 412
    assert http.get(_path(name) + "/subscription/nope/position/1").status == 404
    assert http.get(_path(name) + "/examinemessage?initialPosition=earliest&messagePosition=1").body == b"payload-0"
    assert http.get(_path(name) + "/examinemessage?initialPosition=latest&messagePosition=1").body == b"payload-2"
    assert http.get(_path(name) + "/examinemessage?initialPosition=latest&messagePosition=9").status == 404
    # a compressed batch comes back whole and decompressed, with its message count
    batcher = client.create_producer(
        topic, batching_enabled=True, batching_max_publish_delay_ms=50, compression_type=pulsar.CompressionType.LZ4
    )
    for i in range(5):
        batcher.send_async(f"b{i}".encode() * 20, None)
    batcher.flush()
    batcher.close()
    r = http.get(_path(name) + "/subscription/sub/position/4")
    count = int(r.header("X-Pulsar-num-batch-message"))
    assert count >= 1
    messages = decode_batch(r.body, count)
    assert messages[0][1] == b"b0" * 20


def test_terminate_refuses_further_messages(http: Http, name: str, broker: BrokerProcess) -> None:
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer(name)
        producer.send(b"a")
        last = producer.send(b"b")
        r = http.post(_path(name) + "/terminate")
        assert r.status == 200
        assert r.json() == {"ledgerId": last.ledger_id(), "entryId": last.entry_id(), "partitionIndex": -1}
        with pytest.raises((pulsar.TopicTerminated, pulsar.AlreadyClosed)):
            producer.send(b"c")
        with pytest.raises(pulsar.TopicTerminated):
            client.create_producer(name)
        reader = client.create_reader(name, pulsar.MessageId.earliest)
        assert [reader.read_next(5000).data() for _ in range(2)] == [b"a", b"b"]
        assert not reader.has_message_available()
    finally:
        client.close()
    assert http.post(_path(name + "-missing") + "/terminate").status == 404


def test_compaction_trigger_and_status(http: Http, name: str) -> None:
    http.put(_path(name))
    assert http.get(_path(name) + "/compaction").json() == {"status": "NOT_RUN", "lastError": ""}
    assert http.put(_path(name) + "/compaction").status == 204
    assert http.get(_path(name) + "/compaction").json()["status"] in ("RUNNING", "SUCCESS")  # empty: quick
    assert http.put(_path(name + "-missing") + "/compaction").status == 404


def test_topic_policies(http: Http, name: str) -> None:
    http.put(_path(name))
    base = _path(name)
    assert http.get(base + "/messageTTL").json() is None
    assert http.get(base + "/messageTTL?applied=true").json() == 0
    assert http.post(base + "/messageTTL?messageTTL=30").status == 204
    assert http.get(base + "/messageTTL").json() == 30
    assert http.post(base + "/messageTTL?messageTTL=-1").status == 412
    assert http.post(base + "/retention", {"retentionTimeInMinutes": 5, "retentionSizeInMB": 1}).status == 204
    assert http.get(base + "/retention").json() == {"retentionTimeInMinutes": 5, "retentionSizeInMB": 1}
    assert http.post(base + "/deduplicationEnabled", True).status == 204
    assert http.get(base + "/deduplicationEnabled").json() is True
    assert http.get(base + "/stats").json()["deduplicationStatus"] == "Enabled"
    assert http.post(base + "/maxProducers", 2).status == 204
    assert http.get(base + "/maxProducers").json() == 2
    assert http.delete(base + "/messageTTL").status == 204
    assert http.get(base + "/messageTTL").json() is None
    assert http.post(base + "/backlogQuota", {"limitSize": 10, "policy": "producer_exception"}).status == 204
    assert http.get(base + "/backlogQuotaMap").json()["destination_storage"]["limitSize"] == 10
    assert http.post(_path(name + "-missing") + "/messageTTL?messageTTL=5").status == 404
    http.delete(base)
    http.put(base)
    assert http.get(base + "/retention").json() is None


def test_non_persistent_topics(http: Http, client: pulsar.Client, name: str) -> None:
    base = f"/admin/v2/non-persistent/{NS}/{name}"
    topic = f"non-persistent://{NS}/{name}"
    assert http.put(base).status == 204
    assert http.put(base).status == 409
    assert topic in http.get(f"/admin/v2/non-persistent/{NS}").json()
    consumer = client.subscribe(topic, "live")
    producer = client.create_producer(topic)
    producer.send(b"hello")
    assert consumer.receive(10_000).data() == b"hello"
    stats = http.get(base + "/stats").json()
    assert stats["msgInCounter"] == 1
    assert stats["storageSize"] == 0
    assert "live" in stats["subscriptions"]
    for method, path in (("GET", "/internalStats"), ("GET", "/subscription/live/position/1"),
                         ("PUT", "/subscription/other"), ("POST", "/subscription/live/skip_all")):
        r = http.request(method, base + path)
        assert r.status == 405 and r.reason, (path, r.body)
    assert http.delete(base).status == 412
    assert http.delete(base + "?force=true").status == 204
    producer.close()
    consumer.close()
    assert http.put(f"/admin/v2/non-persistent/{NS}/{name}-p/partitions", 2).status == 204
    assert http.get(f"/admin/v2/non-persistent/{NS}/{name}-p/partitions").json() == {"partitions": 2}


def test_deduplication_toggled_on_a_live_namespace(http: Http, broker: BrokerProcess) -> None:
    ns = "public/dedup-live"
    assert http.put(f"/admin/v2/namespaces/{ns}").status == 204
    topic = f"persistent://{ns}/live"
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer(topic, producer_name="dedup-live", batching_enabled=False)
        producer.send(b"a", sequence_id=1)
        producer.send(b"a-again", sequence_id=1)  # dedup off: stored
        assert http.post(f"/admin/v2/namespaces/{ns}/deduplication", True).status == 204
        producer.send(b"b", sequence_id=2)
        producer.send(b"b-again", sequence_id=2)  # dedup now on for the live topic: dropped
        producer.send(b"a-late", sequence_id=1)  # dropped too
        assert http.post(f"/admin/v2/namespaces/{ns}/deduplication", False).status == 204
        producer.send(b"c", sequence_id=2)  # off again: stored
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        got = []
        while reader.has_message_available():
            got.append(reader.read_next(5000).data())
        assert got == [b"a", b"a-again", b"b", b"c"]
    finally:
        client.close()
        http.delete(f"/admin/v2/namespaces/{ns}?force=true")


def test_partitioned_topic_created_with_a_metadata_body(http: Http, name: str) -> None:
    """As the Go and Java admin clients send it: PartitionedTopicMetadata under its own media type."""
    body = b'{"partitions": 3, "properties": {}}'
    r = http.request("PUT", _path(name) + "/partitions", raw=body,
                     content_type="application/vnd.partitioned-topic-metadata+json")
    assert r.status == 204, r.body
    assert http.get(_path(name) + "/partitions").json() == {"partitions": 3}
    r = http.request("PUT", _path(name + "bad") + "/partitions", raw=b'{"partitions": "three"}',
                     content_type="application/vnd.partitioned-topic-metadata+json")
    assert r.status == 400
