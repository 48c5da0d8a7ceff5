"""magnetar.client's side of the exchanges with the Java client (MagnetarClientXlangTest.java).

KeyValue SEPARATED: ``xlang-RUN-mpy-kvsep`` is written here before Maven runs, ``xlang-RUN-java-kvsep``
(written by the Java test) is read after it. Keys are bytes that are not UTF-8 (0xff 0x00 i); the last
message of each side has a null key.
"""

from __future__ import annotations

from magnetar.client import BytesSchema, Client, KeyValueEncodingType, KeyValueSchema, MessageId, StringSchema

COUNT = 5
RECEIVE_MS = 10_000


def key_value_schema() -> KeyValueSchema:
    """The exchanged schema: KeyValue<bytes, string>, SEPARATED."""
    return KeyValueSchema(BytesSchema(), StringSchema(), KeyValueEncodingType.SEPARATED)


def key(i: int) -> bytes:
    """The i-th key."""
    return bytes([0xFF, 0, i])


def topic(run_id: str, writer: str) -> str:
    """The KeyValue SEPARATED topic of one writer."""
    return f"persistent://public/default/xlang-{run_id}-{writer}-kvsep"


def expected(writer: str) -> list[tuple[bytes | None, str]]:
    """What a writer puts on its topic, as (key, value) pairs."""
    return [(key(i), f"{writer}-{i}") for i in range(COUNT)] + [(None, f"{writer}-null-key")]


def write_magnetar_side(service_url: str, run_id: str) -> None:
    """Write the mpy topic with magnetar.client."""
    client = Client(service_url, operation_timeout_seconds=15)
    try:
        producer = client.create_producer(topic(run_id, "mpy"), schema=key_value_schema())
        for pair in expected("mpy"):
            producer.send(pair)
        producer.close()
    finally:
        client.close()


def read_with_magnetar(service_url: str, run_id: str, writer: str) -> list[tuple[bytes | None, str, bool]]:
    """Every (key, value, has_key) on a writer's topic, read with magnetar.client until it stays quiet."""
    client = Client(service_url, operation_timeout_seconds=15)
    out: list[tuple[bytes | None, str, bool]] = []
    try:
        reader = client.create_reader(topic(run_id, writer), MessageId.earliest, schema=key_value_schema())
        while reader.has_message_available() or len(out) < len(expected(writer)):
            message = reader.read_next(RECEIVE_MS)
            pair_key, value = message.value()
            out.append((pair_key, value, message.has_key()))
    finally:
        client.close()
    return out
