"""An admin write commits its metadata on the metadata thread, without the fsync, which runs there
after it, or (namespaces and tenants) written and synced there at once; the HTTP answer waits for
it either way (never acknowledged before durable)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.storage.health import storage_health
from magnetar.storage.metadata import MetadataStore
from magnetar.storage.metadata_wal import WalSync
from magnetar.testing import BrokerThread
from magnetar.testing.admin import Admin, AdminError
from magnetar.testing.ports import free_port
from tests.broker.resources.test_write_jobs import FailingCommits


def test_a_policy_is_answered_after_its_sync_which_runs_off_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=free_port(), fsync="never")
    release = threading.Event()
    syncing = threading.Event()
    sync_threads: list[str] = []
    original = MetadataStore.sync_wal

    def held_sync(self: MetadataStore) -> int:
        sync_threads.append(threading.current_thread().name)
        syncing.set()
        release.wait(10)
        return original(self)

    monkeypatch.setattr(MetadataStore, "sync_wal", held_sync)
    retention = {"retentionTimeInMinutes": 5, "retentionSizeInMB": 7}
    with BrokerThread(config) as broker:
        admin = Admin(f"http://127.0.0.1:{config.http_port}")
        answered = threading.Event()
        errors: list[BaseException] = []

        def set_policy() -> None:
            try:
                Admin(f"http://127.0.0.1:{config.http_port}").set_namespace_policy(
                    "public/default", "retention", retention)
            except BaseException as exc:  # reported below
                errors.append(exc)
            answered.set()

        metadata = broker.server.service.metadata
        before = metadata.deferred_commits
        caller = threading.Thread(target=set_policy)
        caller.start()
        assert syncing.wait(10)
        # committed (readable: the loop is free and serves reads meanwhile), not yet answered
        assert admin.namespace_policy("public/default", "retention") == retention
        assert not answered.wait(0.3)
        assert metadata.deferred_commits == before + 1
        release.set()
        caller.join(10)
        assert answered.is_set() and not errors
        assert sync_threads and all(name.startswith("magnetar-meta") for name in sync_threads)
    with MetadataStore(config.data_dir / "metadata.db") as reopened:
        assert reopened.get_namespace("public/default")["retention_policies"] == retention


def test_a_namespace_is_written_and_made_durable_on_the_metadata_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=free_port(), fsync="never")
    release = threading.Event()
    syncing = threading.Event()
    sync_threads: list[str] = []
    original = WalSync.fsync_wal

    def held_fsync(self: WalSync) -> int:
        sync_threads.append(threading.current_thread().name)
        syncing.set()
        release.wait(10)
        return original(self)

    with BrokerThread(config) as broker:
        monkeypatch.setattr(WalSync, "fsync_wal", held_fsync)
        admin = Admin(f"http://127.0.0.1:{config.http_port}")
        answered = threading.Event()
        errors: list[BaseException] = []

        def create() -> None:
            try:
                Admin(f"http://127.0.0.1:{config.http_port}").create_namespace("public/held")
            except BaseException as exc:  # reported below
                errors.append(exc)
            answered.set()

        metadata = broker.server.service.metadata
        before = metadata.deferred_commits
        caller = threading.Thread(target=create)
        caller.start()
        assert syncing.wait(10)
        # committed on the metadata thread, whose fsync is held: the loop serves reads meanwhile
        assert "public/held" in admin.namespaces("public")
        assert not answered.wait(0.3)
        release.set()
        caller.join(10)
        assert answered.is_set() and not errors
        assert metadata.deferred_commits == before  # made durable where it was written, not deferred
        assert sync_threads and all(name.startswith("magnetar-meta") for name in sync_threads)
        # a refused write is answered as before (nothing committed, nothing to wait for)
        with pytest.raises(AdminError) as refused:
            admin.create_namespace("public/held")
        assert refused.value.status == 409
        admin.delete_namespace("public/held")
        assert "public/held" not in admin.namespaces("public")
        with pytest.raises(AdminError) as missing:
            admin.delete_namespace("public/held")
        assert missing.value.status == 404
    with MetadataStore(config.data_dir / "metadata.db") as reopened:
        assert reopened.get_namespace("public/held") is None


def test_a_failed_sync_answers_500_and_the_next_writes_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=free_port(), fsync="never")

    def failing_sync(self: MetadataStore) -> int:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(MetadataStore, "sync_wal", failing_sync)
    with BrokerThread(config) as broker:
        admin = Admin(f"http://127.0.0.1:{config.http_port}")
        for minutes in (5, 6):
            with pytest.raises(AdminError) as failed:
                admin.set_namespace_policy("public/default", "retention",
                                           {"retentionTimeInMinutes": minutes, "retentionSizeInMB": 7})
            assert failed.value.status == 500
            assert "not made durable" in failed.value.reason
        assert broker.server.service.metadata_sync is not None


def test_a_failed_fsync_on_the_metadata_thread_answers_500(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=free_port(), fsync="never")

    def failing_fsync(self: WalSync) -> int:
        raise OSError(5, "Input/output error")

    storage_health.reset()
    with BrokerThread(config):
        monkeypatch.setattr(WalSync, "fsync_wal", failing_fsync)
        admin = Admin(f"http://127.0.0.1:{config.http_port}")
        try:
            with pytest.raises(AdminError) as failed:
                admin.create_namespace("public/lost")
            assert failed.value.status == 500
            assert "not made durable" in failed.value.reason
            assert storage_health.metadata_write_errors == 1
        finally:
            storage_health.reset()


def test_a_failed_commit_of_a_policy_answers_500_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=free_port(), fsync="never")
    storage_health.reset()
    try:
        with BrokerThread(config) as broker:
            admin = Admin(f"http://127.0.0.1:{config.http_port}")
            admin.set_namespace_policy("public/default", "messageTTL", 60)
            metadata = broker.server.service.metadata
            failing = FailingCommits(metadata._conn)
            monkeypatch.setattr(metadata, "_conn", failing)
            with pytest.raises(AdminError) as failed:
                admin.set_namespace_policy("public/default", "messageTTL", 90)
            assert failed.value.status == 500
            assert "disk I/O error" in failed.value.reason
            assert admin.namespace_policy("public/default", "messageTTL") == 60
            failing.failing = False
            admin.set_namespace_policy("public/default", "messageTTL", 120)
            assert admin.namespace_policy("public/default", "messageTTL") == 120
        assert storage_health.metadata_write_errors == 1
    finally:
        storage_health.reset()
    with MetadataStore(config.data_dir / "metadata.db") as reopened:
        assert reopened.get_namespace("public/default")["message_ttl_in_seconds"] == 120
