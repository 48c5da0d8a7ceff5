"""The Python side of the cross-language round trips (official ``pulsar`` client).

Topics are ``xlang-RUN-WRITER-KIND`` with WRITER in py, go, java and KIND in string, avro, json; every
writer puts five messages on each, the same values in every language (see CrossLanguageTest.java and
xlang_test.go).
"""

from __future__ import annotations

import pulsar
from pulsar.schema import AvroSchema, Integer, JsonSchema, Record, String, StringSchema

COUNT = 5
KINDS = ("string", "avro", "json")
RECEIVE_MS = 10_000


class User(Record):
    """The exchanged record: Avro schema magnetar.interop.User {age: int, name: string}."""

    _avro_namespace = "magnetar.interop"
    age = Integer(required=True)
    name = String(required=True)


def topic(run_id: str, writer: str, kind: str) -> str:
    """The cross-language topic of one writer and kind."""
    return f"persistent://public/default/xlang-{run_id}-{writer}-{kind}"


def _schema(kind: str) -> pulsar.schema.Schema:
    return {"string": StringSchema(), "avro": AvroSchema(User), "json": JsonSchema(User)}[kind]


def _client(service_url: str) -> pulsar.Client:
    return pulsar.Client(
        service_url, operation_timeout_seconds=15, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
    )


def write_python_side(service_url: str, run_id: str) -> None:
    """Write the py topics: strings with keys and properties, Avro and JSON records."""
    client = _client(service_url)
    try:
        for kind in KINDS:
            producer = client.create_producer(topic(run_id, "py", kind), schema=_schema(kind))
            for i in range(COUNT):
                if kind == "string":
                    producer.send(f"py-{i}-ünï", partition_key=f"k{i}", properties={"writer": "py"})
                else:
                    producer.send(User(name=f"py-{i}", age=i))
            producer.close()
    finally:
        client.close()


def read_side(
    service_url: str, run_id: str, writer: str
) -> dict[str, list[tuple[object, str, dict[str, str]]]]:
    """Everything one writer put on its topics: per kind, (value, key, properties) in order.

    Each topic is read from the earliest message until it stays quiet, so extra messages show too.
    """
    client = _client(service_url)
    found: dict[str, list[tuple[object, str, dict[str, str]]]] = {}
    try:
        for kind in KINDS:
            reader = client.create_reader(
                topic(run_id, writer, kind), pulsar.MessageId.earliest, schema=_schema(kind)
            )
            out = []
            try:
                while True:
                    msg = reader.read_next(timeout_millis=RECEIVE_MS if len(out) < COUNT else 700)
                    value = msg.value()
                    if isinstance(value, User):
                        value = (value.name, value.age)
                    out.append((value, msg.partition_key(), msg.properties()))
            except pulsar.Timeout:
                pass
            finally:
                reader.close()
            found[kind] = out
    finally:
        client.close()
    return found


def expected_side(writer: str) -> dict[str, list[tuple[object, str, dict[str, str]]]]:
    """What read_side must return for a writer that did its part."""
    return {
        "string": [(f"{writer}-{i}-ünï", f"k{i}", {"writer": writer}) for i in range(COUNT)],
        "avro": [((f"{writer}-{i}", i), "", {}) for i in range(COUNT)],
        "json": [((f"{writer}-{i}", i), "", {}) for i in range(COUNT)],
    }
