"""The SENDs of the official client and of magnetar.client take the hand-read path (protocol/send_frame.py)
and publish exactly what protobuf's path would: every message once, in order, each receipt in place."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pulsar
import pytest

import magnetar.client
from magnetar.broker.config import BrokerConfig
from magnetar.broker.server import BrokerServer
from magnetar.broker.session.connection import ServerConnection


def _official(url: str, topic: str, batching: bool) -> list[bytes]:
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        producer = client.create_producer(topic, batching_enabled=batching, batching_max_messages=10,
                                          batching_max_publish_delay_ms=20)
        ids = []
        for i in range(30):
            if batching:
                producer.send_async(f"m-{i}".encode(), lambda res, mid: ids.append(res))
            else:
                producer.send(f"m-{i}".encode())
        producer.flush()
        out = []
        for _ in range(30):
            msg = consumer.receive(10_000)
            out.append(msg.data())
            consumer.acknowledge(msg)
        assert not batching or ids == [pulsar.Result.Ok] * 30
        return out
    finally:
        client.close()


async def _ours(url: str, topic: str) -> list[bytes]:
    async with magnetar.client.AsyncClient(url) as client:
        consumer = await client.subscribe(topic, "s", initial_position=magnetar.client.InitialPosition.Earliest)
        producer = await client.create_producer(topic, batching_enabled=False)
        for i in range(30):
            await producer.send(f"m-{i}".encode())
        out = []
        for _ in range(30):
            msg = await consumer.receive(10_000)
            out.append(msg.data())
            await consumer.acknowledge(msg)
        return out


@pytest.mark.parametrize("face", ["official-unbatched", "official-batched", "magnetar-client"])
def test_sends_read_by_hand_store_every_message_once_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              face: str) -> None:
    by_hand: list[tuple[int, int]] = []
    original = ServerConnection._send_frame

    def spy(self: ServerConnection, frame) -> None:  # noqa: ANN001 - a SendFrame
        by_hand.append((frame.producer_id, frame.sequence_id))
        original(self, frame)

    monkeypatch.setattr(ServerConnection, "_send_frame", spy)
    topic = f"persistent://public/default/send-{uuid.uuid4().hex[:8]}"
    got: list[list[bytes]] = []

    async def main() -> None:
        server = BrokerServer(BrokerConfig(data_dir=tmp_path, fsync="never", port=0))
        await server.start()
        url = f"pulsar://127.0.0.1:{server.port}"
        try:
            if face == "magnetar-client":
                got.append(await _ours(url, topic))
            else:
                got.append(await asyncio.to_thread(_official, url, topic, face == "official-batched"))
        finally:
            await server.stop()

    asyncio.run(main())
    assert got == [[f"m-{i}".encode() for i in range(30)]]
    sequence_ids = [seq for _, seq in by_hand]
    if face == "official-batched":
        # one SEND per batch of up to 10, named by its first message's sequence id
        assert 3 <= len(by_hand) <= 30 and sequence_ids == sorted(sequence_ids) and sequence_ids[0] == 0
    else:
        assert sequence_ids == list(range(30))
