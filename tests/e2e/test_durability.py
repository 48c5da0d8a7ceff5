"""Restarts and crashes of a dedicated broker: what was acknowledged stays, nothing is lost.

Each test runs its own broker on a data directory of its own and restarts it on the same
directory (and the same port, so that clients created before can reconnect).
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import threading
import time
from collections.abc import Callable

import pulsar
import pytest

from magnetar.storage import CursorState
from magnetar.testing import BrokerProcess

from .helpers import RECEIVE_MS, assert_nothing_more, close_after_kill


def _payload(i: int, size: int = 0) -> bytes:
    """A payload whose content can be checked from its index alone (at least ``size`` bytes)."""
    head = f"msg-{i:05d}:".encode()
    digest = hashlib.sha256(head).digest()
    return head + digest * max(1 + i % 4, -(-(size - len(head)) // len(digest)))


def _index_of(payload: bytes, size: int = 0) -> int:
    """The index a payload was made from; fails on any corruption."""
    i = int(payload[4:9])
    assert payload == _payload(i, size), f"corrupted payload {payload[:40]!r}"
    return i


def _wait_persisted(
    broker: BrokerProcess, topic: str, subscription: str, done: Callable[[CursorState], bool], timeout: float = 20.0
) -> None:
    """Wait until the cursor persisted in the broker's metadata database satisfies ``done``."""
    db = broker.data_dir / "metadata.db" / "metadata.db"
    deadline = time.monotonic() + timeout
    while True:
        try:
            with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
                row = conn.execute(
                    "SELECT state FROM cursors WHERE topic = ? AND subscription = ?", (topic, subscription)
                ).fetchone()
        except sqlite3.Error:
            row = None
        if row is not None and done(CursorState.from_bytes(row[0])):
            return
        assert time.monotonic() < deadline, "the acknowledgements were never persisted"
        time.sleep(0.05)


def _restart(old: BrokerProcess, start: Callable[..., BrokerProcess], *, kill: bool) -> BrokerProcess:
    if kill:
        old.kill()
    else:
        assert old.stop() == 0, old.log()
    return start(old.data_dir, port=old.port, http_port=old.http_port)


def test_restart_keeps_messages_and_acks(
    dedicated_broker: Callable[..., BrokerProcess], client_factory: Callable[[str], pulsar.Client]
) -> None:
    broker = dedicated_broker()
    topic = "persistent://public/default/restart"
    client = client_factory(broker.service_url)
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic)
    n, k = 500, 180
    ids: list = [None] * n

    def sent(i: int) -> Callable[[pulsar.Result, pulsar.MessageId], None]:
        def callback(res: pulsar.Result, mid: pulsar.MessageId) -> None:
            assert res == pulsar.Result.Ok
            ids[i] = mid

        return callback

    for i in range(n):
        producer.send_async(_payload(i), sent(i))
    producer.flush()
    received = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(n)]
    assert [_index_of(m.data()) for m in received] == list(range(n))
    for msg in received[:k]:
        consumer.acknowledge(msg)
    consumer.close()  # the acks are on the broker once the close is answered
    client.close()

    broker = _restart(broker, dedicated_broker, kill=False)
    client = client_factory(broker.service_url)
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    back = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(n - k)]
    assert [_index_of(m.data()) for m in back] == list(range(k, n))
    assert [m.message_id() for m in back] == ids[k:]
    assert_nothing_more(consumer)

    producer = client.create_producer(topic)
    new_id = producer.send(b"after-restart")
    assert new_id > ids[-1]
    msg = consumer.receive(timeout_millis=RECEIVE_MS)
    assert msg.data() == b"after-restart"
    assert msg.message_id() == new_id

    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    everything = [reader.read_next(timeout_millis=RECEIVE_MS).data() for _ in range(n + 1)]
    assert everything == [_payload(i) for i in range(n)] + [b"after-restart"]


def test_clients_reconnect_across_a_restart(
    dedicated_broker: Callable[..., BrokerProcess], client_factory: Callable[[str], pulsar.Client]
) -> None:
    broker = dedicated_broker()
    topic = "persistent://public/default/reconnect"
    client = client_factory(broker.service_url)
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, send_timeout_millis=15_000)
    producer.send(b"before")
    msg = consumer.receive(timeout_millis=RECEIVE_MS)
    assert msg.data() == b"before"
    consumer.acknowledge(msg)
    time.sleep(0.3)  # the grouped ack goes out within 100 ms

    broker = _restart(broker, dedicated_broker, kill=False)
    producer.send(b"after")  # waits for the producer to reconnect
    got = consumer.receive(timeout_millis=RECEIVE_MS)
    assert got.data() == b"after"
    consumer.acknowledge(got)
    assert_nothing_more(consumer)


@pytest.mark.parametrize("size", [0, 1024], ids=["small", "1KiB"])
def test_kill_9_during_async_produce_loses_no_acknowledged_message(
    dedicated_broker: Callable[..., BrokerProcess], client_factory: Callable[[str], pulsar.Client], size: int
) -> None:
    """Sends of up to 500 in flight keep the group commit's rounds pipelined (one written while the
    one before fdatasyncs); the kill lands mid-stream, whatever round it cuts."""
    broker = dedicated_broker()
    topic = "persistent://public/default/crash-produce"
    client = client_factory(broker.service_url)
    producer = client.create_producer(
        topic, send_timeout_millis=20_000, block_if_queue_full=True, max_pending_messages=500
    )
    n, kill_at = 3000, 1200
    lock = threading.Lock()
    results: dict[int, pulsar.Result] = {}
    acked_before_kill: set[int] = set()
    killed = threading.Event()
    all_done = threading.Event()

    def sent(i: int) -> Callable[[pulsar.Result, pulsar.MessageId], None]:
        def callback(res: pulsar.Result, _mid: pulsar.MessageId) -> None:
            with lock:
                results[i] = res
                if res == pulsar.Result.Ok and not killed.is_set():
                    acked_before_kill.add(i)
                if len(results) == n:
                    all_done.set()

        return callback

    for i in range(n):
        if i == kill_at:
            with lock:
                broker.kill()
                killed.set()
            broker = dedicated_broker(broker.data_dir, port=broker.port, http_port=broker.http_port)
        producer.send_async(_payload(i, size), sent(i))
    producer.flush()
    assert all_done.wait(30), f"only {len(results)} of {n} sends completed"

    ok = {i for i, res in results.items() if res == pulsar.Result.Ok}
    assert acked_before_kill, "the kill came before any receipt: nothing was tested"
    assert len(acked_before_kill) < n
    # the broker was back long before the send timeout: every send eventually succeeded
    assert ok == set(range(n)), sorted(set(range(n)) - ok)[:10]

    reader_client = client_factory(broker.service_url)
    reader = reader_client.create_reader(topic, pulsar.MessageId.earliest)
    stored: list[int] = []
    deadline = time.monotonic() + 60
    while reader.has_message_available() and time.monotonic() < deadline:
        stored.append(_index_of(reader.read_next(timeout_millis=RECEIVE_MS).data(), size))

    assert set(stored) >= ok
    # every message receipted before the kill is stored exactly once
    counts: dict[int, int] = {}
    for i in stored:
        counts[i] = counts.get(i, 0) + 1
    assert all(counts[i] == 1 for i in acked_before_kill)
    # duplicates only come from the producer resending what was not receipted before the kill
    duplicated = {i for i, c in counts.items() if c > 1}
    assert not duplicated & acked_before_kill
    assert max(counts.values()) <= 2
    # order: the messages stored before the crash, then the resent tail, each run contiguous
    drops = [j for j in range(1, len(stored)) if stored[j] <= stored[j - 1]]
    assert len(drops) <= 1, drops[:5]
    runs = [stored[: drops[0]], stored[drops[0] :]] if drops else [stored]
    for run in runs:
        assert run == list(range(run[0], run[0] + len(run)))
    assert stored[0] == 0 and stored[-1] == n - 1


def test_kill_9_redelivers_only_recent_acks(
    dedicated_broker: Callable[..., BrokerProcess], client_factory: Callable[[str], pulsar.Client]
) -> None:
    broker = dedicated_broker()
    topic = "persistent://public/default/crash-consume"
    client = client_factory(broker.service_url)
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic)
    n = 200
    for i in range(n):
        producer.send_async(_payload(i), None)
    producer.flush()
    received = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(n)]
    assert [_index_of(m.data()) for m in received] == list(range(n))

    for msg in received[:100]:
        consumer.acknowledge(msg)
    _wait_persisted(broker, topic, "sub", lambda state: state.mark_delete >= 99)
    for msg in received[100:150]:
        consumer.acknowledge(msg)
    time.sleep(0.2)  # these acks reach the broker but need not be persisted yet
    broker.kill()
    close_after_kill(client)

    broker = dedicated_broker(broker.data_dir)
    client = client_factory(broker.service_url)
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    back: list[int] = []
    while True:
        try:
            back.append(_index_of(consumer.receive(timeout_millis=1500).data()))
        except pulsar.Timeout:
            break
        if len(back) > n:
            break
    # nothing acked 2 s before the kill comes back; everything never acked does
    assert not set(back) & set(range(100)), sorted(set(back) & set(range(100)))[:10]
    assert set(back) >= set(range(150, n))
    assert set(back) <= set(range(100, n))
    assert back == sorted(back)
    assert len(back) == len(set(back))


def test_individual_and_batch_index_acks_survive_kill_9(
    dedicated_broker: Callable[..., BrokerProcess], client_factory: Callable[[str], pulsar.Client]
) -> None:
    broker = dedicated_broker()
    topic = "persistent://public/default/crash-ack-holes"
    client = client_factory(broker.service_url)
    consumer = client.subscribe(
        topic, "sub", consumer_type=pulsar.ConsumerType.Shared, batch_index_ack_enabled=True
    )
    single = client.create_producer(topic)
    batcher = client.create_producer(
        topic, batching_enabled=True, batching_max_messages=10, batching_max_publish_delay_ms=1000
    )
    for i in range(20):
        single.send(_payload(i))
    for i in range(20, 40):
        batcher.send_async(_payload(i), None)
    batcher.flush()
    received = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(40)]
    assert [_index_of(m.data()) for m in received] == list(range(40))
    assert len({m.message_id().entry_id() for m in received[20:]}) == 2

    acked = set(range(0, 7)) | {9, 12, 13, 19} | {20, 22, 29} | set(range(30, 40))
    for i in sorted(acked):
        consumer.acknowledge(received[i])
    singles = [i for i in acked if i < 20]
    _wait_persisted(broker, topic, "sub", lambda state: all(state.is_acked(i) for i in singles) and state.is_acked(21))
    broker.kill()
    close_after_kill(client)

    broker = dedicated_broker(broker.data_dir)
    client = client_factory(broker.service_url)
    consumer = client.subscribe(
        topic, "sub", consumer_type=pulsar.ConsumerType.Shared, batch_index_ack_enabled=True
    )
    expected = [i for i in range(40) if i not in acked]
    back = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in expected]
    assert [_index_of(m.data()) for m in back] == expected
    assert [m.message_id() for m in back] == [received[i].message_id() for i in expected]
    assert_nothing_more(consumer)


def test_many_segments_across_restart_and_trimming(
    dedicated_broker: Callable[..., BrokerProcess], client_factory: Callable[[str], pulsar.Client]
) -> None:
    env = {"MAGNETAR_SEGMENT_MAX_BYTES": "4096", "MAGNETAR_SEGMENT_MIN_ROLLOVER_MINUTES": "0"}
    broker = dedicated_broker(env=env)
    topic = "persistent://public/default/segments"
    client = client_factory(broker.service_url)
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Exclusive)
    producer = client.create_producer(topic)
    n = 300
    for i in range(n):
        producer.send_async(_payload(i), None)
    producer.flush()
    first_pass = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(n)]
    assert [_index_of(m.data()) for m in first_pass] == list(range(n))
    assert [m.message_id().entry_id() for m in first_pass] == list(range(n))
    client.close()
    broker.stop()  # nothing acknowledged: every segment is kept

    broker = dedicated_broker(broker.data_dir, env=env)
    client = client_factory(broker.service_url)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert [_index_of(reader.read_next(timeout_millis=RECEIVE_MS).data()) for _ in range(n)] == list(range(n))
    reader.close()

    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Exclusive)
    again = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(n)]
    assert [_index_of(m.data()) for m in again] == list(range(n))
    # seek by time lands in the middle of the segment chain
    consumer.seek(again[150].publish_timestamp())
    first = consumer.receive(timeout_millis=RECEIVE_MS)
    start = _index_of(first.data())
    assert start <= 150 and again[start].publish_timestamp() == again[150].publish_timestamp()
    rest = [_index_of(consumer.receive(timeout_millis=RECEIVE_MS).data()) for _ in range(n - 1 - start)]
    assert [start, *rest] == list(range(start, n))
    consumer.acknowledge_cumulative(again[n - 1].message_id())

    # once the cursor is persisted, acknowledged segments are deleted: a reader from the
    # earliest position starts at a later entry, and what is left is an unbroken tail
    deadline = time.monotonic() + 10
    while True:
        time.sleep(0.5)
        tail_reader = client.create_reader(topic, pulsar.MessageId.earliest)
        tail = []
        while tail_reader.has_message_available():
            tail.append(tail_reader.read_next(timeout_millis=RECEIVE_MS))
        tail_reader.close()
        if len(tail) < n or time.monotonic() > deadline:
            break
    assert len(tail) < n, "no segment was ever trimmed"
    indexes = [_index_of(m.data()) for m in tail]
    assert indexes == list(range(n - len(tail), n))
    assert [m.message_id().entry_id() for m in tail] == indexes

    producer = client.create_producer(topic)
    assert producer.send(b"next").entry_id() == n


def _stored_state(broker: BrokerProcess, topic: str, subscription: str) -> CursorState:
    db = broker.data_dir / "metadata.db" / "metadata.db"
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        row = conn.execute(
            "SELECT state FROM cursors WHERE topic = ? AND subscription = ?", (topic, subscription)
        ).fetchone()
    return CursorState.from_bytes(row[0])


def test_kill_9_in_a_steady_ack_stream_redelivers_only_the_last_second_of_acks(
    dedicated_broker: Callable[..., BrokerProcess], client_factory: Callable[[str], pulsar.Client]
) -> None:
    """Cursor rounds at most once a second (mark_delete_rate_limit, Pulsar's default): a kill -9 in the
    middle of acknowledgements coming every 5 ms redelivers exactly what the last round had not
    persisted, every message never acked among them, and nothing acked 1.5 s before the kill."""
    broker = dedicated_broker()
    topic = "persistent://public/default/crash-ack-stream"
    client = client_factory(broker.service_url)
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic, batching_enabled=False)
    n = 900  # (under the producer's 1,000 pending sends)
    for i in range(n):
        producer.send_async(_payload(i), None)
    producer.flush()
    received = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(n)]
    assert [_index_of(m.data()) for m in received] == list(range(n))

    acked_at: list[float] = []
    started = time.monotonic()
    for msg in received:
        consumer.acknowledge(msg)
        acked_at.append(time.monotonic())
        if acked_at[-1] - started >= 2.5:
            break
        time.sleep(0.005)
    broker.kill()
    killed_at = time.monotonic()
    close_after_kill(client)
    acked = len(acked_at)
    assert acked < n, "the stream ended before the kill: nothing was tested"
    stored = _stored_state(broker, topic, "sub")
    # every ack made 1.5 s before the kill (one round interval, the client's 100 ms grouping, slack) is stored
    old_enough = sum(1 for t in acked_at if t <= killed_at - 1.5)
    assert stored.mark_delete >= old_enough - 1, (stored.mark_delete, old_enough, acked)
    assert stored.mark_delete < acked

    broker = dedicated_broker(broker.data_dir)
    client = client_factory(broker.service_url)
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    expected = [i for i in range(n) if not stored.is_acked(i)]
    back = [_index_of(consumer.receive(timeout_millis=RECEIVE_MS).data()) for _ in expected]
    assert back == expected  # exactly what the last round left: the unacked, then the recent acks
    assert set(range(acked, n)) <= set(back), "a message never acknowledged was lost"
    assert_nothing_more(consumer)
