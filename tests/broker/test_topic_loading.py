"""Loading a topic off the loop (TopicLoader, through BrokerService.load_topic): one load per topic name
however many ask, the refusals of every load, and nothing half-registered when the topic is deleted or the
broker stops while a load is under way."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.broker.errors import BrokerError
from magnetar.broker.service import BrokerService
from magnetar.protocol.enums import ServerError
from magnetar.protocol.topic_name import TopicName
from tests.broker.service_runner import run_service

TOPIC = "persistent://public/default/loading"


class HeldLoads:
    """Holds the load thread's part of the loads of some topics until :meth:`release`; counts the loads."""

    def __init__(self, service: BrokerService, *names: str) -> None:
        self.gate = threading.Event()
        self.started = threading.Event()
        self.calls: list[str] = []
        original = service.topic_loader.prepare

        def held(topic_name: TopicName, create: bool):  # noqa: ANN202 - what the original returns
            self.calls.append(str(topic_name))
            if str(topic_name) in names:
                self.started.set()
                assert self.gate.wait(10), "the test never released the load"
            return original(topic_name, create)

        service.topic_loader.prepare = held  # type: ignore[method-assign]

    def release(self) -> None:
        self.gate.set()

    async def wait_started(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.started.wait, 10)


def test_concurrent_loads_of_one_topic_share_one_load(tmp_path: Path) -> None:
    async def body(service: BrokerService) -> None:
        held = HeldLoads(service, TOPIC)
        name = TopicName.parse(TOPIC)
        loads = [asyncio.create_task(service.load_topic(name)) for _ in range(5)]
        await held.wait_started()
        assert TOPIC not in service.topics, "nothing is registered while the load is under way"
        held.release()
        topics = await asyncio.gather(*loads)
        assert all(topic is topics[0] for topic in topics)
        assert service.topics[TOPIC] is topics[0]
        assert held.calls == [TOPIC], "one load for the five callers"
        assert await service.load_topic(name) is topics[0]
        assert held.calls == [TOPIC], "a loaded topic is not loaded again"

    run_service(tmp_path / "data", body)


def test_refusals_keep_their_codes(tmp_path: Path) -> None:
    async def body(service: BrokerService) -> None:
        async def code_of(name: str, create: bool = True) -> ServerError:
            with pytest.raises(BrokerError) as info:
                await service.load_topic(TopicName.parse(name), create=create)
            return info.value.code

        assert await code_of("persistent://public/default/missing", create=False) == ServerError.TopicNotFound
        assert await code_of("persistent://public/no-such-ns/t") == ServerError.TopicNotFound
        assert await code_of("non-persistent://public/no-such-ns/t") == ServerError.TopicNotFound
        assert service.metadata is not None
        service.metadata.set_partitioned_topic("persistent://public/default/parted", 2)
        assert await code_of("persistent://public/default/parted") == ServerError.NotAllowedError
        await service.load_topic(TopicName.parse("persistent://public/default/first"))
        assert await code_of("persistent://public/default/second") == ServerError.NotAllowedError, "max 1 topic"
        assert service.metadata.get_topic("persistent://public/default/second") is None
        assert set(service.topics) == {"persistent://public/default/first"}

    run_service(tmp_path / "data", body, max_topics_per_namespace=1)


def test_a_creating_load_does_not_take_the_refusal_of_a_load_that_does_not_create(tmp_path: Path) -> None:
    async def body(service: BrokerService) -> None:
        held = HeldLoads(service, TOPIC)
        name = TopicName.parse(TOPIC)
        lookup = asyncio.create_task(service.load_topic(name, create=False))
        await held.wait_started()
        create = asyncio.create_task(service.load_topic(name, create=True))
        held.release()
        with pytest.raises(BrokerError) as info:
            await lookup
        assert info.value.code == ServerError.TopicNotFound
        topic = await create
        assert service.topics[TOPIC] is topic

    run_service(tmp_path / "data", body)


def test_deleting_a_topic_while_it_loads_leaves_nothing_registered(tmp_path: Path) -> None:
    async def body(service: BrokerService) -> None:
        held = HeldLoads(service, TOPIC)
        load = asyncio.create_task(service.load_topic(TopicName.parse(TOPIC)))
        await held.wait_started()
        delete = asyncio.create_task(service.delete_topic_storage(TOPIC))
        await asyncio.sleep(0.05)
        assert not delete.done(), "the deletion waits for the load"
        held.release()
        topic = await load
        assert await delete
        assert topic.closed
        assert TOPIC not in service.topics
        assert service.metadata is not None and service.metadata.get_topic(TOPIC) is None
        with pytest.raises(BrokerError) as info:
            await service.load_topic(TopicName.parse(TOPIC), create=False)
        assert info.value.code == ServerError.TopicNotFound

    run_service(tmp_path / "data", body)


def test_stopping_the_broker_while_a_topic_loads_registers_nothing(tmp_path: Path) -> None:
    async def main() -> None:
        service = BrokerService(BrokerConfig(data_dir=tmp_path / "data", fsync="never"))
        await service.start()
        held = HeldLoads(service, TOPIC)
        load = asyncio.create_task(service.load_topic(TopicName.parse(TOPIC)))
        await held.wait_started()
        stop = asyncio.create_task(service.stop())
        await asyncio.sleep(0.05)
        assert not stop.done(), "the stop waits for the load"
        held.release()
        await stop
        with pytest.raises(BrokerError) as info:
            await load
        assert info.value.code == ServerError.ServiceNotReady
        assert service.topics == {}
        with pytest.raises(BrokerError) as after:
            await service.load_topic(TopicName.parse("persistent://public/default/later"))
        assert after.value.code == ServerError.ServiceNotReady

    asyncio.run(main())
    # the row was created before the stop: the topic loads on the next start, with its ledger intact
    run_service(tmp_path / "data", _expect_loadable)


async def _expect_loadable(service: BrokerService) -> None:
    topic = await service.load_topic(TopicName.parse(TOPIC), create=False)
    assert service.topics[TOPIC] is topic


def test_a_policy_change_made_while_the_load_thread_read_policies_applies(tmp_path: Path) -> None:
    async def body(service: BrokerService) -> None:
        assert service.metadata is not None
        read = threading.Event()
        gate = threading.Event()
        original = service.topic_loader.prepare

        def read_then_hold(topic_name: TopicName, create: bool):  # noqa: ANN202 - what the original returns
            prepared = original(topic_name, create)  # policies resolved here: no TTL yet
            read.set()
            assert gate.wait(10), "the test never released the load"
            return prepared

        service.topic_loader.prepare = read_then_hold  # type: ignore[method-assign]
        load = asyncio.create_task(service.load_topic(TopicName.parse(TOPIC)))
        await asyncio.get_running_loop().run_in_executor(None, read.wait, 10)
        policies = service.metadata.get_namespace("public/default") or {}
        service.metadata.set_namespace_policies("public/default", {**policies, "message_ttl_in_seconds": 321})
        service.policies_changed("public/default")
        gate.set()
        topic = await load
        assert topic.policies.message_ttl_seconds == 321

    run_service(tmp_path / "data", body)
