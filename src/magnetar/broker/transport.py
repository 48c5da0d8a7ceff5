"""The seam between the broker's domain and its client sessions.

Topics, subscriptions, dispatchers, producers and consumers never see a connection: they talk
to these narrow interfaces, which the session (:mod:`magnetar.broker.session`) implements.
As in Pulsar's ``TransportCnx`` and ``Topic.PublishContext``:

* a producer holds a :class:`ProducerTransport`: the topic tells it when a queued
  WaitForExclusive producer is ready or refused, and when the broker closes the producer;
* a consumer holds a :class:`ConsumerTransport`: dispatchers hand it MESSAGE frames, ask
  whether it is writable, and tell it about active-consumer changes and broker-side closes;
* every publish carries a :class:`PublishContext`: the topic completes it exactly once
  (``completed``, ``duplicate`` or ``failed``), and the session turns that into a SEND_RECEIPT
  or a SEND_ERROR.

The service sees each connection as a :class:`ClientSession` (limits, keep-alive, backpressure).
This module imports nothing from the broker above it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from magnetar.protocol.enums import ServerError
    from magnetar.storage import Entry


class PublishContext(Protocol):
    """One SEND on its way into a topic; the topic completes it exactly once."""

    #: the producer's sequence id of the (first) message of the entry
    sequence_id: int
    #: the sequence id of the last message of a batch sent with one (0 when not set)
    highest_sequence_id: int
    #: messages in the entry (a batch counts its messages)
    num_messages: int

    def completed(self, ledger_id: int, entry_id: int) -> None:
        """The entry is stored (durably, on a persistent topic) at ``ledger_id:entry_id``."""

    def duplicate(self) -> None:
        """Deduplication recognised the entry as already stored: it was not stored again."""

    def failed(self, code: ServerError, message: str) -> None:
        """The entry was not stored."""


class SessionInfo(Protocol):
    """What the admin API shows of a producer's or consumer's connection."""

    #: the client's address, ``host:port``
    peer: str
    #: the client library's version string from CONNECT
    client_version: str


class ProducerTransport(SessionInfo, Protocol):
    """What the domain asks of the session a producer belongs to."""

    def producer_ready(self, producer_id: int) -> None:
        """A queued WaitForExclusive producer got the topic: complete its PRODUCER request."""

    def producer_refused(self, producer_id: int, reason: str) -> None:
        """A queued WaitForExclusive producer lost its turn (fenced): fail its PRODUCER request."""

    def producer_closed_by_broker(self, producer_id: int) -> None:
        """The broker detached the producer (fencing, termination, quota, deletion): tell the client."""


class ConsumerTransport(SessionInfo, Protocol):
    """What the domain asks of the session a consumer belongs to."""

    #: False while the socket's send buffer is above its high-water mark
    writable: bool

    def send_message(
        self,
        consumer_id: int,
        ledger_id: int,
        partition: int,
        entry: Entry,
        redelivery_count: int,
        ack_set: list[int] | None,
    ) -> None:
        """Send a stored entry verbatim as a MESSAGE frame (``partition`` -1: not a partition)."""

    def send_active_consumer_change(self, consumer_id: int, active: bool) -> None:
        """Tell a Failover consumer whether it is now the active one."""

    def consumer_closed_by_broker(self, consumer_id: int) -> None:
        """The broker detached the consumer (seek, unsubscribe, deletion): tell the client."""

    def reached_end_of_topic(self, consumer_id: int) -> None:
        """The consumer's topic is terminated and it acknowledged everything: REACHED_END_OF_TOPIC."""


class ClientSession(Protocol):
    """What the service sees of one client connection."""

    #: the client's host, for the per-IP connection limit
    peer_host: str
    #: bytes this connection appended that are not durable yet
    pending_publish_bytes: int

    def check_keepalive(self, now: float, interval: float) -> None:
        """Ping a quiet client; close one silent for two intervals."""

    def resume_reading(self) -> None:
        """Read from the socket again (storage caught up with the publishes)."""

    def close(self) -> None:
        """Close the connection after flushing what is queued."""
