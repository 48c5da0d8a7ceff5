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
import logging
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from magnetar.broker.policies.rate_limits import DispatchThrottle, RateLimiter, dispatch_throttle, refreshed
from magnetar.broker.replication.link import RemoteCluster, RemoteLink, entry_with, goes_to, send_ids
from magnetar.broker.schemas.registry import type_to_wire
from magnetar.broker.subscriptions.subscription import Subscription
from magnetar.protocol.framing import ProtocolError, split_entry
from magnetar.protocol.schema import MessageMetadata, Schema

if TYPE_CHECKING:
    from magnetar.broker.topics.persistent import PersistentTopic
    from magnetar.storage import Entry, ManagedCursor

log = logging.getLogger("magnetar.broker.replication")

#: entries read at once, and SENDs in flight at most
READ_BATCH = 100
MAX_IN_FLIGHT = 1000
#: ``(source cluster, entry id, marker type, payload)``
MarkerHandler = Callable[[str, int, int, bytes], None]


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


class Replicator(RemoteLink):
    """Replicates one persistent topic to one remote cluster."""

    topic: PersistentTopic

    def __init__(self, topic: PersistentTopic, local: str, remote: RemoteCluster, cursor: ManagedCursor,
                 schemas: Any, on_marker: MarkerHandler | None = None) -> None:
        super().__init__(topic, local, remote)
        #: ``on_marker(source, entry id, marker type, payload)``: a marker that came from this remote
        self._on_marker = on_marker
        self.subscription = ReplicatorCursor(topic, cursor.name, cursor, self)
        #: the broker's TopicSchemas (local versions of the schemas entries refer to)
        self._schemas = schemas
        #: local schema version -> the remote's version bytes (for the current connection)
        self._schema_versions: dict[bytes, bytes] = {}
        #: the replicator dispatch rate's limiter and throttle (None: no limit)
        self._limiter: RateLimiter | None = None
        self._throttle: DispatchThrottle | None = None

    @property
    def cursor(self) -> ManagedCursor:
        """The replicator's durable cursor."""
        return self.subscription.cursor

    def _connected(self) -> None:
        self._schema_versions = {}

    def _dropped(self) -> None:
        # what was read and not receipted is read again from the first entry not acknowledged
        cursor = self.cursor
        cursor.rewind_to(cursor.first_unacked())

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
        rewritten = entry_with(meta, payload)
        sequence_id, highest, messages = send_ids(meta)
        producer.send(rewritten, sequence_id, highest, messages, _Sent(entry_id, messages, len(rewritten), meta.publish_time))

    def should_replicate(self, meta: MessageMetadata) -> bool:
        """Whether an entry goes to this remote (:func:`goes_to`)."""
        return goes_to(meta, self.remote.name)

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
    def backlog(self) -> int:
        """Entries not yet replicated (acknowledged on the cursor)."""
        return self.subscription.backlog()

    def delay_seconds(self) -> float:
        """Age of the oldest entry not yet replicated (0 with nothing to replicate)."""
        if self.backlog() == 0:
            return 0.0
        published = self.subscription.earliest_publish_time_in_backlog()
        return max(0.0, time.time() - published / 1000) if published else 0.0


