"""The broker's answers to raw protocol input over a plain socket: handshake, errors, bad frames.

These tests speak the wire protocol with magnetar's codec only (no official client), so they
can send what no well-behaved client sends: bad checksums, garbage, unknown commands.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import pytest

from magnetar.protocol.enums import (
    CommandType,
    InitialPosition,
    LookupType,
    PartitionedMetadataResult,
    ServerError,
    SubType,
)
from magnetar.protocol.framing import (
    FrameDecoder,
    crc32c,
    encode_command,
    encode_entry,
    encode_payload_command,
    split_entry,
)
from magnetar.protocol.schema import BaseCommand, MessageMetadata
from magnetar.testing import BrokerProcess

MiB = 1024 * 1024
TIMEOUT = 10.0


class ConnectionClosed(Exception):
    """The broker closed the connection."""


class WireClient:
    """A blocking socket speaking the Pulsar framing, for tests."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.decoder = FrameDecoder(64 * MiB)
        self.frames: deque = deque()
        self._request_id = 100

    def next_request_id(self) -> int:
        self._request_id += 1
        return self._request_id

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, command: BaseCommand) -> None:
        self.send_raw(encode_command(command))

    def recv(self, timeout: float = TIMEOUT):  # noqa: ANN201 - a Frame
        """The next frame from the broker; ConnectionClosed when it closed the connection."""
        deadline = time.monotonic() + timeout
        while not self.frames:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no frame from the broker")
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(1 << 20)
            except TimeoutError:
                raise TimeoutError("no frame from the broker") from None
            except ConnectionResetError:
                raise ConnectionClosed() from None
            if not data:
                raise ConnectionClosed()
            self.frames.extend(self.decoder.feed(data))
        return self.frames.popleft()

    def expect(self, ctype: CommandType, timeout: float = TIMEOUT):  # noqa: ANN201 - a Frame
        frame = self.recv(timeout)
        assert frame.type == ctype, (
            f"expected {ctype.name}, got {CommandType(frame.type).name}: {frame.command}"
        )
        return frame

    def expect_closed(self, timeout: float = 5.0) -> list:
        """Read until the broker closes the connection; return the frames it sent before."""
        frames = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                frames.append(self.recv(max(0.01, deadline - time.monotonic())))
            except ConnectionClosed:
                return frames
            except TimeoutError:
                raise AssertionError(f"connection still open after {timeout} s") from None

    def connect(self):  # noqa: ANN201 - the CONNECTED frame
        cmd = BaseCommand(type=CommandType.CONNECT)
        cmd.connect.client_version = "magnetar-wire-test"
        cmd.connect.protocol_version = 20
        cmd.connect.auth_method_name = "none"
        self.send(cmd)
        return self.expect(CommandType.CONNECTED)

    def ping(self) -> None:
        cmd = BaseCommand(type=CommandType.PING)
        cmd.ping.SetInParent()
        self.send(cmd)
        self.expect(CommandType.PONG)

    def create_producer(self, topic: str, producer_id: int = 1, name: str | None = None):  # noqa: ANN201
        cmd = BaseCommand(type=CommandType.PRODUCER)
        cmd.producer.topic = topic
        cmd.producer.producer_id = producer_id
        cmd.producer.request_id = self.next_request_id()
        if name is not None:
            cmd.producer.producer_name = name
            cmd.producer.user_provided_producer_name = True
        else:
            cmd.producer.user_provided_producer_name = False
        self.send(cmd)
        return self.recv()

    def send_message(
        self,
        producer_id: int,
        sequence_id: int,
        payload: bytes,
        *,
        producer_name: str = "wire",
        checksum: int | None = None,
    ) -> bytes:
        """SEND one message; return its entry bytes."""
        meta = MessageMetadata(
            producer_name=producer_name, sequence_id=sequence_id, publish_time=int(time.time() * 1000)
        )
        entry = encode_entry(meta, payload)
        cmd = BaseCommand(type=CommandType.SEND)
        cmd.send.producer_id = producer_id
        cmd.send.sequence_id = sequence_id
        cmd.send.num_messages = 1
        self.send_raw(encode_payload_command(cmd, entry, checksum))
        return entry

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("wire-broker") / "data").start()
    yield proc
    proc.stop()


@pytest.fixture
def wire(broker: BrokerProcess) -> Iterator:
    """Open connected WireClients; all are closed after the test."""
    opened: list[WireClient] = []

    def open_client(connect: bool = True) -> WireClient:
        c = WireClient(broker.port)
        opened.append(c)
        if connect:
            c.connect()
        return c

    yield open_client
    for c in opened:
        c.close()


def _topic() -> str:
    return f"persistent://public/default/wire-{uuid.uuid4().hex}"


# -- handshake and keep-alive ----------------------------------------------------------------


def test_connected_announces_version_and_max_message_size(wire) -> None:  # noqa: ANN001
    c = wire(connect=False)
    connected = c.connect().command.connected
    assert connected.server_version
    assert connected.protocol_version >= 12
    assert connected.max_message_size == 5 * MiB


def test_ping_gets_pong(wire) -> None:  # noqa: ANN001
    c = wire()
    for _ in range(3):
        c.ping()


def test_command_before_connect_closes_the_connection(wire) -> None:  # noqa: ANN001
    other = wire()
    c = wire(connect=False)
    cmd = BaseCommand(type=CommandType.PING)
    cmd.ping.SetInParent()
    c.send(cmd)
    assert c.expect_closed() == []
    other.ping()


def test_keepalive_pings_then_closes_a_silent_connection(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "data", env={"MAGNETAR_KEEPALIVE_SECONDS": "1"}) as broker:
        silent = WireClient(broker.port)
        polite = WireClient(broker.port)
        pings_answered = 0

        def answer_pings() -> None:
            # a client that answers the broker's pings (and sends nothing else) stays connected
            nonlocal pings_answered
            deadline = time.monotonic() + 3.5
            while time.monotonic() < deadline:
                try:
                    frame = polite.recv(timeout=0.1)
                except TimeoutError:
                    continue
                assert frame.type == CommandType.PING
                pong = BaseCommand(type=CommandType.PONG)
                pong.pong.SetInParent()
                polite.send(pong)
                pings_answered += 1

        try:
            silent.connect()
            polite.connect()
            responder = threading.Thread(target=answer_pings)
            responder.start()
            start = time.monotonic()
            silent.expect(CommandType.PING, timeout=3.0)
            # the broker may ping again before it gives up, but sends nothing else
            before_close = silent.expect_closed(timeout=3.0)
            assert all(f.type == CommandType.PING for f in before_close)
            assert time.monotonic() - start <= 3.5
            responder.join(10)
            assert pings_answered >= 1
            polite.ping()
        finally:
            silent.close()
            polite.close()


def test_pipelined_commands_in_one_write_are_answered_in_order(wire) -> None:  # noqa: ANN001
    c = wire(connect=False)
    connect = BaseCommand(type=CommandType.CONNECT)
    connect.connect.client_version = "pipelined"
    connect.connect.protocol_version = 20
    ping = BaseCommand(type=CommandType.PING)
    ping.ping.SetInParent()
    meta = BaseCommand(type=CommandType.PARTITIONED_METADATA)
    meta.partition_metadata.topic = _topic()
    meta.partition_metadata.request_id = 5
    c.send_raw(b"".join(encode_command(cmd) for cmd in (connect, ping, meta, ping)))
    assert [c.recv().type for _ in range(4)] == [
        CommandType.CONNECTED,
        CommandType.PONG,
        CommandType.PARTITIONED_METADATA_RESPONSE,
        CommandType.PONG,
    ]


def test_frames_dribbled_byte_by_byte_are_reassembled(wire) -> None:  # noqa: ANN001
    c = wire()
    assert c.create_producer(_topic(), producer_id=4).type == CommandType.PRODUCER_SUCCESS
    cmd = BaseCommand(type=CommandType.SEND)
    cmd.send.producer_id = 4
    cmd.send.sequence_id = 9
    entry = encode_entry(MessageMetadata(producer_name="dribble", sequence_id=9, publish_time=1), b"slowly")
    data = encode_payload_command(cmd, entry)
    c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for i in range(len(data)):
        c.send_raw(data[i : i + 1])
    receipt = c.expect(CommandType.SEND_RECEIPT).command.send_receipt
    assert (receipt.producer_id, receipt.sequence_id) == (4, 9)


def test_unknown_command_without_request_id_is_ignored(wire) -> None:  # noqa: ANN001
    c = wire()
    body = BaseCommand(type=99).SerializeToString()
    c.send_raw(struct.pack(">II", len(body) + 4, len(body)) + body)
    # a broker-to-client command sent by a client carries no request id either
    receipt = BaseCommand(type=CommandType.SEND_RECEIPT)
    receipt.send_receipt.producer_id = 1
    receipt.send_receipt.sequence_id = 1
    c.send(receipt)
    c.ping()  # the next frame is the PONG: nothing was answered to the ignored commands


# -- lookups ---------------------------------------------------------------------------------


def test_partitioned_metadata_of_a_plain_topic(wire) -> None:  # noqa: ANN001
    c = wire()
    cmd = BaseCommand(type=CommandType.PARTITIONED_METADATA)
    cmd.partition_metadata.topic = _topic()
    cmd.partition_metadata.request_id = 11
    c.send(cmd)
    resp = c.expect(CommandType.PARTITIONED_METADATA_RESPONSE).command.partition_metadata_response
    assert resp.request_id == 11
    assert resp.response == PartitionedMetadataResult.Success
    assert resp.partitions == 0


def test_lookup_answers_connect_with_broker_url(wire, broker: BrokerProcess) -> None:  # noqa: ANN001
    c = wire()
    cmd = BaseCommand(type=CommandType.LOOKUP)
    cmd.lookup_topic.topic = _topic()
    cmd.lookup_topic.request_id = 12
    c.send(cmd)
    resp = c.expect(CommandType.LOOKUP_RESPONSE).command.lookup_topic_response
    assert resp.request_id == 12
    assert resp.response == LookupType.Connect
    assert resp.broker_service_url == broker.service_url
    assert resp.authoritative


def test_lookup_on_unknown_namespace_fails(wire) -> None:  # noqa: ANN001
    c = wire()
    cmd = BaseCommand(type=CommandType.LOOKUP)
    cmd.lookup_topic.topic = "persistent://no-such-tenant/no-such-ns/t"
    cmd.lookup_topic.request_id = 13
    c.send(cmd)
    resp = c.expect(CommandType.LOOKUP_RESPONSE).command.lookup_topic_response
    assert resp.request_id == 13
    assert resp.response == LookupType.Failed
    assert resp.error == ServerError.TopicNotFound


def test_lookup_for_a_missing_listener_fails(wire) -> None:  # noqa: ANN001
    c = wire()
    cmd = BaseCommand(type=CommandType.LOOKUP)
    cmd.lookup_topic.topic = _topic()
    cmd.lookup_topic.request_id = 15
    cmd.lookup_topic.advertised_listener_name = "test"
    c.send(cmd)
    resp = c.expect(CommandType.LOOKUP_RESPONSE).command.lookup_topic_response
    assert resp.request_id == 15
    assert resp.response == LookupType.Failed
    assert resp.error == ServerError.ServiceNotReady
    assert "the broker do not have test listener" in resp.message


def test_get_schema_of_topic_without_schema(wire) -> None:  # noqa: ANN001
    c = wire()
    cmd = BaseCommand(type=CommandType.GET_SCHEMA)
    cmd.get_schema.topic = _topic()
    cmd.get_schema.request_id = 14
    c.send(cmd)
    resp = c.expect(CommandType.GET_SCHEMA_RESPONSE).command.get_schema_response
    assert resp.request_id == 14
    assert resp.error_code == ServerError.TopicNotFound


# -- requests refused with an error, connection kept -----------------------------------------


def test_producer_on_unknown_namespace_gets_topic_not_found(wire) -> None:  # noqa: ANN001
    c = wire()
    frame = c.create_producer("persistent://no-such-tenant/no-such-ns/t")
    assert frame.type == CommandType.ERROR
    error = frame.command.error
    assert error.request_id == c._request_id
    assert error.error == ServerError.TopicNotFound
    c.ping()


def test_subscribe_on_unknown_namespace_gets_topic_not_found(wire) -> None:  # noqa: ANN001
    c = wire()
    cmd = BaseCommand(type=CommandType.SUBSCRIBE)
    cmd.subscribe.topic = "persistent://no-such-tenant/no-such-ns/t"
    cmd.subscribe.subscription = "sub"
    cmd.subscribe.sub_type = SubType.Shared
    cmd.subscribe.consumer_id = 1
    cmd.subscribe.request_id = 16
    c.send(cmd)
    error = c.expect(CommandType.ERROR).command.error
    assert (error.request_id, error.error) == (16, ServerError.TopicNotFound)
    c.ping()


def test_producer_and_subscribe_requests_are_idempotent(wire) -> None:  # noqa: ANN001
    # a client that retries a request on the same connection gets the same answer
    c = wire()
    topic = _topic()
    first = c.create_producer(topic, producer_id=1)
    again = c.create_producer(topic, producer_id=1)
    assert first.type == again.type == CommandType.PRODUCER_SUCCESS
    assert first.command.producer_success.producer_name == again.command.producer_success.producer_name
    for request_id in (30, 31):
        cmd = BaseCommand(type=CommandType.SUBSCRIBE)
        cmd.subscribe.topic = topic
        cmd.subscribe.subscription = "sub"
        cmd.subscribe.sub_type = SubType.Exclusive
        cmd.subscribe.consumer_id = 1
        cmd.subscribe.request_id = request_id
        c.send(cmd)
        assert c.expect(CommandType.SUCCESS).command.success.request_id == request_id


def test_invalid_topic_name_gets_invalid_topic_name(wire) -> None:  # noqa: ANN001
    c = wire()
    frame = c.create_producer("persistent://only-one-part")
    assert frame.type == CommandType.ERROR
    assert frame.command.error.error == ServerError.InvalidTopicName
    c.ping()


def test_unsupported_command_gets_not_allowed_with_its_request_id(wire) -> None:  # noqa: ANN001
    c = wire()
    # BaseCommand type 64 (WATCH_TOPIC_LIST) carrying field 64 = {1: request_id 7}: a command the
    # broker's schema does not even know
    body = BaseCommand(type=64).SerializeToString() + b"\x82\x04\x02\x08\x07"
    c.send_raw(struct.pack(">II", len(body) + 4, len(body)) + body)
    error = c.expect(CommandType.ERROR).command.error
    assert error.request_id == 7
    assert error.error == ServerError.NotAllowedError
    c.ping()


def test_request_on_unknown_consumer_gets_consumer_not_found(wire) -> None:  # noqa: ANN001
    c = wire()
    cmd = BaseCommand(type=CommandType.SEEK)
    cmd.seek.consumer_id = 999
    cmd.seek.request_id = 21
    cmd.seek.message_publish_time = 0
    c.send(cmd)
    error = c.expect(CommandType.ERROR).command.error
    assert (error.request_id, error.error) == (21, ServerError.ConsumerNotFound)
    c.ping()


def test_bad_checksum_gets_checksum_error_and_connection_stays_usable(wire) -> None:  # noqa: ANN001
    c = wire()
    topic = _topic()
    assert c.create_producer(topic, producer_id=1).type == CommandType.PRODUCER_SUCCESS

    entry = encode_entry(MessageMetadata(producer_name="wire", sequence_id=0, publish_time=1), b"corrupt")
    c.send_message(1, 0, b"corrupt", checksum=crc32c(entry) ^ 0xFFFF)
    err = c.expect(CommandType.SEND_ERROR).command.send_error
    assert (err.producer_id, err.sequence_id, err.error) == (1, 0, ServerError.ChecksumError)

    good = c.send_message(1, 1, b"good")
    receipt = c.expect(CommandType.SEND_RECEIPT).command.send_receipt
    assert (receipt.producer_id, receipt.sequence_id) == (1, 1)
    assert receipt.message_id.entry_id == 0  # the corrupt message was not stored

    # only the good message is stored, with its checksum intact
    sub = BaseCommand(type=CommandType.SUBSCRIBE)
    s = sub.subscribe
    s.topic = topic
    s.subscription = "check"
    s.sub_type = SubType.Exclusive
    s.consumer_id = 1
    s.request_id = c.next_request_id()
    s.initial_position = InitialPosition.Earliest
    c.send(sub)
    assert c.expect(CommandType.SUCCESS).command.success.request_id == s.request_id
    flow = BaseCommand(type=CommandType.FLOW)
    flow.flow.consumer_id = 1
    flow.flow.message_permits = 10
    c.send(flow)
    msg = c.expect(CommandType.MESSAGE)
    assert msg.entry == good
    assert msg.checksum_ok()
    assert bytes(split_entry(msg.entry)[1]) == b"good"
    with pytest.raises(TimeoutError):
        c.recv(timeout=0.5)


def test_message_size_is_bounded_by_the_frame_limit_only(wire) -> None:  # noqa: ANN001
    """As Pulsar: max_message_size does not count the metadata, so a message a little above it
    (within the frame headroom of 10 KiB) is stored; a frame above the headroom closes the connection."""
    c = wire()
    assert c.create_producer(_topic(), producer_id=3).type == CommandType.PRODUCER_SUCCESS
    c.send_message(3, 0, b"x" * (5 * MiB + 100))  # within the frame headroom, above the message limit
    assert c.expect(CommandType.SEND_RECEIPT).command.send_receipt.sequence_id == 0
    c.send_message(3, 1, b"fits")
    assert c.expect(CommandType.SEND_RECEIPT).command.send_receipt.sequence_id == 1
    try:
        c.send_message(3, 2, b"x" * (5 * MiB + 11 * 1024))  # beyond the frame headroom
    except (ConnectionResetError, BrokenPipeError):
        return  # closed while the frame was still being written
    c.expect_closed()


def test_send_on_unknown_producer_gets_send_error(wire) -> None:  # noqa: ANN001
    c = wire()
    c.send_message(77, 5, b"nobody")
    err = c.expect(CommandType.SEND_ERROR).command.send_error
    assert (err.producer_id, err.sequence_id, err.error) == (77, 5, ServerError.NotAllowedError)
    c.ping()


# -- malformed input closes only the connection it came on -----------------------------------

_GARBAGE = {
    # a frame whose command size is far beyond the frame
    "garbage": struct.pack(">II", 8, 0xFFFFFFF0) + b"\xde\xad\xbe\xef",
    # a command that does not parse as a protobuf message
    "undecodable": struct.pack(">II", 9, 5) + b"\xff\xff\xff\xff\xff",
    # a frame announcing more than the broker accepts (nothing of it follows)
    "oversized": struct.pack(">I", 64 * MiB),
}


@pytest.mark.parametrize("kind", list(_GARBAGE))
def test_malformed_frame_closes_only_that_connection(wire, kind: str) -> None:  # noqa: ANN001
    bystander = wire()
    topic = _topic()
    victim = wire()
    assert victim.create_producer(topic, producer_id=1, name="victim").type == CommandType.PRODUCER_SUCCESS
    victim.send_raw(_GARBAGE[kind])
    assert victim.expect_closed() == []
    bystander.ping()
    # the closed connection's producer is gone: its name is free again
    assert bystander.create_producer(topic, producer_id=1, name="victim").type == CommandType.PRODUCER_SUCCESS
    # and new connections are accepted
    wire().ping()


def test_second_connect_closes_the_connection(wire) -> None:  # noqa: ANN001
    bystander = wire()
    c = wire()
    cmd = BaseCommand(type=CommandType.CONNECT)
    cmd.connect.client_version = "again"
    cmd.connect.protocol_version = 20
    c.send(cmd)
    assert c.expect_closed() == []
    bystander.ping()


def _half_ping() -> bytes:
    ping = BaseCommand(type=CommandType.PING)
    ping.ping.SetInParent()
    frame = encode_command(ping)
    return frame[: len(frame) - 1]


def _half_send() -> bytes:
    cmd = BaseCommand(type=CommandType.SEND)
    cmd.send.producer_id = 1
    cmd.send.sequence_id = 0
    entry = encode_entry(
        MessageMetadata(producer_name="truncated", sequence_id=0, publish_time=1), b"p" * 1000
    )
    frame = encode_payload_command(cmd, entry)
    return frame[: len(frame) // 2]


@pytest.mark.parametrize("partial", [_half_ping, _half_send], ids=["ping", "send"])
def test_truncated_frame_then_close_affects_nobody_else(wire, partial) -> None:  # noqa: ANN001
    bystander = wire()
    topic = _topic()
    victim = wire()
    assert victim.create_producer(topic, producer_id=1, name="truncated").type == CommandType.PRODUCER_SUCCESS
    victim.send_raw(partial())
    victim.sock.shutdown(socket.SHUT_WR)
    # the broker answers nothing to part of a frame, and closes its side once ours is closed
    assert victim.expect_closed() == []
    bystander.ping()
    deadline = time.monotonic() + 5
    while True:  # the producer of the closed connection is released
        frame = bystander.create_producer(topic, producer_id=2, name="truncated")
        if frame.type == CommandType.PRODUCER_SUCCESS:
            break
        assert frame.command.error.error == ServerError.ProducerBusy
        assert time.monotonic() < deadline, "producer of a closed connection never released"
        time.sleep(0.05)
    # nothing of the half-sent message was stored
    bystander.send_message(2, 0, b"whole", producer_name="truncated")
    assert bystander.expect(CommandType.SEND_RECEIPT).command.send_receipt.message_id.entry_id == 0
