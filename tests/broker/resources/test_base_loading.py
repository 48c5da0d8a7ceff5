"""Admin calls on topics not loaded (ResourceContext.load_topic): they await a client's load of the same
topic under way instead of answering 503, load a topic off the loop themselves while the broker serves
on, and answer 404 for what does not exist as before."""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.broker.service import BrokerService
from magnetar.broker.topics.persistent import PersistentTopic
from magnetar.protocol.enums import CommandType
from magnetar.protocol.framing import encode_entry
from magnetar.protocol.schema import MessageMetadata
from magnetar.protocol.topic_name import TopicName
from magnetar.testing import BrokerThread, free_port
from tests.admin.admin_http import Http, Reply
from tests.broker.service_runner import run_service
from tests.broker.session.test_wire_errors import WireClient
from tests.broker.test_topic_loading import HeldLoads

STORED = "persistent://public/default/stored"
OTHER = "persistent://public/default/other"
PATH = "/admin/v2/persistent/public/default"


def _store_entries(data_dir: Path, count: int) -> None:
    """Store ``count`` entries in STORED and an empty OTHER, then stop: both exist and neither is loaded."""

    async def body(service: BrokerService) -> None:
        topic = await service.load_topic(TopicName.parse(STORED))
        assert isinstance(topic, PersistentTopic)
        for i in range(count):
            metadata = MessageMetadata(producer_name="stored", sequence_id=i, publish_time=1_000 + i)
            topic.ledger.append(encode_entry(metadata, f"entry-{i}".encode()))
        await service.load_topic(TopicName.parse(OTHER))

    run_service(data_dir, body)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    data_dir = tmp_path / "data"
    _store_entries(data_dir, 3)
    config = BrokerConfig(data_dir=data_dir, port=free_port(), http_port=free_port(), fsync="never")
    with BrokerThread(config) as thread:
        yield thread


def _http(broker: BrokerThread) -> Http:
    return Http(f"http://127.0.0.1:{broker.config.http_port}")


def _loaded(broker: BrokerThread) -> set[str]:
    return set(broker.call(lambda: dict(broker.server.service.topics)))  # type: ignore[union-attr]


def test_admin_calls_during_a_clients_load_wait_for_it_and_answer_normally(broker: BrokerThread) -> None:
    assert broker.server is not None and broker.server.port is not None
    held = HeldLoads(broker.server.service, STORED)
    client = WireClient(broker.server.port)
    client.connect()
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        producing = pool.submit(client.create_producer, STORED, 1)
        assert held.started.wait(10), "the client's load never started"
        http = _http(broker)
        stats = pool.submit(http.get, f"{PATH}/stored/internalStats")
        examined = pool.submit(http.get, f"{PATH}/stored/examinemessage?initialPosition=earliest&messagePosition=2")
        time.sleep(0.2)
        assert not stats.done() and not examined.done(), "the admin calls wait for the load"
        held.release()
        stats_reply: Reply = stats.result(10)
        examined_reply: Reply = examined.result(10)
        assert producing.result(10).type == CommandType.PRODUCER_SUCCESS
    assert stats_reply.status == 200, stats_reply.body
    assert stats_reply.json()["numberOfEntries"] == 3
    assert examined_reply.status == 200, examined_reply.body
    assert examined_reply.body == b"entry-1"
    assert held.calls.count(STORED) == 1, "the admin calls joined the client's load"
    client.close()


def test_an_admin_call_loads_a_topic_off_the_loop_while_the_broker_serves_on(broker: BrokerThread) -> None:
    assert broker.server is not None
    http = _http(broker)
    assert http.get(f"{PATH}/other/stats").status == 200
    assert _loaded(broker) == {OTHER}
    held = HeldLoads(broker.server.service, STORED)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        stats = pool.submit(http.get, f"{PATH}/stored/lastMessageId")
        assert held.started.wait(10), "the admin call's load never started"
        started = time.monotonic()
        for _ in range(5):
            assert http.get(f"{PATH}/other/stats").status == 200
        assert time.monotonic() - started < 5
        assert not stats.done(), "the load is still held"
        held.release()
        reply = stats.result(10)
    assert reply.status == 200, reply.body
    assert reply.json()["entryId"] == 2
    assert _loaded(broker) == {OTHER, STORED}


def test_missing_topics_and_namespaces_still_answer_404(broker: BrokerThread) -> None:
    http = _http(broker)
    for path in (
        f"{PATH}/missing/stats",
        f"{PATH}/missing/internalStats",
        f"{PATH}/missing/lastMessageId",
        f"{PATH}/missing/examinemessage?initialPosition=earliest&messagePosition=1",
        f"{PATH}/missing/subscriptions",
        "/admin/v2/persistent/public/no-such-ns/t/stats",
    ):
        reply = http.get(path)
        assert reply.status == 404, (path, reply.body)
    assert http.get(f"{PATH}/missing/stats").reason == "Topic persistent://public/default/missing not found"
    assert _loaded(broker) == set(), "nothing was loaded or created"
