"""The base64-key and null-key flags of a batched message's SingleMessageMetadata, written by hand,
byte for byte as the generated encoder writes them (field order: 6 after event_time, 10 last)."""

from __future__ import annotations

import struct

import pytest

from magnetar.protocol.schema import SingleMessageMetadata
from magnetar.protocol.single_metadata import batched_message_head, encode_single_metadata

_U32 = struct.Struct(">I")


@pytest.mark.parametrize("event_time", [0, 1, 2**41])
@pytest.mark.parametrize("ordering_key", [None, b"", b"\x00\xff"])
@pytest.mark.parametrize("properties", [None, {"a": "1", "b": ""}])
@pytest.mark.parametrize("null_value", [False, True])
def test_a_base64_key(event_time: int, ordering_key: bytes | None, properties: dict[str, str] | None, null_value: bool) -> None:
    expected = SingleMessageMetadata(payload_size=300, partition_key="a2V5", partition_key_b64_encoded=True,
                                     event_time=event_time or None, ordering_key=ordering_key,
                                     null_value=null_value or None, sequence_id=7)
    for k, v in (properties or {}).items():
        expected.properties.add(key=k, value=v)
    got = encode_single_metadata(300, properties, "a2V5", ordering_key, event_time, 7, null_value, key_b64=True)
    assert got == expected.SerializeToString()


@pytest.mark.parametrize("null_value", [False, True])
@pytest.mark.parametrize("event_time", [0, 12345])
def test_a_null_key_head(null_value: bool, event_time: int) -> None:
    expected = SingleMessageMetadata(payload_size=5, null_partition_key=True, null_value=null_value or None,
                                     event_time=event_time or None).SerializeToString()
    head = batched_message_head(5, None, None, event_time, null_value, None, null_key=True)
    assert head == _U32.pack(len(expected)) + expected


def test_without_flags_nothing_changes() -> None:
    assert batched_message_head(5, "k") == batched_message_head(5, "k", key_b64=False, null_key=False)
    assert SingleMessageMetadata.FromString(batched_message_head(5, "k")[4:]).partition_key_b64_encoded is False
