"""The broker deletes the files of trimmed segments and deleted topics in its reaper thread: the event
loop keeps running meanwhile, and stop() waits until the files are gone."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from magnetar.broker.config import BrokerConfig
from magnetar.broker.service import BrokerService
from magnetar.broker.topics.persistent import PersistentTopic
from magnetar.protocol.topic_name import TopicName
from magnetar.storage.files import FileLayer, use_file_layer

TOPIC = "persistent://public/default/reaped"
SLOW_CLOSE_S = 0.5


class SlowCloseFiles(FileLayer):
    """A file layer whose close of a file named in ``slow`` takes half a second, like closing and
    unlinking a 64 MiB segment on a busy disk."""

    def __init__(self) -> None:
        self.slow: set[str] = set()
        self._paths: dict[int, str] = {}

    def open(self, path: Path | str, flags: int, mode: int = 0o644) -> int:
        fd = super().open(path, flags, mode)
        self._paths[fd] = str(path)
        return fd

    def close(self, fd: int) -> None:
        if self._paths.pop(fd, None) in self.slow:
            time.sleep(SLOW_CLOSE_S)
        super().close(fd)


async def _loaded_topic(service: BrokerService, files: SlowCloseFiles) -> tuple[PersistentTopic, list[Path]]:
    """A topic of several 4 KiB segments, all consumed (no subscription); its oldest file is slow."""
    topic = await service.load_topic(TopicName.parse(TOPIC))
    assert isinstance(topic, PersistentTopic)
    for _ in range(20):
        topic.ledger.append(b"x" * 1000)
    topic.last_readable_id = topic.ledger.last_entry_id
    segments = sorted(topic.ledger.directory.glob("*.log"))
    assert len(segments) >= 4
    files.slow = {str(segments[0])}
    return topic, segments


def _run(tmp_path: Path, body: Callable[[BrokerService, SlowCloseFiles], Awaitable[None]]) -> None:
    async def main() -> None:
        config = BrokerConfig(data_dir=tmp_path, fsync="never", segment_max_bytes=4096, segment_min_rollover_minutes=0)
        service = BrokerService(config)
        await service.start()
        try:
            await body(service, files)
        finally:
            await service.stop()

    with use_file_layer(SlowCloseFiles()) as files:
        asyncio.run(main())


def _ticker() -> list[float]:
    """Times at which a loop timer set now for 50 ms fired (empty while the loop is blocked)."""
    ticks: list[float] = []
    asyncio.get_running_loop().call_later(0.05, lambda: ticks.append(time.monotonic()))
    return ticks


def test_trimmed_segments_are_deleted_off_the_loop_and_stop_waits_for_them(tmp_path: Path) -> None:
    async def body(service: BrokerService, files: SlowCloseFiles) -> None:
        topic, segments = await _loaded_topic(service, files)
        ticks = _ticker()
        started = time.monotonic()
        service.maybe_trim(topic)
        assert time.monotonic() - started < SLOW_CLOSE_S / 2, "the trim returns at once"
        assert topic.ledger.segment_count == 1 and topic.ledger.first_entry_id == int(segments[-1].stem)
        await asyncio.sleep(0.1)
        assert ticks, "the loop timer fired while the reaper closes the slow file"
        assert segments[0].exists(), "... which it is still doing"
        await service.stop()
        assert sorted(topic.ledger.directory.glob("*.log")) == segments[-1:], (
            "stop() waited for the deletions"
        )

    _run(tmp_path, body)


def test_a_deleted_topic_is_removed_off_the_loop(tmp_path: Path) -> None:
    async def body(service: BrokerService, files: SlowCloseFiles) -> None:
        topic, _ = await _loaded_topic(service, files)
        directory = topic.ledger.directory
        ticks = _ticker()
        started = time.monotonic()
        assert await service.delete_topic_storage(TOPIC)
        assert time.monotonic() - started < SLOW_CLOSE_S / 2, "the delete returns at once"
        assert topic.ledger.closed and TOPIC not in service.topics
        await asyncio.sleep(0.1)
        assert ticks and directory.exists()
        await service.stop()
        assert not directory.exists(), "stop() waited for the deletion"

    _run(tmp_path, body)
