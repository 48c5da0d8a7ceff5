"""MESSAGE frames read by hand and opened in runs (issue 14): the messages, ids, payload bytes,
properties and metadata are those of the general path, in order, whatever the mix of frames."""

from __future__ import annotations

import pytest

from magnetar.client import AsyncClient, CompressionType
from magnetar.client.core.opening import EntryOpening
from magnetar.client.exceptions import Timeout
from magnetar.protocol.batch import BatchMessage, build_entry
from magnetar.protocol.compression import compress
from magnetar.protocol.enums import CommandType
from magnetar.protocol.framing import crc32c, encode_entry, encode_payload_command
from magnetar.protocol.schema import BaseCommand, KeyValue, MessageMetadata

from ..conftest import QUIET_MS, RECEIVE_MS, run
from ..fakebroker import FakeBroker

NEVER_MS = 600_000


def _meta(seq: int, **fields: object) -> MessageMetadata:
    meta = MessageMetadata(producer_name="prod", sequence_id=seq, publish_time=1000 + seq, **fields)
    meta.properties.append(KeyValue(key="k", value=f"v{seq}"))
    return meta


def _frame(consumer_id: int, entry: bytes, ledger_id: int, entry_id: int, *, general: bool = False,
           redelivery_count: int = 0, bad_checksum: bool = False) -> bytes:
    cmd = BaseCommand(type=CommandType.MESSAGE)
    cmd.message.consumer_id = consumer_id
    cmd.message.message_id.ledger_id = ledger_id
    cmd.message.message_id.entry_id = entry_id
    if general:  # a field the hand decoder leaves to protobuf (the consumer ignores it)
        cmd.message.message_id.partition = -1
    if redelivery_count:
        cmd.message.redelivery_count = redelivery_count
    return encode_payload_command(cmd, entry, crc32c(entry) ^ 1 if bad_checksum else None)


def _entries() -> list[tuple[bytes, list[bytes]]]:
    """(entry, payloads of its messages): plain, batched, compressed, with properties and a key."""
    out = [(encode_entry(_meta(i), b"plain-%d" % i), [b"plain-%d" % i]) for i in range(3)]
    batch = [b"b0", b"b1", b"b2"]
    out.append((build_entry(_meta(3), [BatchMessage(p) for p in batch]), batch))
    raw = b"z" * 500
    out.append((encode_entry(_meta(4, compression=CompressionType.ZLIB, uncompressed_size=len(raw)),
                             compress(CompressionType.ZLIB, raw)), [raw]))
    out.append((encode_entry(_meta(5, partition_key="key-5"), b"keyed"), [b"keyed"]))
    out.append((encode_entry(MessageMetadata(producer_name="p", sequence_id=6, publish_time=7), b""), [b""]))
    return out


def _describe(msg: object) -> tuple:
    mid = msg.message_id()  # type: ignore[attr-defined]
    return (msg.data(), msg.properties(), msg.partition_key(), msg.publish_timestamp(),  # type: ignore[attr-defined]
            msg.sequence_id(), msg.redelivery_count(), msg.producer_name(),  # type: ignore[attr-defined]
            (mid.ledger_id, mid.entry_id, mid.batch_index, mid.partition, mid.batch_size))


async def _receive_all(general: bool) -> list[tuple]:
    async with FakeBroker() as fake, AsyncClient(fake.url) as client:
        first = await client.subscribe("t", "sub", ack_group_time_ms=NEVER_MS)
        second = await client.subscribe("t2", "sub", ack_group_time_ms=NEVER_MS)
        conn = fake.connections[0]
        await fake.wait_for(lambda: len(fake.commands(CommandType.FLOW)) >= 2)
        stream = b""
        expected = 0
        for i, (entry, payloads) in enumerate(_entries()):
            stream += _frame(first.consumer_id, entry, 7, 10 + i, general=general, redelivery_count=i % 2)
            stream += _frame(second.consumer_id, entry, (1 << 64) - 3, i, general=general)
            expected += len(payloads)
        # a corrupted entry is dropped (and asked for again), the rest of the read still arrives
        stream += _frame(first.consumer_id, encode_entry(_meta(9), b"corrupt"), 7, 99, bad_checksum=True)
        stream += _frame(first.consumer_id, encode_entry(_meta(10), b"after"), 7, 100, general=general)
        conn.send_raw(stream)  # one write: the frames arrive in few reads
        got = [_describe(await first.receive(RECEIVE_MS)) for _ in range(expected + 1)]
        got += [_describe(await second.receive(RECEIVE_MS)) for _ in range(expected)]
        assert first.queued() == 0 and second.queued() == 0
        await fake.wait_for(lambda: fake.commands(CommandType.REDELIVER_UNACKNOWLEDGED_MESSAGES))
        [redeliver] = fake.commands(CommandType.REDELIVER_UNACKNOWLEDGED_MESSAGES)
        assert [(m.ledger_id, m.entry_id) for m in redeliver.message_ids] == [(7, 99)]
        return got


def test_runs_of_hand_read_frames_give_the_messages_of_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    opened_in_general: list[int] = []
    general_path = EntryOpening._entry_messages

    def counted(self: EntryOpening, *args: object) -> object:
        opened_in_general.append(args[1])  # type: ignore[arg-type]
        return general_path(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(EntryOpening, "_entry_messages", counted)
    fast = run(_receive_all(general=False))
    # only the batch, the compressed entry (of each consumer) and the corrupted one left the inline path
    assert sorted(opened_in_general) == [3, 4, 13, 14, 99]
    opened_in_general.clear()
    slow = run(_receive_all(general=True))
    assert len(opened_in_general) == 2 * len(_entries()) + 2
    assert fast == slow
    payloads = [p for _, ps in _entries() for p in ps]
    assert [d[0] for d in fast] == [*payloads, b"after", *payloads]
    assert fast[0] == (b"plain-0", {"k": "v0"}, "", 1000, 0, 0, "prod", (7, 10, -1, -1, 0))
    assert fast[3][6:] == ("prod", (7, 13, 0, -1, 3)) and fast[3][5] == 1  # batch index 0 of a redelivered batch
    assert fast[len(payloads) + 1][6:] == ("prod", (-3, 0, -1, -1, 0))  # ledger 2^64 - 3 as the signed id


def test_duplicates_of_pending_acks_are_dropped_on_the_hand_read_path() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub", ack_group_time_ms=NEVER_MS)
            conn = fake.connections[0]
            await fake.wait_for(lambda: fake.commands(CommandType.FLOW))
            conn.send_raw(_frame(consumer.consumer_id, encode_entry(_meta(0), b"once"), 3, 1))
            msg = await consumer.receive(RECEIVE_MS)
            consumer.acknowledge(msg)
            # the broker sends it again (e.g. after a reconnection) before the ack went out
            conn.send_raw(_frame(consumer.consumer_id, encode_entry(_meta(0), b"once"), 3, 1)
                          + _frame(consumer.consumer_id, encode_entry(_meta(1), b"next"), 3, 2))
            nxt = await consumer.receive(RECEIVE_MS)
            assert nxt.data() == b"next" and nxt.message_id().entry_id == 2
            try:
                extra = await consumer.receive(QUIET_MS)
            except Exception:  # noqa: BLE001 - Timeout: nothing more
                extra = None
            assert extra is None

    run(main())


def test_ids_made_on_first_use_carry_the_partition_and_topic_and_acks_are_exact() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            topic = "persistent://public/default/parted"
            fake.partitions[topic] = 2
            consumer = await client.subscribe(topic, "sub", ack_group_time_ms=NEVER_MS)
            conn = fake.connections[0]
            await fake.wait_for(lambda: len(fake.commands(CommandType.FLOW)) >= 2)
            children = {s.topic: s.consumer_id for s in fake.commands(CommandType.SUBSCRIBE)}
            stream = b""
            for partition in (0, 1):
                for entry_id in (5, 6):
                    entry = encode_entry(_meta(entry_id), b"p%d-e%d" % (partition, entry_id))
                    stream += _frame(children[f"{topic}-partition-{partition}"], entry, 40 + partition, entry_id)
            conn.send_raw(stream)
            got = [await consumer.receive(RECEIVE_MS) for _ in range(4)]
            # the first two are acknowledged before anything asked for their ids
            for msg in got[:2]:
                consumer.acknowledge(msg)
            seen = sorted((m.data(), m.topic_name(), m.message_id().partition, m.message_id().ledger_id,
                           m.message_id().entry_id, m.message_id().batch_index) for m in got)
            assert seen == [(b"p%d-e%d" % (p, e), f"{topic}-partition-{p}", p, 40 + p, e, -1) for p in (0, 1) for e in (5, 6)]
            assert all(m.message_id() is m.message_id() for m in got)  # made once
            for msg in got[2:]:
                consumer.acknowledge(msg.message_id())
            await consumer.close()
            acked = sorted((c.consumer_id, m.ledger_id, m.entry_id) for c in fake.commands(CommandType.ACK) for m in c.message_id)
            expected = sorted((children[m.topic_name()], m.message_id().ledger_id, m.message_id().entry_id) for m in got)
            assert acked == expected

    run(main())


def _batches() -> list[tuple[bytes, list[bytes]]]:
    """(entry, payloads): batches of 100 B and 1 KiB messages numbered as the official producer
    numbers them, one with a message of its own metadata, one compressed, one of empty payloads."""
    out = []
    for n, (count, size) in enumerate([(50, 100), (40, 1024), (3, 0)]):
        payloads = [bytes([n + i % 250]) * size for i in range(count)]
        seq = 100 * n
        out.append((build_entry(_meta(seq), [BatchMessage(p, sequence_id=seq + i) for i, p in enumerate(payloads)]),
                    payloads))
    mixed = [b"m%d" % i * 300 for i in range(5)]
    out.append((build_entry(_meta(7), [BatchMessage(p, properties={"i": str(i)} if i == 2 else {})
                                       for i, p in enumerate(mixed)]), mixed))
    packed = [b"c%d" % i * 200 for i in range(6)]
    out.append((build_entry(_meta(8), [BatchMessage(p) for p in packed], CompressionType.LZ4), packed))
    return out


def test_batches_are_sliced_from_the_bytes_received_with_their_exact_payloads() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub", ack_group_time_ms=NEVER_MS)
            conn = fake.connections[0]
            await fake.wait_for(lambda: fake.commands(CommandType.FLOW))
            stream = b""
            expected = []
            for i, (entry, payloads) in enumerate(_batches()):
                stream += _frame(consumer.consumer_id, entry, 5, i)
                expected += [(p, i, j, len(payloads)) for j, p in enumerate(payloads)]
            # a batch whose last message claims more than its entry holds: dropped, not read
            # into the frame after it; the frame after it still arrives
            short = bytearray(build_entry(_meta(50), [BatchMessage(b"a" * 100), BatchMessage(b"b" * 100)]))
            del short[-1]
            stream += _frame(consumer.consumer_id, bytes(short), 5, 50)
            stream += _frame(consumer.consumer_id, build_entry(_meta(51), [BatchMessage(b"tail")]), 5, 51)
            expected.append((b"tail", 51, 0, 1))
            conn.send_raw(stream)
            got = [await consumer.receive(RECEIVE_MS) for _ in range(len(expected))]
            assert [(m.data(), m.message_id().entry_id, m.message_id().batch_index, m.message_id().batch_size)
                    for m in got] == expected
            assert all(m.data().__class__ is bytes for m in got)
            assert [m.properties() for m in got if m.message_id().entry_id == 3] == [{}, {}, {"i": "2"}, {}, {}]
            assert [m.sequence_id() for m in got if m.message_id().entry_id == 1][:3] == [100, 101, 102]
            with pytest.raises(Timeout):
                await consumer.receive(QUIET_MS)

    run(main())
