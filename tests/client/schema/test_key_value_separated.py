"""KeyValue SEPARATED: the encoded key in the message key (base64, marked), the value in the payload."""

from __future__ import annotations

import base64
import dataclasses

import pytest

from magnetar.client import (
    Client,
    ConsumerType,
    InitialPosition,
    JsonSchema,
    KeyValueEncodingType,
    KeyValueSchema,
    StringSchema,
)
from magnetar.client.asyncio import Client as AsyncFaceClient
from magnetar.protocol.enums import SchemaType
from magnetar.testing import BrokerProcess

from ..conftest import RECEIVE_MS, create_partitioned_topic, run


@dataclasses.dataclass
class Point:
    x: int
    y: int


SEPARATED = KeyValueEncodingType.SEPARATED


def schema() -> KeyValueSchema:
    return KeyValueSchema(JsonSchema(Point), StringSchema(), SEPARATED)


def test_the_parts_and_the_schema_info() -> None:
    kv = schema()
    assert kv.split((Point(1, 2), "v")) == (JsonSchema(Point).encode(Point(1, 2)), b"v")
    assert kv.split((None, None)) == (None, None)
    assert kv.encode((Point(1, 2), "v")) == b"v"
    props = {item.key: item.value for item in kv.wire_schema().properties}
    assert props["kv.encoding.type"] == "SEPARATED" and kv.wire_schema().type == SchemaType.KEY_VALUE
    assert repr(kv).endswith("SEPARATED)")
    assert KeyValueSchema(StringSchema(), StringSchema(), 1).separated  # the official client's int form


@pytest.mark.parametrize("batching", [True, False])
def test_round_trip_with_the_key_in_the_message_key(client: Client, topic: str, batching: bool) -> None:
    consumer = client.subscribe(topic, "sub", schema=schema(), initial_position=InitialPosition.Earliest)
    producer = client.create_producer(topic, schema=schema(), batching_enabled=batching)
    pairs = [(Point(1, 2), "a"), (Point(-3, 4), ""), (None, "no key"), (Point(5, 6), None)]
    for pair in pairs:
        producer.send(pair)
    got = [consumer.receive(RECEIVE_MS) for _ in pairs]
    assert [m.value() for m in got] == pairs
    key = JsonSchema(Point).encode(Point(1, 2))
    assert got[0].partition_key() == base64.b64encode(key).decode() and got[0].key_bytes() == key
    assert got[0].data() == b"a"
    assert not got[2].has_key() and got[2].key_bytes() is None
    assert got[3].is_null_value() and got[3].data() == b""


def test_the_key_routes_and_groups(broker: BrokerProcess, client: Client, topic: str) -> None:
    """The encoded key decides the partition and the Key_Shared consumer, as any message key."""
    create_partitioned_topic(broker, topic, 3)
    kv = KeyValueSchema(StringSchema(), StringSchema(), SEPARATED)
    consumer = client.subscribe(topic, "sub", schema=kv, consumer_type=ConsumerType.KeyShared,
                                initial_position=InitialPosition.Earliest)
    producer = client.create_producer(topic, schema=kv)
    for i in range(12):
        producer.send((f"k{i % 3}", f"v{i}"))
    got = [consumer.receive(RECEIVE_MS) for _ in range(12)]
    partitions: dict[str, set[str]] = {}
    for message in got:
        partitions.setdefault(message.value()[0], set()).add(message.topic_name())
    assert sorted(m.value()[1] for m in got) == sorted(f"v{i}" for i in range(12))
    assert all(len(names) == 1 for names in partitions.values()) and len(partitions) == 3
    by_key = {k: [m.value()[1] for m in got if m.value()[0] == k] for k in partitions}
    assert by_key["k0"] == ["v0", "v3", "v6", "v9"]  # per key in order


def test_the_asyncio_face(url: str, topic: str) -> None:
    async def main() -> list[tuple[object, object]]:
        client = AsyncFaceClient(url)
        try:
            consumer = await client.subscribe(topic, "sub", schema=schema())
            producer = await client.create_producer(topic, schema=schema())
            await producer.send((Point(7, 8), "async"))
            message = await consumer.receive()
            return [message.value()]
        finally:
            await client.close()

    assert run(main()) == [(Point(7, 8), "async")]
