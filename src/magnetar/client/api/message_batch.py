"""``MessageBatch``: the messages of a batch payload, as the official client's ``pulsar.MessageBatch``.

A batch payload (uncompressed) is what a producer puts into one entry: for each message
``[u32 size][SingleMessageMetadata][payload]``. Tools that read entries themselves (a raw reader, a
function runtime, a bulk export) parse one with ``MessageBatch().with_message_id(entry_id)
.parse_from(payload, count)``: each message has its payload and per-message metadata (properties,
key, ordering key, event time, sequence id, null value) and the id of its entry with its batch
index. A payload that does not hold exactly ``count`` messages raises ValueError (the official
client does not check).
"""

from __future__ import annotations

from magnetar.client.api.arguments import check_type
from magnetar.client.api.message import Message, MessageId
from magnetar.protocol.batch import decode_batch
from magnetar.protocol.framing import ProtocolError
from magnetar.protocol.schema import MessageMetadata

#: the id the messages of a batch parsed without :meth:`MessageBatch.with_message_id` get (the official client's)
_NO_ID = MessageId(-1, -1)


class MessageBatch:
    """Builds the messages of a batch payload: ``MessageBatch().with_message_id(mid).parse_from(data, size)``."""

    def __init__(self) -> None:
        self._message_id = _NO_ID

    def with_message_id(self, msg_id: MessageId) -> MessageBatch:
        """Give the parsed messages the ledger, entry and partition of ``msg_id`` (the entry's id)."""
        if not isinstance(msg_id, MessageId):
            raise TypeError("unknown message id type")
        self._message_id = msg_id
        return self

    def parse_from(self, data: bytes, size: int) -> list[Message]:
        """The ``size`` messages of the uncompressed batch payload ``data``, in order."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"MessageBatch.parse_from needs the payload as bytes, not {type(data).__name__}")
        check_type(size, int, "size")
        try:
            parts = decode_batch(data, size)
        except ProtocolError as exc:
            raise ValueError(f"not a batch of {size} messages: {exc}") from None
        base = self._message_id
        entry = MessageMetadata(num_messages_in_batch=size)
        return [
            Message(payload, entry, single,
                    MessageId(base.ledger_id, base.entry_id, index, base.partition, size, base.topic), base.topic or "")
            for index, (single, payload) in enumerate(parts)
        ]


__all__ = ["MessageBatch"]
