"""REACHED_END_OF_TOPIC after a topic is terminated (issue 12, defect 3).

As Pulsar does: once a topic is terminated, a consumer whose subscription has acknowledged every
message gets REACHED_END_OF_TOPIC (when the last acknowledgement arrives, at termination when
nothing is left, or when it subscribes afterwards). The Java and Go clients turn it into
``hasReachedEndOfTopic()``; the C++-based Python client ignores the command, so these tests speak
the wire protocol.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from magnetar.protocol.enums import AckType, CommandType, InitialPosition, SubType
from magnetar.protocol.schema import BaseCommand
from magnetar.testing import BrokerProcess
from tests.admin.admin_http import Http
from tests.broker.session.test_wire_errors import WireClient


@pytest.fixture
def wire(broker: BrokerProcess) -> Iterator:
    opened: list[WireClient] = []

    def open_client() -> WireClient:
        c = WireClient(broker.port)
        opened.append(c)
        c.connect()
        return c

    yield open_client
    for c in opened:
        c.close()


def _subscribe(c: WireClient, topic: str, sub: str, consumer_id: int, position: InitialPosition) -> None:
    cmd = BaseCommand(type=CommandType.SUBSCRIBE)
    cmd.subscribe.topic = topic
    cmd.subscribe.subscription = sub
    cmd.subscribe.sub_type = SubType.Exclusive
    cmd.subscribe.consumer_id = consumer_id
    cmd.subscribe.request_id = c.next_request_id()
    cmd.subscribe.initial_position = position
    c.send(cmd)
    c.expect(CommandType.SUCCESS)
    flow = BaseCommand(type=CommandType.FLOW)
    flow.flow.consumer_id = consumer_id
    flow.flow.message_permits = 100
    c.send(flow)


def _ack(c: WireClient, consumer_id: int, ledger_id: int, entry_id: int) -> None:
    cmd = BaseCommand(type=CommandType.ACK)
    cmd.ack.consumer_id = consumer_id
    cmd.ack.ack_type = AckType.Individual
    mid = cmd.ack.message_id.add()
    mid.ledger_id, mid.entry_id = ledger_id, entry_id
    c.send(cmd)


def _no_frame(c: WireClient, timeout: float = 0.5) -> None:
    try:
        frame = c.recv(timeout)
    except TimeoutError:
        return
    raise AssertionError(f"unexpected {CommandType(frame.type).name}: {frame.command}")


def test_reached_end_of_topic_once_everything_is_acknowledged(broker: BrokerProcess, wire) -> None:  # noqa: ANN001
    topic = f"persistent://public/default/eot-{uuid.uuid4().hex}"
    consumer = wire()
    _subscribe(consumer, topic, "s", 1, InitialPosition.Earliest)
    producer = wire()
    assert producer.create_producer(topic).type == CommandType.PRODUCER_SUCCESS
    for seq in range(2):
        producer.send_message(1, seq, b"m%d" % seq)
        producer.expect(CommandType.SEND_RECEIPT)
    ids = []
    for _ in range(2):
        message = consumer.expect(CommandType.MESSAGE).command.message
        ids.append((message.message_id.ledger_id, message.message_id.entry_id))
    reply = Http(broker.http_url).post(f"/admin/v2/persistent/{topic.split('://', 1)[1]}/terminate")
    assert reply.status == 200, reply.body
    assert producer.expect(CommandType.CLOSE_PRODUCER).command.close_producer.producer_id == 1
    _no_frame(consumer)  # two messages are not acknowledged yet
    _ack(consumer, 1, *ids[0])
    _no_frame(consumer)
    _ack(consumer, 1, *ids[1])
    assert consumer.expect(CommandType.REACHED_END_OF_TOPIC).command.reached_end_of_topic.consumer_id == 1
    # a subscription created after the termination has nothing left to read: told at once
    late = wire()
    _subscribe(late, topic, "late", 7, InitialPosition.Latest)
    assert late.expect(CommandType.REACHED_END_OF_TOPIC).command.reached_end_of_topic.consumer_id == 7


def test_reached_end_of_topic_at_termination_when_nothing_is_left(broker: BrokerProcess, wire) -> None:  # noqa: ANN001
    topic = f"persistent://public/default/eot-{uuid.uuid4().hex}"
    consumer = wire()
    _subscribe(consumer, topic, "s", 3, InitialPosition.Earliest)
    reply = Http(broker.http_url).post(f"/admin/v2/persistent/{topic.split('://', 1)[1]}/terminate")
    assert reply.status == 200, reply.body
    assert consumer.expect(CommandType.REACHED_END_OF_TOPIC).command.reached_end_of_topic.consumer_id == 3
