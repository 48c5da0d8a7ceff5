"""Tests of the SQLite metadata store."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from magnetar.storage import (
    MetadataConflictError,
    MetadataNotFoundError,
    MetadataStore,
    topic_namespace,
)

TOPIC = "persistent://public/default/t"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MetadataStore]:
    s = MetadataStore(tmp_path)
    s.ensure_defaults()
    yield s
    s.close()


def test_database_settings(tmp_path: Path) -> None:
    with MetadataStore.open(tmp_path) as s:
        assert s.path == tmp_path / "metadata.db"
        assert s._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        # NORMAL, no automatic checkpoint: the fsync and the checkpoint are made outside the lock
        assert s._conn.execute("PRAGMA synchronous").fetchone()[0] == 1
        assert s._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        assert s._conn.execute("PRAGMA user_version").fetchone()[0] == 1


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    MetadataStore(tmp_path).close()
    conn = sqlite3.connect(tmp_path / "metadata.db")
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(Exception, match="schema version 99"):
        MetadataStore(tmp_path)


def test_defaults_are_idempotent_across_reopen(tmp_path: Path) -> None:
    for _ in range(2):
        with MetadataStore(tmp_path) as s:
            s.ensure_defaults()
            s.ensure_defaults()
            assert s.list_clusters() == ["standalone"]
            assert s.list_tenants() == ["public"]
            assert s.get_tenant("public") == {"adminRoles": [], "allowedClusters": ["standalone"]}
            assert s.list_namespaces("public") == ["public/default"]
            assert s.get_namespace("public/default") == {}
    with MetadataStore(tmp_path) as s:
        s.set_namespace_policies("public/default", {"retention": 5})
        s.ensure_defaults()
        assert s.get_namespace("public/default") == {"retention": 5}, "defaults never overwrite"


def test_clusters(store: MetadataStore) -> None:
    store.create_cluster("east", {"serviceUrl": "http://east"})
    assert store.get_cluster("east") == {"serviceUrl": "http://east"}
    assert store.get_cluster("nope") is None
    assert store.list_clusters() == ["east", "standalone"]
    with pytest.raises(MetadataConflictError):
        store.create_cluster("east")


def test_tenant_crud_and_conflicts(store: MetadataStore) -> None:
    store.create_tenant("acme", {"allowedClusters": ["standalone"]})
    assert store.get_tenant("acme") == {"allowedClusters": ["standalone"]}
    assert store.list_tenants() == ["acme", "public"]
    with pytest.raises(MetadataConflictError):
        store.create_tenant("acme", {})
    with pytest.raises(ValueError):
        store.create_tenant("acme", {})
    store.update_tenant("acme", {"adminRoles": ["root"]})
    assert store.get_tenant("acme") == {"adminRoles": ["root"]}
    with pytest.raises(MetadataNotFoundError):
        store.update_tenant("ghost", {})
    store.create_namespace("acme/ns")
    with pytest.raises(MetadataConflictError):
        store.delete_tenant("acme")
    store.delete_namespace("acme/ns")
    store.delete_tenant("acme")
    assert store.get_tenant("acme") is None
    with pytest.raises(MetadataNotFoundError):
        store.delete_tenant("acme")


def test_tenants_are_answered_from_memory_and_follow_every_write(tmp_path: Path) -> None:
    """Authorization reads a tenant's admin roles at every check, on the event loop: the store answers
    tenants from memory (no SQLite statement), kept in step with each committed write, never with a
    failed one, and loaded again when the store is reopened."""
    with MetadataStore.open(tmp_path) as s:
        s.ensure_defaults(admin_roles=["root"])
        s.create_tenant("acme", {"adminRoles": ["a"]})
        s.update_tenant("acme", {"adminRoles": ["b"]})
        s.create_tenant("gone", {})
        s.delete_tenant("gone")
        with pytest.raises(MetadataConflictError):
            s.create_tenant("acme", {"adminRoles": ["never"]})
        statements: list[str] = []
        for connection in (s._conn, s._reader()):
            connection.set_trace_callback(statements.append)
        assert s.get_tenant("acme") == {"adminRoles": ["b"]}
        assert s.get_tenant("public") == {"adminRoles": ["root"], "allowedClusters": ["standalone"]}
        assert s.get_tenant("gone") is None and s.list_tenants() == ["acme", "public"]
        assert statements == []
    with MetadataStore.open(tmp_path) as s:
        assert s.get_tenant("acme") == {"adminRoles": ["b"]} and s.list_tenants() == ["acme", "public"]


def test_namespace_crud_and_conflicts(store: MetadataStore) -> None:
    store.create_namespace("public/ns1", {"ttl": 10})
    store.create_namespace("public/ns2")
    assert store.get_namespace("public/ns1") == {"ttl": 10}
    assert store.get_namespace("public/ns2") == {}
    assert store.get_namespace("public/nope") is None
    assert store.list_namespaces("public") == ["public/default", "public/ns1", "public/ns2"]
    assert store.list_namespaces("other") == []
    with pytest.raises(MetadataConflictError):
        store.create_namespace("public/ns1")
    with pytest.raises(MetadataNotFoundError):
        store.create_namespace("ghost/ns")
    for bad in ("nonamespace", "public/", "/ns", "a/b/c"):
        with pytest.raises(ValueError):
            store.create_namespace(bad)
    store.set_namespace_policies("public/ns1", {"ttl": 20})
    assert store.get_namespace("public/ns1") == {"ttl": 20}
    with pytest.raises(MetadataNotFoundError):
        store.set_namespace_policies("public/nope", {})
    store.get_or_create_topic("persistent://public/ns1/t")
    with pytest.raises(MetadataConflictError):
        store.delete_namespace("public/ns1")
    store.delete_topic("persistent://public/ns1/t")
    store.delete_namespace("public/ns1")
    assert store.get_namespace("public/ns1") is None
    with pytest.raises(MetadataNotFoundError):
        store.delete_namespace("public/ns1")


def test_topics_have_stable_never_reused_ids(tmp_path: Path) -> None:
    with MetadataStore(tmp_path) as s:
        a = s.get_or_create_topic(TOPIC)
        assert s.get_or_create_topic(TOPIC) == a
        b = s.get_or_create_topic("persistent://public/other/u", {"k": "v"})
        assert b != a
        assert s.get_topic(TOPIC) == a
        assert s.get_topic("persistent://public/default/missing") is None
        info = s.get_topic_info("persistent://public/other/u")
        assert info is not None and info["ledger_id"] == b and info["properties"] == {"k": "v"}
        s.set_topic_properties(TOPIC, {"x": 1})
        assert s.get_topic_info(TOPIC)["properties"] == {"x": 1}  # type: ignore[index]
        with pytest.raises(MetadataNotFoundError):
            s.set_topic_properties("persistent://public/default/missing", {})
        assert s.list_topics() == ["persistent://public/default/t", "persistent://public/other/u"]
        assert s.list_topics("public/default") == [TOPIC]
        assert s.delete_topic("persistent://public/other/u")
        assert not s.delete_topic("persistent://public/other/u")
    with MetadataStore(tmp_path) as s:
        assert s.get_topic(TOPIC) == a
        c = s.get_or_create_topic("persistent://public/other/u")
        assert c > b, "ledger ids are never reused, even after a delete and reopen"
    with pytest.raises(ValueError):
        topic_namespace("persistent://public/default")
    assert topic_namespace("non-persistent://a/b/c") == "a/b"


def test_cursors(store: MetadataStore) -> None:
    store.get_or_create_topic(TOPIC)
    store.save_cursors(
        [(TOPIC, "s1", b"\x01"), (TOPIC, "s2", b"\x02"), ("persistent://a/b/c", "s1", b"\x03")]
    )
    assert store.load_cursors(TOPIC) == {"s1": b"\x01", "s2": b"\x02"}
    store.save_cursors([(TOPIC, "s1", b"\x11")])
    assert store.load_cursors(TOPIC) == {"s1": b"\x11", "s2": b"\x02"}
    assert store.delete_cursor(TOPIC, "s2")
    assert not store.delete_cursor(TOPIC, "s2")
    assert store.load_cursors(TOPIC) == {"s1": b"\x11"}
    store.delete_topic(TOPIC)
    assert store.load_cursors(TOPIC) == {}
    assert store.load_cursors("persistent://a/b/c") == {"s1": b"\x03"}


def test_save_cursors_is_one_transaction(store: MetadataStore) -> None:
    store.save_cursors([(TOPIC, "s1", b"old")])

    class Boom(Exception):
        pass

    def items() -> Iterator[tuple[str, str, bytes]]:
        yield (TOPIC, "s1", b"new")
        yield (TOPIC, "s2", b"new")
        raise Boom

    with pytest.raises(Boom):
        store.save_cursors(items())  # type: ignore[arg-type]
    assert store.load_cursors(TOPIC) == {"s1": b"old"}


def test_save_cursors_from_worker_thread(store: MetadataStore) -> None:
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(20):
                store.save_cursors([(TOPIC, f"w{n}", str(i).encode())])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert store.load_cursors(TOPIC) == {f"w{n}": b"19" for n in range(4)}


def test_partitioned_topics(store: MetadataStore) -> None:
    name = "persistent://public/default/p"
    assert store.get_partitioned_topic(name) is None
    store.set_partitioned_topic(name, 4)
    assert store.get_partitioned_topic(name) == 4
    store.set_partitioned_topic(name, 6)
    assert store.get_partitioned_topic(name) == 6
    store.set_partitioned_topic("persistent://public/ns/q", 2)
    assert store.list_partitioned_topics("public/default") == [name]
    assert store.list_partitioned_topics() == [name, "persistent://public/ns/q"]
    with pytest.raises(ValueError):
        store.set_partitioned_topic(name, 0)
    with pytest.raises(MetadataConflictError):
        store.delete_namespace("public/default")
    assert store.delete_partitioned_topic(name)
    assert not store.delete_partitioned_topic(name)
    assert store.get_partitioned_topic(name) is None


def test_kv(store: MetadataStore) -> None:
    assert store.get_kv("a") is None
    store.put_kv("a/1", b"one")
    store.put_kv("a/2", b"two")
    store.put_kv("a%", b"percent")
    store.put_kv("b/1", b"")
    store.put_kv("a/1", b"uno")
    assert store.get_kv("a/1") == b"uno"
    assert store.get_kv("b/1") == b""
    assert store.list_kv("a/") == {"a/1": b"uno", "a/2": b"two"}
    assert store.list_kv("A/") == {}
    assert store.list_kv("a%") == {"a%": b"percent"}
    assert len(store.list_kv("")) == 4
    assert store.delete_kv("a/1")
    assert not store.delete_kv("a/1")
    assert store.list_kv("a/") == {"a/2": b"two"}
