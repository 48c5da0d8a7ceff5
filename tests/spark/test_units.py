"""Unit tests of the connector's pure parts: positions, offsets, options, schemas, read limits."""

from __future__ import annotations

import json

import pytest
from pyspark.sql.types import ArrayType, LongType, MapType, StringType, StructField, StructType, TimestampType

from magnetar.client import MessageId
from magnetar.protocol.enums import CompressionType, SchemaType
from magnetar.protocol.message_id_bytes import message_id_bytes
from magnetar.spark.options import PulsarOptionError, sink_options, source_options
from magnetar.spark.positions import EARLIEST, Position, after, dump_offsets, load_offsets, parse
from magnetar.spark.reading import ranges
from magnetar.spark.schemas import META_NAMES, ValueFormat, avro_to_spark, spark_to_avro
from magnetar.spark.source import allocate

URL = "pulsar://localhost:6650"


def test_position_after_a_message_is_the_next_batch_index_or_the_next_entry() -> None:
    assert after(3, 10, -1, 0) == Position(3, 11, -1)
    assert after(3, 10, 0, 5) == Position(3, 10, 1)
    assert after(3, 10, 4, 5) == Position(3, 11, -1)  # the last of its batch
    # messages order like positions: the next entry's messages come after any batch position
    assert Position(3, 10, 4) < Position(3, 11, -1) <= Position(3, 11, 0)


def test_entries_between_positions_and_advancing() -> None:
    start = Position(1, 10, -1)
    assert start.entries_until(Position(1, 25, -1)) == 15
    assert Position(1, 10, 3).entries_until(Position(1, 12, -1)) == 2  # the partly read entry counts
    assert start.entries_until(Position(1, 10, 2)) == 1
    assert start.entries_until(start) == 0
    assert start.advance(5) == Position(1, 15, -1)
    assert Position(1, 10, 3).advance(1) == Position(1, 11, -1)


def test_offsets_json_round_trip_and_version_check() -> None:
    positions = {"persistent://public/default/b": Position(1, 2, -1), "persistent://public/default/a": Position(1, 7, 3)}
    offset = dump_offsets(positions)
    assert list(offset["offsets"]) == sorted(positions)  # deterministic JSON
    assert offset == {"v": 1, "offsets": {"persistent://public/default/a": "1:7:3", "persistent://public/default/b": "1:2:-1"}}
    assert load_offsets(json.loads(json.dumps(offset))) == positions
    with pytest.raises(ValueError, match="version"):
        load_offsets({"v": 99, "offsets": {}})
    assert parse("4:5") == Position(4, 5, -1)
    assert parse("earliest") == EARLIEST
    with pytest.raises(ValueError):
        parse("4-5")


@pytest.mark.parametrize(
    ("ledger", "entry", "batch", "partition", "size"),
    [(1, 0, -1, -1, 0), (7, 123456789, 3, 2, 100), (2**40, 5, 0, 0, 1), (5, 2**33, -1, 11, 0)],
)
def test_message_id_bytes_equal_message_id_serialize(ledger: int, entry: int, batch: int, partition: int, size: int) -> None:
    expected = MessageId(ledger, entry, batch, partition, size).serialize()
    assert message_id_bytes(ledger, entry, batch, partition, size) == expected
    back = MessageId.deserialize(expected)
    assert (back.ledger_id, back.entry_id, back.batch_index, back.partition) == (ledger, entry, batch, partition)


def test_allocate_splits_a_budget_by_backlog() -> None:
    assert allocate(10, {"a": 13, "b": 12}) == {"a": 5, "b": 5}
    assert allocate(100, {"a": 13, "b": 12}) == {"a": 13, "b": 12}
    shares = allocate(7, {"a": 100, "b": 1, "c": 0})
    assert sum(shares.values()) == 7 and shares["c"] == 0 and shares["a"] >= 6
    assert allocate(1, {"a": 1, "b": 1}) in ({"a": 1, "b": 0}, {"a": 0, "b": 1})


def test_ranges_split_large_ranges() -> None:
    parts = ranges("persistent://public/default/t-partition-3", Position(1, 0, -1), Position(1, 25, -1), False, 10)
    assert [(p.start, p.end, p.check_loss) for p in parts] == [
        ("1:0:-1", "1:10:-1", False), ("1:10:-1", "1:20:-1", True), ("1:20:-1", "1:25:-1", True),
    ]
    assert all(p.partition == 3 for p in parts)
    assert ranges("persistent://public/default/t", Position(1, 5, -1), Position(1, 5, -1), True, 10) == []


def test_source_options_are_mapped_back_from_lower_case() -> None:
    # Spark hands the options over lower-cased
    opts = source_options(
        {
            "service.url": URL, "topics": "a, persistent://t/ns/b", "startingoffsets": "latest",
            "failondataloss": "false", "pollTimeoutMs": "5000", "maxentriespertrigger": "100",
            "pulsar.client.operationtimeoutms": "20000", "pulsar.reader.receiverqueuesize": "321",
        },
        streaming=True,
    )
    assert opts.topics == ["persistent://public/default/a", "persistent://t/ns/b"]
    assert opts.starting == "latest" and opts.fail_on_data_loss is False
    assert opts.poll_timeout_ms == 5000 and opts.max_entries_per_trigger == 100
    assert opts.settings.client == {"operation_timeout_seconds": 20.0}
    assert opts.reader == {"receiver_queue_size": 321}


def test_starting_offsets_json_forms() -> None:
    spec = json.dumps({
        "persistent://public/default/t-partition-0": "3:4:-1",
        "t-partition-1": [8, 3, 16, 9],  # a serialized MessageIdData, as the Scala connector writes it
        "persistent://public/default/t-partition-2": -2,
    })
    opts = source_options({"service.url": URL, "topic": "t", "startingOffsets": spec}, streaming=False)
    assert opts.starting == {
        "persistent://public/default/t-partition-0": Position(3, 4, -1),
        "persistent://public/default/t-partition-1": Position(3, 9, -1),
        "persistent://public/default/t-partition-2": EARLIEST,
    }


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({"topic": "t"}, True, "service.url is required"),
        ({"service.url": URL}, True, "exactly one of the options topic, topics, topicsPattern"),
        ({"service.url": URL, "topic": "a", "topicspattern": "a.*"}, True, "got topic, topicsPattern"),
        ({"service.url": URL, "topic": "a", "startingoffsets": "latest", "startingtime": "5"}, True, "startingOffsets and startingTime conflict"),
        ({"service.url": URL, "topic": "a", "endingoffsets": "latest"}, True, "endingOffsets is for batch queries"),
        ({"service.url": URL, "topic": "a", "maxentriespertrigger": "5"}, False, "maxEntriesPerTrigger is for streaming"),
        ({"service.url": URL, "topic": "a", "startingoffsets": "latest"}, False, "startingOffsets cannot be 'latest'"),
        ({"service.url": URL, "topic": "a", "bogus": "1"}, True, "unknown option 'bogus'"),
        ({"service.url": URL, "topic": "a", "pulsar.client.nosuch": "1"}, True, "unknown option 'pulsar.client.nosuch'"),
        ({"service.url": URL, "topic": "a", "pulsar.producer.batchingenabled": "true"}, True, "apply to the sink"),
        ({"service.url": URL, "topic": "a", "failondataloss": "maybe"}, True, "failOnDataLoss must be true or false"),
        ({"service.url": URL, "topic": "a", "polltimeoutms": "x"}, True, "pollTimeoutMs must be an integer"),
        ({"service.url": URL, "topicspattern": "(unclosed"}, True, "topicsPattern is not a valid regular expression"),
        ({"service.url": "kafka://x", "topic": "a"}, True, "service.url"),
        ({"service.url": URL, "topic": "a", "startingoffsets": '{"b": "1:2"}'}, False, "not one of the topics read"),
        ({"service.url": URL, "topic": "non-persistent://public/default/x"}, True, "non-persistent"),
    ],
)
def test_bad_source_options_name_the_option(options: dict, streaming: bool, message: str) -> None:
    with pytest.raises(PulsarOptionError, match=message.replace("(", r"\(")):
        source_options(options, streaming=streaming)


def test_sink_options() -> None:
    opts = sink_options({"service.url": URL, "topic": "out", "pulsar.producer.compressiontype": "zstd",
                         "pulsar.producer.batchingmaxmessages": "50", "checkpointlocation": "/tmp/x"})
    assert opts.topic == "persistent://public/default/out"
    assert opts.producer == {"compression_type": CompressionType.ZSTD, "batching_max_messages": 50}
    with pytest.raises(PulsarOptionError, match="startingOffsets' is not an option of the pulsar sink"):
        sink_options({"service.url": URL, "topic": "out", "startingoffsets": "earliest"})
    with pytest.raises(PulsarOptionError, match="compressionType must be one of"):
        sink_options({"service.url": URL, "topic": "out", "pulsar.producer.compressiontype": "brotli"})


def test_avro_definitions_become_spark_types() -> None:
    avro = {
        "type": "record", "name": "R", "fields": [
            {"name": "id", "type": "long"},
            {"name": "name", "type": ["null", "string"]},
            {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "tags", "type": {"type": "array", "items": "string"}},
            {"name": "attrs", "type": {"type": "map", "values": "long"}},
            {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["A", "B"]}},
            {"name": "inner", "type": ["null", {"type": "record", "name": "I", "fields": [{"name": "x", "type": "int"}]}]},
        ],
    }
    fmt = ValueFormat(SchemaType.AVRO, json.dumps(avro))
    schema = fmt.spark_schema()
    assert schema.fieldNames() == ["id", "name", "at", "tags", "attrs", "kind", "inner", *META_NAMES]
    assert schema["at"].dataType == TimestampType()
    assert schema["tags"].dataType == ArrayType(StringType(), True)
    assert schema["attrs"].dataType == MapType(StringType(), LongType(), True)
    assert schema["kind"].dataType == StringType()
    with pytest.raises(ValueError, match="recursive"):
        avro_to_spark({"type": "record", "name": "N", "fields": [{"name": "next", "type": ["null", "N"]}]},
                      {"N": {"type": "record", "name": "N", "fields": [{"name": "next", "type": ["null", "N"]}]}}, set())
    assert ValueFormat().spark_schema()["value"].dataType.simpleString() == "binary"
    assert ValueFormat(SchemaType.STRING).spark_schema()["value"].dataType == StringType()


def test_spark_types_become_avro_for_the_sink() -> None:
    schema = StructType([StructField("id", LongType()), StructField("at", TimestampType()),
                         StructField("m", MapType(StringType(), StringType()))])
    avro = spark_to_avro(schema)
    assert avro["type"] == "record"
    assert [f["name"] for f in avro["fields"]] == ["id", "at", "m"]
    assert avro["fields"][1]["type"] == ["null", {"type": "long", "logicalType": "timestamp-millis"}]
