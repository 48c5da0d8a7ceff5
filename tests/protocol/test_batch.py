"""Batch payloads and entries: layout, round trips, malformed input, the official client's entries."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnetar.protocol.batch import (
    BatchMessage,
    UnsupportedEntryError,
    build_entry,
    decode_batch,
    encode_batch,
    open_entry,
)
from magnetar.protocol.compression import CompressionError, compress
from magnetar.protocol.enums import CompressionType
from magnetar.protocol.framing import ProtocolError, encode_entry, parse_entry_metadata, split_entry
from magnetar.protocol.schema import EncryptionKeys, KeyValue, MessageMetadata, SingleMessageMetadata

U32 = struct.Struct(">I")


def smm_bytes(**fields: Any) -> bytes:
    return SingleMessageMetadata(**fields).SerializeToString()


def hand_batch(*items: tuple[bytes, bytes]) -> bytes:
    """A batch assembled by hand from (serialized SingleMessageMetadata, payload) pairs."""
    return b"".join(U32.pack(len(meta)) + meta + payload for meta, payload in items)


def metadata() -> MessageMetadata:
    return MessageMetadata(producer_name="p", sequence_id=7, publish_time=1_700_000_000_000)


# --- encode_batch / decode_batch ----------------------------------------------------------------


def test_encode_batch_layout() -> None:
    batch = encode_batch([BatchMessage(b"hello"), BatchMessage(b"", properties={"a": "b"})])
    first = smm_bytes(payload_size=5)
    second = SingleMessageMetadata(
        payload_size=0, properties=[KeyValue(key="a", value="b")]
    ).SerializeToString()
    assert batch == U32.pack(len(first)) + first + b"hello" + U32.pack(len(second)) + second


def test_encode_batch_sets_every_field() -> None:
    message = BatchMessage(
        payload=b"body",
        properties={"k1": "v1", "k2": "v2"},
        partition_key="pk",
        ordering_key=b"\x00ok",
        event_time=123,
        sequence_id=0,
        null_value=True,
    )
    [(meta, payload)] = decode_batch(encode_batch([message]), 1)
    assert payload == b"body"
    assert meta.payload_size == 4
    assert [(p.key, p.value) for p in meta.properties] == [("k1", "v1"), ("k2", "v2")]
    assert meta.partition_key == "pk"
    assert meta.ordering_key == b"\x00ok"
    assert meta.event_time == 123
    assert meta.HasField("sequence_id") and meta.sequence_id == 0
    assert meta.null_value


def test_encode_batch_leaves_unset_fields_off_the_wire() -> None:
    [(meta, _)] = decode_batch(encode_batch([BatchMessage(b"x")]), 1)
    for name in ("partition_key", "ordering_key", "event_time", "sequence_id", "null_value"):
        assert not meta.HasField(name), name


def test_decode_hand_built_batch() -> None:
    batch = hand_batch(
        (smm_bytes(payload_size=3), b"abc"), (smm_bytes(payload_size=0, partition_key="k"), b"")
    )
    decoded = decode_batch(batch, 2)
    assert [p for _, p in decoded] == [b"abc", b""]
    assert decoded[1][0].partition_key == "k"


def test_decode_accepts_memoryview_and_bytearray() -> None:
    batch = encode_batch([BatchMessage(b"a"), BatchMessage(b"bc")])
    for form in (memoryview(batch), bytearray(batch)):
        assert [p for _, p in decode_batch(form, 2)] == [b"a", b"bc"]


def test_decode_empty_batch() -> None:
    assert decode_batch(b"", 0) == []


message_strategy = st.builds(
    BatchMessage,
    payload=st.binary(max_size=300),
    properties=st.dictionaries(st.text(max_size=10), st.text(max_size=10), max_size=4),
    partition_key=st.none() | st.text(max_size=20),
    ordering_key=st.none() | st.binary(max_size=20),
    event_time=st.integers(0, 2**64 - 1),
    sequence_id=st.none() | st.integers(0, 2**64 - 1),
    null_value=st.booleans(),
)


@settings(max_examples=150, deadline=None)
@given(messages=st.lists(message_strategy, max_size=20))
def test_batch_round_trip_property(messages: list[BatchMessage]) -> None:
    decoded = decode_batch(encode_batch(messages), len(messages))
    assert len(decoded) == len(messages)
    for message, (meta, payload) in zip(messages, decoded, strict=True):
        assert payload == message.payload
        assert meta.payload_size == len(message.payload)
        assert {p.key: p.value for p in meta.properties} == message.properties
        assert (meta.partition_key if meta.HasField("partition_key") else None) == message.partition_key
        assert (meta.ordering_key if meta.HasField("ordering_key") else None) == message.ordering_key
        assert meta.event_time == message.event_time
        assert (meta.sequence_id if meta.HasField("sequence_id") else None) == message.sequence_id
        assert meta.null_value == message.null_value


# --- malformed batches ---------------------------------------------------------------------------


def test_every_truncation_raises() -> None:
    batch = encode_batch([BatchMessage(b"first payload", {"a": "b"}), BatchMessage(b"second")])
    for cut in range(len(batch)):
        with pytest.raises(ProtocolError):
            decode_batch(batch[:cut], 2)


def test_metadata_size_overrunning_the_batch_raises() -> None:
    meta = smm_bytes(payload_size=1)
    with pytest.raises(ProtocolError, match="overruns"):
        decode_batch(U32.pack(len(meta) + 10) + meta + b"x", 1)
    with pytest.raises(ProtocolError, match="overruns"):
        decode_batch(U32.pack(0xFFFFFFFF) + meta + b"x", 1)


def test_payload_size_overrunning_the_batch_raises() -> None:
    with pytest.raises(ProtocolError, match="payload size 100"):
        decode_batch(hand_batch((smm_bytes(payload_size=100), b"short")), 1)


def test_negative_payload_size_raises() -> None:
    with pytest.raises(ProtocolError, match="payload size -1"):
        decode_batch(hand_batch((smm_bytes(payload_size=-1), b"")), 1)


def test_missing_payload_size_raises() -> None:
    with pytest.raises(ProtocolError, match="no payload size"):
        decode_batch(hand_batch((smm_bytes(partition_key="k"), b"")), 1)


def test_undecodable_single_metadata_raises() -> None:
    with pytest.raises(ProtocolError, match="undecodable"):
        decode_batch(hand_batch((b"\x18", b"")), 1)


def test_wrong_count_raises() -> None:
    batch = encode_batch([BatchMessage(b"a"), BatchMessage(b"b")])
    with pytest.raises(ProtocolError, match="truncated"):
        decode_batch(batch, 3)
    with pytest.raises(ProtocolError, match="left over"):
        decode_batch(batch, 1)
    with pytest.raises(ProtocolError, match="negative"):
        decode_batch(batch, -1)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200), count=st.integers(0, 10))
def test_random_bytes_only_raise_protocol_error(data: bytes, count: int) -> None:
    try:
        decoded = decode_batch(data, count)
    except ProtocolError:
        return
    assert len(decoded) == count


@settings(max_examples=200, deadline=None)
@given(
    messages=st.lists(message_strategy, min_size=1, max_size=5),
    index=st.integers(min_value=0),
    value=st.integers(0, 255),
)
def test_corrupted_batch_only_raises_protocol_error(
    messages: list[BatchMessage], index: int, value: int
) -> None:
    batch = bytearray(encode_batch(messages))
    if batch:
        batch[index % len(batch)] = value
    try:
        decoded = decode_batch(bytes(batch), len(messages))
    except ProtocolError:
        return
    assert len(decoded) == len(messages)


# --- entries -----------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name)
def test_single_message_entry_round_trip(codec: CompressionType) -> None:
    payload = b"single message payload " * 10
    entry = build_entry(metadata(), payload, codec)
    meta, messages = open_entry(entry)
    assert messages == [(None, payload)]
    assert not meta.HasField("num_messages_in_batch")
    assert meta.uncompressed_size == len(payload)
    assert meta.HasField("compression") == (codec is not CompressionType.NONE)
    assert meta.compression == codec
    assert meta.producer_name == "p" and meta.sequence_id == 7


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name)
def test_batch_entry_round_trip(codec: CompressionType) -> None:
    batch = [
        BatchMessage(f"message {i} ".encode() * 5, {"i": str(i)}, partition_key=f"k{i}") for i in range(4)
    ]
    entry = build_entry(metadata(), batch, codec)
    meta, messages = open_entry(entry)
    assert meta.num_messages_in_batch == 4
    assert meta.uncompressed_size == len(encode_batch(batch))
    assert [p for _, p in messages] == [m.payload for m in batch]
    assert [s.partition_key for s, _ in messages if s is not None] == ["k0", "k1", "k2", "k3"]


def test_build_entry_layout_and_framing_agree() -> None:
    entry = build_entry(metadata(), b"payload", CompressionType.NONE)
    meta = parse_entry_metadata(entry)
    assert entry == encode_entry(meta, b"payload")
    _, payload = split_entry(entry)
    assert bytes(payload) == b"payload"


def test_build_entry_compresses_the_whole_batch() -> None:
    batch = [BatchMessage(b"aaaa" * 50), BatchMessage(b"bbbb" * 50)]
    entry = build_entry(metadata(), batch, CompressionType.ZLIB)
    _, payload = split_entry(entry)
    assert bytes(payload) == compress(CompressionType.ZLIB, encode_batch(batch))


def test_build_entry_does_not_modify_the_given_metadata() -> None:
    original = metadata()
    original.num_messages_in_batch = 9
    before = original.SerializeToString()
    build_entry(original, b"x", CompressionType.LZ4)
    build_entry(original, [BatchMessage(b"y")], CompressionType.ZSTD)
    assert original.SerializeToString() == before


def test_single_message_batch_is_still_a_batch() -> None:
    meta, messages = open_entry(build_entry(metadata(), [BatchMessage(b"only", partition_key="k")]))
    assert meta.HasField("num_messages_in_batch") and meta.num_messages_in_batch == 1
    [(single, payload)] = messages
    assert single is not None and single.partition_key == "k"
    assert payload == b"only"


def test_build_entry_rejects_empty_batch_and_unknown_codec() -> None:
    with pytest.raises(ValueError, match="at least one"):
        build_entry(metadata(), [])
    with pytest.raises(CompressionError):
        build_entry(metadata(), b"x", 42)


def test_build_entry_accepts_bytearray_and_memoryview() -> None:
    for payload in (bytearray(b"raw"), memoryview(b"raw")):
        assert open_entry(build_entry(metadata(), payload))[1] == [(None, b"raw")]


@settings(max_examples=100, deadline=None)
@given(
    messages=st.lists(message_strategy, min_size=1, max_size=8),
    codec=st.sampled_from(list(CompressionType)),
)
def test_entry_round_trip_property(messages: list[BatchMessage], codec: CompressionType) -> None:
    _, opened = open_entry(build_entry(metadata(), messages, codec))
    assert [p for _, p in opened] == [m.payload for m in messages]


def test_open_entry_rejects_malformed_entries() -> None:
    for short in (b"", b"\x00", b"\x00\x00\x00"):
        with pytest.raises(ProtocolError, match="too short"):
            open_entry(short)
    with pytest.raises(ProtocolError, match="overruns"):
        open_entry(U32.pack(50) + b"abc")
    with pytest.raises(ProtocolError, match="undecodable"):
        open_entry(U32.pack(1) + b"\x08")
    batch_meta = metadata()
    batch_meta.num_messages_in_batch = 2
    with pytest.raises(ProtocolError):
        open_entry(encode_entry(batch_meta, encode_batch([BatchMessage(b"one")])))


def test_open_entry_reports_bad_compression() -> None:
    meta = metadata()
    meta.compression = CompressionType.LZ4
    meta.uncompressed_size = 100
    with pytest.raises(CompressionError):
        open_entry(encode_entry(meta, b"\xff" * 20))
    meta.compression = 17
    with pytest.raises(CompressionError, match="unknown"):
        open_entry(encode_entry(meta, b"x"))


def test_open_entry_refuses_encrypted_entries_and_chunks() -> None:
    encrypted = metadata()
    encrypted.encryption_keys.append(EncryptionKeys(key="k", value=b"v"))
    with pytest.raises(UnsupportedEntryError, match="encrypted"):
        open_entry(encode_entry(encrypted, b"ciphertext"))
    chunk = metadata()
    chunk.uuid = "p-7"
    chunk.num_chunks_from_msg = 3
    chunk.chunk_id = 1
    with pytest.raises(UnsupportedEntryError, match="chunk 1 of 3"):
        open_entry(encode_entry(chunk, b"part"))
    single_chunk = metadata()
    single_chunk.num_chunks_from_msg = 1
    assert open_entry(encode_entry(single_chunk, b"whole"))[1] == [(None, b"whole")]


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=120))
def test_open_entry_on_random_bytes_raises_only_documented_errors(data: bytes) -> None:
    try:
        open_entry(data)
    except (ProtocolError, CompressionError, UnsupportedEntryError):
        pass


# --- the official client's entries --------------------------------------------------------------


def test_opens_every_entry_the_official_client_produced(official_capture: dict[str, Any]) -> None:
    kinds = set()
    for item in official_capture["entries"]:
        meta, messages = open_entry(bytes.fromhex(item["entry"]))
        assert [p.hex() for _, p in messages] == item["payloads"], item["codec"]
        assert meta.compression == CompressionType[item["codec"]]
        assert meta.HasField("num_messages_in_batch") == item["batch"]
        assert meta.num_messages_in_batch == item["num_messages"] == len(messages)
        kinds.add((item["codec"], item["batch"]))
        if item["batch"]:
            singles = [s for s, _ in messages]
            assert all(s is not None for s in singles)
            assert [s.properties[0].value for s in singles if s is not None] == ["0", "1", "2"]
            assert [s.partition_key for s in singles if s is not None] == ["key-0", "key-1", ""]
            assert singles[2] is not None and singles[2].ordering_key == b"ok"
            assert [s.sequence_id for s in singles if s is not None] == [0, 1, 2]
    assert kinds == {(c.name, b) for c in CompressionType for b in (False, True)}


def test_rebuilt_official_batch_has_the_same_layout(official_capture: dict[str, Any]) -> None:
    """encode_batch reproduces the official client's uncompressed batch bytes exactly."""
    for item in official_capture["entries"]:
        if not item["batch"] or item["codec"] != "NONE":
            continue
        entry = bytes.fromhex(item["entry"])
        _, messages = open_entry(entry)
        rebuilt = b"".join(
            U32.pack(len(s.SerializeToString())) + s.SerializeToString() + p
            for s, p in messages
            if s is not None
        )
        assert rebuilt == bytes(split_entry(entry)[1])
        ours = encode_batch(
            BatchMessage(
                payload=p,
                properties={kv.key: kv.value for kv in s.properties},
                partition_key=s.partition_key if s.HasField("partition_key") else None,
                ordering_key=s.ordering_key if s.HasField("ordering_key") else None,
                event_time=s.event_time,
                sequence_id=s.sequence_id if s.HasField("sequence_id") else None,
                null_value=s.null_value,
            )
            for s, p in messages
            if s is not None
        )
        assert ours == bytes(split_entry(entry)[1])
