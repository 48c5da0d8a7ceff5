"""The broker service's topic registry: deleting a topic removes its files whether or not it is loaded
(and the lifecycle's deletion of an inactive one leaves the metadata sync to the metadata thread), and
the topic, subscription and compaction modules load only once a topic does."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path

from magnetar.broker.config import BrokerConfig
from magnetar.broker.service import BrokerService
from magnetar.broker.subscriptions.consumer import Consumer
from magnetar.broker.subscriptions.subscription import Subscription
from magnetar.broker.topics.persistent import PersistentTopic
from magnetar.protocol.enums import InitialPosition, SubType
from magnetar.protocol.topic_name import TopicName
from tests.broker.service_runner import run_service
from tests.loop_file_probe import LoopFileProbe

TOPIC = "persistent://public/default/deleted"


def _write_topic(data_dir: Path) -> Path:
    """Store a few entries in TOPIC and stop the broker; the topic's ledger directory."""
    directory: list[Path] = []

    async def body(service: BrokerService) -> None:
        topic = await service.load_topic(TopicName.parse(TOPIC))
        assert isinstance(topic, PersistentTopic)
        for _ in range(3):
            topic.ledger.append(b"x" * 100)
        directory.append(topic.ledger.directory)

    run_service(data_dir, body)
    assert any(directory[0].glob("*.log"))
    return directory[0]


class _Connection:
    """A consumer's connection that takes nothing (no permits are given: nothing is dispatched)."""

    writable = True

    def send_message(self, *args: object) -> None:
        pass


def _read_by_a_consumer(topic: PersistentTopic, name: str, position: InitialPosition) -> tuple[Subscription, Consumer]:
    """A subscription with one consumer: the topic caches its recent entries only while one reads."""
    sub = topic.subscribe(name, durable=True, initial_position=position, start_message_id=None)
    consumer = Consumer(_Connection(), 1, "c", sub, SubType.Shared)  # type: ignore[arg-type]
    sub.add_consumer(consumer)
    return sub, consumer


def test_deleting_a_topic_not_loaded_removes_its_files(tmp_path: Path) -> None:
    directory = _write_topic(tmp_path)

    async def body(service: BrokerService) -> None:
        assert TOPIC not in service.topics
        assert await service.delete_topic_storage(TOPIC)
        assert service.metadata is not None and service.metadata.get_topic(TOPIC) is None
        assert not await service.delete_topic_storage(TOPIC), "nothing left to delete"

    run_service(tmp_path, body)
    assert not directory.exists(), "the ledger files went with the topic"


def test_deleting_a_loaded_topic_removes_its_files(tmp_path: Path) -> None:
    directory = _write_topic(tmp_path)

    async def body(service: BrokerService) -> None:
        topic = await service.load_topic(TopicName.parse(TOPIC), create=False)
        assert isinstance(topic, PersistentTopic) and topic.ledger.last_entry_id == 2
        assert await service.delete_topic_storage(TOPIC)
        assert topic.closed and TOPIC not in service.topics

    run_service(tmp_path, body)
    assert not directory.exists()


def test_topic_modules_load_with_the_first_topic(tmp_path: Path) -> None:
    script = f"""
import asyncio, sys
from pathlib import Path
from magnetar.broker.config import BrokerConfig
from magnetar.broker.server import BrokerServer
from magnetar.protocol.topic_name import TopicName

LAZY = ("magnetar.broker.topics.persistent", "magnetar.broker.topics.compaction",
        "magnetar.broker.topics.lifecycle", "magnetar.broker.subscriptions.subscription",
        "magnetar.broker.subscriptions.dispatchers.round_robin", "magnetar.broker.policies.resolution")

async def main() -> None:
    server = BrokerServer(BrokerConfig(data_dir=Path({str(tmp_path)!r}), port=0, fsync="never"))
    await server.start()
    print("started", sorted(m for m in (*LAZY, "magnetar.broker.topics.nonpersistent") if m in sys.modules))
    await server.service.load_topic(TopicName.parse("persistent://public/default/t"))
    print("loaded", sorted(m for m in LAZY if m in sys.modules) == sorted(LAZY))
    await server.stop()

asyncio.run(main())
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.splitlines() == ["started []", "loaded True"], out.stdout + out.stderr


def test_entries_leave_the_cache_after_the_eviction_threshold(tmp_path: Path) -> None:
    async def body(service: BrokerService) -> None:
        topic = await service.load_topic(TopicName.parse("persistent://public/default/aging"))
        assert isinstance(topic, PersistentTopic)
        _read_by_a_consumer(topic, "reader", InitialPosition.Latest)
        for i in range(5):
            topic.ledger.append(b"entry-%d" % i)
        cache = topic.ledger.cache  # what the aging task empties
        assert sorted(cache.entries) == [0, 1, 2, 3, 4] and service.cache_budget.used == 35
        started = time.monotonic()
        while cache.entries and time.monotonic() - started < 5:  # the task ticks every 0.1 s
            await asyncio.sleep(0.02)
        assert cache.entries == {} and service.cache_budget.used == 0
        assert time.monotonic() - started >= 0.15  # not before the threshold (0.2 s after the first tick)
        assert [e.data for e in topic.ledger.read_range(0, 4)] == [b"entry-%d" % i for i in range(5)]  # from the files

    run_service(tmp_path, body, entry_cache_eviction_seconds=0.2)


def test_the_cache_ager_sleeps_while_nothing_is_cached_and_wakes_at_the_first_entry(tmp_path: Path) -> None:
    async def body(service: BrokerService) -> None:
        budget = service.cache_budget
        ticks: list[int] = []
        age_out = budget.age_out
        budget.age_out = lambda now, max_age: (ticks.append(budget.used), age_out(now, max_age))  # type: ignore[method-assign]
        topic = await service.load_topic(TopicName.parse("persistent://public/default/idle-ager"))
        assert isinstance(topic, PersistentTopic)
        _read_by_a_consumer(topic, "reader", InitialPosition.Latest)
        await asyncio.sleep(0.5)  # five periods of 0.1 s with nothing cached
        assert ticks == []
        for i in range(3):
            topic.ledger.append(b"entry-%d" % i)
        started = time.monotonic()
        while topic.ledger.cache.entries and time.monotonic() - started < 5:
            await asyncio.sleep(0.02)
        assert topic.ledger.cache.entries == {} and budget.used == 0
        assert ticks[0] == 21 and ticks[-1] == 21  # it ticked while the entries were there, aged them out
        count = len(ticks)
        await asyncio.sleep(0.5)  # empty again: asleep again
        assert len(ticks) == count
        topic.ledger.append(b"again")
        started = time.monotonic()
        while topic.ledger.cache.entries and time.monotonic() - started < 5:
            await asyncio.sleep(0.02)
        assert topic.ledger.cache.entries == {} and len(ticks) > count

    run_service(tmp_path, body, entry_cache_eviction_seconds=0.2)


def test_a_topic_caches_its_entries_only_while_a_subscription_has_a_consumer(tmp_path: Path) -> None:
    async def body(service: BrokerService) -> None:
        topic = await service.load_topic(TopicName.parse("persistent://public/default/produced"))
        assert isinstance(topic, PersistentTopic)
        for i in range(3):
            topic.ledger.append(b"entry-%d" % i)
        assert topic.ledger.cache.entries == {} and service.cache_budget.used == 0  # nobody reads it
        _read_by_a_consumer(topic, "s", InitialPosition.Earliest)
        for i in range(3, 5):
            topic.ledger.append(b"entry-%d" % i)
        assert sorted(topic.ledger.cache.entries) == [3, 4] and service.cache_budget.used == 14
        topic.remove_subscription("s")
        topic.ledger.append(b"entry-5")
        assert topic.ledger.cache.entries == {} and service.cache_budget.used == 0
        assert [e.data for e in topic.ledger.read_range(0, 5)] == [b"entry-%d" % i for i in range(6)]

    run_service(tmp_path, body)


def test_the_repair_modules_load_only_for_a_damaged_metadata_database(tmp_path: Path) -> None:
    script = f"""
import asyncio, sys
from pathlib import Path
from magnetar.broker.config import BrokerConfig
from magnetar.broker.server import BrokerServer

REPAIR = ("magnetar.storage.repair", "magnetar.storage.consistency")

async def main() -> None:
    for _ in range(2):  # a fresh data directory, then the same one again
        server = BrokerServer(BrokerConfig(data_dir=Path({str(tmp_path)!r}), port=0, fsync="never"))
        await server.start()
        print("started", [m for m in REPAIR if m in sys.modules], server.service.metadata.list_tenants())
        await server.stop()
    (Path({str(tmp_path)!r}) / "metadata.db" / "metadata.db").write_bytes(b"not a database" * 1000)
    server = BrokerServer(BrokerConfig(data_dir=Path({str(tmp_path)!r}), port=0, fsync="never"))
    await server.start()
    print("damaged", [m for m in REPAIR if m in sys.modules], server.service.metadata.list_tenants())
    await server.stop()

asyncio.run(main())
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.splitlines() == ["started [] ['public']", "started [] ['public']",
                                       f"damaged {['magnetar.storage.repair', 'magnetar.storage.consistency']} ['public']"], \
        out.stdout + out.stderr


def test_the_replication_manager_is_made_only_once_a_loaded_topic_replicates(tmp_path: Path) -> None:
    script = f"""
import asyncio, sys
from pathlib import Path
from magnetar.broker.config import BrokerConfig
from magnetar.broker.server import BrokerServer
from magnetar.protocol.topic_name import TopicName

MANAGER = "magnetar.broker.replication.manager"

async def main() -> None:
    server = BrokerServer(BrokerConfig(data_dir=Path({str(tmp_path)!r}), port=0, fsync="never"))
    await server.start()
    service = server.service
    await service.load_topic(TopicName.parse("persistent://public/default/t"))
    print("loaded", MANAGER in sys.modules, service._replication is None)
    policies = service.metadata.get_namespace("public/default")
    service.metadata.set_namespace_policies("public/default", {{**policies, "replication_clusters": ["standalone", "far"]}})
    service.policies_changed("public/default")
    print("replicates", MANAGER in sys.modules, service._replication is not None)
    await server.stop()

asyncio.run(main())
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.splitlines() == ["loaded False True", "replicates True True"], out.stdout + out.stderr


def test_the_lifecycle_deletes_an_inactive_topic_without_a_file_operation_on_the_loop(tmp_path: Path) -> None:
    """An inactive topic's deletion by the lifecycle commits its metadata row on the loop without the
    fsync, which the metadata thread runs (as for an admin deletion): the loop opens, syncs, reads and
    writes no file (tests/loop_file_probe.py), and the deletion is durable once ``metadata_sync`` says so."""
    async def main() -> tuple[list, bool, bool]:
        config = BrokerConfig(data_dir=tmp_path / "data", fsync="always", inactive_topic_expiry_seconds=1.0)
        service = BrokerService(config)
        await service.start()
        try:
            topic = await service.load_topic(TopicName.parse(TOPIC))
            assert service.metadata is not None and service.metadata.get_topic(TOPIC) is not None
            with LoopFileProbe(threading.get_ident()) as probe:
                service._expire_inactive(topic, now=time.time() + 60)  # the lifecycle's check, a minute on
                for _ in range(500):
                    if TOPIC not in service.topics and service.metadata.get_topic(TOPIC) is None:
                        break
                    await asyncio.sleep(0.01)
                await service.metadata_sync.durable()
            return probe.findings, TOPIC in service.topics, service.metadata.get_topic(TOPIC) is None
        finally:
            await service.stop()

    findings, still_loaded, row_gone = asyncio.run(main())
    assert not still_loaded and row_gone
    assert findings == [], LoopFileProbe(0).report_of(findings)
