"""The wire schema: defaults the clients rely on, and byte-level agreement with the protocol."""

from __future__ import annotations

from typing import Any

import pytest

from magnetar.protocol.enums import COMMAND_FIELD, CommandType
from magnetar.protocol.framing import FrameDecoder, sub_command
from magnetar.protocol.schema import (
    MESSAGES,
    BaseCommand,
    MessageIdData,
    MessageMetadata,
    SingleMessageMetadata,
)

U64_MAX = 2**64 - 1


def varint(value: int) -> bytes:
    """Protobuf varint of a non-negative value (negative int32/int64 go through 2**64)."""
    value %= 2**64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number: int, wire_type: int, payload: bytes) -> bytes:
    return varint(number << 3 | wire_type) + payload


# --- defaults that matter for interoperability ----------------------------------------------------


def test_message_id_defaults() -> None:
    mid = MessageIdData()
    assert mid.partition == -1
    assert mid.batch_index == -1
    assert mid.batch_size == 0
    assert not mid.HasField("partition")


def test_command_defaults() -> None:
    assert MESSAGES["CommandSend"]().num_messages == 1
    assert MessageMetadata().num_messages_in_batch == 1
    assert MESSAGES["CommandSubscribe"]().durable is True
    assert MESSAGES["CommandSubscribe"]().force_topic_creation is True
    assert MESSAGES["CommandProducerSuccess"]().last_sequence_id == -1
    assert MESSAGES["CommandProducerSuccess"]().producer_ready is True
    assert MESSAGES["CommandProducer"]().user_provided_producer_name is True
    assert MESSAGES["CommandPartitionedTopicMetadata"]().metadata_auto_creation_enabled is True
    assert MESSAGES["CommandGetTopicsOfNamespaceResponse"]().changed is True
    assert MESSAGES["CommandConnected"]().protocol_version == 0


def test_defaults_are_not_written_to_the_wire() -> None:
    assert MESSAGES["CommandSend"](producer_id=1, sequence_id=2).SerializeToString() == b"\x08\x01\x10\x02"
    assert MessageIdData().SerializeToString() == b""


# --- hand-assembled bytes, as the official clients encode them ----------------------------------------


def test_hand_assembled_command_send() -> None:
    send = MESSAGES["CommandSend"].FromString(bytes([0x08, 0x01, 0x10, 0x02]))
    assert send.producer_id == 1
    assert send.sequence_id == 2
    assert send.num_messages == 1
    assert not send.HasField("num_messages")


def test_uint64_max_entry_id_round_trips() -> None:
    mid = MessageIdData(ledger_id=U64_MAX, entry_id=U64_MAX)
    wire = mid.SerializeToString()
    assert wire == field(1, 0, varint(U64_MAX)) + field(2, 0, varint(U64_MAX))
    assert wire == b"\x08" + b"\xff" * 9 + b"\x01" + b"\x10" + b"\xff" * 9 + b"\x01"
    back = MessageIdData.FromString(wire)
    assert back.ledger_id == U64_MAX and back.entry_id == U64_MAX


def test_uint64_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError):
        MessageIdData(entry_id=2**64)


def test_negative_int32_uses_ten_byte_varint() -> None:
    # proto2 int32 -1 is sign-extended to 64 bits on the wire, as the Java and C++ clients write it
    wire = MessageIdData(ledger_id=1, entry_id=2, partition=-1, batch_index=-1).SerializeToString()
    assert wire == b"\x08\x01\x10\x02" + field(3, 0, b"\xff" * 9 + b"\x01") + field(
        4, 0, b"\xff" * 9 + b"\x01"
    )
    # the 5-byte form (-1 truncated to 32 bits) is also read as -1
    assert MessageIdData.FromString(field(3, 0, b"\xff\xff\xff\xff\x0f")).partition == -1


def test_int64_last_sequence_id_minus_one() -> None:
    wire = field(1, 0, varint(5)) + field(3, 0, varint(-1))
    success = MESSAGES["CommandProducerSuccess"].FromString(wire)
    assert success.request_id == 5
    assert success.last_sequence_id == -1
    assert success.HasField("last_sequence_id")


def test_hand_assembled_message_metadata() -> None:
    wire = (
        field(1, 2, varint(8) + b"producer")
        + field(2, 0, varint(42))
        + field(3, 0, varint(1_700_000_000_000))
        + field(4, 2, varint(6) + field(1, 2, b"\x01k") + field(2, 2, b"\x01v"))
        + field(8, 0, varint(1))
        + field(9, 0, varint(1000))
        + field(11, 0, varint(3))
        + field(18, 2, varint(2) + b"\x00\xff")
    )
    meta = MessageMetadata.FromString(wire)
    assert meta.producer_name == "producer"
    assert meta.sequence_id == 42
    assert meta.publish_time == 1_700_000_000_000
    assert [(p.key, p.value) for p in meta.properties] == [("k", "v")]
    assert meta.compression == 1
    assert meta.uncompressed_size == 1000
    assert meta.num_messages_in_batch == 3
    assert meta.ordering_key == b"\x00\xff"
    assert meta.SerializeToString() == wire


def test_hand_assembled_single_message_metadata() -> None:
    wire = field(2, 2, varint(3) + b"key") + field(3, 0, varint(7)) + field(8, 0, varint(9))
    smm = SingleMessageMetadata.FromString(wire)
    assert (smm.partition_key, smm.payload_size, smm.sequence_id) == ("key", 7, 9)


def test_unknown_fields_survive_a_round_trip() -> None:
    # e.g. MessageMetadata field 33 (entry_hash_min), newer than this schema
    wire = field(2, 0, varint(1)) + field(33, 0, varint(77))
    meta = MessageMetadata.FromString(wire)
    assert meta.sequence_id == 1
    assert meta.SerializeToString() == wire


# --- BaseCommand layout ----------------------------------------------------------------------------


def test_sub_command_field_numbers_equal_command_types() -> None:
    fields = BaseCommand.DESCRIPTOR.fields_by_name
    for command_type, name in COMMAND_FIELD.items():
        assert fields[name].number == int(command_type), name


def test_every_command_type_but_unsupported_ones_has_a_field() -> None:
    unsupported = {CommandType.WATCH_TOPIC_LIST}
    assert set(CommandType) - set(COMMAND_FIELD) == unsupported


@pytest.mark.parametrize("command_type", sorted(COMMAND_FIELD), ids=lambda t: CommandType(t).name)
def test_each_command_encodes_under_its_type_number(command_type: int) -> None:
    command = BaseCommand(type=command_type)
    getattr(command, COMMAND_FIELD[command_type]).SetInParent()
    wire = command.SerializeToString()
    assert wire == field(1, 0, varint(command_type)) + field(command_type, 2, b"\x00")
    assert sub_command(BaseCommand.FromString(wire)) is not None


def test_official_client_connect_decodes(official_capture: dict[str, Any]) -> None:
    frames = FrameDecoder(1 << 22).feed(bytes.fromhex(official_capture["producer_connection_stream"]))
    connect = frames[0].command
    assert connect.type == CommandType.CONNECT
    assert connect.connect.client_version.startswith("Pulsar-CPP-")
    assert connect.connect.protocol_version == 20
    assert connect.connect.auth_method_name == "none"
    assert connect.connect.feature_flags.supports_auth_refresh
    producer = next(f.command.producer for f in frames if f.type == CommandType.PRODUCER)
    assert producer.topic.startswith("persistent://public/default/")
    # the C++ client lets the broker choose the producer name
    assert not producer.HasField("producer_name")
