"""The sans-IO command builders and request ids."""

from __future__ import annotations

from magnetar.protocol import commands
from magnetar.protocol.enums import AckType, CommandType, ServerError
from magnetar.protocol.framing import FrameDecoder, encode_command
from magnetar.protocol.schema import BaseCommand, MessageIdData


def _round_trip(command: BaseCommand) -> BaseCommand:
    (frame,) = FrameDecoder(1 << 20).feed(encode_command(command))
    return frame.command


def test_responses() -> None:
    assert _round_trip(commands.success(5)).success.request_id == 5
    err = _round_trip(commands.error(6, ServerError.TopicNotFound, "no such topic")).error
    assert (err.request_id, err.error, err.message) == (6, ServerError.TopicNotFound, "no such topic")
    r = _round_trip(commands.send_receipt(1, 10, 0, 3, 4)).send_receipt
    assert (r.producer_id, r.sequence_id, r.message_id.ledger_id, r.message_id.entry_id) == (1, 10, 3, 4)
    assert not r.HasField("highest_sequence_id")
    assert _round_trip(commands.send_receipt(1, 10, 12, -1, -1)).send_receipt.highest_sequence_id == 12
    e = _round_trip(commands.send_error(2, 11, ServerError.PersistenceError, "disk")).send_error
    assert (e.producer_id, e.sequence_id, e.error, e.message) == (2, 11, ServerError.PersistenceError, "disk")


def test_broker_initiated_closes_carry_request_id_minus_one() -> None:
    cp = _round_trip(commands.close_producer(3, commands.BROKER_REQUEST_ID)).close_producer
    assert (cp.producer_id, cp.request_id) == (3, 2**64 - 1)
    cc = _round_trip(commands.close_consumer(4, -1)).close_consumer
    assert (cc.consumer_id, cc.request_id) == (4, 2**64 - 1)


def test_keepalive_frames() -> None:
    assert _round_trip(commands.ping()).type == CommandType.PING
    (ping,) = FrameDecoder(64).feed(commands.PING_FRAME)
    (pong,) = FrameDecoder(64).feed(commands.PONG_FRAME)
    assert (ping.type, pong.type) == (CommandType.PING, CommandType.PONG)


def test_consumer_commands() -> None:
    assert _round_trip(commands.flow(7, 1000)).flow.message_permits == 1000
    ids = [MessageIdData(ledger_id=1, entry_id=2), MessageIdData(ledger_id=1, entry_id=3)]
    a = _round_trip(commands.ack(7, AckType.Individual, ids)).ack
    assert a.consumer_id == 7 and [m.entry_id for m in a.message_id] == [2, 3]
    r = _round_trip(commands.redeliver_unacknowledged(7)).redeliver_unacknowledged_messages
    assert r.consumer_id == 7 and not r.message_ids
    assert len(commands.redeliver_unacknowledged(7, ids).redeliver_unacknowledged_messages.message_ids) == 2
    assert _round_trip(commands.unsubscribe(7, 8)).unsubscribe.request_id == 8
    assert _round_trip(commands.get_last_message_id(7, 9)).get_last_message_id.request_id == 9


def test_request_id_of_known_and_unknown_commands() -> None:
    assert commands.request_id_of(commands.unsubscribe(1, 42)) == 42
    assert commands.request_id_of(commands.flow(1, 1)) is None  # FLOW has no request id
    lookup = BaseCommand(type=CommandType.LOOKUP)
    lookup.lookup_topic.topic = "t"
    assert commands.request_id_of(lookup) is None  # request_id not set
    lookup.lookup_topic.request_id = 0
    assert commands.request_id_of(lookup) == 0
    # a command type this schema does not know, whose field 1 is a request id (300)
    unknown = BaseCommand.FromString(bytes([0x08, 0x63, 0x9A, 0x06, 0x03, 0x08, 0xAC, 0x02]))
    assert commands.request_id_of(unknown) == 300
    not_varint = BaseCommand.FromString(bytes([0x08, 0x63, 0x9A, 0x06, 0x02, 0x12, 0x00]))
    assert commands.request_id_of(not_varint) is None
