"""The SEND frames a producer writes: checksums over the entry, exact entry bytes, resends
byte for byte the same after a reconnection (the frame is written as pieces, never joined)."""

from __future__ import annotations

import asyncio

from magnetar.client import AsyncClient
from magnetar.protocol.batch import BatchMessage, encode_batch
from magnetar.protocol.enums import CommandType

from ..conftest import run
from ..fakebroker import FakeBroker, entry_metadata, entry_payload


def test_batched_send_frame_has_a_valid_checksum_and_the_batch_bytes() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            producer = await client.create_producer("t", batching_max_messages=3, initial_sequence_id=9)
            bodies = [b"a" * 100, b"b" * 1024, b""]
            futures = [await producer.send_async(body) for body in bodies]
            ids = await asyncio.gather(*futures)
            (frame,) = fake.frames(CommandType.SEND)
            assert frame.checksum is not None and frame.checksum_ok()
            send = frame.command.send
            assert (send.sequence_id, send.highest_sequence_id, send.num_messages) == (10, 12, 3)
            meta = entry_metadata(frame)
            assert (meta.sequence_id, meta.highest_sequence_id, meta.num_messages_in_batch) == (10, 12, 3)
            assert entry_payload(frame) == encode_batch([BatchMessage(body) for body in bodies])
            assert [mid.batch_index for mid in ids] == [0, 1, 2]

    run(main())


def test_single_and_chunked_send_frames_have_valid_checksums() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            fake.max_message_size = 4096
            producer = await client.create_producer("t", batching_enabled=False, chunking_enabled=True)
            await producer.send(b"single")
            big = bytes(range(256)) * 40  # 10,240 bytes: 4 chunks of at most 3,072
            await producer.send(big)
            frames = fake.frames(CommandType.SEND)
            assert all(f.checksum is not None and f.checksum_ok() for f in frames)
            assert entry_payload(frames[0]) == b"single"
            chunks = frames[1:]
            assert [entry_metadata(f).chunk_id for f in chunks] == list(range(len(chunks)))
            assert all(f.command.send.is_chunk for f in chunks)
            assert b"".join(entry_payload(f) for f in chunks) == big

    run(main())


def test_frames_resent_after_a_reconnection_are_the_same_bytes() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url, operation_timeout_seconds=5) as client:
            fake.answer_sends = False
            producer = await client.create_producer("t", batching_max_messages=2, batching_max_publish_delay_ms=1)
            futures = [await producer.send_async(b"m%d" % i) for i in range(4)]
            await fake.wait_for(lambda: len(fake.frames(CommandType.SEND)) == 2)
            first = [(f.command.SerializeToString(), f.checksum, f.entry) for f in fake.frames(CommandType.SEND)]
            fake.answer_sends = True
            fake.connections[0].abort()
            await asyncio.wait_for(asyncio.gather(*futures), 10)
            again = [(f.command.SerializeToString(), f.checksum, f.entry) for f in fake.frames(CommandType.SEND)[2:]]
            assert again == first

    run(main())


def test_a_batch_mixing_plain_and_described_messages_keeps_every_field_and_id() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            producer = await client.create_producer("t", batching_max_messages=6, batching_max_publish_delay_ms=5000)
            core = producer.core if hasattr(producer, "core") else producer
            futures = [
                await producer.send_async(b"p0"),
                await producer.send_async(b"p1", properties={"k": "v"}),
                await producer.send_async(b"p2", sequence_id=7),
                await producer.send_async(b"p3", partition_key="key", event_timestamp=123),
            ]
            core.send_nowait(bytearray(b"p4"), None)
            futures.append(await producer.send_async(b"p5"))
            ids = await asyncio.gather(*futures)
            (frame,) = fake.frames(CommandType.SEND)
            send = frame.command.send
            # p2 takes the sequence id given (7): p3, p4, p5 follow it
            assert (send.sequence_id, send.highest_sequence_id, send.num_messages) == (0, 10, 6)
            assert entry_payload(frame) == encode_batch([
                BatchMessage(b"p0"), BatchMessage(b"p1", properties={"k": "v"}), BatchMessage(b"p2"),
                BatchMessage(b"p3", partition_key="key", event_time=123), BatchMessage(b"p4"), BatchMessage(b"p5"),
            ])
            assert [mid.batch_index for mid in ids] == [0, 1, 2, 3, 5]
            assert core.last_sequence_id_published == 10

    run(main())


def test_batches_close_at_the_byte_limit_as_before() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            producer = await client.create_producer(
                "t", batching_max_allowed_size_in_bytes=250, batching_max_publish_delay_ms=20
            )
            sizes = [125, 125, 100, 100, 100, 249, 10]
            futures = [await producer.send_async(bytes([i]) * size) for i, size in enumerate(sizes)]
            await asyncio.gather(*futures)
            counts = [f.command.send.num_messages or 1 for f in fake.frames(CommandType.SEND)]
            # 125 + 125 reaches the limit; a third 100, 249 after 100, and 10 after 249 would pass it
            assert counts == [2, 2, 1, 1, 1]
            payloads = [body for f in fake.frames(CommandType.SEND) for body in _bodies(f)]
            assert payloads == [bytes([i]) * size for i, size in enumerate(sizes)]

    run(main())


def _bodies(frame) -> list[bytes]:  # noqa: ANN001 - a received frame
    from magnetar.protocol.batch import open_entry

    return [body for _, body in open_entry(frame.entry)[1]]


def test_a_send_with_nothing_in_flight_is_written_at_once_the_others_together() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            producer = await client.create_producer("t", batching_enabled=False)
            conn = producer.conn
            assert conn is not None and conn._out == []
            producer.send_nowait(b"first")
            assert conn._out == []  # on the socket before the loop turns: a one-at-a-time send waits for nothing
            producer.send_nowait(b"second")
            producer.send_nowait(b"third")
            assert len(conn._out) == 4  # queued (header and entry each), written in one go later
            await producer.flush()
            assert [entry_payload(f) for f in fake.frames(CommandType.SEND)] == [b"first", b"second", b"third"]
            assert [f.command.send.sequence_id for f in fake.frames(CommandType.SEND)] == [0, 1, 2]

    run(main())
