"""Consume, end to end, of what the official producer and magnetar's write, batched and not: the
exact payloads, properties, keys and sequence ids arrive, and exactly the messages acknowledged
are not delivered again to the subscription."""

from __future__ import annotations

from typing import Any

import pulsar
import pytest

from magnetar.client import Client, InitialPosition

from ..conftest import RECEIVE_MS

COUNT = 300


def _produce(producer: Any) -> list[tuple[bytes, dict[str, str], str]]:
    """COUNT messages, every third with properties, every fifth with a key; what was sent."""
    sent = []
    for i in range(COUNT):
        payload = b"exact %d " % i * (1 + i % 7)
        properties = {"i": str(i), "kind": "third"} if i % 3 == 0 else {}
        key = f"key-{i}" if i % 5 == 0 else ""
        options: dict[str, Any] = {}
        if properties:
            options["properties"] = properties
        if key:
            options["partition_key"] = key
        producer.send_async(payload, None, **options)
        sent.append((payload, properties, key))
    producer.flush()
    return sent


@pytest.mark.parametrize("batching", [False, True], ids=["unbatched", "batched"])
@pytest.mark.parametrize("writer", ["official", "magnetar"])
def test_exact_messages_and_exact_acknowledgements(
    client: Client, official: pulsar.Client, topic: str, writer: str, batching: bool
) -> None:
    consumer = client.subscribe(topic, "exact", initial_position=InitialPosition.Earliest, ack_group_time_ms=50)
    if writer == "official":
        producer = official.create_producer(topic, batching_enabled=batching, batching_max_publish_delay_ms=20)
    else:
        producer = client.create_producer(topic, batching_enabled=batching, batching_max_publish_delay_ms=20)
    sent = _produce(producer)
    got = [consumer.receive(RECEIVE_MS) for _ in range(COUNT)]
    assert [(m.data(), m.properties(), m.partition_key()) for m in got] == sent
    assert [m.has_key() for m in got] == [bool(key) for _, _, key in sent]
    assert [m.sequence_id() for m in got] == list(range(COUNT))
    ids = [m.message_id() for m in got]
    assert len(set(ids)) == COUNT
    if batching:
        assert any(mid.batch_index > 0 for mid in ids)
    else:
        assert all(mid.batch_index == -1 for mid in ids)
    # acknowledge all but every fourth (some by message, some by id), then come back
    for i, msg in enumerate(got):
        if i % 4:
            consumer.acknowledge(msg if i % 2 else msg.message_id())
    consumer.close()
    unacked_entries = {(mid.ledger_id, mid.entry_id) for i, mid in enumerate(ids) if i % 4 == 0}
    # a batch comes back whole while any of its messages is unacknowledged
    expected = [i for i, mid in enumerate(ids) if (mid.ledger_id, mid.entry_id) in unacked_entries]
    again = client.subscribe(topic, "exact", initial_position=InitialPosition.Earliest)
    back = [again.receive(RECEIVE_MS) for _ in expected]
    assert [m.message_id() for m in back] == [ids[i] for i in expected]
    assert [(m.data(), m.properties(), m.partition_key()) for m in back] == [sent[i] for i in expected]
    with pytest.raises(Exception, match="no message received"):
        again.receive(500)
