"""The sink's batch cutting and routing, column at a time, against the row-by-row rules."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from magnetar.client import partition_for_key
from magnetar.client.bulk import Entry, MessageColumns
from magnetar.protocol.message_id_bytes import message_id_bytes
from magnetar.protocol.schema import MessageMetadata
from magnetar.spark.batching import OpenBatch, fill, partitions_of
from magnetar.spark.positions import Position
from magnetar.spark.reading import _Batcher, _cut_at_end


def _row_by_row(sizes: list[int], block: int, max_bytes: int) -> list[int]:
    """Batch sizes (row counts) as the producer cuts them, one row at a time."""
    out: list[int] = []
    count = size = 0
    for s in sizes:
        if count and size + s > max_bytes:
            out.append(count)
            count = size = 0
        count += 1
        size += s
        if count >= block or size >= max_bytes:
            out.append(count)
            count = size = 0
    return out + ([count] if count else [])


def _cuts_of_fill(sizes: list[int], block: int, max_bytes: int) -> list[int]:
    """Batch sizes (row counts) as :func:`fill` cuts them, rows arriving in three runs."""
    cuts: list[int] = []
    holder = [OpenBatch()]

    def cut() -> OpenBatch:
        cuts.append(len(holder[0].values))
        holder[0] = OpenBatch()
        return holder[0]

    # three runs (three Arrow batches): the open batch carries over
    for lo, hi in ((0, 150), (150, 151), (151, len(sizes))):
        values = [b"x" * s for s in sizes[lo:hi]]
        holder[0] = fill(holder[0], values, [None] * len(values), np.array(sizes[lo:hi]), np.arange(lo, hi),
                         block, max_bytes, cut)
    left = len(holder[0].values)
    return cuts + ([left] if left else [])


def test_fill_cuts_where_the_producer_cuts() -> None:
    rng = np.random.default_rng(7)
    for block, max_bytes in ((10, 1000), (1000, 128), (3, 50), (1000, 131072)):
        sizes = [int(s) for s in rng.integers(1, 120, 400)]
        assert _cuts_of_fill(sizes, block, max_bytes) == _row_by_row(sizes, block, max_bytes), (block, max_bytes)


def test_fill_keeps_sequence_ids_and_keys() -> None:
    handed: list[OpenBatch] = []
    holder = [OpenBatch()]

    def cut() -> OpenBatch:
        handed.append(holder[0])
        holder[0] = OpenBatch()
        return holder[0]

    values = [b"v%d" % i for i in range(25)]
    keys = [f"k{i}" for i in range(25)]
    holder[0] = fill(holder[0], values, keys, np.full(25, 2), np.arange(100, 125), 10, 10_000, cut)
    assert [(b.first_seq, b.last_seq, len(b.values)) for b in handed] == [(100, 109, 10), (110, 119, 10)]
    assert holder[0].keys == keys[20:] and holder[0].first_seq == 120 and holder[0].last_seq == 124


def test_partitions_of_rows_as_the_row_by_row_routing() -> None:
    keys = [None, "a", "", "order-17", None, "a", "zz", None, "b"] * 30
    n, producers, block, row = len(keys), 3, 4, 37
    got = partitions_of(pa.array(keys, pa.string()), n, producers, block, row, lambda k: partition_for_key(k, producers))
    want = [partition_for_key(k, producers) if k else ((row + i) // block) % producers for i, k in enumerate(keys)]
    assert got.tolist() == want
    assert partitions_of(None, 10, 2, 3, 0, lambda k: 0).tolist() == [(i // 3) % 2 for i in range(10)]


def _entries() -> list[Entry]:
    from magnetar.client.bulk import encode_batch_payload

    out = []
    for entry_id in range(3):
        meta = MessageMetadata(producer_name="p", sequence_id=0, publish_time=1_700_000_000_000 + entry_id,
                               num_messages_in_batch=4)
        out.append(Entry(5, entry_id, meta, encode_batch_payload([b"%d-%d" % (entry_id, i) for i in range(4)])))
    return out


def test_entries_cut_at_the_end_of_a_range() -> None:
    entries = _entries()
    assert _cut_at_end(entries, Position(5, 9, -1)) == (3, False)
    assert _cut_at_end(entries, Position(5, 3, -1)) == (3, True)  # the next message is the end
    entries = _entries()
    assert _cut_at_end(entries, Position(5, 1, 2)) == (2, True) and entries[1].stop == 2
    assert _cut_at_end(_entries(), Position(5, 1, -1)) == (1, True)
    assert _cut_at_end(_entries(), Position(5, 1, 0)) == (1, True)


def test_record_batch_of_entries() -> None:
    from magnetar.spark.options import ClientSettings
    from magnetar.spark.reading import ReadPlan
    from magnetar.spark.schemas import ValueFormat

    fmt = ValueFormat()
    plan = ReadPlan(ClientSettings("pulsar://unused:1"), fmt, fmt.spark_schema(), True, 1000)
    batcher = _Batcher(plan, "persistent://public/default/t-partition-1", 1, None)
    entries = _entries()
    entries[0].first = 1
    entries[2].stop = 2
    batch = batcher.build(entries)
    rows = batch.to_pylist()
    assert [r["value"] for r in rows] == [b"0-1", b"0-2", b"0-3", b"1-0", b"1-1", b"1-2", b"1-3", b"2-0", b"2-1"]
    assert rows[0]["__messageId"] == message_id_bytes(5, 0, 1, 1, 4)
    assert rows[-1]["__messageId"] == message_id_bytes(5, 2, 1, 1, 4)
    assert {r["__partition"] for r in rows} == {1}
    assert rows[0]["__key"] is None and rows[0]["__eventTime"] is None and rows[0]["__messageProperties"] == []
    assert MessageColumns().add(entries[1]) == 4
