"""SENDs of a producer the broker closed, still on their way when it closed it (as Pulsar's
ServerCnx.handleSend: dropped without an answer until the client registers the producer again)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from magnetar.protocol.enums import CommandType, ServerError
from magnetar.protocol.framing import encode_command, encode_entry, encode_payload_command
from magnetar.protocol.schema import BaseCommand, MessageMetadata
from magnetar.testing import BrokerProcess
from magnetar.testing.admin import Admin
from tests.broker.session.test_wire_errors import WireClient


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("closed-producer") / "data").start()
    yield proc
    proc.stop()


def test_a_send_of_a_producer_the_broker_closed_is_dropped_until_it_registers_again(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    """A SEND_ERROR for it would make the C++ client (under the Python client) close the whole
    connection: the receipts on their way to its other producers would be lost and their entries
    resent, stored twice without deduplication (seen with an fdatasync failing under two pipelining
    producers of one client: 14 of 401 messages of the other topic stored twice)."""
    topic = f"persistent://public/default/closed-{uuid.uuid4().hex}"
    c = WireClient(broker.port)
    try:
        c.connect()
        assert c.create_producer(topic, producer_id=3).type == CommandType.PRODUCER_SUCCESS
        c.send_message(3, 0, b"stored")
        assert c.expect(CommandType.SEND_RECEIPT).command.send_receipt.sequence_id == 0
        Admin(broker.http_url).unload(topic)
        assert c.expect(CommandType.CLOSE_PRODUCER).command.close_producer.producer_id == 3
        c.send_message(3, 1, b"on its way")  # sent before the client read the CLOSE_PRODUCER
        c.ping()  # PONG, with nothing before it: no SEND_ERROR, the connection stays
        assert c.create_producer(topic, producer_id=3).type == CommandType.PRODUCER_SUCCESS
        c.send_message(3, 1, b"on its way")  # the client's resend
        receipt = c.expect(CommandType.SEND_RECEIPT).command.send_receipt
        assert (receipt.sequence_id, receipt.message_id.entry_id) == (1, 1)  # stored once, after entry 0
        c.send_message(99, 7, b"nobody")  # a producer never registered: still a SEND_ERROR
        err = c.expect(CommandType.SEND_ERROR).command.send_error
        assert (err.producer_id, err.error) == (99, ServerError.NotAllowedError)
    finally:
        c.close()


def test_a_producer_closed_by_its_client_with_sends_in_flight_gets_their_receipts_before_the_success(
    broker: BrokerProcess,
) -> None:
    """CLOSE_PRODUCER read with the SENDs before it still waiting for their round (one socket read: the
    broker publishes them and reads the close in one go): their receipts go out first, then SUCCESS, as
    Pulsar's Producer.close waits for its pending publish acks. The Java client fails what is still
    pending when the close is answered; the receipts of a closed producer used to be dropped, so it
    failed stored, dispatched messages."""
    topic = f"persistent://public/default/closing-{uuid.uuid4().hex}"
    c = WireClient(broker.port)
    try:
        c.connect()
        assert c.create_producer(topic, producer_id=4).type == CommandType.PRODUCER_SUCCESS
        frames = b""
        for seq in range(50):
            meta = MessageMetadata(producer_name="wire", sequence_id=seq, publish_time=1)
            send = BaseCommand(type=CommandType.SEND)
            send.send.producer_id, send.send.sequence_id, send.send.num_messages = 4, seq, 1
            frames += encode_payload_command(send, encode_entry(meta, b"m"))
        close = BaseCommand(type=CommandType.CLOSE_PRODUCER)
        close.close_producer.producer_id, close.close_producer.request_id = 4, 9001
        c.send_raw(frames + encode_command(close))
        answers = [c.recv() for _ in range(51)]
        assert [f.command.send_receipt.sequence_id for f in answers[:50]] == list(range(50))
        assert {f.type for f in answers[:50]} == {CommandType.SEND_RECEIPT}
        assert answers[50].type == CommandType.SUCCESS and answers[50].command.success.request_id == 9001
    finally:
        c.close()
