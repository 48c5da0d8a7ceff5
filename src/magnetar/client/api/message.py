"""Messages and message ids as the client hands them to applications."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from functools import total_ordering
from itertools import groupby
from operator import attrgetter
from typing import Any

from magnetar.client.api.crypto import EncryptionContext, context_of
from magnetar.protocol.batch_reading import EMPTY_SINGLE
from magnetar.protocol.schema import MessageIdData, MessageMetadata, SingleMessageMetadata

_U64 = (1 << 64) - 1
_I64_MAX = (1 << 63) - 1


def _signed(value: int) -> int:
    return value - (1 << 64) if value > _I64_MAX else value


class IdPart(int):
    """A part of a message id (ledger id, entry id, batch index, partition): an int that can also
    be called, so that magnetar's ``msg_id.ledger_id`` and the official client's
    ``msg_id.ledger_id()`` both read it. Arithmetic on it gives plain ints."""

    __slots__ = ()

    def __call__(self) -> int:
        return int(self)


#: the parts -1 .. 4094 (batch indexes, partitions), made once
_SMALL_PARTS = tuple(IdPart(i) for i in range(-1, 4095))
#: ``BATCH_INDEXES[i]`` is ``id_part(i)`` for the batch indexes 0 .. 4093 (hot loops index it directly)
BATCH_INDEXES = _SMALL_PARTS[1:-1]


def id_part(value: int) -> IdPart:
    """``value`` as an IdPart (small values come from a table: the hot paths call this per message)."""
    if -1 <= value < 4094:
        return _SMALL_PARTS[value + 1]
    return IdPart(value)


@total_ordering
class MessageId:
    """Position of a message: (ledger, entry, batch index) plus its partition.

    Ordered by (ledger id, entry id, batch index); ``MessageId.earliest`` and
    ``MessageId.latest`` are the positions before the first and after the last message. The
    parts read as attributes (``mid.ledger_id``) or, as in the official client, as calls
    (``mid.ledger_id()``): see :class:`IdPart`.
    """

    __slots__ = ("ledger_id", "entry_id", "batch_index", "partition", "batch_size", "topic", "_chunk_ids")

    earliest: MessageId
    latest: MessageId
    #: an id belongs to no received entry (a Message's ``_ctx``): read where messages and ids are
    #: grouped by entry in one pass (``AsyncConsumer.acknowledge_many``)
    _ctx = None

    def __init__(
        self,
        ledger_id: int,
        entry_id: int,
        batch_index: int = -1,
        partition: int = -1,
        batch_size: int = 0,
        topic: str | None = None,
    ) -> None:
        self.ledger_id = IdPart(_signed(ledger_id))
        self.entry_id = IdPart(_signed(entry_id))
        self.batch_index = id_part(batch_index)
        self.partition = id_part(partition)
        self.batch_size = batch_size
        self.topic = topic
        self._chunk_ids: list[MessageId] | None = None

    def _key(self) -> tuple[int, int, int]:
        return (self.ledger_id, self.entry_id, self.batch_index)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MessageId):
            return NotImplemented
        return self._key() == other._key() and self.partition == other.partition

    def __lt__(self, other: MessageId) -> bool:
        return (self.partition, *self._key()) < (other.partition, *other._key())

    def __hash__(self) -> int:
        return hash((self.ledger_id, self.entry_id, self.batch_index, self.partition))

    def __repr__(self) -> str:
        return f"MessageId({self.ledger_id}:{self.entry_id}:{self.partition}:{self.batch_index})"

    def __str__(self) -> str:
        return f"({self.ledger_id},{self.entry_id},{self.partition},{self.batch_index})"

    def to_proto(self) -> MessageIdData:
        """The wire form of this id."""
        data = MessageIdData(ledger_id=self.ledger_id & _U64, entry_id=self.entry_id & _U64)
        if self.partition >= 0:
            data.partition = self.partition
        if self.batch_index >= 0:
            data.batch_index = self.batch_index
        if self.batch_size:
            data.batch_size = self.batch_size
        return data

    @classmethod
    def from_proto(cls, data: MessageIdData, topic: str | None = None) -> MessageId:
        """Build from the wire form."""
        return cls(data.ledger_id, data.entry_id, data.batch_index, data.partition, data.batch_size, topic)

    def serialize(self) -> bytes:
        """Bytes that :meth:`deserialize` turns back into an equal id."""
        return self.to_proto().SerializeToString()

    @classmethod
    def deserialize(cls, message_id_bytes: bytes, topic: str | None = None) -> MessageId:
        """Inverse of :meth:`serialize`."""
        return cls.from_proto(MessageIdData.FromString(message_id_bytes), topic)

    @classmethod
    def wrap(cls, msg_id: MessageId) -> MessageId:
        """``msg_id`` itself: the official client wraps its C++ extension's ids with this; magnetar's
        ids need no wrapping, so code that wraps them runs unchanged."""
        if not isinstance(msg_id, MessageId):
            raise TypeError(f"MessageId.wrap needs a MessageId, not {type(msg_id).__name__}")
        return msg_id

    def ledger_entry(self) -> tuple[int, int]:
        """(ledger id, entry id): the stored entry this message belongs to."""
        return (self.ledger_id, self.entry_id)

    def chunk_entries(self) -> list[tuple[int, int]]:
        """Entries of every chunk of a chunked message (first to last; this id is the last's);
        just this id's entry otherwise."""
        return list(self._chunk_ids) if self._chunk_ids else [(self.ledger_id, self.entry_id)]

    def is_chunked(self) -> bool:
        """Whether this is the id of a message sent in several chunks."""
        return bool(self._chunk_ids)

    def first_chunk_message_id(self) -> MessageId:
        """Id of the first chunk of a chunked message (this id otherwise)."""
        if not self._chunk_ids:
            return self
        ledger_id, entry_id = self._chunk_ids[0]
        return MessageId(ledger_id, entry_id, -1, self.partition, 0, self.topic)

    def java_str(self) -> str:
        """The Java client's text form, ``ledger:entry:partition[:batch]`` (used in dead letter properties)."""
        base = f"{self.ledger_id}:{self.entry_id}:{self.partition}"
        return f"{base}:{self.batch_index}" if self.batch_index >= 0 else base


_new = object.__new__


def fast_message_id(
    ledger_id: IdPart, entry_id: IdPart, batch_index: IdPart, partition: IdPart, batch_size: int, topic: str | None
) -> MessageId:
    """A MessageId from parts already signed and made IdParts (a hot path: no conversions, no checks)."""
    mid = _new(MessageId)
    mid.ledger_id = ledger_id
    mid.entry_id = entry_id
    mid.batch_index = batch_index
    mid.partition = partition
    mid.batch_size = batch_size
    mid.topic = topic
    mid._chunk_ids = None
    return mid


class SchemaVersion(bytes):
    """A schema version as messages carry it (8 bytes, big-endian; b'' for none). The official
    client hands it out as a str, which code turns into bytes with ``.encode()``: here that gives
    the same bytes."""

    __slots__ = ()

    def encode(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
        """These bytes (as plain bytes)."""
        return bytes(self)

    def number(self) -> int | None:
        """The version as a number (None when the message has none)."""
        return int.from_bytes(self, "big", signed=True) if len(self) == 8 else None


_NO_SCHEMA_VERSION = SchemaVersion()
_NO_BATCH_INDEX = id_part(-1)
MessageId.earliest = MessageId(-1, -1)
MessageId.latest = MessageId(_I64_MAX, _I64_MAX)


class MessageEntry:
    """What the messages opened from one entry share: the entry's MessageMetadata (kept serialized
    as bytes until first asked for), where it is (``ledger``, an IdPart, and ``entry``, an int,
    both signed), its topic, redelivery count, the schema that decodes its payloads and the
    (single-topic) consumer core that received it (None for a message made by hand).

    One object per entry, referenced by each of its messages: a batch's messages set a handful of
    their own slots instead of a dozen (the consumer's hot loop), and read the rest through it.
    Never modified once its messages are handed out, except ``meta`` parsed in place
    (``Message._metadata``).
    """

    __slots__ = ("meta", "ledger", "entry", "topic", "redelivery_count", "schema", "consumer")

    def __init__(
        self, meta: MessageMetadata | bytes, ledger: int, entry: int, topic: str, redelivery_count: int = 0,
        schema: Any = None, consumer: Any = None,
    ) -> None:
        self.meta = meta
        self.ledger = IdPart(ledger)
        self.entry = entry
        self.topic = topic
        self.redelivery_count = redelivery_count
        self.schema = schema
        self.consumer = consumer


class UniformEntry(MessageEntry):
    """The entry of a uniform batch (:mod:`magnetar.protocol.uniform_batch`): besides what every
    entry's messages share, where their payloads lie in the bytes received (``source``): message
    ``i``'s is ``size`` bytes at ``first + i * stride``. Its messages are :class:`UniformMessage`."""

    __slots__ = ("source", "first", "stride", "size")


def message_entry(
    meta: MessageMetadata | bytes, ledger: IdPart, entry: int, topic: str, redelivery_count: int, schema: Any,
    consumer: Any,
) -> MessageEntry:
    """A MessageEntry from parts already signed (``ledger`` an IdPart): the consumer's hot path."""
    ctx = _new(MessageEntry)
    ctx.meta = meta
    ctx.ledger = ledger
    ctx.entry = entry
    ctx.topic = topic
    ctx.redelivery_count = redelivery_count
    ctx.schema = schema
    ctx.consumer = consumer
    return ctx


class Message:
    """A received message: payload, metadata accessors and its id.

    What the messages of one entry share is in their :class:`MessageEntry` (``_ctx``); a message
    keeps its own payload (``_payload``), batch index (``_index``, an IdPart; None for a message
    of its own entry) and SingleMessageMetadata (``_single``: None for a message of its own entry,
    possibly kept serialized as bytes and parsed on first use). Its id (``_mid``) may be made on
    first use, the decoded value (``_value``) and the properties (``_props``) are not set until
    first asked for.
    """

    __slots__ = ("_payload", "_single", "_index", "_mid", "_ctx", "_value", "_props")

    def __init__(
        self,
        payload: bytes,
        meta: MessageMetadata | bytes,
        single: SingleMessageMetadata | bytes | None,
        message_id: MessageId,
        topic: str,
        redelivery_count: int = 0,
        schema: Any = None,
    ) -> None:
        self._payload = payload
        self._single = single
        self._mid: MessageId | None = message_id
        self._index = message_id.batch_index if message_id.batch_index >= 0 else None
        self._ctx = MessageEntry(meta, message_id.ledger_id, int(message_id.entry_id), topic, redelivery_count, schema)

    @property
    def _id(self) -> MessageId:
        """This message's id. A message may come without one (``_mid`` None): its entry says where
        it is, ``_index`` its batch index, and the id is made on first use (an application that
        only acknowledges never needs it)."""
        mid = self._mid
        if mid is None:
            ctx = self._ctx
            index = self._index
            if index is None:
                mid = fast_message_id(
                    ctx.ledger, IdPart(ctx.entry), _NO_BATCH_INDEX, ctx.consumer._partition_part, 0, ctx.topic
                )
            else:  # (a batch's MessageMetadata is kept parsed)
                mid = fast_message_id(
                    ctx.ledger, IdPart(ctx.entry), index, id_part(ctx.consumer.partition),
                    ctx.meta.num_messages_in_batch, ctx.topic,
                )
            self._mid = mid
        return mid

    def _metadata(self) -> MessageMetadata:
        """The entry's MessageMetadata (kept serialized until first asked for)."""
        meta = self._ctx.meta
        if meta.__class__ is bytes:
            meta = self._ctx.meta = MessageMetadata.FromString(meta)
        return meta

    def _single_metadata(self) -> SingleMessageMetadata | None:
        """A batched message's SingleMessageMetadata (kept serialized until first asked for);
        None for a message of its own entry."""
        single = self._single
        if single.__class__ is bytes:
            single = self._single = SingleMessageMetadata.FromString(single)
        return single

    def data(self) -> bytes:
        """The raw payload."""
        return self._payload

    def value(self) -> Any:
        """The payload decoded by the consumer's schema (the bytes without one). A schema with a
        ``decode_message`` (Avro's) decodes the message itself: a payload written with another
        version of the topic's schema is read as that version wrote it."""
        try:
            return self._value
        except AttributeError:
            schema = self._ctx.schema
            if schema is None:
                value = self._payload
            else:
                decode_message = getattr(schema, "decode_message", None)
                value = schema.decode(self._payload) if decode_message is None else decode_message(self)
            self._value = value
            return value

    def properties(self) -> dict[str, str]:
        """Application properties."""
        try:
            return self._props
        except AttributeError:
            single = self._single_metadata()
            source = single.properties if single is not None else self._metadata().properties
            props = self._props = {kv.key: kv.value for kv in source} if source else {}
            return props

    def partition_key(self) -> str:
        """The message key ('' when none)."""
        single = self._single_metadata()
        if single is not None:
            return single.partition_key
        return self._metadata().partition_key

    def key_bytes(self) -> bytes | None:
        """The key as bytes (Java's ``getKeyBytes``): base64-decoded when the producer marked it so
        (a KeyValue SEPARATED key), else its UTF-8; None without a key or with a null key."""
        single = self._single_metadata()
        src = single if single is not None else self._metadata()
        if src.null_partition_key or not src.HasField("partition_key"):
            return None
        if src.partition_key_b64_encoded:
            return base64.b64decode(src.partition_key)
        return src.partition_key.encode("utf-8")

    def has_key(self) -> bool:
        """Whether the message has a key."""
        single = self._single_metadata()
        src = single if single is not None else self._metadata()
        return src.HasField("partition_key")

    def ordering_key(self) -> str:
        """The ordering key ('' when none) as text, the official client's type; bytes that are not
        UTF-8 come back surrogate-escaped, which a producer encodes to the same bytes again."""
        single = self._single_metadata()
        if single is not None and single.HasField("ordering_key"):
            key = single.ordering_key
        else:
            key = self._metadata().ordering_key
        return key.decode("utf-8", "surrogateescape")

    def publish_timestamp(self) -> int:
        """Publish time in milliseconds since the epoch."""
        return self._metadata().publish_time

    def event_timestamp(self) -> int:
        """Event time in milliseconds (0 when not set)."""
        single = self._single_metadata()
        if single is not None and single.event_time:
            return single.event_time
        return self._metadata().event_time

    def message_id(self) -> MessageId:
        """This message's id."""
        return self._id

    def topic_name(self) -> str:
        """The topic (partition) the message came from."""
        return self._ctx.topic

    def redelivery_count(self) -> int:
        """How many times the broker redelivered this message."""
        return self._ctx.redelivery_count

    def schema_version(self) -> SchemaVersion:
        """Version of the schema the producer used (b'' when none)."""
        version = self._metadata().schema_version
        return SchemaVersion(version) if version else _NO_SCHEMA_VERSION

    def producer_name(self) -> str:
        """Name of the producer that published the message."""
        return self._metadata().producer_name

    def sequence_id(self) -> int:
        """Producer sequence id of the message."""
        single = self._single_metadata()
        if single is not None and single.HasField("sequence_id"):
            return single.sequence_id
        base = self._metadata().sequence_id
        index = self._index  # (None: a message of its own entry)
        return base + index if index is not None and index > 0 else base

    def is_null_value(self) -> bool:
        """Whether this is a tombstone (null value)."""
        single = self._single_metadata()
        return (single.null_value if single is not None else False) or self._metadata().null_value

    def has_null_value(self) -> bool:
        """Same as :meth:`is_null_value` (the official client's name)."""
        return self.is_null_value()

    def encryption_context(self) -> EncryptionContext | None:
        """How the message was encrypted (its payload here decrypted), or None when it was not."""
        return context_of(self._metadata(), decryption_failed=False)

    def size(self) -> int:
        """Payload size in bytes."""
        return len(self._payload)

    def __repr__(self) -> str:
        return f"Message(id={self._id!r}, {len(self._payload)} bytes)"


class PlainMessage(Message):
    """A message of its own entry (no batch, compression, chunks nor encryption) as the consumer's
    hot path opens it: no batch index nor SingleMessageMetadata, as class-level None, so that
    opening one sets two slots fewer. Behaves as :class:`Message` in every other way."""

    __slots__ = ()
    _single = None
    _index = None


class UniformMessage(Message):
    """A message of a uniform batch (equal-size messages with nothing of their own but their
    payload size and sequence id: :mod:`magnetar.protocol.uniform_batch`) as the consumer's hot
    path opens it: its payload stays in the bytes received until asked for, each :meth:`data`
    slicing it from its :class:`UniformEntry` (one copy then, as the official client's ``data()``
    copies the payload out of its batch's buffer on each call), and it has no SingleMessageMetadata
    of its own (class-level EMPTY_SINGLE). Opening one sets three slots (batch index, id, entry).
    A message kept alive keeps those bytes alive (one read from the socket, up to a few hundred
    KiB; the official client's keeps its batch). Behaves as :class:`Message` in every other way."""

    __slots__ = ()
    _single = EMPTY_SINGLE

    @property
    def _payload(self) -> bytes:  # type: ignore[override]
        ctx = self._ctx
        at = ctx.first + self._index * ctx.stride
        return ctx.source[at : at + ctx.size]

    def data(self) -> bytes:
        """The raw payload (a copy of its bytes in the batch received)."""
        ctx = self._ctx
        at = ctx.first + self._index * ctx.stride
        return ctx.source[at : at + ctx.size]

    def size(self) -> int:
        """Payload size in bytes."""
        return self._ctx.size


class EncryptedMessage(Message):
    """A message delivered still encrypted (``ConsumerCryptoFailureAction.CONSUME``): its payload
    is the producer's ciphertext (a whole batch when batched), its context says how to open it."""

    __slots__ = ()

    def encryption_context(self) -> EncryptionContext | None:
        """How the message was encrypted; ``is_decryption_failed()`` is True."""
        return context_of(self._metadata(), decryption_failed=True)


def fast_message(payload: bytes, single: Any, message_id: MessageId, ctx: MessageEntry) -> Message:
    """A Message of the entry ``ctx`` with its id made, without going through __init__."""
    msg = _new(Message)
    msg._payload = payload
    msg._single = single
    msg._index = message_id.batch_index if message_id.batch_index >= 0 else None
    msg._mid = message_id
    msg._ctx = ctx
    return msg


_PAYLOAD = attrgetter("_payload")
_CTX = attrgetter("_ctx")


def payload_bytes(messages: Sequence[Message]) -> int:
    """The payload bytes of ``messages`` together (a counter's sum, without a Python step per
    message: the messages of a uniform batch that follow each other count as one run, their
    payloads not sliced out)."""
    total = 0
    for ctx, run in groupby(messages, _CTX):
        if ctx.__class__ is UniformEntry:
            total += ctx.size * len(list(run))
        else:
            total += sum(map(len, map(_PAYLOAD, run)))
    return total


def publish_time_counts(messages: Sequence[Message]) -> dict[int, int]:
    """How many of ``messages`` have each publish time (ms): the messages of a batch share their
    entry (:class:`MessageEntry`), so it is read once per run of one entry's messages, not per message."""
    counts: dict[int, int] = {}
    entry: Any = None
    first: Message | None = None
    run_start = 0
    for i, message in enumerate(messages):
        ctx = message._ctx
        if ctx is not entry:
            if first is not None:
                published_ms = first.publish_timestamp()
                counts[published_ms] = counts.get(published_ms, 0) + i - run_start
            entry, first, run_start = ctx, message, i
    if first is not None:
        published_ms = first.publish_timestamp()
        counts[published_ms] = counts.get(published_ms, 0) + len(messages) - run_start
    return counts
