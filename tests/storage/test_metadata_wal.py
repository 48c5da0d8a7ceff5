"""The metadata store's write-ahead log is synced with fdatasync through the file layer: an admin
write costs one data sync of the log and no inode write for its mtime, and a failed sync reaches
the writer and the storage health."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from magnetar.storage.files import FaultyFileLayer, use_file_layer
from magnetar.storage.health import storage_health
from magnetar.storage.metadata import MetadataStore


def test_each_write_is_one_datasync_of_the_log_and_no_fsync(tmp_path: Path) -> None:
    files = FaultyFileLayer()
    with use_file_layer(files), MetadataStore(tmp_path) as store:
        store.ensure_defaults()
        files.calls.clear()
        for n in range(5):
            store.create_tenant(f"t{n}", {})
        assert files.calls == {"open": 5, "datasync": 5}
        assert sorted(store.list_tenants()) == sorted(["public", *(f"t{n}" for n in range(5))])


def test_a_failed_datasync_of_the_log_fails_the_write_and_is_recorded(tmp_path: Path) -> None:
    files = FaultyFileLayer()
    storage_health.reset()
    try:
        with use_file_layer(files), MetadataStore(tmp_path) as store:
            store.ensure_defaults()
            files.inject("datasync", path_part="metadata.db-wal")
            with pytest.raises(sqlite3.OperationalError, match="not made durable"):
                store.create_tenant("lost", {})
            assert storage_health.metadata_write_errors == 1
            store.create_tenant("kept", {})  # the fault fired once: the next write syncs
            assert storage_health.metadata_write_errors == 1
    finally:
        storage_health.reset()

