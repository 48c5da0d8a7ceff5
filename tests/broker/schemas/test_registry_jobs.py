"""The schema registry with metadata jobs: writes committed on another thread (as the broker's metadata
thread), the history in memory changed on the loop once a job is done (not at all when its commit
failed), a second write of one schema id after the first, checked against what the first left."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from magnetar.broker.schemas import IncompatibleSchemaError, SchemaData, SchemaRegistry, Strategy
from magnetar.broker.schemas.registry import resolved
from magnetar.storage import MetadataStore

SID = "public/default/orders"


def avro(*fields: tuple[str, object]) -> SchemaData:
    record = {"type": "record", "name": "Order", "fields": [{"name": n, "type": t} for n, t in fields]}
    return SchemaData("AVRO", json.dumps(record).encode(), {})


V0 = avro(("id", "long"))
V1 = SchemaData("AVRO", json.dumps({"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"], "default": None}]}).encode(), {})
BAD = avro(("id", "string"))


class Jobs:
    """A metadata thread: jobs run one after another on a thread of their own, held until released."""

    def __init__(self) -> None:
        self.executor = ThreadPoolExecutor(max_workers=1)
        self.release = threading.Event()
        self.release.set()
        self.ran: list[tuple[int, str]] = []

    def __call__(self, job: Callable[[], Any]) -> asyncio.Future[Any]:
        def held() -> Any:
            self.release.wait(10)
            self.ran.append((threading.get_ident(), getattr(job, "func", job).__name__))
            return job()

        return asyncio.wrap_future(self.executor.submit(held))


def run(tmp_path: Path, body: Callable[[SchemaRegistry, Jobs, MetadataStore], Any]) -> Any:
    async def main() -> Any:
        store = MetadataStore(tmp_path / "meta")
        jobs = Jobs()
        try:
            return await body(SchemaRegistry(store, jobs=jobs), jobs, store)
        finally:
            jobs.executor.shutdown(wait=True)
            store.close()

    return asyncio.run(main())


def test_a_new_version_is_committed_off_the_loop_and_in_memory_only_once_done(tmp_path: Path) -> None:
    async def body(registry: SchemaRegistry, jobs: Jobs, store: MetadataStore) -> None:
        jobs.release.clear()
        pending = registry.put_if_absent(SID, V0, Strategy.FULL)
        assert isinstance(pending, Awaitable)  # a write under way
        await asyncio.sleep(0.05)
        assert registry.latest(SID) is None  # not committed yet: nothing in memory
        jobs.release.set()
        assert await resolved(pending) == 0
        assert registry.latest(SID).version == 0 and store.get_kv(f"schemas/{SID}/{0:012d}") is not None
        assert [name for _, name in jobs.ran] == ["put_kv"] and jobs.ran[0][0] != threading.get_ident()
        assert registry.put_if_absent(SID, V0, Strategy.FULL) == 0  # known: at once, nothing written
        assert len(jobs.ran) == 1

    run(tmp_path, body)


def test_concurrent_registrations_of_one_schema_give_one_version(tmp_path: Path) -> None:
    async def body(registry: SchemaRegistry, jobs: Jobs, store: MetadataStore) -> None:
        jobs.release.clear()
        first = registry.put_if_absent(SID, V0, Strategy.FULL)
        second = registry.put_if_absent(SID, V0, Strategy.FULL)
        newer = registry.put_if_absent(SID, V1, Strategy.BACKWARD)
        jobs.release.set()
        assert await asyncio.gather(resolved(first), resolved(second), resolved(newer)) == [0, 0, 1]
        assert [s.version for s in registry.history(SID)] == [0, 1]
        assert [name for _, name in jobs.ran] == ["put_kv", "put_kv"]

    run(tmp_path, body)


def test_a_write_waiting_for_another_is_checked_against_what_it_left(tmp_path: Path) -> None:
    async def body(registry: SchemaRegistry, jobs: Jobs, store: MetadataStore) -> None:
        jobs.release.clear()
        first = registry.put_if_absent(SID, V0, Strategy.FULL)
        refused = registry.put_if_absent(SID, BAD, Strategy.FULL)  # compatible with nothing yet: checked later
        jobs.release.set()
        assert await resolved(first) == 0
        with pytest.raises(IncompatibleSchemaError):
            await resolved(refused)
        assert [s.version for s in registry.history(SID)] == [0]

    run(tmp_path, body)


def test_a_failed_commit_raises_and_changes_nothing_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def body(registry: SchemaRegistry, jobs: Jobs, store: MetadataStore) -> None:
        assert await resolved(registry.put_if_absent(SID, V0, Strategy.FULL)) == 0
        original = MetadataStore.put_kv

        def full_disk(self: MetadataStore, key: str, value: bytes) -> None:
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(MetadataStore, "put_kv", full_disk)
        with pytest.raises(sqlite3.OperationalError):
            await resolved(registry.put_if_absent(SID, V1, Strategy.BACKWARD))
        with pytest.raises(sqlite3.OperationalError):
            await resolved(registry.delete(SID))
        assert [s.version for s in registry.history(SID)] == [0] and registry.latest(SID).version == 0
        monkeypatch.setattr(MetadataStore, "put_kv", original)
        assert await resolved(registry.put_if_absent(SID, V1, Strategy.BACKWARD)) == 1  # the next one goes on
        assert await resolved(registry.delete(SID)) == 2 and registry.latest(SID) is None
        assert await resolved(registry.delete_all(SID)) is True and registry.history(SID) == []
        assert store.list_kv("schemas/") == {}

    run(tmp_path, body)
