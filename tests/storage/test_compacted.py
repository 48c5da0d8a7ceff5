"""The compacted ledger in storage: writer, index (and its rebuild), view; no broker service."""

from __future__ import annotations

from pathlib import Path

import pytest

from magnetar.broker.topics.compaction import ENTRY_BATCHES
from magnetar.protocol.enums import CompressionType
from magnetar.storage import CompactedView, CompactedWriter, StorageError, compacted_root, longs_to_mask
from magnetar.storage.compacted import INDEX_FILE

from ..broker.topics.test_compaction import batch, compact_all, single, view_table


def _write(directory: Path, entries: list[bytes], horizon: int) -> None:
    """What a compaction of ``entries`` writes: its phase two output, then the index."""
    _, compacted = compact_all(entries)
    writer = CompactedWriter(directory, 9, 1 << 20)
    for entry_id, data, ack_set in compacted:
        writer.add(entry_id, data, ack_set)
    writer.finish(horizon)


def _open(directory: Path, horizon: int) -> CompactedView:
    return CompactedView.open(directory, 9, horizon, ENTRY_BATCHES)


def test_compacted_ledger_survives_a_reopen_and_rebuilds_a_lost_index(tmp_path: Path) -> None:
    directory = compacted_root(tmp_path, 9) / "1"
    _write(
        directory, [batch([("x", b"1"), ("y", b"1"), ("x", b"2")], CompressionType.SNAPPY), single("z", b"1")], 1
    )

    view = _open(directory, 1)
    assert view is not None and view.horizon == 1
    assert view_table(view) == {"x": b"2", "y": b"1", "z": b"1"}
    assert longs_to_mask(view.ack_sets[0]) == 0b110
    view.close()
    (directory / INDEX_FILE).unlink()

    view = _open(directory, 1)
    assert view is not None and longs_to_mask(view.ack_sets[0]) == 0b110
    assert view_table(view) == {"x": b"2", "y": b"1", "z": b"1"}
    view.close()


def test_view_reads_by_position_and_by_id_with_the_original_ids(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    entries = [single("a", b"1"), single("b", b"1"), batch([("a", b"2"), ("c", b"1")]), single("d", b"1")]
    _write(directory, entries, 3)
    view = _open(directory, 3)
    assert list(view.ids) == [1, 2, 3] and len(view) == 3 and view.first_id == 1 and view.name == "c"
    assert [e.entry_id for e in view.read_from(0, 2)] == [1, 2]
    assert [e.entry_id for e in view.read_from(2, 10)] == [2, 3]
    assert view.read_from(4, 10) == []
    assert [e.entry_id for e in view.read_ids([3, 0, 1])] == [3, 1]
    assert [entry_id for entry_id, _ in view.read_records(1, 5)] == [2, 3]
    assert view.last_message() == (3, -1)
    view.close()


def test_a_damaged_index_is_rebuilt_and_a_missing_ledger_refused(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    _write(directory, [batch([("a", b"1"), ("b", b"1")]), single("a", b"2")], 1)
    index = directory / INDEX_FILE
    index.write_bytes(index.read_bytes()[:-1] + b"\x00")
    view = _open(directory, 1)
    assert longs_to_mask(view.ack_sets[0]) == 0b10
    assert view.last_message() == (1, -1)
    view.close()
    with pytest.raises(StorageError):
        _open(tmp_path / "nothing", 1)


def test_writer_refuses_ids_out_of_order_and_abort_removes_it(tmp_path: Path) -> None:
    writer = CompactedWriter(tmp_path / "c", 9, 1 << 20)
    writer.add(5, single("a", b"1"), None)
    with pytest.raises(StorageError):
        writer.add(5, single("a", b"2"), None)
    writer.abort()
    assert not (tmp_path / "c").exists()
