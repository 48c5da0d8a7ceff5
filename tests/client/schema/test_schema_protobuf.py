"""ProtobufNativeSchema: the definition the broker is told (the Java and official Python clients'),
encoding and decoding generated message classes, and values crossing between magnetar's client
and the official one through a real broker."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import urllib.request

import pulsar
import pytest
from google.protobuf import descriptor_pb2

from magnetar.client import Client, InitialPosition, SchemaTypeError
from magnetar.client.schema import ProtobufNativeSchema
from magnetar.protocol.enums import SchemaType
from magnetar.protocol.schema import KeyValue, MessageIdData
from magnetar.testing import BrokerProcess

from ..conftest import RECEIVE_MS


def test_descriptor_proto_loads_with_the_first_protobuf_schema_not_with_the_client() -> None:
    probe = ("import sys, magnetar.client\n"
             "print('google.protobuf.descriptor_pb2' in sys.modules)\n"
             "from magnetar.client.schema import ProtobufNativeSchema\n"
             "from magnetar.protocol.schema import KeyValue\n"
             "ProtobufNativeSchema(KeyValue)\n"
             "print('google.protobuf.descriptor_pb2' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


def test_the_definition_names_the_root_message_and_carries_its_files() -> None:
    schema = ProtobufNativeSchema(KeyValue)
    info = schema.schema_info()
    assert (info.schema_type(), info.name()) == (SchemaType.PROTOBUF_NATIVE, "PROTOBUF_NATIVE")
    definition = json.loads(info.schema())
    assert sorted(definition) == ["fileDescriptorSet", "rootFileDescriptorName", "rootMessageTypeName"]
    assert definition["rootMessageTypeName"] == "magnetar.wire.KeyValue"
    assert definition["rootFileDescriptorName"] == "magnetar_wire.proto"
    files = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(definition["fileDescriptorSet"]))
    assert [f.name for f in files.file] == ["magnetar_wire.proto"]
    assert "KeyValue" in [m.name for m in files.file[0].message_type]
    wire = schema.wire_schema()
    assert (wire.type, wire.name, wire.schema_data) == (20, "PROTOBUF_NATIVE", info.schema().encode())


def test_the_definition_is_the_official_clients() -> None:
    ours = json.loads(ProtobufNativeSchema(KeyValue).schema_info().schema())
    theirs = json.loads(pulsar.schema.ProtobufNativeSchema(KeyValue).schema_info().schema())
    assert ours == theirs


def test_encode_and_decode_generated_messages() -> None:
    schema = ProtobufNativeSchema(MessageIdData)
    value = MessageIdData(ledger_id=7, entry_id=9, batch_index=3)
    data = schema.encode(value)
    assert data == value.SerializeToString()
    assert schema.decode(data) == value
    with pytest.raises(SchemaTypeError, match="cannot encode a KeyValue"):
        schema.encode(KeyValue(key="k", value="v"))
    with pytest.raises(TypeError):
        ProtobufNativeSchema(dict)
    assert repr(schema) == "ProtobufNativeSchema(MessageIdData)"


def test_values_cross_between_the_clients_and_the_registry_keeps_the_type(
    broker: BrokerProcess, client: Client, official: pulsar.Client, topic: str
) -> None:
    ours = ProtobufNativeSchema(KeyValue)
    official_consumer = official.subscribe(
        topic, "official", schema=pulsar.schema.ProtobufNativeSchema(KeyValue),
        initial_position=pulsar.InitialPosition.Earliest,
    )
    our_consumer = client.subscribe(topic, "ours", schema=ours, initial_position=InitialPosition.Earliest)
    producer = client.create_producer(topic, schema=ours)
    official_producer = official.create_producer(topic, schema=pulsar.schema.ProtobufNativeSchema(KeyValue))
    for i in range(3):
        producer.send(KeyValue(key=f"ours-{i}", value=str(i)))
    official_producer.send(KeyValue(key="official", value="x"))
    expected = [("ours-0", "0"), ("ours-1", "1"), ("ours-2", "2"), ("official", "x")]
    for consumer in (official_consumer, our_consumer):
        values = [consumer.receive(RECEIVE_MS).value() for _ in expected]
        assert all(isinstance(v, KeyValue) for v in values)
        assert [(v.key, v.value) for v in values] == expected
    path = topic.replace("persistent://", "")
    with urllib.request.urlopen(f"{broker.http_url}/admin/v2/schemas/{path}/schema", timeout=10) as reply:
        stored = json.loads(reply.read())
    assert stored["type"] == "PROTOBUF_NATIVE"
    assert json.loads(stored["data"])["rootMessageTypeName"] == "magnetar.wire.KeyValue"
