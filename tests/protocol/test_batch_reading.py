"""The hand-written readers of protocol/batch_reading.py against the generated decoder, byte for byte."""

from __future__ import annotations

import random
import struct

import pytest

from magnetar.protocol.batch import BatchMessage, encode_batch
from magnetar.protocol.batch_reading import (
    EMPTY_SINGLE,
    is_plain_metadata,
    plain_after_head,
    plain_metadata_head,
    split_batch_payload,
)
from magnetar.protocol.framing import ProtocolError
from magnetar.protocol.schema import MessageMetadata, SingleMessageMetadata

_U32 = struct.Struct(">I")
#: payload sizes at each varint length's edges (one, two, three bytes)
SIZES = [0, 1, 127, 128, 16383, 16384, 20000]
#: sequence ids at varint edges, up to the largest of 9 bytes and beyond
SEQUENCES = [0, 1, 127, 128, 2**21, 2**35, 2**56 - 1, 2**56, 2**63 - 1, 2**64 - 1]


def generated_split(payload: bytes, count: int) -> list[tuple[bytes, bytes]]:
    """Each message's SingleMessageMetadata (re-serialized by the generated code) and payload, read
    with nothing but the generated decoder."""
    out = []
    pos = 0
    for _ in range(count):
        (n,) = _U32.unpack_from(payload, pos)
        single = SingleMessageMetadata.FromString(payload[pos + 4 : pos + 4 + n])
        pos += 4 + n
        out.append((single.SerializeToString(), payload[pos : pos + single.payload_size]))
        pos += single.payload_size
    assert pos == len(payload)
    return out


def read_by_hand(payload: bytes, count: int) -> list[tuple[bytes, bytes]]:
    by_index, bodies = split_batch_payload(payload, count)
    singles = [by_index[i] for i in range(count)]
    assert len(bodies) == count and all(s is not EMPTY_SINGLE for s in by_index.values())
    as_parsed = []
    for single, body in zip(singles, bodies, strict=True):
        if single is EMPTY_SINGLE:  # stands for a metadata of nothing but the payload's size
            single = SingleMessageMetadata(payload_size=len(body))
        elif single.__class__ is bytes:
            single = SingleMessageMetadata.FromString(single)
        as_parsed.append(single.SerializeToString())
    return list(zip(as_parsed, bodies, strict=True))


def test_every_message_shape_reads_as_the_generated_decoder_reads_it() -> None:
    rng = random.Random(7)
    messages = [BatchMessage(rng.randbytes(size)) for size in SIZES]
    messages += [BatchMessage(rng.randbytes(size), sequence_id=seq) for size in SIZES for seq in SEQUENCES]
    messages += [
        BatchMessage(b"k", partition_key="key"),
        BatchMessage(b"p", properties={"a": "1", "b": ""}, event_time=1234),
        BatchMessage(b"o", ordering_key=b"\x00\xff", sequence_id=5),
        BatchMessage(b"", null_value=True),
    ]
    rng.shuffle(messages)
    payload = encode_batch(messages)
    assert read_by_hand(payload, len(messages)) == generated_split(payload, len(messages))


def test_the_usual_shapes_are_not_parsed() -> None:
    payload = encode_batch([BatchMessage(b"x" * 100), BatchMessage(b"y" * 200), BatchMessage(b"z", sequence_id=300),
                            BatchMessage(b"w" * 20000), BatchMessage(b"k", partition_key="key")])
    singles, bodies = split_batch_payload(payload, 5)
    assert singles[0] is EMPTY_SINGLE and singles[1] is EMPTY_SINGLE  # one- and two-byte sizes
    assert singles[2] == SingleMessageMetadata(payload_size=1, sequence_id=300).SerializeToString()
    assert isinstance(singles[3], SingleMessageMetadata) and singles[3].payload_size == 20000  # a three-byte size: parsed
    assert isinstance(singles[4], SingleMessageMetadata) and singles[4].partition_key == "key"
    assert bodies == [b"x" * 100, b"y" * 200, b"z", b"w" * 20000, b"k"]
    assert EMPTY_SINGLE.SerializeToString() == b""


@pytest.mark.parametrize("first", [0, 100, 16_000, 2**21 - 40, 2**21, 2**40])
def test_sequence_ids_numbered_from_the_entrys_are_not_kept(first: int) -> None:
    """A metadata of payload size then the sequence id ``first`` + its index (the official producers'
    numbering) reads as EMPTY_SINGLE when it takes one to three varint bytes; any other is read as
    without ``first``, and every message keeps its payload."""
    rng = random.Random(first)
    messages = []
    for index in range(80):
        seq = first + index if index % 7 else rng.choice(SEQUENCES)
        messages.append(BatchMessage(rng.randbytes(rng.choice(SIZES[:5])), sequence_id=seq))
    messages.append(BatchMessage(b"k", sequence_id=first + 80, partition_key="key"))
    payload = encode_batch(messages)
    by_index, bodies = split_batch_payload(payload, len(messages), first)
    assert bodies == [m.payload for m in messages]
    for index, message in enumerate(messages):
        single = by_index[index]
        numbered = message.sequence_id == first + index and first + index < 2**21 and not message.partition_key
        if numbered:
            assert single is EMPTY_SINGLE
        else:
            parsed = SingleMessageMetadata.FromString(single) if single.__class__ is bytes else single
            assert single is not EMPTY_SINGLE and parsed.sequence_id == message.sequence_id
            assert parsed.payload_size == len(message.payload)
    assert len(split_batch_payload(payload, len(messages), first + 1)[0]) == len(messages)  # none numbered so


def test_a_numbered_sequence_id_needs_its_whole_metadata() -> None:
    """A metadata whose sequence id matches but which holds more (or a varint that runs on) is not
    taken for the numbered shape."""
    seq = SingleMessageMetadata(payload_size=1, sequence_id=5).SerializeToString()
    more = SingleMessageMetadata(payload_size=1, sequence_id=5, event_time=9).SerializeToString()
    payload = _U32.pack(len(seq)) + seq + b"a" + _U32.pack(len(more)) + more + b"b"
    singles, bodies = split_batch_payload(payload, 2, 5)
    assert singles[0] is EMPTY_SINGLE and isinstance(singles[1], SingleMessageMetadata)
    assert singles[1].event_time == 9 and bodies == [b"a", b"b"]
    bad = _U32.pack(4) + b"\x18\x01\x40\x85" + b"x"  # sequence id 5 with its varint unterminated
    with pytest.raises(ProtocolError):
        split_batch_payload(bad, 1, 5)


def test_a_compacted_out_message_keeps_its_flag() -> None:
    single = SingleMessageMetadata(payload_size=1, compacted_out=True).SerializeToString()
    payload = _U32.pack(len(single)) + single + b"a"
    singles, bodies = split_batch_payload(payload, 1)
    assert singles[0].compacted_out and bodies == [b"a"]


@pytest.mark.parametrize("cut", [1, 3, 5, 50])
def test_a_truncated_batch_is_a_protocol_error(cut: int) -> None:
    payload = encode_batch([BatchMessage(b"x" * 40, sequence_id=1), BatchMessage(b"y" * 40)])
    with pytest.raises(ProtocolError):
        split_batch_payload(payload[:-cut], 2)


def test_bytes_left_over_or_too_few_are_protocol_errors() -> None:
    payload = encode_batch([BatchMessage(b"x"), BatchMessage(b"y")])
    with pytest.raises(ProtocolError, match="left over"):
        split_batch_payload(payload, 1)
    with pytest.raises(ProtocolError, match="malformed"):
        split_batch_payload(payload, 3)
    bad = _U32.pack(3) + b"\x18\xff\xff" + b"x"  # an unterminated varint
    with pytest.raises(ProtocolError):
        split_batch_payload(bad, 1)


def _plain_by_parsing(meta: bytes) -> bool:
    parsed = MessageMetadata.FromString(meta)
    return (not parsed.HasField("num_messages_in_batch") and parsed.num_chunks_from_msg <= 1
            and not parsed.compression and not parsed.encryption_keys)


PLAIN = [
    MessageMetadata(producer_name="p", sequence_id=0, publish_time=1),
    MessageMetadata(producer_name="standalone-0-7", sequence_id=2**63 - 1, publish_time=1_700_000_000_000),
    MessageMetadata(producer_name="p", sequence_id=5, publish_time=9, uncompressed_size=100),
    MessageMetadata(producer_name="p", sequence_id=5, publish_time=9, uncompressed_size=100, event_time=77),
    MessageMetadata(producer_name="p", sequence_id=5, publish_time=9, event_time=77),
]
NOT_RECOGNISED = [
    MessageMetadata(producer_name="p", sequence_id=5, publish_time=9, num_messages_in_batch=10),
    MessageMetadata(producer_name="p", sequence_id=5, publish_time=9, compression=1, uncompressed_size=100),
    MessageMetadata(producer_name="p", sequence_id=5, publish_time=9, partition_key="k"),
    MessageMetadata(producer_name="p", sequence_id=5, publish_time=9, num_chunks_from_msg=3, chunk_id=0, total_chunk_msg_size=9),
    MessageMetadata(producer_name="q", sequence_id=5, publish_time=9),  # another producer's name
    MessageMetadata(producer_name="p" * 200, sequence_id=5, publish_time=9),  # a name of two length bytes
]


def test_a_plain_metadata_is_recognised_by_the_head_of_its_producer() -> None:
    head = plain_metadata_head(PLAIN[0].SerializeToString())
    assert head == b"\x0a\x01p"
    for meta in PLAIN:
        data = meta.SerializeToString()
        if data.startswith(head):
            assert is_plain_metadata(data, head) and _plain_by_parsing(data), meta
            assert plain_after_head(data, len(head))  # the form a per-entry loop inlines
    long_head = plain_metadata_head(PLAIN[1].SerializeToString())
    assert is_plain_metadata(PLAIN[1].SerializeToString(), long_head)


def test_what_is_not_recognised_is_left_to_the_parser() -> None:
    head = plain_metadata_head(PLAIN[0].SerializeToString())
    for meta in NOT_RECOGNISED:
        assert not is_plain_metadata(meta.SerializeToString(), head), meta
    assert plain_metadata_head(NOT_RECOGNISED[-1].SerializeToString()) == b""
    assert not is_plain_metadata(PLAIN[0].SerializeToString(), b"")  # no head recognises nothing


def test_recognised_implies_plain_on_random_metadata() -> None:
    rng = random.Random(11)
    head = b"\x0a\x01p"
    seen_plain = 0
    for _ in range(2000):
        meta = MessageMetadata(producer_name="p", sequence_id=rng.getrandbits(rng.choice([1, 20, 63, 64])),
                               publish_time=rng.getrandbits(41))
        if rng.random() < 0.5:
            meta.uncompressed_size = rng.getrandbits(20)
        if rng.random() < 0.5:
            meta.event_time = rng.getrandbits(41)
        if rng.random() < 0.3:
            meta.num_messages_in_batch = rng.randint(1, 1000)
        if rng.random() < 0.2:
            meta.compression = rng.randint(1, 4)
        if rng.random() < 0.2:
            meta.properties.add(key="k", value="v")
        data = meta.SerializeToString()
        if is_plain_metadata(data, head):
            seen_plain += 1
            assert _plain_by_parsing(data) and not meta.properties, meta
        elif (not meta.HasField("num_messages_in_batch") and not meta.compression and not meta.properties
              and meta.sequence_id < 2**63):  # (a varint of 10 bytes is left to the parser)
            pytest.fail(f"a plain metadata of the usual fields was not recognised: {meta}")
    assert seen_plain > 500


def test_a_batch_read_in_place_in_a_larger_buffer_reads_as_the_batch_alone() -> None:
    rng = random.Random(11)
    messages = [BatchMessage(rng.randbytes(1024), sequence_id=40 + i) for i in range(30)]
    messages[7] = BatchMessage(rng.randbytes(1024), properties={"p": "7"})
    payload = encode_batch(messages)
    before, after = rng.randbytes(37), encode_batch([BatchMessage(b"next frame")])
    received = before + payload + after
    singles, bodies = split_batch_payload(received, len(messages), 40, len(before), len(before) + len(payload))
    alone = split_batch_payload(payload, len(messages), 40)
    assert (dict(singles), bodies) == (dict(alone[0]), alone[1])
    assert bodies == [m.payload for m in messages] and all(b.__class__ is bytes for b in bodies)
    assert list(singles) == [7] and singles[7].properties[0].value == "7"


@pytest.mark.parametrize("cut", [1, 5, 1024])
def test_a_batch_read_in_place_does_not_run_into_the_bytes_after_it(cut: int) -> None:
    payload = encode_batch([BatchMessage(b"x" * 1024, sequence_id=1), BatchMessage(b"y" * 1024)])
    received = b"head" + payload + b"z" * 2048  # what follows would complete the cut message
    with pytest.raises(ProtocolError):
        split_batch_payload(received, 2, -1, 4, 4 + len(payload) - cut)
    with pytest.raises(ProtocolError, match="left over"):
        split_batch_payload(received, 2, -1, 4, 4 + len(payload) + cut)
