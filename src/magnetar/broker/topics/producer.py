"""A producer attached to a topic: identity, access mode, counters and its session."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from magnetar.broker.replication.names import source_cluster
from magnetar.protocol.enums import ProducerAccessMode

if TYPE_CHECKING:
    from magnetar.broker.transport import ProducerTransport, PublishContext


class ProducerTopic(Protocol):
    """What a producer and its session use of the topic it publishes to."""

    name: str
    #: bumped each time a producer takes exclusive access
    topic_epoch: int

    def publish(self, producer: Producer, entry: bytes, crc: int, context: PublishContext) -> bool:
        """Store one entry; True when it was appended and its context completes once durable."""

    def last_sequence_id(self, producer_name: str) -> int:
        """The producer's last stored sequence id under deduplication, else -1."""

    def remove_producer(self, producer: Producer) -> None:
        """Detach a producer."""

    def after_publishes(self, then: Callable[[], None]) -> None:
        """Call ``then`` once every publish accepted so far completed (or failed)."""


class Producer:
    """One PRODUCER registration: (session, producer id) publishing to one topic."""

    __slots__ = (
        "connection",
        "producer_id",
        "name",
        "topic",
        "access_mode",
        "user_provided_name",
        "closed",
        "msg_in_counter",
        "bytes_in_counter",
        "connected_since",
        "metadata",
        "request_id",
        "topic_epoch",
        "schema_version",
        "remote_cluster",
    )

    def __init__(
        self,
        connection: ProducerTransport,
        producer_id: int,
        name: str,
        topic: ProducerTopic,
        access_mode: ProducerAccessMode,
        user_provided_name: bool,
        metadata: dict[str, str] | None = None,
        request_id: int = 0,
        topic_epoch: int | None = None,
    ) -> None:
        #: the session this producer's client is connected through
        self.connection = connection
        self.producer_id = producer_id
        self.name = name
        self.topic = topic
        self.access_mode = access_mode
        self.user_provided_name = user_provided_name
        self.closed = False
        self.msg_in_counter = 0
        self.bytes_in_counter = 0
        self.connected_since = time.time()
        self.metadata = metadata or {}
        #: the PRODUCER request, answered again when a waiting producer becomes ready
        self.request_id = request_id
        #: the topic epoch the client last held (set on reconnection of an exclusive producer)
        self.topic_epoch = topic_epoch
        #: the schema version this producer publishes with (None: no schema)
        self.schema_version: int | None = None
        #: for a replicator of another cluster (``pulsar.repl.<cluster>-->...``): that cluster
        self.remote_cluster = source_cluster(name)

    def close_by_broker(self) -> None:
        """Detach the producer from its topic and tell its client (fencing, termination, quota, deletion)."""
        self.topic.remove_producer(self)
        self.connection.producer_closed_by_broker(self.producer_id)

    def refuse(self, reason: str) -> None:
        """A queued WaitForExclusive producer lost its turn: it is closed, its request fails."""
        self.closed = True
        self.connection.producer_refused(self.producer_id, reason)

    def became_ready(self) -> None:
        """A queued WaitForExclusive producer now holds the topic: its request succeeds."""
        self.connection.producer_ready(self.producer_id)

    def __repr__(self) -> str:
        return f"Producer({self.name!r} id={self.producer_id} on {self.topic.name})"
