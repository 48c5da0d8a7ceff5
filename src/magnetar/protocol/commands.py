"""Sans-IO command layer: builders of the commands both ends send, and request ids.

Each builder returns a :class:`~magnetar.protocol.schema.BaseCommand`; encode it with
:func:`~magnetar.protocol.framing.encode_command` (or hand it to a connection's
``send_command``). :data:`PING_FRAME` and :data:`PONG_FRAME` are the encoded keep-alive frames.
:func:`request_id_of` finds the request id of any request command, known to the schema or not.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from google.protobuf import unknown_fields

from magnetar.protocol.enums import AckType, CommandType, ServerError
from magnetar.protocol.framing import encode_command, sub_command
from magnetar.protocol.schema import BaseCommand, MessageIdData
from magnetar.protocol.varint import read_varint

_U64: Final = (1 << 64) - 1
#: the request id of a CLOSE_PRODUCER / CLOSE_CONSUMER the broker initiates (no answer expected)
BROKER_REQUEST_ID: Final = _U64


def u64(value: int) -> int:
    """``value`` as the uint64 the wire carries (-1 becomes 2**64 - 1)."""
    return value & _U64


# -- responses ---------------------------------------------------------------------------------
def success(request_id: int) -> BaseCommand:
    """SUCCESS for a request."""
    cmd = BaseCommand(type=CommandType.SUCCESS)
    cmd.success.request_id = request_id
    return cmd


def error(request_id: int, code: ServerError, message: str) -> BaseCommand:
    """ERROR answering a request."""
    cmd = BaseCommand(type=CommandType.ERROR)
    e = cmd.error
    e.request_id = request_id
    e.error = code
    e.message = message
    return cmd


def send_receipt(producer_id: int, sequence_id: int, highest_sequence_id: int, ledger_id: int, entry_id: int) -> BaseCommand:
    """SEND_RECEIPT for a stored entry (``highest_sequence_id`` 0 leaves the field out)."""
    cmd = BaseCommand(type=CommandType.SEND_RECEIPT)
    r = cmd.send_receipt
    r.producer_id = producer_id
    r.sequence_id = sequence_id
    if highest_sequence_id:
        r.highest_sequence_id = highest_sequence_id
    r.message_id.ledger_id = ledger_id & _U64
    r.message_id.entry_id = entry_id & _U64
    return cmd


def send_error(producer_id: int, sequence_id: int, code: ServerError, message: str) -> BaseCommand:
    """SEND_ERROR for one SEND."""
    cmd = BaseCommand(type=CommandType.SEND_ERROR)
    e = cmd.send_error
    e.producer_id = producer_id
    e.sequence_id = sequence_id
    e.error = code
    e.message = message
    return cmd


# -- either side -------------------------------------------------------------------------------
def close_producer(producer_id: int, request_id: int) -> BaseCommand:
    """CLOSE_PRODUCER (from the broker: request id :data:`BROKER_REQUEST_ID`)."""
    cmd = BaseCommand(type=CommandType.CLOSE_PRODUCER)
    cmd.close_producer.producer_id = producer_id
    cmd.close_producer.request_id = request_id & _U64
    return cmd


def close_consumer(consumer_id: int, request_id: int) -> BaseCommand:
    """CLOSE_CONSUMER (from the broker: request id :data:`BROKER_REQUEST_ID`)."""
    cmd = BaseCommand(type=CommandType.CLOSE_CONSUMER)
    cmd.close_consumer.consumer_id = consumer_id
    cmd.close_consumer.request_id = request_id & _U64
    return cmd


def ping() -> BaseCommand:
    """PING (keep-alive probe)."""
    cmd = BaseCommand(type=CommandType.PING)
    cmd.ping.SetInParent()
    return cmd


def pong() -> BaseCommand:
    """PONG (keep-alive answer)."""
    cmd = BaseCommand(type=CommandType.PONG)
    cmd.pong.SetInParent()
    return cmd


#: the encoded PING and PONG frames
PING_FRAME: Final = encode_command(ping())
PONG_FRAME: Final = encode_command(pong())


# -- consumer commands -------------------------------------------------------------------------
def flow(consumer_id: int, permits: int) -> BaseCommand:
    """FLOW granting ``permits`` more messages."""
    cmd = BaseCommand(type=CommandType.FLOW)
    cmd.flow.consumer_id = consumer_id
    cmd.flow.message_permits = permits
    return cmd


def ack(consumer_id: int, ack_type: AckType, message_ids: Iterable[MessageIdData]) -> BaseCommand:
    """ACK of message ids (individual, or one cumulative id)."""
    cmd = BaseCommand(type=CommandType.ACK)
    a = cmd.ack
    a.consumer_id = consumer_id
    a.ack_type = ack_type
    a.message_id.extend(message_ids)
    return cmd


def redeliver_unacknowledged(consumer_id: int, message_ids: Iterable[MessageIdData] = ()) -> BaseCommand:
    """REDELIVER_UNACKNOWLEDGED_MESSAGES of some ids, or (none given) of all unacknowledged."""
    cmd = BaseCommand(type=CommandType.REDELIVER_UNACKNOWLEDGED_MESSAGES)
    r = cmd.redeliver_unacknowledged_messages
    r.consumer_id = consumer_id
    r.message_ids.extend(message_ids)
    return cmd


def unsubscribe(consumer_id: int, request_id: int) -> BaseCommand:
    """UNSUBSCRIBE (delete the consumer's subscription)."""
    cmd = BaseCommand(type=CommandType.UNSUBSCRIBE)
    cmd.unsubscribe.consumer_id = consumer_id
    cmd.unsubscribe.request_id = request_id
    return cmd


def get_last_message_id(consumer_id: int, request_id: int) -> BaseCommand:
    """GET_LAST_MESSAGE_ID of the consumer's topic."""
    cmd = BaseCommand(type=CommandType.GET_LAST_MESSAGE_ID)
    cmd.get_last_message_id.consumer_id = consumer_id
    cmd.get_last_message_id.request_id = request_id
    return cmd


# -- request ids -------------------------------------------------------------------------------
def request_id_of(command: BaseCommand) -> int | None:
    """The request id of any request command, known to the schema or not (None if it has none).

    Every Pulsar request command but a few keeps its request id in field 1; the known ones
    that do not are read by name.
    """
    sub = sub_command(command)
    if sub is not None:
        if "request_id" in sub.DESCRIPTOR.fields_by_name:
            return sub.request_id if sub.HasField("request_id") else None
        return None
    for field in unknown_fields.UnknownFieldSet(command):
        if field.field_number == command.type and isinstance(field.data, bytes):
            return _varint_field_1(field.data)
    return None


def _varint_field_1(data: bytes) -> int | None:
    """Value of field 1 when it is a varint at the start of a serialized message."""
    if not data or data[0] != 0x08:
        return None
    try:
        return read_varint(data, 1)[0]
    except ValueError:
        return None
