"""Retention with the official client: acknowledged data is released a whole sealed segment at a
time once every durable subscription acknowledged it (no retention), kept for readers and new
subscriptions with infinite retention, and kept up to the size limit with size-based retention.

The broker rolls segments at 4096 bytes, so a 1000-byte message is one record of a bit more
than 1000 bytes and a segment holds 3 of them; every expectation below is stated in whole
segment files, read from the broker's data directory (``ledgers/<ledger id>/<base>.log``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pulsar
import pytest

from magnetar.testing import BrokerProcess

from .lifecycle_helpers import (
    CHECKS_PASS_S,
    FAST_LIFECYCLE,
    Admin,
    ClientPool,
    entry_ids,
    read_all,
    segment_files,
    start_broker,
    wait_until,
)

MiB = 1024 * 1024
PAD = b"r" * 996

#: long enough for a cursor flush (0.2 s), the trim after it and two lifecycle checks
SETTLE_S = 0.2 + CHECKS_PASS_S


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = start_broker(tmp_path_factory, "retention-broker", FAST_LIFECYCLE)
    yield proc
    proc.stop()


@pytest.fixture
def clients() -> Iterator[ClientPool]:
    pool = ClientPool()
    yield pool
    pool.close()


def payload(i: int) -> bytes:
    return b"%04d" % i + PAD


def produce(client: pulsar.Client, topic: str, n: int) -> list[pulsar.MessageId]:
    """n messages of 1000 bytes, one entry each (no batching); returns their ids in order."""
    producer = client.create_producer(topic, batching_enabled=False, block_if_queue_full=True)
    ids: list[pulsar.MessageId | None] = [None] * n
    errors = []

    def done(i: int):  # noqa: ANN202
        def callback(res: pulsar.Result, mid: pulsar.MessageId) -> None:
            if res == pulsar.Result.Ok:
                ids[i] = mid
            else:
                errors.append(res)

        return callback

    for i in range(n):
        producer.send_async(payload(i), done(i))
    producer.flush()
    producer.close()
    assert not errors
    assert [m.entry_id() for m in ids] == list(range(n))  # type: ignore[union-attr]
    return ids  # type: ignore[return-value]


def sealed_and_active(files: dict[int, int]) -> tuple[list[int], int]:
    bases = list(files)
    return bases[:-1], bases[-1]


def test_acknowledged_segments_are_released_once_every_subscription_acked(
    broker: BrokerProcess, clients
) -> None:
    """No retention: nothing goes while one subscription still needs it; then exactly the sealed
    segments below the slowest subscription's mark-delete position go; the active one stays."""
    admin = Admin(broker)
    ns = admin.new_namespace("noretention")
    topic = f"persistent://{ns}/t"
    client = clients(broker)
    fast = client.subscribe(topic, "fast", receiver_queue_size=100)
    slow = client.subscribe(topic, "slow", receiver_queue_size=100)
    n = 40
    ids = produce(client, topic, n)
    ledger = ids[0].ledger_id()
    files = segment_files(broker, ledger)
    sealed, active = sealed_and_active(files)
    assert len(sealed) >= 10  # 3 records per 4096-byte segment
    assert admin.stats(topic)["storageSize"] == sum(files.values())

    # one subscription acknowledges everything: nothing may go, the other still needs it all
    for i in range(n):
        msg = fast.receive(timeout_millis=10_000)
        assert msg.data() == payload(i)
        fast.acknowledge(msg)
    wait_until(lambda: admin.backlog(topic, "fast") == 0, 10, "fast subscription fully acked")
    time.sleep(SETTLE_S)
    assert segment_files(broker, ledger) == files

    # the slow one acknowledges entries 0..17: exactly the segments whose last entry is < 18 go
    slow_msgs = [slow.receive(timeout_millis=10_000) for _ in range(n)]
    assert [m.data() for m in slow_msgs] == [payload(i) for i in range(n)]
    slow.acknowledge_cumulative(slow_msgs[17])
    bases = list(files)
    kept = {b: files[b] for i, b in enumerate(bases) if i == len(bases) - 1 or bases[i + 1] - 1 >= 18}
    assert len(kept) < len(files)
    wait_until(lambda: segment_files(broker, ledger) == kept, 10, f"segments {list(kept)} left")
    first_kept = next(iter(kept))
    assert first_kept <= 18
    assert admin.stats(topic)["storageSize"] == sum(kept.values())
    seen = read_all(client, topic)
    assert entry_ids(seen) == list(range(first_kept, n))
    assert [m.data() for m in seen] == [payload(i) for i in range(first_kept, n)]

    # everything acknowledged by both: only the active segment is left
    slow.acknowledge_cumulative(slow_msgs[-1])
    wait_until(
        lambda: segment_files(broker, ledger) == {active: files[active]}, 10, "only the active segment left"
    )
    assert admin.stats(topic)["storageSize"] == files[active]
    seen = read_all(client, topic)
    assert entry_ids(seen) == list(range(active, n))
    assert [m.data() for m in seen] == [payload(i) for i in range(active, n)]
    late = client.subscribe(topic, "late", initial_position=pulsar.InitialPosition.Earliest)
    got = [late.receive(timeout_millis=10_000) for _ in range(n - active)]
    assert entry_ids(got) == list(range(active, n))
    with pytest.raises(pulsar.Timeout):
        late.receive(timeout_millis=1_000)


def test_infinite_retention_keeps_acknowledged_messages(broker: BrokerProcess, clients) -> None:
    """retention -1 / -1: acknowledged messages stay readable by readers and new subscriptions."""
    admin = Admin(broker)
    ns = admin.new_namespace("infinite")
    admin.set_namespace_policy(ns, "retention", {"retentionTimeInMinutes": -1, "retentionSizeInMB": -1})
    topic = f"persistent://{ns}/t"
    client = clients(broker)
    consumer = client.subscribe(topic, "s", receiver_queue_size=100)
    n = 40
    ids = produce(client, topic, n)
    ledger = ids[0].ledger_id()
    files = segment_files(broker, ledger)
    assert len(files) >= 11
    for i in range(n):
        msg = consumer.receive(timeout_millis=10_000)
        assert msg.data() == payload(i)
        consumer.acknowledge(msg)
    wait_until(lambda: admin.backlog(topic, "s") == 0, 10, "subscription fully acked")
    time.sleep(SETTLE_S)
    assert segment_files(broker, ledger) == files
    assert admin.stats(topic)["storageSize"] == sum(files.values())

    seen = read_all(client, topic)
    assert [m.data() for m in seen] == [payload(i) for i in range(n)]
    assert entry_ids(seen) == list(range(n))
    late = client.subscribe(topic, "late", initial_position=pulsar.InitialPosition.Earliest)
    got = [late.receive(timeout_millis=10_000) for _ in range(n)]
    assert [m.data() for m in got] == [payload(i) for i in range(n)]
    with pytest.raises(pulsar.Timeout):
        late.receive(timeout_millis=1_000)


def test_size_retention_keeps_the_newest_acknowledged_segments(broker: BrokerProcess, clients) -> None:
    """retention 1 MB (time -1): of ~3 MB acknowledged, exactly the newest sealed segments whose
    total is at most 1 MiB stay (the longest such run), plus the active segment."""
    admin = Admin(broker)
    ns = admin.new_namespace("sized")
    admin.set_namespace_policy(ns, "retention", {"retentionTimeInMinutes": -1, "retentionSizeInMB": 1})
    topic = f"persistent://{ns}/t"
    client = clients(broker)
    consumer = client.subscribe(topic, "s", receiver_queue_size=1000)
    n = 3100
    ids = produce(client, topic, n)
    ledger = ids[0].ledger_id()
    files = segment_files(broker, ledger)
    sealed, active = sealed_and_active(files)
    assert sum(files.values()) > 3 * MiB
    # expected: the longest run of newest sealed segments with a total of at most 1 MiB
    keep: list[int] = []
    total = 0
    for base in reversed(sealed):
        if total + files[base] > MiB:
            break
        keep.insert(0, base)
        total += files[base]
    expected = {b: files[b] for b in [*keep, active]}
    assert MiB - max(files[b] for b in sealed) < total <= MiB

    last = None
    for i in range(n):
        last = consumer.receive(timeout_millis=10_000)
        assert last.data() == payload(i)
    consumer.acknowledge_cumulative(last)
    wait_until(
        lambda: segment_files(broker, ledger) == expected, 15, "newest 1 MiB of sealed segments + active left"
    )
    time.sleep(SETTLE_S)  # and it stays so
    assert segment_files(broker, ledger) == expected
    assert admin.stats(topic)["storageSize"] == sum(expected.values())

    first = keep[0]
    seen = read_all(client, topic)
    assert entry_ids(seen) == list(range(first, n))
    assert [m.data() for m in seen] == [payload(i) for i in range(first, n)]
