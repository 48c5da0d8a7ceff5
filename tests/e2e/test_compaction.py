"""Topic compaction and TableView with the official client: REST trigger, compacted readers,
original message ids, a restart, and producing / consuming while a large topic is compacted."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pulsar
import pytest

from magnetar.testing import BrokerProcess

from .helpers import RECEIVE_MS, new_client

Ids = tuple[int, int, int]


# -- fixtures of this module ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def compaction_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker of this module only (fast lifecycle checks for the threshold test)."""
    data_dir = tmp_path_factory.mktemp("compaction-broker") / "data"
    proc = BrokerProcess(data_dir, env={"MAGNETAR_LIFECYCLE_CHECK_INTERVAL_SECONDS": "0.5"}).start()
    yield proc
    proc.stop()


@pytest.fixture
def clients() -> Iterator[Callable[[BrokerProcess], pulsar.Client]]:
    """Clients of any broker; every one is closed after the test."""
    made: list[pulsar.Client] = []

    def make(broker: BrokerProcess) -> pulsar.Client:
        c = new_client(broker.service_url)
        made.append(c)
        return c

    yield make
    for c in made:
        try:
            c.close()
        except Exception:  # noqa: BLE001 - a client of a stopped broker may fail to close
            pass


@pytest.fixture
def topic() -> str:
    return f"persistent://public/default/compaction-{uuid.uuid4().hex[:12]}"


# -- helpers ------------------------------------------------------------------------------------
def _request(broker: BrokerProcess, method: str, path: str, body: object = None) -> tuple[int, object]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(broker.http_url + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _compaction_path(topic: str) -> str:
    return "/admin/v2/persistent/" + topic.split("://", 1)[1] + "/compaction"


def compact(broker: BrokerProcess, topic: str, timeout: float = 30.0) -> None:
    """Trigger a compaction through the REST API and wait for its SUCCESS."""
    code, _ = _request(broker, "PUT", _compaction_path(topic))
    assert code == 204
    wait_compacted(broker, topic, timeout)


def wait_compacted(broker: BrokerProcess, topic: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        code, status = _request(broker, "GET", _compaction_path(topic))
        assert code == 200
        assert status["status"] != "ERROR", status
        if status["status"] == "SUCCESS":
            return
        assert time.monotonic() < deadline, f"compaction still {status} after {timeout} s"
        time.sleep(0.05)


def ids_of(mid: pulsar.MessageId) -> Ids:
    return mid.ledger_id(), mid.entry_id(), mid.batch_index()


def read_all(reader: pulsar.Reader, limit: int = 100_000) -> list[pulsar.Message]:
    out = []
    while reader.has_message_available():
        out.append(reader.read_next(timeout_millis=RECEIVE_MS))
        assert len(out) <= limit
    return out


def produce_mixed(client: pulsar.Client, topic: str) -> tuple[dict[str, bytes], dict[str, Ids], int]:
    """Keyed messages of every kind; returns (latest value per key, its message id, messages sent)."""
    latest: dict[str, bytes] = {}
    latest_id: dict[str, Ids] = {}
    sent = 0

    def record(key: str | None, value: bytes, mid: pulsar.MessageId) -> None:
        nonlocal sent
        sent += 1
        if key is None:
            return
        if value:
            latest[key] = value
            latest_id[key] = ids_of(mid)
        else:
            latest.pop(key, None)
            latest_id.pop(key, None)

    plain = client.create_producer(topic, batching_enabled=False)
    for i in range(30):
        key, value = f"k{i % 12}", f"plain-{i}".encode()
        record(key, value, plain.send(value, partition_key=key))
    record(None, b"no key", plain.send(b"no key"))
    record("k3", b"", plain.send(b"", partition_key="k3"))  # a tombstone
    plain.close()

    codecs = [
        pulsar.CompressionType.LZ4,
        pulsar.CompressionType.ZLib,
        pulsar.CompressionType.ZSTD,
        pulsar.CompressionType.SNAPPY,
    ]
    for n, codec in enumerate(codecs):
        batching = pulsar.BatchingType.KeyBased if n % 2 == 0 else pulsar.BatchingType.Default
        producer = client.create_producer(
            topic,
            batching_enabled=True,
            batching_type=batching,
            compression_type=codec,
            batching_max_messages=50,
            batching_max_publish_delay_ms=50,
        )
        pending: list[tuple[str | None, bytes, list]] = []
        for i in range(40):
            key: str | None = f"k{(i * 7 + n) % 15}"
            value = f"{codec.name}-{i}".encode() if i % 13 != 5 else b""  # a few tombstones
            if i % 17 == 9:
                key = None
            box: list = []
            pending.append((key, value, box))
            kwargs = {"partition_key": key} if key is not None else {}
            producer.send_async(value, lambda res, mid, box=box: box.append((res, mid)), **kwargs)
        producer.flush()
        deadline = time.monotonic() + 10
        while not all(box for _, _, box in pending):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        for key, value, box in pending:
            res, mid = box[0]
            assert res == pulsar.Result.Ok
            record(key, value, mid)
        producer.close()
    return latest, latest_id, sent


# -- tests --------------------------------------------------------------------------------------
def test_compacted_reader_sees_latest_value_per_key_then_the_tail(
    compaction_broker: BrokerProcess, clients: Callable[[BrokerProcess], pulsar.Client], topic: str
) -> None:
    client = clients(compaction_broker)
    latest, latest_id, sent = produce_mixed(client, topic)
    assert len(latest) > 5 and len(latest) < 15  # some keys end with a tombstone
    compact(compaction_broker, topic)
    path = "/admin/v2/persistent/" + topic.split("://", 1)[1]
    stats = _request(compaction_broker, "GET", path + "/stats")[1]
    assert stats["compaction"]["lastCompactionSucceedTimestamp"] > 0
    assert stats["compaction"]["lastCompactionRemovedEventCount"] == sent - len(latest)
    compacted_ledger = _request(compaction_broker, "GET", path + "/internalStats")[1]["compactedLedger"]
    assert compacted_ledger["entries"] > 0 and compacted_ledger["size"] > 0
    tail = client.create_producer(topic, batching_enabled=False)
    tail_ids = [ids_of(tail.send(b"after-1", partition_key="k1")), ids_of(tail.send(b"after-2"))]
    tail.close()

    reader = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    got = read_all(reader)
    head, rest = got[: len(latest)], got[len(latest) :]
    assert {m.partition_key(): m.data() for m in head} == latest
    # the same message ids as when they were produced, in order
    assert [ids_of(m.message_id()) for m in head] == sorted(latest_id.values())
    assert {m.partition_key(): ids_of(m.message_id()) for m in head} == latest_id
    assert [(m.data(), ids_of(m.message_id())) for m in rest] == [
        (b"after-1", tail_ids[0]),
        (b"after-2", tail_ids[1]),
    ]
    reader.close()

    plain = client.create_reader(topic, pulsar.MessageId.earliest)
    assert len(read_all(plain)) == sent + 2
    plain.close()

    # a durable read_compacted consumer gets the same view; Shared + read_compacted is refused
    consumer = client.subscribe(
        topic, "durable-compacted", is_read_compacted=True, initial_position=pulsar.InitialPosition.Earliest
    )
    values = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(len(latest) + 2)]
    assert {m.partition_key(): m.data() for m in values[: len(latest)]} == latest
    for m in values:
        consumer.acknowledge(m)
    consumer.close()
    with pytest.raises(pulsar.PulsarException):
        client.subscribe(
            topic, "shared-compacted", consumer_type=pulsar.ConsumerType.Shared, is_read_compacted=True
        )


def test_table_view(
    compaction_broker: BrokerProcess, clients: Callable[[BrokerProcess], pulsar.Client], topic: str
) -> None:
    client = clients(compaction_broker)
    latest, _, _ = produce_mixed(client, topic)
    compact(compaction_broker, topic)
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"tail", partition_key="tail-key")
    producer.send(b"", partition_key="k1")  # deleted after the horizon
    latest["tail-key"] = b"tail"
    latest.pop("k1", None)

    view = client.create_table_view(topic)
    try:
        assert len(view) == len(latest)
        seen: dict[str, bytes] = {}
        view.for_each(lambda k, v: seen.__setitem__(k, v))
        assert seen == latest
        producer.send(b"live", partition_key="live-key")
        deadline = time.monotonic() + 10
        while view.get("live-key") != b"live":
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        view.close()
        producer.close()

    # a table view of a compacted topic whose every key was deleted is empty (and does not hang)
    empty_topic = topic + "-empty"
    p = client.create_producer(empty_topic, batching_enabled=False)
    p.send(b"v", partition_key="a")
    p.send(b"", partition_key="a")
    p.close()
    compact(compaction_broker, empty_topic)
    empty = client.create_table_view(empty_topic)
    try:
        assert len(empty) == 0
    finally:
        empty.close()


def test_size_threshold_policy(
    compaction_broker: BrokerProcess, clients: Callable[[BrokerProcess], pulsar.Client], topic: str
) -> None:
    client = clients(compaction_broker)
    path = "/admin/v2/persistent/" + topic.split("://", 1)[1]
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"x", partition_key="a")
    code, _ = _request(compaction_broker, "POST", path + "/compactionThreshold", 2000)
    assert code == 204, _
    for i in range(40):
        producer.send(b"v" * 100 + b"%d" % i, partition_key=f"k{i % 4}")
    producer.close()
    wait_compacted(compaction_broker, topic, timeout=20)
    reader = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    got = {m.partition_key(): m.data() for m in read_all(reader)}
    reader.close()
    assert got == {"a": b"x", **{f"k{i}": b"v" * 100 + b"%d" % (36 + i) for i in range(4)}}


def test_compaction_survives_a_restart(
    tmp_path: Path, clients: Callable[[BrokerProcess], pulsar.Client]
) -> None:
    topic = "persistent://public/default/compaction-restart"
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        client = clients(broker)
        latest, latest_id, _ = produce_mixed(client, topic)
        compact(broker, topic)
        client.close()
    finally:
        broker.stop()
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        client = clients(broker)
        code, status = _request(broker, "GET", _compaction_path(topic))
        assert (code, status["status"]) == (200, "SUCCESS")
        reader = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
        got = read_all(reader)
        assert {m.partition_key(): m.data() for m in got} == latest
        assert {m.partition_key(): ids_of(m.message_id()) for m in got} == latest_id
        reader.close()
        view = client.create_table_view(topic)
        try:
            assert len(view) == len(latest)
        finally:
            view.close()
    finally:
        broker.stop()


def test_produce_and_consume_during_compaction_of_a_large_topic(
    compaction_broker: BrokerProcess, clients: Callable[[BrokerProcess], pulsar.Client], topic: str
) -> None:
    client = clients(compaction_broker)
    keys = 1000
    total = 20_000
    producer = client.create_producer(
        topic, batching_enabled=False, max_pending_messages=5000, block_if_queue_full=True
    )
    for i in range(total):
        producer.send_async(b"value-%d" % i, None, partition_key=f"key-{i % keys}")
    producer.flush()

    consumer = client.subscribe(topic, "live", initial_position=pulsar.InitialPosition.Latest)
    code, _ = _request(compaction_broker, "PUT", _compaction_path(topic))
    assert code == 204
    # while it runs: producing and consuming go on, with bounded latency
    started = time.monotonic()
    for i in range(200):
        producer.send(b"live-%d" % i, partition_key=f"key-{i % keys}")
        msg = consumer.receive(timeout_millis=RECEIVE_MS)
        assert msg.data() == b"live-%d" % i
        consumer.acknowledge(msg)
    assert time.monotonic() - started < 30
    # a second trigger while one runs is refused with 409 (or it already finished)
    code, _ = _request(compaction_broker, "PUT", _compaction_path(topic))
    assert code in (204, 409)
    wait_compacted(compaction_broker, topic, timeout=60)
    producer.close()
    consumer.close()

    reader = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    got = read_all(reader)
    reader.close()
    values = {}
    for m in got:
        values[m.partition_key()] = m.data()
    assert len(values) == keys
    assert all(values[f"key-{i}"] == b"live-%d" % i for i in range(200))
    assert all(values[f"key-{i}"] == b"value-%d" % (total - keys + i) for i in range(200, keys))
    assert len(got) <= keys + 200
