"""One replicator: a source topic's entries, through its durable cursor ``pulsar.repl.<remote>``,
to the same topic on one remote cluster (Pulsar's GeoPersistentReplicator).

The cursor is a subscription of the topic (:class:`ReplicatorCursor`): persisted, restored at load
and counted in trimming like any durable subscription, so nothing is trimmed before the remote has
stored it; no consumer can attach to it (the name is reserved). The replicator reads entries the way
dispatchers read them (the cursor's read position, the ledger's cache and files), skips what must not
go (entries that arrived by replication, ``replicate_to`` lists without the remote), rewrites each
entry's metadata (``replicated_from``, the remote's schema version) and sends it whole, with the
original producer's sequence ids, so the remote's deduplication drops what a crash makes us send
twice. An entry is acknowledged on the cursor only once the remote's receipt came back. When the
remote is unreachable the replicator retries with backoff; the backlog grows meanwhile and drains
when the remote is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from magnetar.broker.policies.rate_limits import DispatchThrottle, RateLimiter, dispatch_throttle, refreshed
from magnetar.broker.replication.credentials import ClientCredentials
from magnetar.broker.replication.names import producer_name
from magnetar.broker.replication.outbound import (
    OutboundProducer,
    RemoteConnection,
    RemoteError,
    connect_for_topic,
)
from magnetar.broker.schemas.registry import type_to_wire
from magnetar.broker.subscriptions.subscription import Subscription
from magnetar.protocol.enums import MarkerType
from magnetar.protocol.framing import ProtocolError, split_entry
from magnetar.protocol.schema import MessageMetadata, Schema

if TYPE_CHECKING:
    import ssl

    from magnetar.broker.topics.persistent import PersistentTopic
    from magnetar.storage import Entry, ManagedCursor

log = logging.getLogger("magnetar.broker.replication")

#: entries read at once, and SENDs in flight at most
READ_BATCH = 100
MAX_IN_FLIGHT = 1000
#: reconnection backoff: first delay, longest delay (seconds)
BACKOFF_FIRST = 0.1
BACKOFF_MAX = 30.0
#: rates are measured over this many seconds
RATE_WINDOW = 10.0
_U32 = struct.Struct(">I")
_TXN_MARKERS = frozenset({MarkerType.TXN_COMMITTING, MarkerType.TXN_COMMIT, MarkerType.TXN_ABORT})
#: ``(source cluster, entry id, marker type, payload)``
MarkerHandler = Callable[[str, int, int, bytes], None]


@dataclass(frozen=True)
class RemoteCluster:
    """A remote cluster as a replicator reaches it (from its ClusterData)."""

    name: str
    #: pulsar:// or pulsar+ssl:// URL of its brokers
    service_url: str
    #: http(s):// URL of its admin API ("" when unknown: partitioned topics are not created there)
    http_url: str
    credentials: ClientCredentials
    tls: ssl.SSLContext | None = None


class ReplicatorCursor(Subscription):
    """The durable cursor of a replicator, among the topic's subscriptions; new entries wake the replicator."""

    reads_without_consumers = True

    def __init__(self, topic: PersistentTopic, name: str, cursor: ManagedCursor, replicator: Replicator) -> None:
        super().__init__(topic, name, cursor)
        self.replicator = replicator

    def schedule_dispatch(self) -> None:
        """New entries are readable (or the cursor moved): let the replicator send them."""
        self.replicator.wake()


@dataclass
class _Sent:
    """An entry sent to the remote, until its receipt."""

    entry_id: int
    messages: int
    size: int
    publish_time: int


class Replicator:
    """Replicates one topic to one remote cluster."""

    def __init__(self, topic: PersistentTopic, local: str, remote: RemoteCluster, cursor: ManagedCursor,
                 schemas: Any, on_marker: MarkerHandler | None = None) -> None:
        self.topic = topic
        #: ``on_marker(source, entry id, marker type, payload)``: a marker that came from this remote
        self._on_marker = on_marker
        self.local = local
        self.remote = remote
        self.subscription = ReplicatorCursor(topic, cursor.name, cursor, self)
        #: the broker's TopicSchemas (local versions of the schemas entries refer to)
        self._schemas = schemas
        self.producer: OutboundProducer | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        #: local schema version -> the remote's version bytes (for the current connection)
        self._schema_versions: dict[bytes, bytes] = {}
        self.msg_out_counter = 0
        self.bytes_out_counter = 0
        self.connected_since: float | None = None
        self._samples: deque[tuple[float, int, int]] = deque()
        self.last_error = ""
        #: the replicator dispatch rate's limiter and throttle (None: no limit)
        self._limiter: RateLimiter | None = None
        self._throttle: DispatchThrottle | None = None

    @property
    def cursor(self) -> ManagedCursor:
        """The replicator's durable cursor."""
        return self.subscription.cursor

    @property
    def connected(self) -> bool:
        """Whether the producer on the remote is open."""
        return self.producer is not None and not self.producer.closed

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Start replicating (in a task of the running loop)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"replicator {self.topic.name}")

    async def stop(self) -> None:
        """Stop replicating; what was sent and not receipted goes again next time."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._drop_producer()

    def wake(self) -> None:
        """Something changed (entries, receipts, the connection): the sending loop looks again."""
        self._wake.set()

    async def _run(self) -> None:
        backoff = BACKOFF_FIRST
        while True:
            try:
                await self._open()
                backoff = BACKOFF_FIRST
                await self._pump()
            except asyncio.CancelledError:
                raise
            except (OSError, RemoteError, TimeoutError) as exc:
                self.last_error = str(exc)
                log.info("replicator %s -> %s: %s (retry in %.1f s)", self.topic.name, self.remote.name, exc, backoff)
            except Exception:
                log.exception("replicator %s -> %s failed", self.topic.name, self.remote.name)
            self._drop_producer()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)

    async def _open(self) -> None:
        """Connect to the remote broker serving the topic and open the replicator's producer there."""
        topic = self.topic.name
        remote = self.remote
        conn: RemoteConnection = await connect_for_topic(remote.service_url, topic, remote.credentials, remote.tls)
        producer = OutboundProducer(conn, topic, producer_name(self.local, remote.name), self._receipt, self._lost)
        try:
            await producer.open()
        except BaseException:
            conn.abort()
            raise
        self.producer = producer
        self._schema_versions = {}
        self.connected_since = time.time()
        self.last_error = ""
        log.info("replicator %s -> %s connected", topic, remote.name)

    def _drop_producer(self) -> None:
        producer, self.producer = self.producer, None
        self.connected_since = None
        if producer is not None:
            producer.close()
        # what was read and not receipted is read again from the first entry not acknowledged
        cursor = self.cursor
        cursor.rewind_to(cursor.first_unacked())

    def _lost(self, reason: str) -> None:
        log.info("replicator %s -> %s disconnected: %s", self.topic.name, self.remote.name, reason)
        self.last_error = reason
        self.wake()

    # -- sending ---------------------------------------------------------------------------
    async def _pump(self) -> None:
        """Send entries as they become readable until the producer is gone."""
        while self.connected:
            producer = self.producer
            assert producer is not None
            self._wake.clear()
            if producer.in_flight >= MAX_IN_FLIGHT:
                await self._wake.wait()
                continue
            count = min(READ_BATCH, MAX_IN_FLIGHT - producer.in_flight)
            throttle = self._rate_throttle()
            if throttle is not None and not (count := throttle.allowed(count, self.wake)):
                await self._wake.wait()  # the replicator dispatch rate is used up until it refills
                continue
            entries = self.cursor.read_entries(count, self.topic.last_readable_id)
            if not entries:
                await self._wake.wait()
                continue
            if throttle is not None:
                throttle.consume(len(entries), sum(len(e.data) for e in entries))
            for entry in entries:
                if not self.connected:
                    return
                await self._replicate(entry)
            await asyncio.sleep(0)

    def _rate_throttle(self) -> DispatchThrottle | None:
        """The throttle of the replicator dispatch rate in force (None: no limit)."""
        self._limiter = refreshed(self._limiter, self.topic.policies.rates.replicator_dispatch)
        self._throttle = dispatch_throttle(self._throttle, (self._limiter,))
        return self._throttle

    async def _replicate(self, entry: Entry) -> None:
        """Send one entry, or acknowledge it at once when it must not go to this remote."""
        cursor = self.cursor
        entry_id = entry.entry_id
        if cursor.is_acked(entry_id):
            return
        try:
            meta_bytes, payload = split_entry(entry.data)
            meta = MessageMetadata.FromString(bytes(meta_bytes))
        except (ProtocolError, Exception):  # an unreadable entry cannot be replicated: skip it, as Pulsar
            log.warning("replicator %s -> %s: entry %d unreadable, skipped", self.topic.name, self.remote.name, entry_id)
            cursor.ack(entry_id)
            return
        if meta.HasField("marker_type") and meta.replicated_from == self.remote.name \
                and self._on_marker is not None:
            self._on_marker(self.remote.name, entry_id, meta.marker_type, bytes(payload))
        if not self.should_replicate(meta):
            cursor.ack(entry_id)
            return
        meta.replicated_from = self.local
        if meta.HasField("schema_version") and meta.schema_version:
            remote_version = await self._remote_schema_version(meta.schema_version)
            if remote_version is not None:
                meta.schema_version = remote_version
        producer = self.producer
        if producer is None or producer.closed:
            return
        data = meta.SerializeToString()
        rewritten = _U32.pack(len(data)) + data + bytes(payload)
        messages = meta.num_messages_in_batch if meta.HasField("num_messages_in_batch") else 1
        sequence_id = meta.sequence_id
        highest = meta.highest_sequence_id if meta.highest_sequence_id > sequence_id else sequence_id + max(0, messages - 1)
        producer.send(rewritten, sequence_id, highest, messages, _Sent(entry_id, messages, len(rewritten), meta.publish_time))

    def should_replicate(self, meta: MessageMetadata) -> bool:
        """Whether an entry goes to this remote: not when it arrived by replication (no loops), nor
        when its ``replicate_to`` list leaves the remote out (``["__local__"]``: replication disabled), nor
        transaction markers (the remote has its own transactions)."""
        if meta.replicated_from or meta.marker_type in _TXN_MARKERS:
            return False
        targets = list(meta.replicate_to)
        return not targets or self.remote.name in targets

    async def _remote_schema_version(self, local_version: bytes) -> bytes | None:
        """The remote's version of the schema a local version names (registered there on first use)."""
        known = self._schema_versions.get(local_version)
        if known is not None:
            return known
        (version,) = struct.unpack(">q", local_version) if len(local_version) == 8 else (None,)
        stored = self._schemas.version(self.topic.topic_name, version) if version is not None else None
        producer = self.producer
        if stored is None or producer is None:
            return None
        schema = Schema(name=self.topic.name, schema_data=stored.data, type=type_to_wire(stored.type))
        for key, value in stored.properties.items():
            schema.properties.add(key=key, value=value)
        remote_version = await producer.conn.get_or_create_schema(self.topic.name, schema)
        self._schema_versions[local_version] = remote_version
        return remote_version

    def _receipt(self, sent: object, duplicate: bool) -> None:
        """The remote stored (or already had) an entry: acknowledge it on the cursor."""
        assert isinstance(sent, _Sent)
        self.cursor.ack(sent.entry_id)
        self.msg_out_counter += sent.messages
        self.bytes_out_counter += sent.size
        self.wake()

    # -- statistics ------------------------------------------------------------------------
    def rates(self) -> tuple[float, float]:
        """(messages, bytes) per second sent over the last few seconds."""
        now = time.monotonic()
        samples = self._samples
        samples.append((now, self.msg_out_counter, self.bytes_out_counter))
        while len(samples) > 2 and now - samples[1][0] >= RATE_WINDOW:
            samples.popleft()
        t0, m0, b0 = samples[0]
        elapsed = now - t0
        if elapsed <= 0:
            return 0.0, 0.0
        return (self.msg_out_counter - m0) / elapsed, (self.bytes_out_counter - b0) / elapsed

    def backlog(self) -> int:
        """Entries not yet replicated (acknowledged on the cursor)."""
        return self.subscription.backlog()

    def delay_seconds(self) -> float:
        """Age of the oldest entry not yet replicated (0 with nothing to replicate)."""
        if self.backlog() == 0:
            return 0.0
        published = self.subscription.earliest_publish_time_in_backlog()
        return max(0.0, time.time() - published / 1000) if published else 0.0


