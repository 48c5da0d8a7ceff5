"""MessageBatch against the official client's: the same payload parses to the same messages."""

from __future__ import annotations

import pulsar
import pytest

from magnetar.client import InvalidArgument, MessageBatch, MessageId
from magnetar.protocol.batch import BatchMessage, encode_batch

MESSAGES = [
    BatchMessage(b"hello", {"a": "1", "b": "2"}, "k1", ordering_key=b"ok", event_time=5, sequence_id=7),
    BatchMessage(b"", null_value=True),
    BatchMessage(bytes(range(256)) * 3, partition_key="\u00fc"),
]
PAYLOAD = encode_batch(MESSAGES)


def fields(message: object) -> tuple[object, ...]:
    m = message
    return (m.data(), m.properties(), m.partition_key(), m.ordering_key(), m.event_timestamp(),  # type: ignore[attr-defined]
            m.publish_timestamp(), m.topic_name(), m.redelivery_count())  # type: ignore[attr-defined]


def ids(messages: list[object]) -> list[tuple[int, int, int, int]]:
    return [(m.message_id().ledger_id(), m.message_id().entry_id(), m.message_id().partition(),  # type: ignore[attr-defined]
             m.message_id().batch_index()) for m in messages]  # type: ignore[attr-defined]


def test_the_messages_are_the_official_clients() -> None:
    ours = MessageBatch().parse_from(PAYLOAD, 3)
    theirs = pulsar.MessageBatch().parse_from(PAYLOAD, 3)
    assert [fields(m) for m in ours] == [fields(m) for m in theirs]
    assert ids(ours) == ids(theirs) == [(-1, -1, -1, 0), (-1, -1, -1, 1), (-1, -1, -1, 2)]
    assert ours[0].data() == b"hello" and ours[1].is_null_value() and ours[0].ordering_key() == "ok"


def test_with_the_entrys_id() -> None:
    ours = MessageBatch().with_message_id(MessageId(10, 20, partition=2)).parse_from(PAYLOAD, 3)
    theirs = pulsar.MessageBatch().with_message_id(pulsar.MessageId(2, 10, 20, -1)).parse_from(PAYLOAD, 3)
    assert ids(ours) == ids(theirs) == [(10, 20, 2, 0), (10, 20, 2, 1), (10, 20, 2, 2)]
    assert ours[2].message_id() == MessageId(10, 20, 2, 2)


def test_bad_input() -> None:
    with pytest.raises(TypeError, match="unknown message id type"):
        MessageBatch().with_message_id("1:2")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a batch of 4 messages"):
        MessageBatch().parse_from(PAYLOAD, 4)
    with pytest.raises(ValueError, match="left over"):
        MessageBatch().parse_from(PAYLOAD, 2)
    with pytest.raises(TypeError):
        MessageBatch().parse_from("text", 1)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        MessageBatch().parse_from(PAYLOAD, "3")  # type: ignore[arg-type]
