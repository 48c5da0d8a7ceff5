"""Producers: send timeouts, pending limits, batching, keys, delays, sequence ids, compression,
chunking, names and access modes (the fake broker shows what goes on the wire)."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest

from magnetar.client import (
    AsyncClient,
    BatchingType,
    Client,
    CompressionType,
    InitialPosition,
    InvalidConfiguration,
    MessageTooBig,
    ProducerAccessMode,
    ProducerBusy,
    ProducerConfig,
    ProducerFenced,
    ProducerQueueIsFull,
    Timeout,
)
from magnetar.protocol.batch import open_entry
from magnetar.protocol.enums import CommandType

from ..conftest import RECEIVE_MS, ThreadedFake, run
from ..fakebroker import FakeBroker, entry_metadata, entry_payload


def test_defaults_are_those_of_the_official_client() -> None:
    config = ProducerConfig()
    assert (config.batching_max_messages, config.batching_max_allowed_size_in_bytes, config.batching_max_publish_delay_ms) == (
        1000, 128 * 1024, 10,
    )
    assert config.batching_enabled is True  # magnetar batches by default (the official client does not)
    assert (config.send_timeout_millis, config.max_pending_messages, config.block_if_queue_full) == (30000, 1000, False)
    assert config.compression_type == CompressionType.NONE
    # chunking turns the batching default off; asking for both is an error
    assert ProducerConfig(chunking_enabled=True).batching_enabled is False
    with pytest.raises(InvalidConfiguration, match="chunking requires batching to be disabled"):
        ProducerConfig(chunking_enabled=True, batching_enabled=True)


def test_send_timeout_when_broker_never_answers() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            fake.answer_sends = False
            producer = await client.create_producer("t", send_timeout_millis=300, batching_enabled=False)
            results: list = []
            fut = await producer.send_async(b"a", lambda err, mid: results.append((err, mid)))
            started = time.monotonic()
            with pytest.raises(Timeout, match=r"no receipt within 300 ms"):
                await producer.send(b"b")
            assert 0.25 <= time.monotonic() - started < 2.5
            with pytest.raises(Timeout):
                await fut
            assert isinstance(results[0][0], Timeout) and results[0][1] is None
            # the producer stays usable once the broker answers again
            fake.answer_sends = True
            await producer.send(b"c")

    run(main())


def test_max_pending_messages_error_or_block() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url, operation_timeout_seconds=1) as client:
            fake.answer_sends = False
            producer = await client.create_producer("t", max_pending_messages=3, batching_enabled=False)
            pending = [await producer.send_async(b"%d" % i) for i in range(3)]
            with pytest.raises(ProducerQueueIsFull, match="3 messages pending"):
                await producer.send_async(b"3")
            blocking = await client.create_producer(
                "t", max_pending_messages=2, block_if_queue_full=True, batching_enabled=False
            )
            held = [await blocking.send_async(b"%d" % i) for i in range(2)]
            third = asyncio.ensure_future(blocking.send_async(b"2"))
            await asyncio.sleep(0.2)
            assert not third.done()  # blocked: no room
            conn = fake.connections[0]
            first_send = [c for c in fake.commands(CommandType.SEND) if c.producer_id == blocking.producer_id][0]
            fake.receipt(conn, blocking.producer_id, first_send.sequence_id)
            await asyncio.wait_for(held[0], 5)
            accepted = await asyncio.wait_for(third, 5)  # room again: the send was accepted
            for fut in [*pending, held[1], accepted]:
                fut.cancel()

    run(main())


def test_batches_close_at_count_bytes_or_delay() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            producer = await client.create_producer("t", max_pending_messages=5000)  # 1000 messages, 128 KiB, 10 ms
            futures = [await producer.send_async(b"x") for _ in range(2500)]
            await asyncio.gather(*futures)
            sends = fake.commands(CommandType.SEND)
            assert [s.num_messages for s in sends] == [1000, 1000, 500]
            assert [(s.sequence_id, s.highest_sequence_id) for s in sends] == [(0, 999), (1000, 1999), (2000, 2499)]
            # bytes: 1 KiB messages close a batch once 128 KiB are collected
            futures = [await producer.send_async(b"k" * 1024) for _ in range(300)]
            await asyncio.gather(*futures)
            sizes = [s.num_messages for s in fake.commands(CommandType.SEND)[3:]]
            assert sizes == [128, 128, 44]  # payload bytes count, as in the Java client
            # delay: a lone message goes out after batching_max_publish_delay_ms
            slow = await client.create_producer("t", batching_max_publish_delay_ms=200)
            started = time.monotonic()
            await slow.send(b"lone")
            assert 0.15 <= time.monotonic() - started < 1.5

    run(main())


def test_key_based_batching_groups_by_key() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            producer = await client.create_producer("t", batching_type=BatchingType.KeyBased, batching_max_publish_delay_ms=50)
            futures = []
            for i in range(12):
                futures.append(await producer.send_async(b"m%d" % i, partition_key="abc"[i % 3]))
            futures.append(await producer.send_async(b"ok", partition_key="a", ordering_key=b"o1"))
            await asyncio.gather(*futures)
            batches = {}
            for frame in fake.frames(CommandType.SEND):
                meta, messages = open_entry(frame.entry)
                keys = {meta.partition_key if single is None else single.partition_key for single, _ in messages}
                assert len(keys) == 1
                assert meta.partition_key == keys.pop()
                batches[(meta.partition_key, meta.ordering_key)] = [body for _, body in messages]
                # a batch of one leaves as a plain message, as the Java client sends it
                assert meta.HasField("num_messages_in_batch") == (len(messages) > 1)
            assert batches[("a", b"")] == [b"m0", b"m3", b"m6", b"m9"]
            assert batches[("b", b"")] == [b"m1", b"m4", b"m7", b"m10"]
            assert batches[("c", b"")] == [b"m2", b"m5", b"m8", b"m11"]
            assert batches[("a", b"o1")] == [b"ok"]

    run(main())


def test_delayed_messages_are_never_batched() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            producer = await client.create_producer("t", batching_max_publish_delay_ms=100)
            at = int(time.time() * 1000) + 60_000
            futures = [
                await producer.send_async(b"batched-1"),
                await producer.send_async(b"at", deliver_at=at),
                await producer.send_async(b"after", deliver_after=timedelta(seconds=5)),
                await producer.send_async(b"after-float", deliver_after=2.5),
                await producer.send_async(b"batched-2"),
            ]
            await asyncio.gather(*futures)
            frames = fake.frames(CommandType.SEND)
            metas = [entry_metadata(f) for f in frames]
            # the open batch is sent first, keeping the order of the messages
            assert metas[0].num_messages_in_batch == 1 and open_entry(frames[0].entry)[1][0][1] == b"batched-1"
            assert [(m.HasField("num_messages_in_batch"), entry_payload(f)) for m, f in zip(metas[1:4], frames[1:4], strict=True)] == [
                (False, b"at"), (False, b"after"), (False, b"after-float"),
            ]
            assert metas[1].deliver_at_time == at
            now = time.time() * 1000
            assert now + 3_000 < metas[2].deliver_at_time <= now + 5_000
            assert now + 1_000 < metas[3].deliver_at_time <= now + 2_500

    run(main())


def test_sequence_ids_initial_explicit_and_last() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            producer = await client.create_producer("t", initial_sequence_id=100, batching_enabled=False)
            assert producer.last_sequence_id_published == 100
            await producer.send(b"a")
            await producer.send(b"b", sequence_id=500)
            await producer.send(b"c")
            assert [s.sequence_id for s in fake.commands(CommandType.SEND)] == [101, 500, 501]
            assert [entry_metadata(f).sequence_id for f in fake.frames(CommandType.SEND)] == [101, 500, 501]
            assert producer.last_sequence_id_published == 501

    run(main())


@pytest.mark.parametrize("codec", [CompressionType.LZ4, CompressionType.ZLIB, CompressionType.ZSTD, CompressionType.SNAPPY])
def test_compression_on_the_wire(codec: CompressionType) -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            producer = await client.create_producer("t", compression_type=codec)
            payloads = [b"compressible " * 50 + b"%d" % i for i in range(20)]
            await asyncio.gather(*[await producer.send_async(p) for p in payloads])
            single = await client.create_producer("t", compression_type=codec, batching_enabled=False)
            await single.send(b"z" * 5000)
            got = []
            for frame in fake.frames(CommandType.SEND):
                meta, messages = open_entry(frame.entry)
                assert meta.compression == codec
                assert len(frame.entry) < meta.uncompressed_size
                got += [body for _, body in messages]
            assert got == [*payloads, b"z" * 5000]

    run(main())


def test_chunking_splits_above_the_broker_limit() -> None:
    async def main() -> None:
        async with FakeBroker() as fake:
            fake.max_message_size = 4096
            async with AsyncClient(fake.url) as client:
                producer = await client.create_producer("t", chunking_enabled=True, producer_name="chunker")
                payload = bytes(range(256)) * 40  # 10240 bytes: 4 chunks of up to 3072
                msg_id = await producer.send(payload, properties={"k": "v"})
                frames = fake.frames(CommandType.SEND)
                metas = [entry_metadata(f) for f in frames]
                assert [m.chunk_id for m in metas] == [0, 1, 2, 3]
                assert {m.uuid for m in metas} == {"chunker-0"}
                assert {(m.num_chunks_from_msg, m.total_chunk_msg_size, m.sequence_id) for m in metas} == {(4, 10240, 0)}
                assert all(f.command.send.is_chunk for f in frames)
                assert b"".join(entry_payload(f) for f in frames) == payload
                assert msg_id.is_chunked() and len(msg_id.chunk_entries()) == 4
                assert msg_id.first_chunk_message_id().entry_id == msg_id.chunk_entries()[0][1]
                small = await producer.send(b"small")
                assert not small.is_chunked()
                plain = await client.create_producer("t", batching_enabled=False)
                with pytest.raises(MessageTooBig, match=r"10240 bytes exceeds the broker's maximum of 4096"):
                    await plain.send(payload)
                await plain.send(b"still fine")

    run(main())


def test_null_values_and_type_errors() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            producer = await client.create_producer("t", batching_enabled=False)
            await producer.send(None, partition_key="deleted")
            assert entry_metadata(fake.frames(CommandType.SEND)[0]).null_value
            with pytest.raises(TypeError, match="must be bytes, not str"):
                await producer.send("text")  # type: ignore[arg-type]

    run(main())


def test_sync_send_async_callbacks_and_queue_full(threaded_fake: ThreadedFake, client_factory) -> None:  # noqa: ANN001
    fake = threaded_fake.fake
    fake.answer_sends = False
    client: Client = client_factory(fake.url, operation_timeout_seconds=1)
    producer = client.create_producer("t", max_pending_messages=2, batching_enabled=False, send_timeout_millis=500)
    results: list = []
    producer.send_async(b"1", lambda e, m: results.append(e))
    producer.send_async(b"2", lambda e, m: results.append(e))
    producer.send_async(b"3", lambda e, m: results.append(e))  # no room: the callback says so at once
    assert len(results) == 1 and isinstance(results[0], ProducerQueueIsFull)
    with pytest.raises(ProducerQueueIsFull):
        producer.send_async(b"4", None)
    deadline = time.monotonic() + 5
    while len(results) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [type(r) for r in results] == [ProducerQueueIsFull, Timeout, Timeout]
    # room again after the timeouts
    fake.answer_sends = True
    assert producer.send(b"5").entry_id >= 0


def test_producer_names_and_access_modes_on_the_broker(client: Client, client2: Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", initial_position=InitialPosition.Earliest)
    named = client.create_producer(topic, producer_name="the-producer")
    assert named.producer_name() == "the-producer"
    generated = client.create_producer(topic)
    assert generated.producer_name() and generated.producer_name() != "the-producer"
    with pytest.raises(ProducerBusy, match="could not create a producer on .*the-producer|already"):
        client2.create_producer(topic, producer_name="the-producer")
    named.close()
    generated.close()
    holder = client.create_producer(topic, access_mode=ProducerAccessMode.Exclusive)
    with pytest.raises(ProducerFenced):
        client2.create_producer(topic, access_mode=ProducerAccessMode.Exclusive)
    with pytest.raises(ProducerBusy):
        client2.create_producer(topic, access_mode=ProducerAccessMode.Shared)
    holder.send(b"exclusive")
    holder.close()
    second = client2.create_producer(topic, access_mode=ProducerAccessMode.Exclusive)
    second.send(b"next holder")
    assert [consumer.receive(RECEIVE_MS).data() for _ in range(2)] == [b"exclusive", b"next holder"]


def test_sync_send_async_blocks_until_room(threaded_fake: ThreadedFake, client_factory) -> None:  # noqa: ANN001
    import threading

    fake = threaded_fake.fake
    fake.answer_sends = False
    client: Client = client_factory(fake.url, operation_timeout_seconds=1)
    producer = client.create_producer("t", max_pending_messages=2, block_if_queue_full=True, batching_enabled=False)
    ids: list = []
    producer.send_async(b"1", lambda e, m: ids.append(m))
    producer.send_async(b"2", lambda e, m: ids.append(m))
    third_sent = threading.Event()

    def third() -> None:
        producer.send_async(b"3", lambda e, m: ids.append(m))
        third_sent.set()

    thread = threading.Thread(target=third)
    thread.start()
    assert not third_sent.wait(0.3)  # blocked: two messages without a receipt
    deadline = time.monotonic() + 5
    while len(fake.commands(CommandType.SEND)) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    first = fake.commands(CommandType.SEND)[0]
    threaded_fake.call(fake.receipt, fake.connections[0], first.producer_id, first.sequence_id)
    assert third_sent.wait(5)
    thread.join(5)
    fake.answer_sends = True
    deadline = time.monotonic() + 5
    while len(fake.commands(CommandType.SEND)) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    for send in fake.commands(CommandType.SEND)[1:]:
        threaded_fake.call(fake.receipt, fake.connections[0], send.producer_id, send.sequence_id)
    producer.flush()
    assert len(ids) == 3 and all(ids)


def test_exclusive_with_fencing_and_wait_for_exclusive(client: Client, client2: Client, topic: str) -> None:
    import threading

    consumer = client.subscribe(topic, "sub", initial_position=InitialPosition.Earliest)
    old = client.create_producer(topic, access_mode=ProducerAccessMode.Exclusive, batching_enabled=False, send_timeout_millis=5000)
    old.send(b"old-0")
    new = client2.create_producer(topic, access_mode=ProducerAccessMode.ExclusiveWithFencing, batching_enabled=False)
    with pytest.raises(ProducerFenced):
        old.send(b"old-1")
    new.send(b"new-0")
    with pytest.raises(ProducerFenced):
        old.send(b"old-2")  # stays fenced
    result: dict = {}

    def wait() -> None:
        try:
            result["producer"] = client.create_producer(topic, access_mode=ProducerAccessMode.WaitForExclusive)
        except Exception as exc:  # noqa: BLE001 - checked below
            result["error"] = exc

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    waiter.join(1.0)
    assert waiter.is_alive(), f"WaitForExclusive did not wait: {result}"
    new.close()
    waiter.join(8)
    assert "producer" in result, result
    result["producer"].send(b"waited")
    assert [consumer.receive(RECEIVE_MS).data() for _ in range(3)] == [b"old-0", b"new-0", b"waited"]
