"""The messages of many entries split into plain lists (payloads, keys, event times, properties),
column by column, in one loop with no object per message: what bulk consumers (the Spark
connector, through ``magnetar.client.bulk``) build Arrow arrays from in one call each.

A batch's SingleMessageMetadata of the usual shapes (``[partition_key] payload_size``, nothing
else) is read by hand, any other by the generated decoder; tested against the generated decoder
in tests/protocol/test_batch_columns.py. An entry is anything with the attributes of
:class:`ColumnEntry` (the client's ``bulk.Entry``).
"""

from __future__ import annotations

import struct
from typing import Protocol

from magnetar.protocol.framing import ProtocolError
from magnetar.protocol.schema import MessageMetadata, SingleMessageMetadata

_U32 = struct.Struct(">I")


class ColumnEntry(Protocol):
    """What :meth:`MessageColumns.add` reads of an entry: its metadata and payload (decompressed),
    whether it is a batch of ``count`` messages, and which of them to take: ``first`` .. ``stop -
    1`` that ``mask`` leaves (None: all)."""

    meta: MessageMetadata
    payload: bytes
    count: int
    batched: bool
    first: int
    stop: int
    mask: int | None


class MessageColumns:
    """The messages of entries, column by column: what Arrow arrays are built from.

    :meth:`add` appends the messages of one entry (those from ``entry.first`` to ``entry.stop``
    that its ack set leaves, compacted-out ones left out) to ``payloads`` (None: a null value),
    ``keys`` (None: no key), ``event_times`` (0: none), ``properties`` (None until a message has
    some; then one dict or None per message) and ``batch_indexes`` (-1: not batched), and
    returns how many it appended.
    """

    __slots__ = ("payloads", "keys", "event_times", "properties", "batch_indexes")

    def __init__(self) -> None:
        self.payloads: list[bytes | None] = []
        self.keys: list[str | None] = []
        self.event_times: list[int] = []
        self.properties: list[dict[str, str] | None] | None = None
        self.batch_indexes: list[int] = []

    def __len__(self) -> int:
        return len(self.payloads)

    def _set_properties(self, row: int, props: dict[str, str]) -> None:
        if self.properties is None:
            self.properties = [None] * len(self.payloads)
        self.properties[row] = props

    def add(self, entry: ColumnEntry) -> int:
        """Append the messages of ``entry``; how many were appended."""
        if not entry.batched:
            return self._add_single(entry)
        return self._add_batch(entry)

    def _add_single(self, entry: ColumnEntry) -> int:
        meta = entry.meta
        if entry.first > 0 or entry.stop < 1 or (entry.mask is not None and not entry.mask & 1):
            return 0
        row = len(self.payloads)
        self.payloads.append(None if meta.null_value else entry.payload)
        self.keys.append(meta.partition_key if meta.HasField("partition_key") else None)
        self.event_times.append(meta.event_time)
        self.batch_indexes.append(-1)
        if self.properties is not None:
            self.properties.append(None)
        if meta.properties:
            self._set_properties(row, {kv.key: kv.value for kv in meta.properties})
        return 1

    def _add_batch(self, entry: ColumnEntry) -> int:  # noqa: C901 - the hot loop, kept in one piece
        payload = entry.payload
        first, stop, mask = entry.first, entry.stop, entry.mask
        entry_event = entry.meta.event_time
        payloads, keys, events, indexes = self.payloads, self.keys, self.event_times, self.batch_indexes
        props = self.properties
        start_rows = len(payloads)
        unpack = _U32.unpack_from
        parse = SingleMessageMetadata.FromString
        end = len(payload)
        pos = 0
        try:
            for index in range(stop):
                (n,) = unpack(payload, pos)
                pos += 4
                meta_end = pos + n
                # the common layouts, read by hand: [key (field 2)] payload_size (field 3), nothing else
                key: str | None = None
                size = -1
                b = payload[pos]
                q = pos
                if b == 0x12 and payload[pos + 1] < 0x80:
                    q = pos + 2 + payload[pos + 1]
                    key = payload[pos + 2 : q].decode()
                    b = payload[q] if q < meta_end else 0
                if b == 0x18:
                    s0 = payload[q + 1]
                    if s0 < 0x80 and q + 2 == meta_end:
                        size = s0
                    elif q + 3 == meta_end and payload[q + 2] < 0x80:
                        size = (s0 & 0x7F) | (payload[q + 2] << 7)
                if size < 0:
                    single = parse(payload[pos:meta_end])
                    size = single.payload_size
                    body_end = meta_end + size
                    if body_end > end or size < 0:
                        raise ProtocolError(f"message {index} of a batch of {entry.count} overruns its {end} bytes")
                    if index < first or (mask is not None and not (mask >> index) & 1) or single.compacted_out:
                        pos = body_end
                        continue
                    payloads.append(None if single.null_value else payload[meta_end:body_end])
                    keys.append(single.partition_key if single.HasField("partition_key") else None)
                    events.append(single.event_time or entry_event)
                    indexes.append(index)
                    if props is not None:
                        props.append(None)
                    if single.properties:
                        self._set_properties(len(payloads) - 1, {kv.key: kv.value for kv in single.properties})
                        props = self.properties
                    pos = body_end
                    continue
                body_end = meta_end + size
                if body_end > end:
                    raise ProtocolError(f"message {index} of a batch of {entry.count} overruns its {end} bytes")
                if index < first or (mask is not None and not (mask >> index) & 1):
                    pos = body_end
                    continue
                payloads.append(payload[meta_end:body_end])
                keys.append(key)
                events.append(entry_event)
                indexes.append(index)
                if props is not None:
                    props.append(None)
                pos = body_end
        except (struct.error, IndexError, UnicodeDecodeError) as exc:
            raise ProtocolError(f"malformed batch of {entry.count} messages: {exc}") from None
        if stop == entry.count and pos != end:
            raise ProtocolError(f"{end - pos} bytes left over after the {entry.count} messages of a batch")
        return len(payloads) - start_rows


__all__ = ["ColumnEntry", "MessageColumns"]
