"""Messages written with another version of the topic's schema: Avro schema resolution (checked
against fastavro's) and consumers that read each message with the version that wrote it."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import fastavro
import pytest

from magnetar.client import (
    AsyncClient,
    Client,
    InitialPosition,
    InvalidConfiguration,
    MessageId,
    SchemaSerializationError,
)
from magnetar.client.schema import AvroSchema, Integer, Record, String
from magnetar.client.schema.avro_codec import AvroCodec

from ..conftest import RECEIVE_MS, run

READER = {
    "type": "record", "name": "User", "fields": [
        {"name": "name", "type": "string"},
        {"name": "age", "type": ["null", "long"]},
        {"name": "score", "type": "double"},
        {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"], "default": "RED"}},
        {"name": "tags", "type": {"type": "array", "items": "bytes"}},
        {"name": "city", "type": "string", "default": "nowhere"},
    ],
}
#: another version: fields reordered, one the reader lacks, one missing, promotable types
WRITER = {
    "type": "record", "name": "UserV2", "fields": [
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "extra", "type": {"type": "map", "values": ["null", "int"]}},
        {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["BLUE", "GREEN", "RED"]}},
        {"name": "score", "type": "int"},
        {"name": "age", "type": "int"},
        {"name": "name", "type": ["null", "string"]},
    ],
}


def _fastavro_read(writer: dict, reader: dict, data: bytes) -> Any:
    return fastavro.schemaless_reader(
        io.BytesIO(data), fastavro.parse_schema({**writer, "name": reader["name"]}), fastavro.parse_schema(reader)
    )


def test_payloads_of_another_version_read_as_fastavro_reads_them() -> None:
    decoder = AvroCodec(READER).resolving(WRITER)
    for value in (
        {"tags": ["a", "é"], "extra": {"x": 1, "y": None}, "color": "GREEN", "score": 3, "age": 41, "name": "ann"},
        {"tags": [], "extra": {}, "color": "BLUE", "score": -7, "age": -1, "name": "bob"},
    ):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, fastavro.parse_schema(WRITER), value)
        data = buf.getvalue()
        ours = decoder.decode(data)
        assert ours == _fastavro_read(WRITER, READER, data)
        assert ours["score"] == float(value["score"]) and isinstance(ours["score"], float)
        assert ours["city"] == "nowhere" and "extra" not in ours
    # an enum symbol the reader lacks becomes the reader's default symbol
    buf = io.BytesIO()
    fastavro.schemaless_writer(
        buf, fastavro.parse_schema(WRITER),
        {"tags": [], "extra": {}, "color": "BLUE", "score": 0, "age": 0, "name": "c"},
    )
    assert decoder.decode(buf.getvalue())["color"] == "RED"


def test_values_the_reader_cannot_read_are_refused() -> None:
    decoder = AvroCodec(READER).resolving(WRITER)
    buf = io.BytesIO()
    fastavro.schemaless_writer(
        buf, fastavro.parse_schema(WRITER),
        {"tags": [], "extra": {}, "color": "RED", "score": 0, "age": 0, "name": None},
    )
    with pytest.raises(SchemaSerializationError, match="writer type null cannot be read as string"):
        decoder.decode(buf.getvalue())
    other_type = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "long"}]}
    with pytest.raises(SchemaSerializationError, match="writer type long cannot be read as string"):
        AvroCodec(READER).resolving(other_type).decode(b"\x02")
    with pytest.raises(InvalidConfiguration, match="writer's Avro schema"):
        AvroCodec(READER).resolving({"type": "record"})


class UserV1(Record):
    name = String()
    age = Integer()


class UserV2(Record):
    """The next version: fields sorted by name, one more (FULL-compatible with UserV1)."""

    _sorted_fields = True
    name = String()
    age = Integer()
    city = String(default=None, required_default=True)


def test_consumers_read_each_message_with_the_version_that_wrote_it(
    topic: str, client_factory: Callable[..., Client], url: str
) -> None:
    client = client_factory(url)
    consumer = client.subscribe(topic, "sub", schema=AvroSchema(UserV1), initial_position=InitialPosition.Earliest)
    reader = client.create_reader(topic, start_message_id=MessageId.earliest, schema=AvroSchema(UserV1))
    first = client.create_producer(topic, schema=AvroSchema(UserV1))
    second = client.create_producer(topic, schema=AvroSchema(UserV2))
    for i in range(3):
        first.send(UserV1(name=f"v1-{i}", age=100 + i))
        second.send(UserV2(name=f"v2-{i}", age=200 + i, city="x"))
    expected = [(f"v{v}-{i}", v * 100 + i) for i in range(3) for v in (1, 2)]
    for source in (lambda: consumer.receive(RECEIVE_MS), lambda: reader.read_next(RECEIVE_MS)):
        messages = [source() for _ in expected]
        assert [(m.value().name, m.value().age) for m in messages] == expected
        assert all(type(m.value()) is UserV1 for m in messages)
        versions = [m.schema_version() for m in messages]
        assert versions[0] != versions[1] and len(set(versions)) == 2
        assert [v.encode() for v in versions[:2]] == [bytes(v) for v in versions[:2]]
        assert versions[1].number() == versions[0].number() + 1


def test_the_asyncio_core_reads_each_message_with_the_version_that_wrote_it(topic: str, url: str) -> None:
    async def main() -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
        async with AsyncClient(url) as client:
            consumer = await client.subscribe(topic, "sub", schema=AvroSchema(UserV1), initial_position=InitialPosition.Earliest)
            batch_consumer = await client.subscribe(
                topic, "batch", schema=AvroSchema(UserV1), initial_position=InitialPosition.Earliest
            )
            first = await client.create_producer(topic, schema=AvroSchema(UserV1))
            second = await client.create_producer(topic, schema=AvroSchema(UserV2))
            for i in range(3):
                await first.send(UserV1(name=f"v1-{i}", age=100 + i))
                await second.send(UserV2(name=f"v2-{i}", age=200 + i, city="x"))
            received = [await consumer.receive(RECEIVE_MS) for _ in range(6)]
            batched: list = []
            while len(batched) < 6:
                batched += await batch_consumer.batch_receive()
            return [(m.value().name, m.value().age) for m in received], [(m.value().name, m.value().age) for m in batched]

    expected = [(f"v{v}-{i}", v * 100 + i) for i in range(3) for v in (1, 2)]
    assert run(main(), timeout=60) == (expected, expected)
