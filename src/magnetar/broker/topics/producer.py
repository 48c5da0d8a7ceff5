"""A producer attached to a topic: identity, access mode and counters."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from magnetar.protocol.enums import ProducerAccessMode

if TYPE_CHECKING:
    from magnetar.broker.session.connection import ServerConnection
    from magnetar.broker.topics.persistent import Topic


class Producer:
    """One PRODUCER registration: (connection, producer id) publishing to one topic."""

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
    )

    def __init__(
        self,
        connection: ServerConnection,
        producer_id: int,
        name: str,
        topic: Topic,
        access_mode: ProducerAccessMode,
        user_provided_name: bool,
        metadata: dict[str, str] | None = None,
        request_id: int = 0,
        topic_epoch: int | None = None,
    ) -> None:
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

    def __repr__(self) -> str:
        return f"Producer({self.name!r} id={self.producer_id} on {self.topic.name})"
