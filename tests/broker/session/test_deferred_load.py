"""PRODUCER and SUBSCRIBE of a topic not loaded, over the wire: the topic loads off the loop while the
connection and the broker serve on, concurrent SUBSCRIBEs get one topic, refusals keep their codes."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.protocol.enums import CommandType, InitialPosition, ServerError, SubType
from magnetar.protocol.schema import BaseCommand
from magnetar.testing import BrokerThread, free_port

from ..test_topic_loading import HeldLoads
from .test_wire_errors import WireClient


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=free_port(), fsync="never")
    with BrokerThread(config) as thread:
        yield thread


def _client(broker: BrokerThread) -> WireClient:
    assert broker.server is not None and broker.server.port is not None
    client = WireClient(broker.server.port)
    client.connect()
    return client


def _topic() -> str:
    return f"persistent://public/default/deferred-{uuid.uuid4().hex}"


def _subscribe(client: WireClient, topic: str, subscription: str, consumer_id: int, force: bool = True) -> int:
    cmd = BaseCommand(type=CommandType.SUBSCRIBE)
    req = cmd.subscribe
    req.topic = topic
    req.subscription = subscription
    req.sub_type = SubType.Exclusive
    req.consumer_id = consumer_id
    req.request_id = client.next_request_id()
    req.initial_position = InitialPosition.Earliest
    req.force_topic_creation = force
    client.send(cmd)
    return req.request_id


def _flow(client: WireClient, consumer_id: int, permits: int) -> None:
    cmd = BaseCommand(type=CommandType.FLOW)
    cmd.flow.consumer_id = consumer_id
    cmd.flow.message_permits = permits
    client.send(cmd)


def _wait_started(held: HeldLoads) -> None:
    assert held.started.wait(10), "the load never started"


def test_concurrent_subscribes_to_a_new_topic_get_one_topic_and_both_work(broker: BrokerThread) -> None:
    topic = _topic()
    held = HeldLoads(broker.server.service, topic)  # type: ignore[union-attr]
    first, second = _client(broker), _client(broker)
    first_request = _subscribe(first, topic, "sub-a", 1)
    _wait_started(held)
    second_request = _subscribe(second, topic, "sub-b", 2)
    time.sleep(0.1)
    first.ping()  # both connections answer while their SUBSCRIBEs wait
    second.ping()
    held.release()
    assert first.expect(CommandType.SUCCESS).command.success.request_id == first_request
    assert second.expect(CommandType.SUCCESS).command.success.request_id == second_request
    assert held.calls.count(topic) == 1, "one load for both SUBSCRIBEs"
    loaded = broker.call(lambda: broker.server.service.topics[topic])  # type: ignore[union-attr]
    assert set(loaded.subscriptions) == {"sub-a", "sub-b"}
    for client, consumer_id in ((first, 1), (second, 2)):
        _flow(client, consumer_id, 10)
    producer = _client(broker)
    assert producer.create_producer(topic, producer_id=7).type == CommandType.PRODUCER_SUCCESS
    producer.send_message(7, 0, b"to both")
    assert producer.expect(CommandType.SEND_RECEIPT).command.send_receipt.sequence_id == 0
    for client, consumer_id in ((first, 1), (second, 2)):
        message = client.expect(CommandType.MESSAGE)
        assert message.command.message.consumer_id == consumer_id
    for client in (first, second, producer):
        client.close()


def test_the_broker_serves_another_topic_while_a_load_is_held(broker: BrokerThread) -> None:
    served, loading = _topic(), _topic()
    publisher = _client(broker)
    assert publisher.create_producer(served, producer_id=1).type == CommandType.PRODUCER_SUCCESS
    held = HeldLoads(broker.server.service, loading)  # type: ignore[union-attr]
    waiting = _client(broker)
    cmd = BaseCommand(type=CommandType.PRODUCER)
    cmd.producer.topic = loading
    cmd.producer.producer_id = 5
    cmd.producer.request_id = waiting.next_request_id()
    waiting.send(cmd)
    _wait_started(held)
    for sequence_id in range(20):
        publisher.send_message(1, sequence_id, b"x" * 100)
        receipt = publisher.expect(CommandType.SEND_RECEIPT, timeout=5).command.send_receipt
        assert receipt.sequence_id == sequence_id
    held.release()
    success = waiting.expect(CommandType.PRODUCER_SUCCESS).command.producer_success
    assert success.request_id == cmd.producer.request_id
    waiting.send_message(5, 0, b"after the load")
    assert waiting.expect(CommandType.SEND_RECEIPT).command.send_receipt.sequence_id == 0
    publisher.close()
    waiting.close()


def test_refusals_of_a_deferred_load_keep_their_codes(broker: BrokerThread) -> None:
    client = _client(broker)
    request_id = _subscribe(client, _topic(), "sub", 1, force=False)
    error = client.expect(CommandType.ERROR).command.error
    assert (error.request_id, error.error) == (request_id, ServerError.TopicNotFound)
    request_id = _subscribe(client, "persistent://public/no-such-ns/t", "sub", 1)
    error = client.expect(CommandType.ERROR).command.error
    assert (error.request_id, error.error) == (request_id, ServerError.TopicNotFound)
    reply = client.create_producer("persistent://no-such-tenant/ns/t", producer_id=3)
    assert reply.type == CommandType.ERROR and reply.command.error.error == ServerError.TopicNotFound
    client.ping()  # the connection stays open
    client.close()


def test_a_producer_closed_before_its_topic_loaded_is_not_opened(broker: BrokerThread) -> None:
    topic = _topic()
    held = HeldLoads(broker.server.service, topic)  # type: ignore[union-attr]
    client = _client(broker)
    cmd = BaseCommand(type=CommandType.PRODUCER)
    cmd.producer.topic = topic
    cmd.producer.producer_id = 1
    cmd.producer.request_id = client.next_request_id()
    client.send(cmd)
    _wait_started(held)
    again = client.create_producer(topic, producer_id=1)
    assert again.type == CommandType.ERROR and again.command.error.error == ServerError.ServiceNotReady
    close = BaseCommand(type=CommandType.CLOSE_PRODUCER)
    close.close_producer.producer_id = 1
    close.close_producer.request_id = client.next_request_id()
    client.send(close)
    assert client.expect(CommandType.SUCCESS).command.success.request_id == close.close_producer.request_id
    held.release()
    error = client.expect(CommandType.ERROR).command.error
    assert (error.request_id, error.error) == (cmd.producer.request_id, ServerError.ServiceNotReady)
    loaded = broker.call(lambda: broker.server.service.topics[topic])  # type: ignore[union-attr]
    assert not loaded.producers, "the producer closed before its topic loaded was never added"
    client.close()
