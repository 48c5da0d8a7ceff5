"""Ordering keys: a str (the official client's type) or bytes, on the wire as UTF-8 bytes, in a
batch, alone and as a key of key-based batching; anything else is refused as a ValueError."""

from __future__ import annotations

import asyncio

import pytest

from magnetar.client import AsyncClient, BatchingType, Client, ConsumerType, InvalidConfiguration
from magnetar.client.core.sends import key_bytes
from magnetar.protocol.batch import open_entry
from magnetar.protocol.enums import CommandType

from ..conftest import RECEIVE_MS, run
from ..fakebroker import FakeBroker


def test_key_bytes_of_str_bytes_and_other_types() -> None:
    assert key_bytes("random-ordering-key") == b"random-ordering-key"
    assert key_bytes("clé") == "clé".encode()
    assert key_bytes(b"\x00\xff") == b"\x00\xff"
    assert key_bytes(bytearray(b"ab")) == b"ab"
    # a key read back as text with surrogateescape encodes to the bytes it came from
    assert key_bytes(b"\xff\xfe".decode("utf-8", "surrogateescape")) == b"\xff\xfe"
    with pytest.raises(ValueError, match="ordering_key .* not 'int'"):
        key_bytes(7)  # type: ignore[arg-type]
    with pytest.raises(InvalidConfiguration):
        key_bytes(7)  # type: ignore[arg-type]


def test_str_ordering_keys_go_on_the_wire_as_bytes() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            batched = await client.create_producer("batched")
            single = await client.create_producer("single", batching_enabled=False)
            by_key = await client.create_producer("by-key", batching_type=BatchingType.KeyBased)
            await asyncio.gather(
                batched.send(b"a", ordering_key="k1"),
                single.send(b"b", ordering_key="k2"),
                by_key.send(b"c", partition_key="p", ordering_key="k3"),
                by_key.send(b"d", partition_key="p", ordering_key=b"k3"),
            )
            keys: dict[bytes, list[bytes]] = {}
            for frame in fake.frames(CommandType.SEND):
                meta, messages = open_entry(frame.entry)
                for single_meta, body in messages:
                    key = single_meta.ordering_key if single_meta is not None else meta.ordering_key
                    keys.setdefault(key, []).append(body)
            assert keys[b"k1"] == [b"a"]
            assert keys[b"k3"] == [b"c", b"d"]  # a str and the same bytes are one key: one batch
            assert keys[b"k2"] == [b"b"]

    run(main())


def test_a_bad_ordering_key_fails_the_send_with_a_value_error() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            producer = await client.create_producer("t")
            with pytest.raises(ValueError, match="ordering_key"):
                await producer.send(b"x", ordering_key=12)
            assert not fake.frames(CommandType.SEND)
            assert producer.last_sequence_id_published == -1

    run(main())


def test_str_ordering_key_reaches_a_key_shared_consumer(client: Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", consumer_type=ConsumerType.KeyShared)
    producer = client.create_producer(topic)
    producer.send(b"ordered-hello", ordering_key="random-ordering-key")
    msg = consumer.receive(RECEIVE_MS)
    assert msg.data() == b"ordered-hello"
    assert key_bytes(msg.ordering_key()) == b"random-ordering-key"
