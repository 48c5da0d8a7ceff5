"""The sync client after close() or shutdown(): every call raises AlreadyClosed (a PulsarError),
as the official client's calls raise a PulsarException, never an error of the event loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from magnetar.client import AlreadyClosed, Client, InitialPosition, PulsarError, Result


@pytest.mark.parametrize("end", ["close", "shutdown"])
def test_calls_after_the_client_ended(client_factory: Callable[..., Client], url: str, topic: str, end: str) -> None:
    client = client_factory(url)
    producer = client.create_producer(topic)
    consumer = client.subscribe(topic, "sub", initial_position=InitialPosition.Earliest)
    producer.send(b"before")
    received = consumer.receive(10_000)
    getattr(client, end)()

    calls: list[Callable[[], Any]] = [
        lambda: producer.send(b"after"),
        lambda: producer.send_async(b"after", None),
        producer.flush,
        lambda: consumer.acknowledge(received),
        lambda: client.create_producer(topic),
        lambda: client.subscribe(topic, "other"),
        lambda: client.get_topic_partitions(topic),
    ]
    for call in calls:
        with pytest.raises(AlreadyClosed) as raised:
            call()
        assert isinstance(raised.value, PulsarError)
        assert raised.value.error() == Result.AlreadyClosed
    getattr(client, end)()  # again: nothing happens


def test_a_send_callback_is_not_called_when_the_send_is_refused(client_factory: Callable[..., Client], url: str,
                                                                 topic: str) -> None:
    client = client_factory(url)
    producer = client.create_producer(topic)
    client.shutdown()
    results: list[Any] = []
    with pytest.raises(AlreadyClosed):
        producer.send_async(b"after", lambda res, msg_id: results.append(res))
    assert results == []
