"""Framing: hand-assembled frames, round trips, stream splitting, and every malformed case."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnetar.protocol.enums import CommandType
from magnetar.protocol.framing import (
    MAGIC_BROKER_ENTRY_METADATA,
    MAGIC_CHECKSUM,
    Frame,
    FrameDecoder,
    FrameTooLargeError,
    ProtocolError,
    crc32c,
    encode_command,
    encode_entry,
    encode_entry_header,
    encode_payload_command,
    parse_entry_metadata,
    split_entry,
    sub_command,
)
from magnetar.protocol.schema import (
    BaseCommand,
    BrokerEntryMetadata,
    KeyValue,
    MessageIdData,
    MessageMetadata,
)

U32 = struct.Struct(">I")
U16 = struct.Struct(">H")
MAX = 1 << 20


# --- hand assembly, independent of the encoder under test ---------------------------------------------


def simple_frame(cmd: bytes) -> bytes:
    """``[u32 total][u32 cmd size][cmd]``."""
    body = U32.pack(len(cmd)) + cmd
    return U32.pack(len(body)) + body


def payload_frame(
    cmd: bytes, entry: bytes, *, checksum: bool = True, broker_meta: bytes | None = None
) -> bytes:
    """A SEND/MESSAGE frame, optionally with broker entry metadata and the checksum section."""
    body = U32.pack(len(cmd)) + cmd
    if broker_meta is not None:
        body += U16.pack(MAGIC_BROKER_ENTRY_METADATA) + U32.pack(len(broker_meta)) + broker_meta
    if checksum:
        body += U16.pack(MAGIC_CHECKSUM) + U32.pack(crc32c(entry))
    body += entry
    return U32.pack(len(body)) + body


def hand_entry(meta: bytes, payload: bytes) -> bytes:
    return U32.pack(len(meta)) + meta + payload


def ping() -> BaseCommand:
    command = BaseCommand(type=CommandType.PING)
    command.ping.SetInParent()
    return command


def send_command(producer_id: int = 1, sequence_id: int = 2) -> BaseCommand:
    command = BaseCommand(type=CommandType.SEND)
    command.send.producer_id = producer_id
    command.send.sequence_id = sequence_id
    return command


def message_command(consumer_id: int = 3, entry_id: int = 4) -> BaseCommand:
    command = BaseCommand(type=CommandType.MESSAGE)
    command.message.consumer_id = consumer_id
    command.message.message_id.ledger_id = 10
    command.message.message_id.entry_id = entry_id
    return command


def sample_entry(payload: bytes = b"the payload") -> bytes:
    meta = MessageMetadata(producer_name="prod", sequence_id=2, publish_time=1234)
    meta.properties.append(KeyValue(key="a", value="b"))
    return encode_entry(meta, payload)


def frame_key(frame: Frame) -> tuple[bytes, bytes | None, int | None, bytes | None]:
    return (frame.command.SerializeToString(), frame.entry, frame.checksum, frame.broker_entry_metadata)


def decode_all(data: bytes, max_size: int = MAX) -> list[Frame]:
    decoder = FrameDecoder(max_size)
    frames = decoder.feed(data)
    assert decoder.buffered == 0
    return frames


def decode_one(data: bytes) -> Frame:
    [frame] = decode_all(data)
    return frame


# --- round trips ---------------------------------------------------------------------------------------


def simple_commands() -> list[BaseCommand]:
    connect = BaseCommand(type=CommandType.CONNECT)
    connect.connect.client_version = "Pulsar-CPP-v4.2.0"
    connect.connect.protocol_version = 20
    connect.connect.feature_flags.supports_auth_refresh = True
    flow = BaseCommand(type=CommandType.FLOW)
    flow.flow.consumer_id = 7
    flow.flow.message_permits = 1000
    ack = BaseCommand(type=CommandType.ACK)
    ack.ack.consumer_id = 7
    ack.ack.message_id.extend(
        [MessageIdData(ledger_id=1, entry_id=e, ack_set=[-1, 3]) for e in range(3)]
        + [MessageIdData(ledger_id=2**64 - 1, entry_id=2**64 - 1)]
    )
    lookup = BaseCommand(type=CommandType.LOOKUP_RESPONSE)
    lookup.lookup_topic_response.request_id = 9
    lookup.lookup_topic_response.response = 1
    lookup.lookup_topic_response.broker_service_url = "pulsar://localhost:6650"
    pong = BaseCommand(type=CommandType.PONG)
    pong.pong.SetInParent()
    return [ping(), pong, connect, flow, ack, lookup]


@pytest.mark.parametrize("command", simple_commands(), ids=lambda c: CommandType(c.type).name)
def test_simple_command_round_trip(command: BaseCommand) -> None:
    wire = encode_command(command)
    assert wire == simple_frame(command.SerializeToString())
    frame = decode_one(wire)
    assert frame.command == command
    assert frame.type == command.type
    assert frame.entry is None and frame.checksum is None and frame.broker_entry_metadata is None
    assert frame.checksum_ok()


def test_ping_frame_bytes() -> None:
    assert encode_command(ping()) == bytes.fromhex("00000009 00000005 0812 920100".replace(" ", ""))


@pytest.mark.parametrize("command", [send_command(), message_command()], ids=["SEND", "MESSAGE"])
def test_payload_frame_round_trip_with_checksum(command: BaseCommand) -> None:
    entry = sample_entry()
    wire = encode_payload_command(command, entry)
    assert wire == payload_frame(command.SerializeToString(), entry)
    frame = decode_one(wire)
    assert frame.command == command
    assert frame.entry == entry
    assert frame.checksum == crc32c(entry)
    assert frame.checksum_ok()
    assert frame.broker_entry_metadata is None
    assert parse_entry_metadata(frame.entry).producer_name == "prod"


@pytest.mark.parametrize("command", [send_command(), message_command()], ids=["SEND", "MESSAGE"])
def test_payload_frame_without_checksum(command: BaseCommand) -> None:
    entry = sample_entry()
    frame = decode_one(payload_frame(command.SerializeToString(), entry, checksum=False))
    assert frame.entry == entry
    assert frame.checksum is None
    assert frame.checksum_ok()


@pytest.mark.parametrize("with_checksum", [True, False])
def test_message_with_broker_entry_metadata(with_checksum: bool) -> None:
    broker_meta = BrokerEntryMetadata(broker_timestamp=1_700_000_000_000, index=41).SerializeToString()
    entry = sample_entry()
    wire = payload_frame(
        message_command().SerializeToString(), entry, checksum=with_checksum, broker_meta=broker_meta
    )
    frame = decode_one(wire)
    assert frame.broker_entry_metadata == broker_meta
    assert BrokerEntryMetadata.FromString(frame.broker_entry_metadata).index == 41
    assert frame.entry == entry
    assert frame.checksum == (crc32c(entry) if with_checksum else None)
    assert frame.checksum_ok()


def test_empty_broker_entry_metadata() -> None:
    frame = decode_one(payload_frame(message_command().SerializeToString(), sample_entry(), broker_meta=b""))
    assert frame.broker_entry_metadata == b""


def test_entry_header_plus_entry_is_the_whole_frame() -> None:
    command = send_command()
    entry = sample_entry(b"x" * 1000)
    header = encode_entry_header(command, len(entry), crc32c(entry))
    assert header + entry == encode_payload_command(command, entry)
    # an explicit checksum is sent as given, even a wrong one: the receiver must notice
    frame = decode_one(encode_payload_command(command, entry, checksum=123))
    assert frame.checksum == 123
    assert not frame.checksum_ok()


def test_crc32c_is_castagnoli() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # the standard CRC-32C check value
    assert crc32c(b"") == 0


def test_flipped_payload_byte_fails_the_checksum() -> None:
    entry = sample_entry(b"payload bytes to protect")
    wire = encode_payload_command(send_command(), entry)
    payload_start = len(wire) - len(b"payload bytes to protect")
    for pos in range(payload_start, len(wire)):
        corrupted = bytearray(wire)
        corrupted[pos] ^= 0x01
        frame = decode_one(bytes(corrupted))
        assert not frame.checksum_ok(), pos


def test_decoder_accepts_bytearray_and_memoryview() -> None:
    wire = encode_command(ping()) + encode_payload_command(send_command(), sample_entry())
    for form in (bytearray(wire), memoryview(wire)):
        assert [f.type for f in FrameDecoder(MAX).feed(form)] == [CommandType.PING, CommandType.SEND]


def test_buffered_counts_incomplete_bytes() -> None:
    wire = encode_payload_command(send_command(), sample_entry())
    decoder = FrameDecoder(MAX)
    assert decoder.feed(wire[:10]) == []
    assert decoder.buffered == 10
    assert decoder.feed(wire[10:] + wire[:3]) != []
    assert decoder.buffered == 3


# --- splitting a stream ----------------------------------------------------------------------------------


def mixed_stream() -> bytes:
    broker_meta = BrokerEntryMetadata(broker_timestamp=5, index=6).SerializeToString()
    parts = [
        encode_command(ping()),
        encode_payload_command(send_command(1, 1), sample_entry(b"first")),
        payload_frame(message_command().SerializeToString(), sample_entry(b""), checksum=False),
        payload_frame(
            message_command(entry_id=9).SerializeToString(), sample_entry(b"x" * 300), broker_meta=broker_meta
        ),
        *(encode_command(c) for c in simple_commands()),
        encode_payload_command(send_command(1, 2), sample_entry(bytes(range(256)))),
    ]
    return b"".join(parts)


STREAM = mixed_stream()
EXPECTED = [frame_key(f) for f in decode_all(STREAM)]


def test_mixed_stream_decodes_in_one_go() -> None:
    assert len(EXPECTED) == 11


def test_byte_by_byte_gives_identical_frames() -> None:
    decoder = FrameDecoder(MAX)
    frames: list[Frame] = []
    for i in range(len(STREAM)):
        frames += decoder.feed(STREAM[i : i + 1])
    assert [frame_key(f) for f in frames] == EXPECTED
    assert decoder.buffered == 0


@settings(max_examples=200, deadline=None)
@given(cuts=st.lists(st.integers(0, len(STREAM)), max_size=30))
def test_random_splits_give_identical_frames(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(STREAM)]
    decoder = FrameDecoder(MAX)
    frames: list[Frame] = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        frames += decoder.feed(STREAM[start:end])
    assert [frame_key(f) for f in frames] == EXPECTED
    assert decoder.buffered == 0


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_official_client_stream_in_random_splits(
    data: st.DataObject, official_capture: dict[str, Any]
) -> None:
    stream = bytes.fromhex(official_capture["producer_connection_stream"])
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=40))
    bounds = [0, *sorted(cuts), len(stream)]
    decoder = FrameDecoder(5 * 1024 * 1024 + 10 * 1024)
    frames: list[Frame] = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        frames += decoder.feed(stream[start:end])
    assert decoder.buffered == 0
    assert frames[0].type == CommandType.CONNECT
    sends = [f for f in frames if f.type == CommandType.SEND]
    assert len(sends) == len(official_capture["entries"])
    assert all(f.checksum is not None and f.checksum_ok() for f in sends)
    assert [f.entry.hex() for f in sends if f.entry is not None] == [
        e["entry"] for e in official_capture["entries"]
    ]


# --- malformed frames ---------------------------------------------------------------------------------------


PING = ping().SerializeToString()
SEND = send_command().SerializeToString()


def framed(body: bytes) -> bytes:
    return U32.pack(len(body)) + body


MALFORMED = {
    "total size 0": (framed(b""), "too short"),
    "total size 3": (framed(b"\x00\x00\x00"), "too short"),
    "command size 0": (framed(U32.pack(0)), "command size 0"),
    "command size 0 with bytes after": (framed(U32.pack(0) + PING), "command size 0"),
    "command larger than frame": (framed(U32.pack(len(PING) + 1) + PING), "does not fit"),
    "command size 2**32-1": (framed(U32.pack(0xFFFFFFFF) + PING), "does not fit"),
    "truncated varint": (framed(U32.pack(1) + b"\x08"), "undecodable"),
    "invalid wire type": (framed(U32.pack(1) + b"\x0f"), "undecodable"),
    "sub-message overrunning": (framed(U32.pack(3) + b"\x12\x05\x00"), "undecodable"),
    "command without type": (framed(U32.pack(3) + b"\x92\x01\x00"), "without a type"),
    "field number 0": (framed(U32.pack(2) + b"\x00\x00"), "undecodable"),
    "truncated checksum (magic only)": (
        framed(U32.pack(len(SEND)) + SEND + b"\x0e\x01"),
        "truncated checksum",
    ),
    "truncated checksum (magic + 3)": (
        framed(U32.pack(len(SEND)) + SEND + b"\x0e\x01\x00\x00\x00"),
        "truncated checksum",
    ),
    "checksum but no entry": (framed(U32.pack(len(SEND)) + SEND + b"\x0e\x01" + U32.pack(0)), "too short"),
    "metadata size overruns payload": (
        framed(U32.pack(len(SEND)) + SEND + U32.pack(100) + b"meta"),
        "overruns",
    ),
    "metadata size overruns payload after checksum": (
        framed(U32.pack(len(SEND)) + SEND + b"\x0e\x01" + U32.pack(0) + U32.pack(5) + b"1234"),
        "overruns",
    ),
    "payload of 1 byte": (framed(U32.pack(len(SEND)) + SEND + b"\x00"), "too short"),
    "payload of 3 bytes": (framed(U32.pack(len(SEND)) + SEND + b"\x00\x00\x00"), "too short"),
    "payload of 3 bytes after checksum": (
        framed(U32.pack(len(SEND)) + SEND + b"\x0e\x01" + U32.pack(0) + b"\x00\x00\x00"),
        "too short",
    ),
    "truncated broker entry metadata header": (
        framed(U32.pack(len(SEND)) + SEND + b"\x0e\x02\x00\x00"),
        "truncated broker entry metadata",
    ),
    "broker entry metadata overruns": (
        framed(U32.pack(len(SEND)) + SEND + b"\x0e\x02" + U32.pack(50) + b"abc"),
        "overruns",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_frame_raises_protocol_error(case: str) -> None:
    wire, message = MALFORMED[case]
    with pytest.raises(ProtocolError, match=message):
        FrameDecoder(MAX).feed(wire)


def test_malformed_frame_after_a_good_one_still_raises() -> None:
    wire = encode_command(ping()) + MALFORMED["command size 0"][0]
    with pytest.raises(ProtocolError):
        FrameDecoder(MAX).feed(wire)


def test_oversized_frame_fails_on_its_length_prefix_alone() -> None:
    decoder = FrameDecoder(1000)
    with pytest.raises(FrameTooLargeError, match="1001"):
        decoder.feed(U32.pack(1001))
    with pytest.raises(FrameTooLargeError):
        FrameDecoder(1000).feed(U32.pack(0xFFFFFFFF))


def test_oversized_frame_fails_when_the_prefix_arrives_byte_by_byte() -> None:
    decoder = FrameDecoder(1000)
    for byte in U32.pack(5000)[:3]:
        assert decoder.feed(bytes([byte])) == []
    with pytest.raises(FrameTooLargeError):
        decoder.feed(U32.pack(5000)[3:])


def test_frame_of_exactly_the_limit_is_accepted() -> None:
    wire = encode_payload_command(send_command(), sample_entry(b"z" * 500))
    limit = len(wire) - 4
    decoder = FrameDecoder(limit)
    assert decoder.feed(wire[:4]) == []
    assert len(decoder.feed(wire[4:])) == 1
    with pytest.raises(FrameTooLargeError):
        FrameDecoder(limit - 1).feed(wire[:4])


def test_frame_too_large_is_a_protocol_error() -> None:
    assert issubclass(FrameTooLargeError, ProtocolError)


@settings(max_examples=500, deadline=None)
@given(chunks=st.lists(st.binary(max_size=64), max_size=10))
def test_garbage_stream_raises_only_protocol_error(chunks: list[bytes]) -> None:
    decoder = FrameDecoder(4096)
    try:
        for chunk in chunks:
            for frame in decoder.feed(chunk):
                assert isinstance(frame, Frame)
                frame.checksum_ok()
                sub_command(frame.command)
    except ProtocolError:
        pass


@settings(max_examples=500, deadline=None)
@given(bodies=st.lists(st.binary(max_size=80), min_size=1, max_size=5), split=st.integers(0, 400))
def test_length_prefixed_garbage_raises_only_protocol_error(bodies: list[bytes], split: int) -> None:
    """Random frame bodies behind correct length prefixes reach deep into the body decoder."""
    stream = b"".join(framed(body) for body in bodies)
    decoder = FrameDecoder(4096)
    try:
        frames = decoder.feed(stream[:split]) + decoder.feed(stream[split:])
    except ProtocolError:
        return
    for frame in frames:
        frame.checksum_ok()
        sub_command(frame.command)


@settings(max_examples=300, deadline=None)
@given(
    payload=st.binary(max_size=50),
    with_checksum=st.booleans(),
    broker_meta=st.none() | st.binary(max_size=10),
    index=st.integers(min_value=0),
    value=st.integers(0, 255),
)
def test_corrupted_valid_frame_raises_only_protocol_error(
    payload: bytes, with_checksum: bool, broker_meta: bytes | None, index: int, value: int
) -> None:
    wire = bytearray(
        payload_frame(SEND, sample_entry(payload), checksum=with_checksum, broker_meta=broker_meta)
    )
    wire[4 + index % (len(wire) - 4)] = value  # keep the length prefix: corrupt the body
    try:
        decode_all(bytes(wire))
    except ProtocolError:
        pass


# --- unknown commands ---------------------------------------------------------------------------------


def test_unknown_command_type_decodes_with_unknown_fields_preserved() -> None:
    # type = 64 (WATCH_TOPIC_LIST, absent from the schema) and field 64 = {1: request_id 7}
    cmd = b"\x08\x40" + b"\x82\x04\x02" + b"\x08\x07"
    frame = decode_one(simple_frame(cmd))
    assert frame.type == 64 == CommandType.WATCH_TOPIC_LIST
    assert sub_command(frame.command) is None
    assert frame.command.SerializeToString() == cmd


def test_type_number_unknown_to_the_enum_decodes_too() -> None:
    cmd = b"\x08\xe7\x07" + b"\xba\x3e\x02\x08\x01"  # type 999, field 999 = {1: 1}
    frame = decode_one(simple_frame(cmd))
    assert frame.type == 999
    assert sub_command(frame.command) is None
    assert frame.command.SerializeToString() == cmd


# --- sub_command --------------------------------------------------------------------------------------


def test_sub_command_returns_the_typed_sub_message() -> None:
    assert sub_command(send_command(5, 6)).sequence_id == 6
    assert sub_command(message_command(consumer_id=8)).consumer_id == 8
    ping_sub = sub_command(ping())
    assert ping_sub is not None and ping_sub.DESCRIPTOR.name == "CommandPing"
    flow = BaseCommand(type=CommandType.FLOW)
    flow.flow.message_permits = 3
    assert sub_command(flow).message_permits == 3


def test_sub_command_is_none_when_the_type_does_not_match_the_field() -> None:
    command = BaseCommand(type=CommandType.SEND)
    command.flow.consumer_id = 1
    assert sub_command(command) is None
    assert sub_command(BaseCommand(type=CommandType.PING)) is None


# --- entries ------------------------------------------------------------------------------------------


def test_entry_round_trip() -> None:
    meta = MessageMetadata(producer_name="p", sequence_id=3, publish_time=4, partition_key="k")
    entry = encode_entry(meta, b"body")
    assert entry == hand_entry(meta.SerializeToString(), b"body")
    meta_view, payload_view = split_entry(entry)
    assert isinstance(meta_view, memoryview) and isinstance(payload_view, memoryview)
    assert bytes(meta_view) == meta.SerializeToString()
    assert bytes(payload_view) == b"body"
    assert parse_entry_metadata(entry) == meta
    assert parse_entry_metadata(memoryview(entry)) == meta


def test_entry_with_empty_metadata_and_payload() -> None:
    entry = encode_entry(MessageMetadata(), b"")
    assert entry == b"\x00\x00\x00\x00"
    assert [bytes(v) for v in split_entry(entry)] == [b"", b""]
    assert parse_entry_metadata(entry) == MessageMetadata()


@given(payload=st.binary(max_size=200), sequence_id=st.integers(0, 2**64 - 1), key=st.text(max_size=20))
def test_entry_round_trip_property(payload: bytes, sequence_id: int, key: str) -> None:
    meta = MessageMetadata(producer_name="p", sequence_id=sequence_id, publish_time=1, partition_key=key)
    entry = encode_entry(meta, payload)
    assert bytes(split_entry(entry)[1]) == payload
    assert parse_entry_metadata(entry) == meta


def test_split_entry_rejects_overrunning_metadata() -> None:
    with pytest.raises(ProtocolError, match="overruns"):
        split_entry(U32.pack(10) + b"short")


def test_parse_entry_metadata_rejects_undecodable_metadata() -> None:
    with pytest.raises(ProtocolError, match="undecodable"):
        parse_entry_metadata(hand_entry(b"\x0a\x05ab", b""))


@pytest.mark.parametrize("short", [b"", b"\x00", b"\x00\x00\x00"])
def test_split_entry_rejects_entries_shorter_than_the_size_field(short: bytes) -> None:
    with pytest.raises(ProtocolError):
        split_entry(short)
    with pytest.raises(ProtocolError):
        parse_entry_metadata(short)


# --- regressions: defects found in framing.py and fixed ------------------------------------------------


def test_feed_after_a_kept_protocol_error_raises_protocol_error_again() -> None:
    decoder = FrameDecoder(MAX)
    decoder.feed(b"\x00\x00")  # something buffered, so feed() works on its own bytearray
    try:
        decoder.feed(b"\x00\x04" + U32.pack(0))
    except ProtocolError as exc:
        kept = exc  # as asyncio, a logger or a future may keep it
    assert kept is not None
    with pytest.raises(ProtocolError):
        decoder.feed(b"more")


def test_string_fields_of_a_decoded_frame_are_str_or_the_frame_is_rejected() -> None:
    command = BaseCommand(type=CommandType.SUBSCRIBE).SerializeToString()
    command += b"\x22\x04" + b"\x0a\x02\xff\xfe"  # subscribe { topic: b"\xff\xfe" }
    try:
        frame = decode_one(simple_frame(command))
    except ProtocolError:
        return
    assert isinstance(frame.command.subscribe.topic, str)
