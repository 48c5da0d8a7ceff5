"""Admin writes as jobs of the metadata thread (ResourceContext.write): one writer, in submission
order, the read-modify-write inside the job, the broker's memory changed on the loop afterwards."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from magnetar.broker.resources.admin import BrokerAdmin
from magnetar.broker.service import BrokerService
from magnetar.storage.health import storage_health
from magnetar.storage.metadata import MetadataStore
from tests.broker.resources.test_resources import run_with_admin

NS = "public/default"


def slowed_namespace_writes(monkeypatch: pytest.MonkeyPatch, threads: list[str]) -> None:
    """Every namespace policies commit waits 30 ms first (a slow disk), and records its thread: a
    read made before another write's commit would see the old policies and lose that write."""
    original = MetadataStore.set_namespace_policies

    def slow(self: MetadataStore, name: str, policies: dict[str, Any]) -> None:
        threads.append(threading.current_thread().name)
        time.sleep(0.03)
        original(self, name, policies)

    monkeypatch.setattr(MetadataStore, "set_namespace_policies", slow)


def test_concurrent_read_modify_writes_of_one_namespace_all_land(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[str] = []
    slowed_namespace_writes(monkeypatch, threads)
    changed_on: list[int] = []

    async def body(admin: BrokerAdmin) -> None:
        service: BrokerService = admin.service
        loop_thread = threading.get_ident()
        hook = service.policies_changed
        monkeypatch.setattr(service, "policies_changed",
                            lambda ns=None: (changed_on.append(threading.get_ident()), hook(ns)))
        ctx, policies, props = admin.ctx, admin.policies, admin.namespace_properties
        await asyncio.gather(
            ctx.write(policies.set_namespace_policy, NS, "message_ttl_in_seconds", 30),
            ctx.write(policies.set_namespace_policy, NS, "deduplicationEnabled", True),
            ctx.write(admin.permissions.grant_on_namespace, NS, "writer", ["produce"]),
            *(ctx.write(props.put_all, NS, {f"k{i}": str(i)}) for i in range(5)),
        )
        stored = service.metadata.get_namespace(NS)
        assert stored["message_ttl_in_seconds"] == 30
        assert stored["deduplicationEnabled"] is True
        assert stored["auth_policies"]["namespace_auth"] == {"writer": ["produce"]}
        assert stored["properties"] == {f"k{i}": str(i) for i in range(5)}
        # the two policy writes told the loaded topics, on the loop, after their jobs
        assert changed_on == [loop_thread, loop_thread]

    run_with_admin(tmp_path, body)
    assert len(threads) == 8 and all(name.startswith("magnetar-meta") for name in threads)
    with MetadataStore(tmp_path / "data" / "metadata.db") as reopened:
        assert reopened.get_namespace(NS)["properties"] == {f"k{i}": str(i) for i in range(5)}


def test_jobs_run_in_submission_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    slowed_namespace_writes(monkeypatch, [])

    async def body(admin: BrokerAdmin) -> None:
        ctx, policies = admin.ctx, admin.policies
        await asyncio.gather(*(ctx.write(policies.set_namespace_policy, NS, "message_ttl_in_seconds", ttl)
                               for ttl in (10, 20, 30, 40)))
        assert await policies.get_namespace_policy(NS, "message_ttl_in_seconds") == 40

    run_with_admin(tmp_path, body)


class FailingCommits:
    """The store's write connection, whose COMMITs fail while ``failing`` (a disk refusing the write)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.failing = True

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if self.failing and sql == "COMMIT":
            raise sqlite3.OperationalError("disk I/O error")
        return self.conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


def test_a_failed_commit_changes_nothing_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    changed: list[str | None] = []

    async def body(admin: BrokerAdmin) -> None:
        service = admin.service
        monkeypatch.setattr(service, "policies_changed", changed.append)
        meta = service.metadata
        before = meta.get_namespace(NS)
        failing = FailingCommits(meta._conn)
        monkeypatch.setattr(meta, "_conn", failing)
        with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
            await admin.ctx.write(admin.policies.set_namespace_policy, NS, "message_ttl_in_seconds", 30)
        assert meta.get_namespace(NS) == before
        assert changed == []  # no topic was told of a change that did not happen
        assert not failing.conn.in_transaction  # rolled back
        failing.failing = False
        await admin.ctx.write(admin.policies.set_namespace_policy, NS, "message_ttl_in_seconds", 31)
        assert meta.get_namespace(NS)["message_ttl_in_seconds"] == 31
        assert changed == [NS]

    storage_health.reset()
    try:
        run_with_admin(tmp_path, body)
        assert storage_health.metadata_write_errors == 1
    finally:
        storage_health.reset()
