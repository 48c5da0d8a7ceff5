"""Metadata reads: on a connection of their own (namespaces and partitioned topics from memory), so a
commit under way in another thread does not hold them, and they see every committed write; ``list_kv``
finds exactly the keys a prefix starts."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from magnetar.storage.metadata import MetadataConflictError, MetadataNotFoundError, MetadataStore


@contextmanager
def _write_held_open(store: MetadataStore, sql: str) -> Iterator[None]:
    """Run ``sql`` in a write transaction another thread holds open (as a slow fsync holds it)
    for the body of the ``with``; committed after it."""
    held, release = threading.Event(), threading.Event()

    def slow_commit() -> None:
        with store._tx() as db:  # noqa: SLF001 - a write transaction held open
            db.execute(sql)
            held.set()
            release.wait(10)

    writer = threading.Thread(target=slow_commit)
    writer.start()
    try:
        assert held.wait(10)
        yield
    finally:
        release.set()
        writer.join(10)


def test_a_read_does_not_wait_for_a_write_under_way(tmp_path: Path) -> None:
    store = MetadataStore(tmp_path)
    store.ensure_defaults()
    with _write_held_open(store, "INSERT INTO kv (key, value) VALUES ('slow', x'00')"):
        started = time.monotonic()
        assert store.get_namespace("public/default") is not None
        assert store.get_kv("slow") is None, "not committed yet"
        assert time.monotonic() - started < 1.0
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


def test_namespaces_and_partitioned_topics_are_answered_from_memory_as_committed(tmp_path: Path) -> None:
    store = MetadataStore(tmp_path)
    store.ensure_defaults()
    store.create_namespace("public/ns", {"ttl": 1})
    store.set_partitioned_topic("persistent://public/ns/p", 3)
    with _write_held_open(store, "UPDATE namespaces SET policies = '{\"ttl\":2}' WHERE name = 'public/ns'"):
        started = time.monotonic()
        assert store.get_namespace("public/ns") == {"ttl": 1}, "not committed yet"
        assert store.get_partitioned_topic("persistent://public/ns/p") == 3
        assert time.monotonic() - started < 1.0
    store.set_namespace_policies("public/ns", {"ttl": 3})
    store.set_partitioned_topic("persistent://public/ns/p", 5)
    store.set_partitioned_topic("persistent://public/ns/q", 1)
    assert store.get_namespace("public/ns") == {"ttl": 3}
    assert store.get_partitioned_topic("persistent://public/ns/p") == 5
    policies = store.get_namespace("public/ns")
    assert policies is not None
    policies["ttl"] = 99  # a caller's copy: what the store holds does not change
    assert store.get_namespace("public/ns") == {"ttl": 3}
    assert store.delete_partitioned_topic("persistent://public/ns/q")
    assert store.get_partitioned_topic("persistent://public/ns/q") is None
    store.close()
    with MetadataStore(tmp_path) as reopened:
        assert reopened.get_namespace("public/ns") == {"ttl": 3}
        assert reopened.get_namespace("public/default") == {}
        assert reopened.get_partitioned_topic("persistent://public/ns/p") == 5
        assert reopened.get_partitioned_topic("persistent://public/ns/q") is None


def test_a_refused_write_leaves_the_namespaces_in_memory_as_stored(tmp_path: Path) -> None:
    with MetadataStore(tmp_path) as store:
        store.ensure_defaults()
        store.create_namespace("public/ns", {"ttl": 1})
        with pytest.raises(MetadataConflictError):
            store.create_namespace("public/ns", {"ttl": 2})
        with pytest.raises(MetadataNotFoundError):
            store.set_namespace_policies("public/missing", {"ttl": 3})
        store.get_or_create_topic("persistent://public/ns/t")
        with pytest.raises(MetadataConflictError):
            store.delete_namespace("public/ns")
        assert store.get_namespace("public/ns") == {"ttl": 1}
        assert store.get_namespace("public/missing") is None
        store.delete_topic("persistent://public/ns/t")
        store.delete_namespace("public/ns")
        assert store.get_namespace("public/ns") is None
