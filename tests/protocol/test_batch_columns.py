"""protocol/batch_columns.py: the column split of batch entries against the generated decoder."""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass

import pytest

from magnetar.protocol.batch import BatchMessage, encode_batch
from magnetar.protocol.batch_columns import MessageColumns
from magnetar.protocol.framing import ProtocolError
from magnetar.protocol.schema import MessageMetadata, SingleMessageMetadata

_U32 = struct.Struct(">I")


@dataclass
class Entry:
    """A ColumnEntry: what MessageColumns.add reads."""

    meta: MessageMetadata
    payload: bytes
    count: int
    batched: bool
    first: int
    stop: int
    mask: int | None = None


def batch_entry(messages: list[BatchMessage], event_time: int = 0, **cut: int | None) -> Entry:
    meta = MessageMetadata(producer_name="p", sequence_id=0, publish_time=1, num_messages_in_batch=len(messages))
    if event_time:
        meta.event_time = event_time
    entry = Entry(meta, encode_batch(messages), len(messages), True, 0, len(messages))
    for name, value in cut.items():
        setattr(entry, name, value)
    return entry


def generated_rows(entry: Entry) -> list[tuple]:
    """(payload, key, event time, properties, index) of each message to take, by the generated decoder."""
    rows, pos = [], 0
    for index in range(entry.count):
        (n,) = _U32.unpack_from(entry.payload, pos)
        single = SingleMessageMetadata.FromString(entry.payload[pos + 4 : pos + 4 + n])
        pos += 4 + n
        body = entry.payload[pos : pos + single.payload_size]
        pos += single.payload_size
        if index < entry.first or index >= entry.stop or (entry.mask is not None and not entry.mask >> index & 1):
            continue
        if single.compacted_out:
            continue
        rows.append((None if single.null_value else body, single.partition_key if single.HasField("partition_key") else None,
                     single.event_time or entry.meta.event_time,
                     {kv.key: kv.value for kv in single.properties} or None, index))
    return rows


def column_rows(columns: MessageColumns) -> list[tuple]:
    props = columns.properties or [None] * len(columns)
    return list(zip(columns.payloads, columns.keys, columns.event_times, props, columns.batch_indexes, strict=True))


def test_every_shape_splits_as_the_generated_decoder_reads_it() -> None:
    rng = random.Random(5)
    messages = [BatchMessage(rng.randbytes(size)) for size in (0, 1, 127, 128, 16383, 16384, 20000)]
    messages += [BatchMessage(rng.randbytes(size), partition_key=key) for size in (0, 5, 200, 17000)
                 for key in ("", "k", "x" * 127, "y" * 128)]
    messages += [
        BatchMessage(b"s", sequence_id=2**40),
        BatchMessage(b"p", properties={"a": "1"}, event_time=99),
        BatchMessage(b"", null_value=True),
        BatchMessage(b"o", ordering_key=b"\x01", partition_key="k"),
    ]
    rng.shuffle(messages)
    entry = batch_entry(messages, event_time=1234)
    columns = MessageColumns()
    assert columns.add(entry) == len(messages)
    assert column_rows(columns) == generated_rows(entry)


def test_first_stop_and_mask_choose_the_messages() -> None:
    messages = [BatchMessage(bytes([i]), partition_key=str(i)) for i in range(10)]
    entry = batch_entry(messages, first=2, stop=8, mask=0b1010101111)
    columns = MessageColumns()
    assert columns.add(entry) == 4
    assert columns.batch_indexes == [2, 3, 5, 7]
    assert column_rows(columns) == generated_rows(entry)


def test_a_message_of_its_own_entry() -> None:
    meta = MessageMetadata(producer_name="p", sequence_id=0, publish_time=1, partition_key="k", event_time=5)
    meta.properties.add(key="a", value="b")
    columns = MessageColumns()
    assert columns.add(Entry(meta, b"body", 1, False, 0, 1)) == 1
    assert column_rows(columns) == [(b"body", "k", 5, {"a": "b"}, -1)]


def test_a_malformed_batch_is_a_protocol_error() -> None:
    entry = batch_entry([BatchMessage(b"x" * 30), BatchMessage(b"y" * 30)])
    entry.payload = entry.payload[:-3]
    with pytest.raises(ProtocolError):
        MessageColumns().add(entry)
