"""The hand-written SingleMessageMetadata and batched-message heads are byte for byte what protobuf
writes (the general encoder: BatchMessage.single_metadata, encode_batch)."""

from __future__ import annotations

import random
import struct

import pytest

from magnetar.protocol.batch import BatchMessage, encode_batch
from magnetar.protocol.single_metadata import batched_message_head, encode_single_metadata

#: each varint length's edges, and the largest uint64
SIZES = [0, 1, 127, 128, 16383, 16384, 2**21 - 1, 2**21, 2**28 - 1, 2**28, 2**31 - 1]
BIG = [2**35, 2**49 + 7, 2**56, 2**63 - 1, 2**64 - 1]


class Sized(bytes):
    """Stands for a payload of ``n`` bytes (single_metadata only asks its length)."""

    def __new__(cls, n: int) -> Sized:
        obj = super().__new__(cls)
        obj.n = n  # type: ignore[attr-defined]
        return obj

    def __len__(self) -> int:
        return self.n  # type: ignore[attr-defined]


def protobuf(
    payload_size: int,
    properties: dict[str, str] | None,
    partition_key: str | None,
    ordering_key: bytes | None,
    event_time: int,
    sequence_id: int | None,
    null_value: bool = False,
) -> bytes:
    message = BatchMessage(
        Sized(payload_size), dict(properties or {}), partition_key, ordering_key, event_time, sequence_id, null_value
    )
    return message.single_metadata().SerializeToString()


@pytest.mark.parametrize("size", SIZES)
def test_payload_sizes_at_every_varint_length(size: int) -> None:
    assert encode_single_metadata(size, None, None, None, 0, None) == protobuf(size, None, None, None, 0, None)


@pytest.mark.parametrize("value", [0, 1, *SIZES[2:], *BIG])
def test_large_varints_of_event_time_and_sequence_id(value: int) -> None:
    args = (5, None, None, None, value, value)
    assert encode_single_metadata(*args) == protobuf(*args)
    args = (5, None, None, None, 0, value)
    assert encode_single_metadata(*args) == protobuf(*args)


def test_every_optional_field_present_and_absent() -> None:
    props = {"a": "1", "ключ": "значение", "": "", "long": "x" * 200}
    for properties in (None, {}, props):
        for key in (None, "", "k", "clé" * 50):
            for ordering_key in (None, b"", b"\x00\xff" * 100):
                for event_time in (0, 1_700_000_000_123):
                    for sequence_id in (None, 0, 2**40):
                        for null_value in (False, True):
                            args = (3, properties, key, ordering_key, event_time, sequence_id, null_value)
                            assert encode_single_metadata(*args) == protobuf(*args), args


def test_random_messages_match_protobuf() -> None:
    rng = random.Random(22)
    for _ in range(2000):
        properties = {f"k{i}": "v" * rng.randrange(300) for i in range(rng.choice([0, 0, 1, 3]))} or None
        args = (
            rng.choice([rng.randrange(2**14), rng.getrandbits(rng.choice([20, 31]))]),
            properties,
            rng.choice([None, "", f"key-{rng.getrandbits(30)}", "k" * rng.randrange(20000)]),
            rng.choice([None, rng.randbytes(rng.randrange(200))]),
            rng.choice([0, rng.getrandbits(rng.choice([7, 41, 64]))]),
            rng.choice([None, rng.getrandbits(rng.choice([7, 14, 28, 64]))]),
            rng.random() < 0.2,
        )
        assert encode_single_metadata(*args) == protobuf(*args), args


def test_batched_message_heads_are_what_encode_batch_writes_before_the_payload() -> None:
    rng = random.Random(5)
    for _ in range(500):
        payload = rng.randbytes(rng.choice([0, 3, 200, 20000]))
        key = rng.choice([None, "", f"k{rng.randrange(100)}"])
        properties = rng.choice([None, {"p": "q", "r": "s" * 300}])
        event_time = rng.choice([0, rng.getrandbits(64)])
        null_value = rng.random() < 0.3
        ordering_key = rng.choice([None, b"ok"])
        head = batched_message_head(len(payload), key, properties, event_time, null_value, ordering_key)
        expected = encode_batch(
            [BatchMessage(payload, dict(properties or {}), key, ordering_key, event_time, None, null_value)]
        )
        assert head + payload == expected
        (size,) = struct.unpack_from(">I", head)
        assert size == len(head) - 4
