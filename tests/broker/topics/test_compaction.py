"""Topic compaction without sockets: the algorithm, the compacted view, crashes, horizon, dispatch."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from magnetar.broker.errors import BrokerError
from magnetar.broker.service import BrokerService
from magnetar.broker.subscriptions.consumer import Consumer
from magnetar.broker.topics import lifecycle
from magnetar.broker.topics.compaction import LatestByKey, compact_entry
from magnetar.broker.topics.compaction_records import POINTER_PREFIX, STATUS_PREFIX
from magnetar.broker.topics.persistent import PersistentTopic as Topic
from magnetar.protocol.batch import BatchMessage, build_entry, open_entry
from magnetar.protocol.enums import CompressionType, InitialPosition, ServerError, SubType
from magnetar.protocol.schema import MessageMetadata
from magnetar.protocol.topic_name import TopicName
from magnetar.storage import CompactedView, compacted_root, longs_to_mask
from magnetar.storage.compacted import INDEX_FILE
from tests.broker.service_runner import run_service

CODECS = list(CompressionType)
TOPIC = "persistent://public/default/compacted"


# -- building entries -------------------------------------------------------------------------
def _meta(key: str | None = None, null: bool = False) -> MessageMetadata:
    meta = MessageMetadata(producer_name="p", sequence_id=0, publish_time=1)
    if key is not None:
        meta.partition_key = key
    if null:
        meta.null_value = True
    return meta


def single(
    key: str | None, value: bytes, codec: CompressionType = CompressionType.NONE, null: bool = False
) -> bytes:
    return build_entry(_meta(key, null), value, codec)


def batch(items: list[tuple[str | None, bytes]], codec: CompressionType = CompressionType.NONE) -> bytes:
    messages = [
        BatchMessage(payload=v, partition_key=k, null_value=(v == b"" and k is not None)) for k, v in items
    ]
    return build_entry(_meta(), messages, codec)


def live_messages(data: bytes, ack_set: list[int] | None = None) -> list[tuple[int, str | None, bytes]]:
    """(batch index, key, value) of the messages a consumer would get from an entry."""
    meta, messages = open_entry(data)
    mask = longs_to_mask(ack_set) if ack_set else None
    out = []
    for index, (single_meta, payload) in enumerate(messages):
        if single_meta is None:
            out.append((-1, meta.partition_key if meta.HasField("partition_key") else None, payload))
            continue
        if single_meta.compacted_out or (mask is not None and not mask >> index & 1):
            continue
        key = single_meta.partition_key if single_meta.HasField("partition_key") else None
        out.append((index, key, payload))
    return out


def compact_all(entries: list[bytes]) -> tuple[dict, list[tuple[int, bytes, list[int] | None]]]:
    scan = LatestByKey()
    for entry_id, data in enumerate(entries):
        scan.scan(entry_id, data)
    out = []
    for entry_id, data in enumerate(entries):
        kept, ack_set = compact_entry(entry_id, data, scan.latest)
        if kept is not None:
            out.append((entry_id, kept, ack_set))
    return scan.latest, out


def table(compacted: list[tuple[int, bytes, list[int] | None]]) -> dict[str, bytes]:
    result: dict[str, bytes] = {}
    for _, data, ack_set in compacted:
        for _, key, value in live_messages(data, ack_set):
            assert key is not None
            result[key] = value
    return result


# -- the algorithm -----------------------------------------------------------------------------
@pytest.mark.parametrize("codec", CODECS, ids=[c.name for c in CODECS])
def test_latest_value_per_key_with_batches_tombstones_and_keyless(codec: CompressionType) -> None:
    entries = [
        single("k1", b"v1", codec),  # 0: superseded by the batch
        batch([("k2", b"a"), ("k1", b"v2"), (None, b"no key"), ("k3", b"c")], codec),  # 1
        single("k2", b"b", codec),  # 2: latest k2
        single("k3", b"", codec, null=True),  # 3: tombstone of k3
        batch([("k4", b"d"), ("k5", b"e")], codec),  # 4
        single(None, b"keyless", codec),  # 5: dropped
        batch([("k5", b"")], codec),  # 6: k5 deleted by an empty payload
        batch([("k6", b"f"), ("k7", b"g")], codec),  # 7: all survive
        single("k8", b"", codec),  # 8: empty payload without null_value: a tombstone too
    ]
    latest, compacted = compact_all(entries)
    assert latest == {"k1": (1, 1), "k2": (2, -1), "k4": (4, 0), "k6": (7, 0), "k7": (7, 1)}
    assert [entry_id for entry_id, _, _ in compacted] == [1, 2, 4, 7]
    by_id = {entry_id: (data, ack_set) for entry_id, data, ack_set in compacted}
    # a partly superseded batch: re-encoded with the same codec, superseded messages compacted out
    data, ack_set = by_id[1]
    assert longs_to_mask(ack_set) == 0b0010
    meta, messages = open_entry(data)
    assert meta.num_messages_in_batch == 4
    assert meta.compression == codec
    assert [m.compacted_out for m, _ in messages] == [True, False, True, True]
    assert [p for _, p in messages] == [b"", b"v2", b"", b""]
    assert live_messages(data, ack_set) == [(1, "k1", b"v2")]
    # kept whole: the original bytes
    assert by_id[2] == (entries[2], None)
    assert by_id[7] == (entries[7], None)
    assert table(compacted) == {"k1": b"v2", "k2": b"b", "k4": b"d", "k6": b"f", "k7": b"g"}


def test_tombstone_then_new_value_and_recompaction_is_stable() -> None:
    entries = [
        single("a", b"1"),
        single("a", b"", null=True),
        single("a", b"2"),
        batch([("b", b"x"), ("a", b"3")]),
    ]
    latest, compacted = compact_all(entries)
    assert latest == {"a": (3, 1), "b": (3, 0)}
    assert table(compacted) == {"a": b"3", "b": b"x"}
    # compacting the compacted output again keeps it as it is
    scan = LatestByKey()
    for entry_id, data, _ in compacted:
        scan.scan(entry_id, data)
    again = [compact_entry(entry_id, data, scan.latest) for entry_id, data, _ in compacted]
    assert [kept for kept, _ in again] == [data for _, data, _ in compacted]


def test_a_batch_whose_messages_all_go_is_dropped() -> None:
    entries = [batch([("a", b"1"), ("b", b"1")], CompressionType.LZ4), single("a", b"2"), single("b", b"2")]
    _, compacted = compact_all(entries)
    assert [entry_id for entry_id, _, _ in compacted] == [1, 2]


# -- a broker service on a temporary directory ----------------------------------------------
async def load(service: BrokerService, name: str = TOPIC) -> Topic:
    return await service.load_topic(TopicName.parse(name))


def append(topic: Topic, *entries: bytes) -> list[int]:
    ids = [topic.ledger.append(e) for e in entries]
    topic.last_readable_id = topic.ledger.last_entry_id
    return ids


def view_table(view: CompactedView) -> dict[str, bytes]:
    return table([(e.entry_id, e.data, e.ack_set) for e in view.read_from(0, 1_000_000, None)])


def status(service: BrokerService, name: str = TOPIC) -> dict:
    raw = service.metadata.get_kv(STATUS_PREFIX + name)
    return json.loads(raw) if raw else {}


def test_compaction_through_the_service_keeps_original_ids_and_is_incremental(tmp_path: Path) -> None:
    async def body(service: BrokerService) -> None:
        topic = await load(service)
        await service.compact(topic.topic_name)  # empty topic: nothing to do, still a success
        assert topic.compacted is None and status(service)["status"] == "SUCCESS"
        append(
            topic,
            single("a", b"1"),
            batch([("b", b"1"), ("a", b"2")], CompressionType.ZSTD),
            single("c", b"1"),
            single("c", b"", null=True),
        )
        await service.compact(topic.topic_name)
        view = topic.compacted
        assert view is not None and view.horizon == 3
        assert list(view.ids) == [1]
        assert view_table(view) == {"a": b"2", "b": b"1"}
        assert status(service) == {"status": "SUCCESS", "lastError": ""}
        pointer = json.loads(service.metadata.get_kv(POINTER_PREFIX + TOPIC))
        assert (
            pointer["horizon"] == 3
            and (compacted_root(tmp_path, topic.ledger_id) / str(pointer["dir"])).is_dir()
        )
        first_dir = view.directory
        # the next compaction starts from the view and the entries after its horizon
        append(topic, single("b", b"2"), single("d", b"1"))
        await service.compact(topic.topic_name)
        view = topic.compacted
        assert view.horizon == 5 and list(view.ids) == [1, 4, 5]
        assert view_table(view) == {"a": b"2", "b": b"2", "d": b"1"}
        assert view.last_message() == (5, -1)
        await asyncio.sleep(0.1)
        assert not first_dir.exists()  # the previous view is deleted after the switch
        assert [p.name for p in compacted_root(tmp_path, topic.ledger_id).iterdir()] == [view.name]

    run_service(tmp_path, body)


def test_a_failure_mid_way_keeps_the_old_view(tmp_path: Path) -> None:
    async def body(service: BrokerService) -> None:
        topic = await load(service)
        append(topic, *[single(f"k{i % 10}", b"old%d" % i) for i in range(50)])
        await service.compact(topic.topic_name)
        old = topic.compacted
        expected = view_table(old)
        append(topic, *[single(f"k{i % 10}", b"new%d" % i) for i in range(3000)])

        def boom(writer: object) -> None:
            raise RuntimeError("disk on fire")

        service.compactor.after_chunk_written = boom
        with pytest.raises(RuntimeError, match="disk on fire"):
            await service.compact(topic.topic_name)
        assert topic.compacted is old and view_table(old) == expected
        assert status(service)["status"] == "ERROR" and "disk on fire" in status(service)["lastError"]
        assert json.loads(service.metadata.get_kv(POINTER_PREFIX + TOPIC))["dir"] == int(old.name)
        assert topic.compaction_pin is None
        for _ in range(400):  # the half-written ledger is removed by the worker: wait for it (20 s at most)
            if [p.name for p in compacted_root(tmp_path, topic.ledger_id).iterdir()] == [old.name]:
                break
            await asyncio.sleep(0.05)
        assert [p.name for p in compacted_root(tmp_path, topic.ledger_id).iterdir()] == [old.name]

        # a failure of the switch itself: the new ledger is complete but never used
        service.compactor.after_chunk_written = None
        real_put = service.metadata.put_kv

        def failing_put(key: str, value: bytes) -> None:
            if key.startswith(POINTER_PREFIX):
                raise OSError("metadata store unavailable")
            real_put(key, value)

        service.metadata.put_kv = failing_put  # type: ignore[method-assign]
        with pytest.raises(OSError):
            await service.compact(topic.topic_name)
        service.metadata.put_kv = real_put  # type: ignore[method-assign]
        assert topic.compacted is old
        for _ in range(400):  # wait for the worker's clean-up (20 s at most)
            if [p.name for p in compacted_root(tmp_path, topic.ledger_id).iterdir()] == [old.name]:
                break
            await asyncio.sleep(0.05)
        assert [p.name for p in compacted_root(tmp_path, topic.ledger_id).iterdir()] == [old.name]

    run_service(tmp_path, body)


def test_orphans_of_a_crash_are_removed_on_load(tmp_path: Path) -> None:
    async def first(service: BrokerService) -> None:
        topic = await load(service)
        append(topic, single("a", b"1"), single("a", b"2"))
        await service.compact(topic.topic_name)
        root = compacted_root(tmp_path, topic.ledger_id)
        # what a crash in the middle of the next compaction leaves: a partial ledger, RUNNING
        shutil.copytree(topic.compacted.directory, root / "7")
        (root / "7" / INDEX_FILE).unlink()
        service.metadata.put_kv(
            STATUS_PREFIX + TOPIC, json.dumps({"status": "RUNNING", "lastError": ""}).encode()
        )

    async def second(service: BrokerService) -> None:
        assert status(service)["status"] == "ERROR"
        topic = await load(service)
        root = compacted_root(tmp_path, topic.ledger_id)
        assert [p.name for p in root.iterdir()] == [topic.compacted.name]
        assert view_table(topic.compacted) == {"a": b"2"}

    run_service(tmp_path, first)
    run_service(tmp_path, second)


# -- reading: horizon, subscriptions, last message id, retention -----------------------------
class FakeConnection:
    writable = True

    def __init__(self) -> None:
        self.sent: list[tuple[int, bytes, list[int] | None]] = []

    def send_message(self, consumer_id, ledger_id, partition, entry, redelivery_count, ack_set) -> None:  # noqa: ANN001
        self.sent.append((entry.entry_id, entry.data, ack_set))

    def consumer_closed_by_broker(self, consumer_id: int) -> None:
        pass


def attach(
    topic: Topic, name: str, read_compacted: bool, sub_type: SubType = SubType.Exclusive
) -> FakeConnection:
    sub = topic.subscribe(
        name,
        durable=False,
        initial_position=InitialPosition.Earliest,
        start_message_id=None,
        read_compacted=read_compacted,
    )
    conn = FakeConnection()
    consumer = Consumer(conn, 1, name, sub, sub_type, read_compacted=read_compacted)  # type: ignore[arg-type]
    sub.add_consumer(consumer)
    sub.flow(consumer, 10_000)
    return conn


def received(conn: FakeConnection) -> list[tuple[int, str | None, bytes]]:
    out = []
    for entry_id, data, ack_set in conn.sent:
        out.extend((entry_id, key, value) for _, key, value in live_messages(data, ack_set))
    return out


def test_read_compacted_sees_the_view_then_the_tail(tmp_path: Path) -> None:
    async def body(service: BrokerService) -> None:
        topic = await load(service)
        append(
            topic,
            single("a", b"1"),
            batch([("b", b"1"), ("a", b"2"), ("c", b"1")]),
            single("c", b"", null=True),
        )
        await service.compact(topic.topic_name)
        append(topic, single("b", b"2"), single(None, b"tail"))
        compacted_conn = attach(topic, "compacted", True)
        plain_conn = attach(topic, "plain", False)
        deadline = asyncio.get_running_loop().time() + 10
        while (len(received(compacted_conn)) < 4 or len(received(plain_conn)) < 7) and (
            asyncio.get_running_loop().time() < deadline
        ):
            await asyncio.sleep(0.01)  # the view is read on the read thread: delivery takes a few turns
        assert received(compacted_conn) == [
            (1, "b", b"1"),
            (1, "a", b"2"),
            (3, "b", b"2"),
            (4, None, b"tail"),
        ]
        assert len(received(plain_conn)) == 7
        # what GET_LAST_MESSAGE_ID answers
        sub = topic.subscriptions["compacted"]
        assert sub.last_message_id(True) == (topic.ledger_id, 4, -1)

    run_service(tmp_path, body)


def test_last_message_id_of_a_compacted_reader_at_the_horizon(tmp_path: Path) -> None:
    async def body(service: BrokerService) -> None:
        topic = await load(service)
        append(
            topic,
            batch(
                [
                    ("a", b"1"),
                    ("b", b"1"),
                    (
                        "a",
                        b"",
                    ),
                ]
            ),
            single("b", b"", null=True),
        )
        await service.compact(topic.topic_name)
        attach(topic, "r", True)
        sub = topic.subscriptions["r"]
        # everything is deleted: the compacted reader has nothing to wait for
        assert len(topic.compacted) == 0
        assert sub.last_message_id(True) == (topic.ledger_id, -1, -1)
        assert sub.last_message_id(False) == (topic.ledger_id, 1, -1)
        append(topic, batch([("x", b"1"), ("y", b"1"), ("x", b"2")]))
        await service.compact(topic.topic_name)
        # the last survivor of the last compacted batch, not its last (compacted out) message
        assert sub.last_message_id(True) == (topic.ledger_id, 2, 2)
        append(topic, batch([("y", b"2"), ("x", b"3")]))
        await service.compact(topic.topic_name)
        assert sub.last_message_id(True) == (topic.ledger_id, 3, 1)

    run_service(tmp_path, body)


def test_read_compacted_is_refused_on_shared_subscriptions(tmp_path: Path) -> None:
    async def body(service: BrokerService) -> None:
        topic = await load(service)
        with pytest.raises(BrokerError) as info:
            attach(topic, "s", True, SubType.Shared)
        assert info.value.code == ServerError.NotAllowedError

    run_service(tmp_path, body)


def test_retention_keeps_what_compaction_has_not_read(tmp_path: Path) -> None:
    async def body(service: BrokerService) -> None:
        topic = await load(service)
        append(topic, *[single(f"k{i % 5}", b"x" * 200 + b"%d" % i) for i in range(100)])
        assert topic.trim_position() == 100  # no subscription, never compacted: everything may go
        await service.compact(topic.topic_name)
        assert topic.trim_position() == 100
        append(topic, *[single(f"k{i % 5}", b"y" * 200) for i in range(100)])
        assert topic.trim_position() == 100  # the entries after the horizon wait for a compaction
        service.check_lifecycle(topic)
        assert topic.ledger.first_entry_id <= 100 < topic.ledger.first_entry_id + topic.ledger.entry_count
        assert topic.ledger.first_entry_id > 0  # compacted entries were released
        # a compacted reader still starts at the beginning of the view
        conn = attach(topic, "r", True)
        deadline = asyncio.get_running_loop().time() + 10
        while len(received(conn)) < 105 and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)  # the view is read on the read thread: delivery takes a few turns
        got = received(conn)
        assert got[:5] == [(95 + i, f"k{i}", b"x" * 200 + b"%d" % (95 + i)) for i in range(5)]
        assert len(got) == 105

    run_service(tmp_path, body, segment_max_bytes=4096, segment_min_rollover_minutes=0)


def test_size_threshold_policy_triggers_compaction(tmp_path: Path) -> None:
    async def body(service: BrokerService) -> None:
        topic = await load(service)
        append(topic, *[single(f"k{i % 3}", b"v" * 100) for i in range(50)])
        assert not lifecycle.compaction_due(topic)  # no threshold set
        service.metadata.set_namespace_policies("public/default", {"compaction_threshold": 1000})
        service.policies_changed("public/default")
        assert topic.policies.compaction_threshold == 1000 and lifecycle.compaction_due(topic)
        service.check_lifecycle(topic)
        task = service.compactor.running[TOPIC]
        await task
        assert topic.compacted is not None and topic.compacted.horizon == 49
        assert not lifecycle.compaction_due(topic)

    run_service(tmp_path, body)


def test_deleting_a_topic_removes_its_compacted_ledgers(tmp_path: Path) -> None:
    async def body(service: BrokerService) -> None:
        topic = await load(service)
        append(topic, single("a", b"1"))
        await service.compact(topic.topic_name)
        root = compacted_root(tmp_path, topic.ledger_id)
        assert root.is_dir()
        await service.delete_topic_storage(TOPIC)
        await asyncio.sleep(0.1)
        assert not root.exists()
        assert service.metadata.get_kv(POINTER_PREFIX + TOPIC) is None

    run_service(tmp_path, body)
