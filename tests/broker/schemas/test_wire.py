"""Schema commands on the wire, spoken with magnetar's codec: PRODUCER / SUBSCRIBE with a schema,
GET_SCHEMA, GET_OR_CREATE_SCHEMA, and KEY_VALUE schemas (which the Python client cannot send)."""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator

import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.broker.schemas import SchemaData
from magnetar.broker.schemas.compatibility import encode_key_value
from magnetar.protocol.enums import CommandType, SchemaType, ServerError, SubType
from magnetar.protocol.framing import FrameDecoder, encode_command
from magnetar.protocol.schema import BaseCommand
from magnetar.testing import BrokerThread

TIMEOUT = 10.0


def avro(*fields: dict) -> bytes:
    return json.dumps({"type": "record", "name": "R", "fields": list(fields)}).encode()


V0 = avro({"name": "a", "type": "int"})
V1 = avro({"name": "a", "type": "int"}, {"name": "b", "type": ["null", "string"], "default": None})
BAD = avro({"name": "a", "type": "string"})


class Wire:
    """A blocking connection speaking the Pulsar framing."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.decoder = FrameDecoder(1 << 24)
        self.frames: deque = deque()
        self.request_id = 0
        cmd = BaseCommand(type=CommandType.CONNECT)
        cmd.connect.client_version = "schema-wire-test"
        cmd.connect.protocol_version = 20
        self.send(cmd)
        assert self.recv().type == CommandType.CONNECTED

    def next_id(self) -> int:
        self.request_id += 1
        return self.request_id

    def send(self, cmd: BaseCommand) -> None:
        self.sock.sendall(encode_command(cmd))

    def recv(self):  # noqa: ANN201 - a Frame
        deadline = time.monotonic() + TIMEOUT
        while not self.frames:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            data = self.sock.recv(1 << 20)
            assert data, "broker closed the connection"
            self.frames.extend(self.decoder.feed(data))
        return self.frames.popleft()

    def request(self, cmd: BaseCommand):  # noqa: ANN201 - the answer's BaseCommand
        self.send(cmd)
        return self.recv().command

    def producer(self, topic: str, producer_id: int, schema: SchemaData | None = None):  # noqa: ANN201
        cmd = BaseCommand(type=CommandType.PRODUCER)
        cmd.producer.topic = topic
        cmd.producer.producer_id = producer_id
        cmd.producer.request_id = self.next_id()
        cmd.producer.user_provided_producer_name = False
        if schema is not None:
            fill_schema(cmd.producer.schema, schema)
        return self.request(cmd)

    def subscribe(self, topic: str, consumer_id: int, schema: SchemaData):  # noqa: ANN201
        cmd = BaseCommand(type=CommandType.SUBSCRIBE)
        cmd.subscribe.topic = topic
        cmd.subscribe.subscription = f"sub-{consumer_id}"
        cmd.subscribe.sub_type = SubType.Exclusive
        cmd.subscribe.consumer_id = consumer_id
        cmd.subscribe.request_id = self.next_id()
        fill_schema(cmd.subscribe.schema, schema)
        return self.request(cmd)

    def get_schema(self, topic: str, version: bytes | None = None):  # noqa: ANN201
        cmd = BaseCommand(type=CommandType.GET_SCHEMA)
        cmd.get_schema.topic = topic
        cmd.get_schema.request_id = self.next_id()
        if version is not None:
            cmd.get_schema.schema_version = version
        return self.request(cmd).get_schema_response

    def get_or_create(self, topic: str, schema: SchemaData):  # noqa: ANN201
        cmd = BaseCommand(type=CommandType.GET_OR_CREATE_SCHEMA)
        cmd.get_or_create_schema.topic = topic
        cmd.get_or_create_schema.request_id = self.next_id()
        fill_schema(cmd.get_or_create_schema.schema, schema)
        return self.request(cmd).get_or_create_schema_response

    def close(self) -> None:
        self.sock.close()


def fill_schema(msg, schema: SchemaData) -> None:  # noqa: ANN001 - a wire Schema
    msg.name = "test"
    msg.type = SchemaType[schema.type] if schema.type in SchemaType.__members__ else SchemaType.NONE
    msg.schema_data = schema.data
    for k, v in schema.properties.items():
        kv = msg.properties.add()
        kv.key, kv.value = k, v


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    config = BrokerConfig(data_dir=tmp_path_factory.mktemp("schema-wire") / "data", port=0, http_port=0, fsync="never")
    with BrokerThread(config) as b:
        yield b


@pytest.fixture
def wire(broker: BrokerThread) -> Iterator[Callable[[], Wire]]:
    opened: list[Wire] = []

    def open_wire() -> Wire:
        w = Wire(broker.server.port)
        opened.append(w)
        return w

    yield open_wire
    for w in opened:
        w.close()


def topic() -> str:
    return f"persistent://public/default/wire-schema-{uuid.uuid4().hex[:10]}"


def test_producer_success_carries_the_schema_version(wire: Callable[[], Wire]) -> None:
    c, t = wire(), topic()
    plain = c.producer(t, 1)
    assert plain.type == CommandType.PRODUCER_SUCCESS
    assert not plain.producer_success.HasField("schema_version")
    first = c.producer(t, 2, SchemaData("AVRO", V0))
    assert first.producer_success.schema_version == b"\x00" * 8
    second = c.producer(t, 3, SchemaData("AVRO", V1))
    assert second.producer_success.schema_version == b"\x00" * 7 + b"\x01"
    refused = c.producer(t, 4, SchemaData("AVRO", BAD))
    assert refused.type == CommandType.ERROR
    assert refused.error.error == ServerError.IncompatibleSchema
    assert "cannot read" in refused.error.message
    # the connection and its other producers are unaffected; the id may be reused
    again = c.producer(t, 4, SchemaData("AVRO", V0))
    assert again.producer_success.schema_version == b"\x00" * 8


def test_get_schema_by_version(wire: Callable[[], Wire]) -> None:
    c, t = wire(), topic()
    none = c.get_schema(t)
    assert none.error_code == ServerError.TopicNotFound
    assert "no-schema" in none.error_message
    c.producer(t, 1, SchemaData("AVRO", V0, {"p": "1"}))
    c.producer(t, 2, SchemaData("AVRO", V1))
    latest = c.get_schema(t)
    assert not latest.HasField("error_code")
    assert (latest.schema.type, latest.schema.schema_data, latest.schema_version) == (SchemaType.AVRO, V1, b"\x00" * 7 + b"\x01")
    assert latest.schema.name == t.split("://")[1]
    v0 = c.get_schema(t, b"\x00" * 8)
    assert v0.schema.schema_data == V0
    assert {kv.key: kv.value for kv in v0.schema.properties} == {"p": "1"}
    assert c.get_schema(t, b"\x00" * 7 + b"\x05").error_code == ServerError.TopicNotFound
    assert c.get_schema(t, b"\x00\x01").error_code == ServerError.TopicNotFound
    # partitions share their parent's schema
    assert c.get_schema(t + "-partition-0").schema_version == b"\x00" * 7 + b"\x01"


def test_get_or_create_schema(wire: Callable[[], Wire]) -> None:
    c, t = wire(), topic()
    missing = c.get_or_create(t, SchemaData("AVRO", V0))
    assert missing.error_code == ServerError.TopicNotFound
    c.producer(t, 1)  # creates the topic
    assert c.get_or_create(t, SchemaData("AVRO", V0)).schema_version == b"\x00" * 8
    assert c.get_or_create(t, SchemaData("AVRO", V0)).schema_version == b"\x00" * 8
    refused = c.get_or_create(t, SchemaData("AVRO", BAD))
    assert refused.error_code == ServerError.IncompatibleSchema
    assert c.get_or_create(t, SchemaData("AVRO", V1)).schema_version == b"\x00" * 7 + b"\x01"
    no_schema = c.get_or_create(t, SchemaData("NONE"))
    assert not no_schema.HasField("error_code") and no_schema.schema_version == b""


def test_invalid_schema_definition_is_refused(wire: Callable[[], Wire]) -> None:
    c, t = wire(), topic()
    refused = c.producer(t, 1, SchemaData("AVRO", b"{not json"))
    assert refused.error.error == ServerError.IncompatibleSchema
    assert "Invalid schema definition" in refused.error.message


def test_key_value_schemas(wire: Callable[[], Wire]) -> None:
    c, t = wire(), topic()
    kv0 = encode_key_value(SchemaData("STRING"), SchemaData("AVRO", V0))
    kv1 = encode_key_value(SchemaData("STRING"), SchemaData("AVRO", V1))
    kv_bad_value = encode_key_value(SchemaData("STRING"), SchemaData("AVRO", BAD))
    kv_other_key = encode_key_value(SchemaData("INT64"), SchemaData("AVRO", V0))
    assert c.producer(t, 1, kv0).producer_success.schema_version == b"\x00" * 8
    assert c.producer(t, 2, kv1).producer_success.schema_version == b"\x00" * 7 + b"\x01"
    for bad in (kv_bad_value, kv_other_key, SchemaData("AVRO", V0)):
        assert c.producer(t, 3, bad).error.error == ServerError.IncompatibleSchema
    got = c.get_schema(t, b"\x00" * 8)
    assert got.schema.type == SchemaType.KEY_VALUE
    assert got.schema.schema_data == kv0.data
    assert {kv.key: kv.value for kv in got.schema.properties}["value.schema.type"] == "AVRO"


def test_subscribe_with_an_incompatible_schema_is_refused(wire: Callable[[], Wire]) -> None:
    c, t = wire(), topic()
    c.producer(t, 1, SchemaData("AVRO", V0))
    refused = c.subscribe(t, 1, SchemaData("AVRO", BAD))
    assert refused.type == CommandType.ERROR
    assert refused.error.error == ServerError.IncompatibleSchema
    ok = c.subscribe(t, 2, SchemaData("AVRO", V1))
    assert ok.type == CommandType.SUCCESS
    # a consumer schema does not add a version to an active topic
    assert c.get_schema(t).schema_version == b"\x00" * 8


def test_namespace_policies_apply_live(broker: BrokerThread, wire: Callable[[], Wire]) -> None:
    service = broker.server.service

    def update(**policies: object) -> None:
        def apply() -> None:
            current = service.metadata.get_namespace("public/default") or {}
            service.metadata.set_namespace_policies("public/default", {**current, **policies})

        broker.call(apply)

    c, t = wire(), topic()
    c.producer(t, 1, SchemaData("AVRO", V0))
    try:
        update(is_allow_auto_update_schema=False)
        refused = c.producer(t, 2, SchemaData("AVRO", V1))
        assert refused.error.error == ServerError.IncompatibleSchema
        assert "auto updating is disabled" in refused.error.message
        assert c.producer(t, 3, SchemaData("AVRO", V0)).type == CommandType.PRODUCER_SUCCESS
        update(is_allow_auto_update_schema=True, schema_compatibility_strategy="ALWAYS_COMPATIBLE")
        assert c.producer(t, 4, SchemaData("AVRO", BAD)).producer_success.schema_version == b"\x00" * 7 + b"\x01"
        update(schema_compatibility_strategy="ALWAYS_INCOMPATIBLE", schema_validation_enforced=True)
        assert c.producer(t, 5, SchemaData("AVRO", V1)).error.error == ServerError.IncompatibleSchema
        assert c.producer(t, 6).error.error == ServerError.IncompatibleSchema
    finally:
        update(is_allow_auto_update_schema=None, schema_compatibility_strategy=None, schema_validation_enforced=None)


def test_a_producer_schema_of_type_none_gets_a_version(wire: Callable[[], Wire]) -> None:
    """The Go client's bytes schema travels as type None: Pulsar registers it for a PRODUCER (with
    or without properties) and answers an empty version to GET_OR_CREATE_SCHEMA."""
    c, t = wire(), topic()
    with_props = c.producer(t, 1, SchemaData("NONE", b"", {"pulsar": "hello"}))
    assert with_props.producer_success.schema_version == b"\x00" * 8
    stored = c.get_schema(t, b"\x00" * 8)
    assert not stored.HasField("error_code")
    assert stored.schema.type == SchemaType.NONE
    assert {kv.key: kv.value for kv in stored.schema.properties} == {"pulsar": "hello"}
    # the same definition (properties do not count) reuses the version
    without_props = c.producer(t, 2, SchemaData("NONE"))
    assert without_props.producer_success.schema_version == b"\x00" * 8
    none = c.get_or_create(t, SchemaData("NONE"))
    assert not none.HasField("error_code") and none.schema_version == b""
    other, o = wire(), topic()
    assert other.producer(o, 1, SchemaData("NONE")).producer_success.schema_version == b"\x00" * 8
