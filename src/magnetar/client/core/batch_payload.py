"""Whole batches out: a batch entry built by the caller from its rows (:func:`encode_batch_payload`)
and handed to a producer as one send (:func:`send_batch`); the writing half of
:mod:`magnetar.client.bulk`."""

from __future__ import annotations

import struct
from collections.abc import Callable

from magnetar.client.api.message import MessageId
from magnetar.client.core.producer import AsyncProducer
from magnetar.client.exceptions import PulsarError
from magnetar.protocol.varint import SMALL_VARINTS, encode_varint

_U32 = struct.Struct(">I")


def _len_prefixed(tag: bytes, data: bytes) -> bytes:
    n = len(data)
    return tag + (SMALL_VARINTS[n] if n < 16384 else encode_varint(n)) + data


def encode_batch_payload(
    payloads: list[bytes | None],
    keys: list[str | None] | None = None,
    properties: list[dict[str, str] | None] | None = None,
    event_times: list[int | None] | None = None,
) -> bytes:
    """The payload of a batch entry holding these messages (None: a null value), as a producer
    would batch them one by one: each message's size prefix, SingleMessageMetadata and payload."""
    pack = _U32.pack
    varints = SMALL_VARINTS
    parts: list[bytes] = []
    append = parts.append
    heads: dict[tuple[str | None, int], bytes] = {}
    if properties is None and event_times is None and None not in payloads:
        # values and keys only (the common case): one cached head per (key, size)
        for value, key in zip(payloads, keys or [None] * len(payloads), strict=True):
            size = len(value)  # type: ignore[arg-type]
            head = heads.get((key, size))
            if head is None:
                single = (b"" if key is None else _len_prefixed(b"\x12", key.encode())) + b"\x18" + (
                    varints[size] if size < 16384 else encode_varint(size))
                head = heads[(key, size)] = pack(len(single)) + single
            append(head)
            append(value)  # type: ignore[arg-type]
        return b"".join(parts)
    for i, value in enumerate(payloads):
        key = None if keys is None else keys[i]
        props = None if properties is None else properties[i]
        event = None if event_times is None else event_times[i]
        if value is not None and not props and not event:
            size = len(value)
            head = heads.get((key, size))
            if head is None:
                single = (b"" if key is None else _len_prefixed(b"\x12", key.encode())) + b"\x18" + (
                    varints[size] if size < 16384 else encode_varint(size))
                head = heads[(key, size)] = pack(len(single)) + single
            append(head)
            append(value)
            continue
        body = b"" if value is None else value
        single = b""
        if props:
            single = b"".join(_len_prefixed(b"\x0a", _len_prefixed(b"\x0a", k.encode()) + _len_prefixed(b"\x12", v.encode()))
                              for k, v in props.items())
        if key is not None:
            single += _len_prefixed(b"\x12", key.encode())
        single += b"\x18" + encode_varint(len(body))
        if event:
            single += b"\x28" + encode_varint(event)
        if value is None:
            single += b"\x48\x01"
        append(pack(len(single)))
        append(single)
        append(body)
    return b"".join(parts)


def send_batch(
    producer: AsyncProducer,
    payload: bytes,
    count: int,
    first_sequence_id: int,
    last_sequence_id: int,
    callback: Callable[[PulsarError | None, MessageId | None], None] | None,
    txn: tuple[int, int] | None = None,
) -> None:
    """(the client's loop) Send ``count`` messages, already encoded as one batch payload
    (:func:`encode_batch_payload`), as one entry with these sequence ids; ``callback(error,
    message_id)`` runs once for the whole batch (the id of its first message); ``txn``: the id of
    the transaction it belongs to (:meth:`AsyncTransaction.register_partition` first)."""
    producer.send_batch(payload, count, first_sequence_id, last_sequence_id, callback, txn)


__all__ = ["encode_batch_payload", "send_batch"]
