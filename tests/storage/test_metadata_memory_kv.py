"""Key/value rows under MEMORY_KV_PREFIXES (topic policies, compacted-view pointers): held in memory,
read when the store opens and changed by its own writes after they commit, so the broker's loop
reads them without a database call; other keys are read from the database as before."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from magnetar.storage.metadata import MEMORY_KV_PREFIXES, MetadataStore


def test_held_keys_are_answered_from_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = MetadataStore(tmp_path)
    store.put_kv("topic-policies/persistent://t/n/a", b'{"x":1}')
    store.put_kv("compacted/persistent://t/n/a", b'{"dir":"d"}')
    store.put_kv("other/key", b"v")

    def no_read() -> sqlite3.Connection:
        raise AssertionError("read the database")

    monkeypatch.setattr(store, "_reader", no_read)
    assert store.get_kv("topic-policies/persistent://t/n/a") == b'{"x":1}'
    assert store.get_kv("topic-policies/persistent://t/n/b") is None
    assert store.get_kv("compacted/persistent://t/n/a") == b'{"dir":"d"}'
    assert store.list_kv("topic-policies/") == {"topic-policies/persistent://t/n/a": b'{"x":1}'}
    with pytest.raises(AssertionError):
        store.get_kv("other/key")
    monkeypatch.undo()
    assert store.get_kv("other/key") == b"v"
    store.close()


def test_held_keys_follow_writes_and_deletes_and_survive_reopening(tmp_path: Path) -> None:
    assert "topic-policies/" in MEMORY_KV_PREFIXES
    with MetadataStore(tmp_path) as store:
        store.put_kv("topic-policies/a", b"1")
        store.put_kv("topic-policies/b", b"2")
        store.put_kv("topic-policies/a", b"3")
        assert store.delete_kv("topic-policies/b")
        assert not store.delete_kv("topic-policies/b")
        assert store.get_kv("topic-policies/a") == b"3"
        assert store.get_kv("topic-policies/b") is None
        assert store.list_kv("topic-policies/") == {"topic-policies/a": b"3"}
        assert store.list_kv("") == {"topic-policies/a": b"3"}, "a wider prefix reads the database: the same rows"
    with MetadataStore(tmp_path) as store:
        assert store.get_kv("topic-policies/a") == b"3"
        assert store.list_kv("topic-policies/") == {"topic-policies/a": b"3"}


def test_a_refused_write_leaves_the_held_row_as_stored(tmp_path: Path) -> None:
    store = MetadataStore(tmp_path)
    store.put_kv("compacted/x", b"old")
    with store._tx() as db:  # noqa: SLF001 - a trigger makes the next write of the row fail
        db.execute("CREATE TEMP TRIGGER refuse BEFORE UPDATE ON kv BEGIN SELECT RAISE(ABORT, 'refused'); END")
    with pytest.raises(sqlite3.DatabaseError):
        store.put_kv("compacted/x", b"new")
    assert store.get_kv("compacted/x") == b"old"
    store.close()
