"""Metadata reads: on a connection of their own, so a commit under way in another thread does not hold
them, and they see every committed write; ``list_kv`` finds exactly the keys a prefix starts."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from magnetar.storage.metadata import MetadataStore


def test_a_read_does_not_wait_for_a_write_under_way(tmp_path: Path) -> None:
    store = MetadataStore(tmp_path)
    store.ensure_defaults()
    held, release = threading.Event(), threading.Event()

    def slow_commit() -> None:
        with store._tx() as db:  # noqa: SLF001 - a write transaction held open, as a slow fsync holds it
            db.execute("INSERT INTO kv (key, value) VALUES ('slow', x'00')")
            held.set()
            release.wait(10)

    writer = threading.Thread(target=slow_commit)
    writer.start()
    try:
        assert held.wait(10)
        started = time.monotonic()
        assert store.get_namespace("public/default") is not None
        assert store.get_kv("slow") is None, "not committed yet"
        assert time.monotonic() - started < 1.0
    finally:
        release.set()
        writer.join(10)
    assert store.get_kv("slow") == b"\x00", "a committed write is seen by the next read"
    store.close()


def test_list_kv_returns_exactly_the_keys_with_the_prefix(tmp_path: Path) -> None:
    store = MetadataStore(tmp_path)
    keys = ["schema/a", "schema/a/1", "schema/b", "schema", "schema0", "schemb", "sc", "x", "schema/\U0010ffff"]
    for key in keys:
        store.put_kv(key, key.encode())
    assert list(store.list_kv("schema/")) == ["schema/a", "schema/a/1", "schema/b", "schema/\U0010ffff"]
    assert list(store.list_kv("schema/a")) == ["schema/a", "schema/a/1"]
    assert list(store.list_kv("schema/\U0010ffff")) == ["schema/\U0010ffff"]
    assert sorted(store.list_kv("")) == sorted(keys)
    assert store.list_kv("schema/a/1")["schema/a/1"] == b"schema/a/1"
    assert store.list_kv("nothing") == {}
    store.close()
