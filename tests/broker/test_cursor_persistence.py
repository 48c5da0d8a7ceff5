"""Cursor persistence: deduplication snapshots written in a round are read back, a round with
nothing changed writes nothing, and acknowledgements are persisted at most
``mark_delete_rate_limit`` times a second (Pulsar's managedLedgerDefaultMarkDeleteRateLimit), the
first at once, the rest one spacing later, everything on shutdown."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from magnetar.broker.config import BrokerConfig
from magnetar.broker.cursor_persistence import CursorPersistence
from magnetar.storage.cursor import CursorState
from magnetar.storage.managed_cursor import ManagedCursor, NoEntries
from magnetar.storage.metadata import MetadataStore

TOPIC = "persistent://public/default/dedup"


class _DedupTopic:
    """The part of a topic a persistence round reads: its name and its deduplication snapshot."""

    def __init__(self, name: str, snapshot: tuple[int, dict[str, int]] | None) -> None:
        self.name = name
        self.dedup_dirty = snapshot is not None
        self._snapshot = snapshot

    def dedup_snapshot(self) -> tuple[int, dict[str, int]] | None:
        self.dedup_dirty = False
        return self._snapshot


def _persistence(tmp_path: Path, topics: dict[str, Any], trimmed: list[Any], **settings: Any) -> CursorPersistence:
    metadata = MetadataStore(tmp_path / "metadata.db")
    config = BrokerConfig(data_dir=tmp_path, fsync="never", **settings)
    return CursorPersistence(config, metadata, topics, trimmed.append)


def test_dedup_snapshots_written_in_a_round_are_read_back(tmp_path: Path) -> None:
    topics: dict[str, Any] = {TOPIC: _DedupTopic(TOPIC, (41, {"producer-a": 7, "producer-b": 12}))}
    persistence = _persistence(tmp_path, topics, [])
    assert persistence.dedup_snapshot(TOPIC) == ({}, -1), "nothing stored yet"

    asyncio.run(persistence.flush())

    assert persistence.dedup_snapshot(TOPIC) == ({"producer-a": 7, "producer-b": 12}, 41)
    assert not topics[TOPIC].dedup_dirty
    persistence.close()
    persistence.metadata.close()


def test_a_round_without_changes_writes_nothing(tmp_path: Path) -> None:
    trimmed: list[Any] = []
    topics: dict[str, Any] = {TOPIC: _DedupTopic(TOPIC, None)}
    persistence = _persistence(tmp_path, topics, trimmed)

    asyncio.run(persistence.flush())

    assert persistence.dedup_snapshot(TOPIC) == ({}, -1)
    assert trimmed == [], "no topic is trimmed after a round that wrote nothing"
    persistence.close()
    persistence.metadata.close()


async def _ack_stream(persistence: CursorPersistence, acks: int, every: float) -> tuple[ManagedCursor, float]:
    """A durable cursor acknowledging entries 0, 1, ... one every ``every`` seconds; the stream's length."""
    cursor = persistence.cursors.open(NoEntries(), TOPIC, "sub", -1)
    loop = asyncio.get_running_loop()
    started = loop.time()
    for entry_id in range(acks):
        cursor.ack(entry_id)
        await asyncio.sleep(every)
    return cursor, loop.time() - started


def _stored_mark_delete(persistence: CursorPersistence) -> int | None:
    stored = persistence.metadata.load_cursors(TOPIC).get("sub")
    return None if stored is None else CursorState.from_bytes(stored).mark_delete


def test_a_steady_ack_stream_is_persisted_at_most_rate_times_a_second(tmp_path: Path) -> None:
    async def run() -> tuple[int, float, int | None, int | None]:
        persistence = _persistence(tmp_path, {}, [], mark_delete_rate_limit=5.0)
        persistence.start()
        _, elapsed = await _ack_stream(persistence, 100, 0.01)
        writes = persistence.writes
        await asyncio.sleep(persistence.spacing + 0.3)  # the last acks' round
        settled = _stored_mark_delete(persistence)
        await persistence.stop()
        persistence.close()
        return writes, elapsed, settled, persistence.writes

    writes, elapsed, settled, total = asyncio.run(run())
    # the creation's own round (at once), then at most 5 a second
    assert 2 <= writes <= 2 + elapsed * 5.0 + 1e-9, (writes, elapsed)
    assert settled == 99, "the acks after the last round are persisted one spacing later"
    assert total == writes + 1


def test_without_a_rate_limit_every_change_gets_its_own_round(tmp_path: Path) -> None:
    async def run() -> tuple[int, int | None]:
        persistence = _persistence(tmp_path, {}, [], mark_delete_rate_limit=0.0)
        persistence.start()
        await _ack_stream(persistence, 30, 0.02)
        await asyncio.sleep(0.2)
        await persistence.stop()
        persistence.close()
        return persistence.writes, _stored_mark_delete(persistence)

    writes, stored = asyncio.run(run())
    assert writes >= 20, writes
    assert stored == 29


def test_shutdown_persists_the_acks_the_rate_limit_held_back(tmp_path: Path) -> None:
    async def run() -> tuple[int | None, int | None, float]:
        # a round every 10 s: far longer than the 0.1 s ack stream
        persistence = _persistence(tmp_path, {}, [], mark_delete_rate_limit=0.1)
        persistence.start()
        await _ack_stream(persistence, 20, 0.005)
        held_back = _stored_mark_delete(persistence)
        loop = asyncio.get_running_loop()
        stopping = loop.time()
        await persistence.stop()
        stop_seconds = loop.time() - stopping
        await persistence.flush()  # the service's final flush, as on shutdown
        persistence.close()
        return held_back, _stored_mark_delete(persistence), stop_seconds

    held_back, stored, stop_seconds = asyncio.run(run())
    assert held_back is not None and held_back < 19, "the first round ran at once, the next not within 10 s"
    assert stored == 19
    assert stop_seconds < 1.0, f"stop() waited {stop_seconds:.1f} s of the paced round's 10 s"


def test_the_longest_delay_before_a_cursor_is_persisted_follows_the_rate_limit(tmp_path: Path) -> None:
    slow = _persistence(tmp_path, {}, [], mark_delete_rate_limit=0.1)
    assert (slow.spacing, slow.longest_delay) == (10.0, 10.0)
    default = _persistence(tmp_path / "b", {}, [])
    assert (default.spacing, default.longest_delay) == (1.0, 1.0)
    unlimited = _persistence(tmp_path / "c", {}, [], mark_delete_rate_limit=0.0, cursor_persist_delay_seconds=2.0)
    assert (unlimited.spacing, unlimited.longest_delay) == (0.0, 2.0)
    for persistence in (slow, default, unlimited):
        persistence.close()
        persistence.metadata.close()


def test_a_created_reset_or_deleted_cursor_is_persisted_at_once_whatever_the_rate_limit(tmp_path: Path) -> None:
    async def run() -> tuple[int | None, int | None, int | None, bool, int | None]:
        # a paced round every 3 s: the five 0.3 s steps below end before the second one
        persistence = _persistence(tmp_path, {}, [], mark_delete_rate_limit=1 / 3)
        persistence.start()
        cursor = persistence.cursors.open(NoEntries(), TOPIC, "sub", 4)
        await asyncio.sleep(0.3)
        created = _stored_mark_delete(persistence)
        cursor.ack(5)  # an acknowledgement is held back: the round of the creation was the last write
        await asyncio.sleep(0.3)
        acked = _stored_mark_delete(persistence)
        cursor.seek(2)  # a reset: at once
        await asyncio.sleep(0.3)
        reset = _stored_mark_delete(persistence)
        cursor.delete()
        await asyncio.sleep(0.3)
        deleted = "sub" not in persistence.metadata.load_cursors(TOPIC)
        later = persistence.cursors.open(NoEntries(), TOPIC, "later", 9)
        await asyncio.sleep(0.3)
        stored = persistence.metadata.load_cursors(TOPIC).get("later")
        await persistence.stop()
        persistence.close()
        assert later.mark_delete == 9
        return created, acked, reset, deleted, None if stored is None else CursorState.from_bytes(stored).mark_delete

    assert asyncio.run(run()) == (4, 4, 1, True, 9)
