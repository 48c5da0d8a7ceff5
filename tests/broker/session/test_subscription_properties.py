"""The subscription_properties of the SUBSCRIBE that creates a durable subscription are kept (as
Pulsar keeps them with the cursor); a later SUBSCRIBE to the same subscription does not change them."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.broker.subscriptions.properties import load_properties
from magnetar.protocol.enums import CommandType, InitialPosition, SubType
from magnetar.protocol.schema import BaseCommand
from magnetar.testing import BrokerThread, free_port

from .test_wire_errors import WireClient


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=free_port(), fsync="never")
    with BrokerThread(config) as thread:
        yield thread


def _subscribe(client: WireClient, topic: str, consumer_id: int, properties: dict[str, str], durable: bool = True) -> None:
    cmd = BaseCommand(type=CommandType.SUBSCRIBE)
    req = cmd.subscribe
    req.topic = topic
    req.subscription = "sub"
    req.sub_type = SubType.Shared
    req.consumer_id = consumer_id
    req.request_id = client.next_request_id()
    req.initial_position = InitialPosition.Earliest
    req.durable = durable
    for key, value in properties.items():
        req.subscription_properties.add(key=key, value=value)
    client.send(cmd)
    assert client.expect(CommandType.SUCCESS).command.success.request_id == req.request_id


def _stored(broker: BrokerThread, topic: str) -> dict[str, str]:
    return load_properties(broker.server.service.metadata, topic, "sub")  # type: ignore[union-attr]


def _wait_stored(broker: BrokerThread, topic: str) -> dict[str, str]:
    deadline = time.monotonic() + 5
    while not (found := _stored(broker, topic)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return found


def test_the_creating_subscribe_gives_the_properties(broker: BrokerThread) -> None:
    assert broker.server is not None and broker.server.port is not None
    topic = f"persistent://public/default/props-{uuid.uuid4().hex}"
    client = WireClient(broker.server.port)
    client.connect()
    _subscribe(client, topic, 1, {"owner": "team-a", "tier": "gold"})
    assert _wait_stored(broker, topic) == {"owner": "team-a", "tier": "gold"}
    _subscribe(client, topic, 2, {"owner": "someone-else"})  # the subscription exists: unchanged
    time.sleep(0.3)  # what a store in the executor would take
    assert _stored(broker, topic) == {"owner": "team-a", "tier": "gold"}


def test_a_non_durable_subscription_keeps_none(broker: BrokerThread) -> None:
    assert broker.server is not None and broker.server.port is not None
    topic = f"persistent://public/default/props-{uuid.uuid4().hex}"
    client = WireClient(broker.server.port)
    client.connect()
    _subscribe(client, topic, 1, {"owner": "team-a"}, durable=False)
    time.sleep(0.3)
    assert _stored(broker, topic) == {}
