"""Writes within deferring_sync commit without their fsync and count themselves; sync_wal makes
them durable; with nobody to run sync_wal a write is made durable before it returns."""

from __future__ import annotations

from pathlib import Path

from magnetar.storage.metadata import MetadataStore, deferring_sync


def test_deferred_writes_are_counted_announced_and_synced(tmp_path: Path) -> None:
    announced: list[int] = []
    with MetadataStore(tmp_path / "meta") as store:
        store.on_deferred_commit = lambda: announced.append(store.deferred_commits)
        with deferring_sync():
            store.create_tenant("t1", {})
            store.create_namespace("t1/ns")
        store.create_tenant("t2", {})  # outside: made durable before it returned, not counted
        assert store.deferred_commits == 2
        assert announced == [1, 2]
        assert store.sync_wal() == 2
    with MetadataStore(tmp_path / "meta") as reopened:
        assert reopened.get_namespace("t1/ns") == {}
        assert reopened.list_tenants() == ["t1", "t2"]


def test_without_a_syncer_deferring_changes_nothing(tmp_path: Path) -> None:
    with MetadataStore(tmp_path / "meta") as store:
        with deferring_sync():
            store.create_tenant("t1", {})
        assert store.deferred_commits == 0


def test_a_refused_deferred_write_is_not_counted(tmp_path: Path) -> None:
    with MetadataStore(tmp_path / "meta") as store:
        store.on_deferred_commit = lambda: None
        store.create_tenant("t1", {})
        with deferring_sync():
            try:
                store.create_tenant("t1", {})
            except ValueError:
                pass
        assert store.deferred_commits == 0
