"""Cursor persistence: deduplication snapshots written in a round are read back, and a round with
nothing changed writes nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from magnetar.broker.config import BrokerConfig
from magnetar.broker.cursor_persistence import CursorPersistence
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


def _persistence(tmp_path: Path, topics: dict[str, Any], trimmed: list[Any]) -> CursorPersistence:
    metadata = MetadataStore(tmp_path / "metadata.db")
    return CursorPersistence(BrokerConfig(data_dir=tmp_path, fsync="never"), metadata, topics, trimmed.append)


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
