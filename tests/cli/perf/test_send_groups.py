"""Send groups: two receipt callbacks for a producer's messages of a chunk, each part settled once."""

from __future__ import annotations

import asyncio

from magnetar.cli.perf.options import ProducerSettings
from magnetar.cli.perf.produce import ProducerLoad
from magnetar.cli.perf.send_groups import SendGroup, group_limit
from tests.cli.perf.test_loads import FakeClient, FakeId


class Parts:
    """A settler that keeps what it is told."""

    def __init__(self) -> None:
        self.parts: list[tuple[int, int, str | None, int]] = []

    def settle_part(self, intended_ns: int, index: int, count: int, error: Exception | None, now_ns: int) -> None:
        self.parts.append((index, count, None if error is None else str(error), now_ns))


def test_a_group_in_one_batch_is_settled_at_once_with_the_first_receipt_time() -> None:
    parts = Parts()
    group = SendGroup(parts, 0, 10, 1, 4)
    group.first_settled(None, FakeId(3, 20))
    group.last_settled(None, FakeId(6, 20))
    assert [(i, n, e) for i, n, e, _ in parts.parts] == [(10, 4, None)]


def test_a_group_across_two_batches_is_timed_to_each_batch_receipt() -> None:
    parts = Parts()
    group = SendGroup(parts, 0, 100, 3, 5)  # messages 100, 103, 106, 109, 112 of three producers
    group.first_settled(None, FakeId(7, 9))  # the first batch holds two of them
    assert parts.parts == []  # nothing is counted before the last receipt
    group.last_settled(None, FakeId(2, 9))
    (i1, n1, e1, t1), (i2, n2, e2, t2) = parts.parts
    assert (i1, n1, e1) == (100, 2, None) and (i2, n2, e2) == (106, 3, None) and t1 <= t2


def test_failed_parts_count_as_errors_by_the_other_receipt_position() -> None:
    parts = Parts()
    group = SendGroup(parts, 0, 0, 1, 6)
    group.first_settled(RuntimeError("timeout"), None)
    group.last_settled(None, FakeId(1, 4))  # two of the six in the acknowledged batch
    assert [(i, n, e) for i, n, e, _ in parts.parts] == [(0, 4, "timeout"), (4, 2, None)]
    parts = Parts()
    group = SendGroup(parts, 0, 0, 1, 6)
    group.first_settled(None, FakeId(0, 3))
    group.last_settled(RuntimeError("closed"), None)
    assert [(i, n, e) for i, n, e, _ in parts.parts] == [(0, 3, None), (3, 3, "closed")]


def test_a_last_receipt_before_the_first_settles_the_group_once() -> None:
    parts = Parts()
    group = SendGroup(parts, 0, 0, 1, 3)
    group.last_settled(RuntimeError("checksum"), None)
    group.first_settled(None, FakeId(0, 3))
    assert [(i, n, e) for i, n, e, _ in parts.parts] == [(0, 3, "checksum")]


def test_groups_are_never_longer_than_the_shortest_batch_the_client_cuts() -> None:
    assert group_limit(True, False, 1000, 128 * 1024, 100, 1000) == 1000
    assert group_limit(True, False, 1000, 128 * 1024, 1024, 1000) == 128  # 128 KiB batches of 1 KiB
    assert group_limit(True, False, 1000, 1000, 300, 1000) == 3  # 3 x 300 B < 1000 B: the 4th closes it
    assert group_limit(True, False, 1000, 1000, 1000, 1000) == 1  # sent on its own
    assert group_limit(True, False, 50, 128 * 1024, 0, 1000) == 50
    assert group_limit(False, False, 1000, 128 * 1024, 100, 1000) == 1
    assert group_limit(True, True, 1000, 128 * 1024, 100, 1000) == 1


def run_load(settings: ProducerSettings, batch: int, delay_s: float = 0.0) -> tuple[ProducerLoad, FakeClient]:
    async def scenario() -> tuple[ProducerLoad, FakeClient]:
        client = FakeClient(delay_s=delay_s, batch=batch)
        load = ProducerLoad(settings)
        await load.start(client)
        await load.run(asyncio.Event())
        await load.drain(5)
        return load, client

    return asyncio.run(scenario())


def test_latency_counts_equal_the_messages_acknowledged_with_batches_across_chunks() -> None:
    # chunks of at most 7 (the outstanding cap) against batches of 5: groups straddle batches
    settings = ProducerSettings(["t", "p"], rate=0, max_messages=10_007, batch_max_messages=5, max_outstanding=7,
                                payloads=(b"a", b"bbb"))
    load, client = run_load(settings, batch=5, delay_s=0.001)
    assert load.sent == load.acked == 10_007 and load.errors == 0 and load.pending == 0
    assert load.latency.total().count == load.acked
    assert load.acked_bytes == sum(len(payload) for producer in client.producers for payload, _, _ in producer.sent)
    assert any(size < 5 for producer in client.producers for size in producer.batches)  # cuts between chunks
    for producer in client.producers:
        assert [seq for _, seq, _ in producer.sent] == list(range(len(producer.sent)))


def test_latency_counts_equal_the_messages_acknowledged_at_full_speed() -> None:
    settings = ProducerSettings(["t"], producers_per_topic=3, rate=0, max_messages=250_001, batch_max_messages=1000)
    load, client = run_load(settings, batch=1000)
    assert load.acked == 250_001 and load.latency.total().count == 250_001
    assert load.acked_bytes == 250_001 * 1024 and load.sent_bytes == load.acked_bytes


def test_receipts_that_count_every_message_once_also_with_keys() -> None:
    settings = ProducerSettings(["t"], producers_per_topic=2, rate=0, max_messages=3001, key_mode="autoIncrement",
                                batch_max_messages=100)
    load, client = run_load(settings, batch=100)
    assert load.acked == load.latency.total().count == 3001
    keys = sorted(int(key) for producer in client.producers for _, _, key in producer.sent if key is not None)
    assert keys == list(range(3001))


