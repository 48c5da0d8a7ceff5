"""Whole batches out: a batch entry built by the caller from its rows (:func:`encode_batch_payload`)
and handed to a producer as one send (:func:`send_batch`); the writing half of
:mod:`magnetar.client.bulk`."""

from __future__ import annotations

from collections.abc import Callable

from magnetar.client.api.message import MessageId
from magnetar.client.core.producer import AsyncProducer
from magnetar.client.exceptions import PulsarError
from magnetar.protocol.single_metadata import batched_message_head


def encode_batch_payload(
    payloads: list[bytes | None],
    keys: list[str | None] | None = None,
    properties: list[dict[str, str] | None] | None = None,
    event_times: list[int | None] | None = None,
) -> bytes:
    """The payload of a batch entry holding these messages (None: a null value), as a producer
    would batch them one by one: each message's size prefix, SingleMessageMetadata and payload."""
    parts: list[bytes] = []
    append = parts.append
    heads: dict[tuple[str | None, int], bytes] = {}
    if properties is None and event_times is None and None not in payloads:
        # values and keys only (the common case): one cached head per (key, size)
        for value, key in zip(payloads, keys or [None] * len(payloads), strict=True):
            size = len(value)  # type: ignore[arg-type]
            head = heads.get((key, size))
            if head is None:
                head = heads[(key, size)] = batched_message_head(size, key)
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
                head = heads[(key, size)] = batched_message_head(size, key)
            append(head)
            append(value)
            continue
        body = b"" if value is None else value
        append(batched_message_head(len(body), key, props, event or 0, value is None))
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
