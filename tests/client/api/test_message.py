"""Message ids and received messages as code written for the official client handles them."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from magnetar.client import Client, MessageId
from magnetar.client.api.message import SchemaVersion
from magnetar.client.schema import StringSchema

from ..conftest import RECEIVE_MS


def test_wrapped_ids_are_the_ids_and_keep_their_order(topic: str, client: Client) -> None:
    producer = client.create_producer(topic, batching_enabled=False)
    consumer = client.subscribe(topic, "sub")
    sent = [MessageId.wrap(producer.send(b"m%d" % i)) for i in range(3)]
    received = [MessageId.wrap(consumer.receive(RECEIVE_MS).message_id()) for _ in sent]
    assert sent == received
    assert sent[0] < sent[1] <= sent[2] and sent[2] > sent[1] >= sent[0] and sent[0] != sent[1]
    assert MessageId.deserialize(MessageId.wrap(MessageId.earliest).serialize()) == MessageId.earliest
    consumer.acknowledge_cumulative(received[-1])
    with pytest.raises(TypeError):
        MessageId.wrap(b"not an id")


def test_schema_versions_are_bytes_that_encode_to_themselves(
    topic: str, client_factory: Callable[..., Client], url: str
) -> None:
    client = client_factory(url)
    consumer = client.subscribe(topic, "sub", schema=StringSchema())
    client.create_producer(topic, schema=StringSchema()).send("text")
    version = consumer.receive(RECEIVE_MS).schema_version()
    assert isinstance(version, bytes) and len(version) == 8
    assert version.encode() == bytes(version) and type(version.encode()) is bytes
    assert version.number() == int.from_bytes(version, "big")
    plain = client.subscribe(f"{topic}-bytes", "sub")
    client.create_producer(f"{topic}-bytes").send(b"raw")
    none = plain.receive(RECEIVE_MS).schema_version()
    assert none == b"" and none.encode() == b"" and none.number() is None
    assert SchemaVersion(b"\x00" * 7 + b"\x05").number() == 5
