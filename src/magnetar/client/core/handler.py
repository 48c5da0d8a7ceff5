"""What producers and consumers share about their connection: registration and reconnection.

As in the Java client, two pieces: :class:`HandlerState` (Java's ``HandlerState``), the base of
every handle (producer, consumer, bulk entry reader), holds what the handle's own hot paths read
(its client, topic, name, the connection it is registered on, whether it is closed) and its
tasks; :class:`ConnectionHandler` (Java's ``ConnectionHandler``), an object each handle holds,
keeps it on a live connection: when the connection is lost or the broker closes the handle, it
registers the handle again (``_connect``, which the handle implements: :class:`Registrant`) with
exponential backoff, until it succeeds, the handle is closed, or the handle gives up on an error.
:class:`ClientContext` is what handles need of their client, so that they do not import it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, Protocol

from magnetar.client.api.config import ProducerConfig
from magnetar.client.core.connection import ClientConnection
from magnetar.client.core.lookup import LookupService
from magnetar.client.core.trackers import Backoff
from magnetar.client.exceptions import AlreadyClosed, PulsarError

log = logging.getLogger("magnetar.client")

#: first and longest delay between two reconnection attempts, in seconds (as the Java and C++
#: clients: the first attempt is made at once, the next after 100 ms, doubling up to 60 s)
RECONNECT_BACKOFF = (0.1, 60.0)


class ClientContext(Protocol):
    """What a producer or consumer uses of its client (``AsyncClient`` is one)."""

    lookup: LookupService
    operation_timeout: float
    #: seconds between two lookups of a partitioned topic's partitions (0: never again)
    partitions_update_interval: float

    async def _new_producer(self, topic: str, config: ProducerConfig) -> Any:
        """A producer not closed with the client (dead letter and retry producers)."""
        ...


class Registrant(Protocol):
    """What a :class:`ConnectionHandler` asks of the handle it keeps registered."""

    kind: str
    name: str
    topic: str
    #: whether close() (or unsubscribe()) was called
    _closed: bool

    async def _connect(self) -> None:
        """Register on a connection to the topic's broker (raises PulsarError on failure)."""
        ...

    def _reconnect_scheduled(self) -> None:
        """Called once when a reconnection starts."""
        ...

    def _before_reconnect_attempt(self) -> None:
        """Called before each attempt to register again."""
        ...

    async def _close_on_broker(self) -> None:
        """Tell the broker the handle is closed (CLOSE_PRODUCER / CLOSE_CONSUMER on its connection)."""
        ...

    def _gives_up_on(self, exc: PulsarError) -> bool:
        """Whether ``exc`` ends the reconnection for good (the handle has then failed itself)."""
        ...

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` as a task of the handle (cancelled by its close())."""
        ...


class ConnectionHandler:
    """Keeps one handle registered: schedules and runs its re-registrations, with backoff."""

    __slots__ = ("_handle", "reconnecting")

    def __init__(self, handle: Registrant) -> None:
        self._handle = handle
        #: a re-registration is scheduled or under way
        self.reconnecting = False

    def schedule(self) -> None:
        """Register the handle again (once: a reconnection under way covers later calls)."""
        handle = self._handle
        if handle._closed or self.reconnecting:
            return
        self.reconnecting = True
        handle._reconnect_scheduled()
        handle._spawn(self._reconnect())

    async def _reconnect(self) -> None:
        handle = self._handle
        backoff = Backoff(*RECONNECT_BACKOFF)
        try:
            while not handle._closed:
                try:
                    handle._before_reconnect_attempt()
                    await handle._connect()
                    if handle._closed:  # closed while registering again: the broker must forget it too
                        await handle._close_on_broker()
                    return
                except PulsarError as exc:
                    if handle._gives_up_on(exc):
                        return
                    delay = backoff.next()
                    log.info("%s %s: registering again on %s failed (%s), retrying in %.1f s",
                             handle.kind, handle.name, handle.topic, exc, delay)
                await asyncio.sleep(delay)
        finally:
            self.reconnecting = False


class HandlerState:
    """Base of producers, consumers and entry readers: their client, topic, name, the connection they
    are registered on, whether they are closed, and their tasks; the hooks their
    :class:`ConnectionHandler` (``self.connection_handler``) calls."""

    #: "producer" or "consumer", for messages
    kind = "handle"

    def __init__(self, client: ClientContext, topic: str) -> None:
        self.client = client
        self.topic = topic
        self.name = ""
        self.conn: ClientConnection | None = None
        self._closed = False
        self._tasks: set[asyncio.Task] = set()
        self.connection_handler = ConnectionHandler(self)

    # -- what subclasses provide ---------------------------------------------------------------
    async def _connect(self) -> None:
        """Register on a connection to the topic's broker (raises PulsarError on failure)."""
        raise NotImplementedError

    def _reconnect_scheduled(self) -> None:
        """Called once when a reconnection starts."""

    def _before_reconnect_attempt(self) -> None:
        """Called before each attempt to register again."""

    async def _close_on_broker(self) -> None:
        """Tell the broker the handle is closed (CLOSE_PRODUCER / CLOSE_CONSUMER on its connection)."""

    def _gives_up_on(self, exc: PulsarError) -> bool:
        """Whether ``exc`` ends the reconnection for good (the subclass has then failed itself)."""
        return False

    # -- state ---------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        """Whether close() (or unsubscribe()) was called."""
        return self._closed

    def is_connected(self) -> bool:
        """Whether the handle is registered on a live connection."""
        return (not self._closed and self.conn is not None and not self.conn.closed
                and not self.connection_handler.reconnecting)

    def _require_conn(self) -> ClientConnection:
        if self._closed:
            raise AlreadyClosed(f"{self.kind} {self.name} on {self.topic} is closed")
        if self.conn is None or self.conn.closed:
            raise AlreadyClosed(f"{self.kind} {self.name} on {self.topic} is not connected")
        return self.conn

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` as a task of this handle (cancelled by close())."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- broker and connection events ------------------------------------------------------------
    def on_closed_by_broker(self) -> None:
        """CLOSE_PRODUCER / CLOSE_CONSUMER (fencing, unload, seek): register again."""
        self.connection_handler.schedule()

    def on_connection_lost(self, conn: ClientConnection) -> None:
        """The connection went away: register again on a new one."""
        if conn is self.conn:
            self.connection_handler.schedule()
