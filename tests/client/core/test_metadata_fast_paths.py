"""Metadata read without protobuf on the consume path, checked against protobuf on random cases:
an unbatched entry's MessageMetadata known to be plain from its bytes (client/core/opening.py), and a
batched message's SingleMessageMetadata of payload size and sequence id (client/core/batch_messages.py)."""

from __future__ import annotations

import random
import struct
import types
from typing import Any

import pytest

from magnetar.client.api.message import Message
from magnetar.client.core import opening as opening_module
from magnetar.client.core.batch_messages import split_batch
from magnetar.client.core.opening import EntryOpening
from magnetar.protocol.enums import CommandType, CompressionType
from magnetar.protocol.framing import FrameDecoder, encode_payload_command
from magnetar.protocol.message_frame import MessageFrame
from magnetar.protocol.schema import BaseCommand, KeyValue, MessageMetadata, SingleMessageMetadata

U32 = struct.Struct(">I")
VALUES = [0, 1, 127, 128, 16383, 16384, 2**21, 2**35, 2**56 - 1, 2**56, 2**63 - 1, 2**63, 2**64 - 1]


class _Opening(EntryOpening):
    """An EntryOpening alone: what goes to the general path is recorded, not opened."""

    def __init__(self) -> None:
        self.dead_letter = None
        self._start_id = None
        self._acks = types.SimpleNamespace(pending_entries={}, last_cumulative=None)  # type: ignore[assignment]
        self.topic = "persistent://public/default/t"
        self.config = types.SimpleNamespace(schema=None)  # type: ignore[assignment]
        self._ledger_seen = (-1, None)
        self._partition_part = -1  # type: ignore[assignment]
        self.sink = None
        self.delivered: list[Message] = []
        self.general: list[int] = []
        #: the checksum each entry sent to the general path came with (None: already found right)
        self.checksums: list[int | None] = []

    def _deliver(self, messages: list[Message]) -> None:
        self.delivered += messages

    def _entry_messages(self, ledger_id: int, entry_id: int, redelivery_count: int, ack_set: Any, entry: Any,
                        checksum: int | None, *where: Any) -> list[Message]:
        self.general.append(entry_id)
        self.checksums.append(checksum)
        return []


def _random_metadata(rng: random.Random, producer: str) -> MessageMetadata:
    meta = MessageMetadata(producer_name=producer if rng.random() < 0.9 else rng.choice(["p", "x" * 200, "pr@X\xd8"]))
    if rng.random() < 0.95:
        meta.sequence_id = rng.choice(VALUES)
    if rng.random() < 0.95:
        meta.publish_time = rng.choice(VALUES)
    for name, values in (("uncompressed_size", [0, 100, 2**31]), ("event_time", VALUES), ("num_messages_in_batch", [1, 5]),
                         ("num_chunks_from_msg", [1, 2]), ("compression", [CompressionType.NONE, CompressionType.ZLIB]),
                         ("partition_key", ["k"]), ("highest_sequence_id", [3]), ("null_value", [True])):
        if rng.random() < 0.1:
            setattr(meta, name, rng.choice(values))
    if rng.random() < 0.1:
        meta.properties.append(KeyValue(key="a", value="b"))
    return meta


def _frame(meta_bytes: bytes, payload: bytes, entry_id: int) -> bytes:
    cmd = BaseCommand(type=CommandType.MESSAGE)
    cmd.message.consumer_id = 1
    cmd.message.message_id.ledger_id = 9
    cmd.message.message_id.entry_id = entry_id
    return encode_payload_command(cmd, U32.pack(len(meta_bytes)) + meta_bytes + payload)


def _plain(meta_bytes: bytes) -> bool:
    """What protobuf says: the entry is one message of its own (and its metadata parses)."""
    try:
        meta = MessageMetadata.FromString(meta_bytes)
    except Exception:  # noqa: BLE001 - a DecodeError
        return False
    return not meta.HasField("num_messages_in_batch") and meta.num_chunks_from_msg <= 1 and not meta.compression


def test_plain_entries_are_known_from_their_bytes_as_protobuf_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[bytes] = []

    def parse(data: bytes) -> MessageMetadata:
        parsed.append(data)
        return MessageMetadata.FromString(data)

    monkeypatch.setattr(opening_module, "MessageMetadata", types.SimpleNamespace(FromString=parse))
    rng = random.Random(15)
    plain_count = 0
    for _ in range(40):
        opening = _Opening()
        wires, expected_plain, expected_general = [], [], []
        producer = rng.choice(["standalone-0-1", "p", "x" * 200, "pr@X\xd8"])
        for entry_id in range(100):
            meta_bytes = bytearray(_random_metadata(rng, producer).SerializeToString())
            if rng.random() < 0.1:  # corrupted (with a checksum that matches): protobuf judges it
                meta_bytes[rng.randrange(len(meta_bytes))] = rng.randrange(256)
            payload = rng.randbytes(rng.randint(0, 20))
            wires.append(_frame(bytes(meta_bytes), payload, entry_id))
            (expected_plain if _plain(bytes(meta_bytes)) else expected_general).append((entry_id, bytes(meta_bytes), payload))
        frames = list(FrameDecoder(1 << 20).frames(b"".join(wires)))
        assert all(isinstance(f, MessageFrame) for f in frames)
        opening.on_message_frames(frames)  # type: ignore[arg-type]
        plain_count += len(expected_plain)
        assert opening.general == [e for e, _, _ in expected_general]
        assert [(m._ctx.entry, m._ctx.meta, m._payload) for m in opening.delivered] == expected_plain
        for msg, (_, meta_bytes, _) in zip(opening.delivered, expected_plain, strict=True):
            meta = MessageMetadata.FromString(meta_bytes)
            assert (msg.publish_timestamp(), msg.sequence_id(), msg.producer_name(), msg.event_timestamp()) == (
                meta.publish_time, meta.sequence_id, meta.producer_name, meta.event_time)
            assert msg.properties() == {kv.key: kv.value for kv in meta.properties}
            assert (msg.partition_key(), msg.is_null_value()) == (meta.partition_key, meta.null_value)
    assert 40 * 100 - len(parsed) > plain_count // 5  # many plain entries were known without a parse


def test_a_checksum_mismatch_still_takes_the_general_path() -> None:
    opening = _Opening()
    meta_bytes = MessageMetadata(producer_name="p", sequence_id=1, publish_time=2).SerializeToString()
    bad = bytearray(_frame(meta_bytes, b"b", 2))
    bad[-1] ^= 1
    opening.on_message_frames(list(FrameDecoder(1 << 20).frames(_frame(meta_bytes, b"a", 1) + bytes(bad))))  # type: ignore[arg-type]
    assert [m._payload for m in opening.delivered] == [b"a"] and opening.general == [2]


def test_a_batch_whose_checksum_was_found_right_is_not_checked_again() -> None:
    opening = _Opening()
    meta = MessageMetadata(producer_name="p", sequence_id=1, publish_time=2, num_messages_in_batch=1).SerializeToString()
    good, bad = _frame(meta, b"\x00\x00\x00\x02\x18\x01a", 1), bytearray(_frame(meta, b"\x00\x00\x00\x02\x18\x01b", 2))
    bad[-1] ^= 1
    frames = list(FrameDecoder(1 << 20).frames(good + bytes(bad)))
    opening.on_message_frames(frames)  # type: ignore[arg-type]
    assert opening.general == [1, 2]
    assert opening.checksums == [None, frames[1].checksum] and frames[1].checksum is not None


def _random_single(rng: random.Random, size: int) -> SingleMessageMetadata:
    single = SingleMessageMetadata(payload_size=size)
    if rng.random() < 0.8:
        single.sequence_id = rng.choice(VALUES)
    for name, values in (("partition_key", ["k"]), ("event_time", [5]), ("compacted_out", [True, False]),
                         ("null_value", [True]), ("ordering_key", [b"o"])):
        if rng.random() < 0.08:
            setattr(single, name, rng.choice(values))
    if rng.random() < 0.08:
        single.properties.append(KeyValue(key="a", value="b"))
    return single


def test_batched_messages_read_as_protobuf_reads_their_single_metadata() -> None:
    rng = random.Random(16)
    consumer = types.SimpleNamespace(topic="t", partition=-1, config=types.SimpleNamespace(schema=None))
    for _ in range(100):
        count = rng.randint(1, 60)
        singles, payloads, parts = [], [], []
        for index in range(count):
            payload = rng.randbytes(rng.choice([0, 1, 127, 128, 300, 16383, 16384]))
            single = _random_single(rng, len(payload))
            if rng.random() < 0.5:  # numbered as the official producers do (split_batch_payload's first_sequence)
                single.sequence_id = 1000 + index
            raw = single.SerializeToString()
            parts.append(U32.pack(len(raw)) + raw + payload)
            singles.append(single)
            payloads.append(payload)
        meta = MessageMetadata(producer_name="p", sequence_id=1000, publish_time=1, num_messages_in_batch=count)
        out = split_batch(b"".join(parts), meta, None, (3, 4), 0, consumer, None, False)
        kept = [(i, s, p) for i, (s, p) in enumerate(zip(singles, payloads, strict=True)) if not s.compacted_out]
        assert [m.data() for m in out] == [p for _, _, p in kept]
        for msg, (index, single, _) in zip(out, kept, strict=True):
            assert msg.message_id().batch_index == index and msg.message_id().batch_size == count
            assert msg.sequence_id() == (single.sequence_id if single.HasField("sequence_id") else 1000 + index)
            assert msg.properties() == {kv.key: kv.value for kv in single.properties}
            assert (msg.partition_key(), msg.has_key(), msg.ordering_key()) == (
                single.partition_key, single.HasField("partition_key"), single.ordering_key.decode("utf-8", "surrogateescape"))
            assert (msg.event_timestamp(), msg.is_null_value()) == (single.event_time, single.null_value)
