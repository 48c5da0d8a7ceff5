"""Replicated subscriptions (``replicate_subscription_state`` on SUBSCRIBE), with Pulsar's snapshot
markers: a subscription's acknowledgements on this cluster move the same subscription on the
others, at the granularity of the snapshots.

The protocol is Pulsar's (its ReplicatedSubscriptionsController), written from its behaviour:

1. every second, a topic with a replicated subscription and every replicator connected, and new
   messages since the last snapshot, writes a SNAPSHOT_REQUEST marker; the replicators carry it to
   every remote;
2. a cluster reading a request (its replicator to the requesting cluster finds it in its topic)
   answers with a SNAPSHOT_RESPONSE marker carrying its last position, replicated to the requester
   only;
3. when every remote answered (twice with more than one remote, so that what they exchanged
   meanwhile is covered), the requester writes a SNAPSHOT marker for itself only: its local position
   (where the last response landed) against each remote's position;
4. once a replicated subscription's mark-delete position passes a snapshot's local position, an
   UPDATE marker with the snapshot's remote positions goes to every remote, which acknowledges the
   subscription cumulatively up to its own position (creating it at the latest message if missing).

Markers are entries no consumer receives: :class:`MarkerFilter` hides them from the dispatchers of
replicated topics (they count as acknowledged, as Pulsar's dispatchers acknowledge them).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from magnetar.protocol.enums import InitialPosition, MarkerType
from magnetar.protocol.framing import ProtocolError, parse_entry_metadata
from magnetar.protocol.markers import (
    Snapshot,
    SnapshotRequest,
    SnapshotResponse,
    SubscriptionUpdate,
    marker_entry,
)
from magnetar.storage import StorageError

if TYPE_CHECKING:
    from magnetar.broker.replication.replicator import Replicator
    from magnetar.broker.topics.persistent import PersistentTopic
    from magnetar.storage import Entry

log = logging.getLogger("magnetar.broker.replication")

#: how often a snapshot is attempted and mark-delete positions are looked at (Pulsar's
#: replicatedSubscriptionsSnapshotFrequencyMillis), how long a snapshot may take
#: (replicatedSubscriptionsSnapshotTimeoutSeconds), snapshots kept per subscription
#: (replicatedSubscriptionsSnapshotMaxCachedPerSubscription)
SNAPSHOT_EVERY_S = 1.0
SNAPSHOT_TIMEOUT_S = 30.0
MAX_CACHED_SNAPSHOTS = 10
#: metadata key of a topic's replicated subscriptions
KV_PREFIX = "replicated-subscriptions/"

#: a position as markers carry it: (ledger id, entry id)
Position = tuple[int, int]


class MarkerFilter:
    """Tells dispatchers which entries are markers (parsed from their metadata): a replicated topic's."""

    __slots__ = ()

    def is_marker(self, entry: Entry) -> bool:
        """Whether ``entry`` is a marker (never delivered)."""
        try:
            return parse_entry_metadata(entry.data).HasField("marker_type")
        except ProtocolError:
            return False


MARKERS = MarkerFilter()


@dataclass
class CachedSnapshot:
    """A completed snapshot as a subscription keeps it: its local entry id and the remotes' positions."""

    local: int
    clusters: dict[str, Position]


class SnapshotCache:
    """The last snapshots a replicated subscription may reach, oldest first (at most ``size``: when
    full, the snapshot whose neighbours are closest together goes, so the rest stay spread out)."""

    def __init__(self, size: int = MAX_CACHED_SNAPSHOTS) -> None:
        self.size = max(3, size)
        self.snapshots: list[CachedSnapshot] = []

    def add(self, snapshot: CachedSnapshot) -> None:
        """A new snapshot (one older than the newest kept means the subscription was reset: start over)."""
        if self.snapshots and snapshot.local <= self.snapshots[-1].local:
            self.snapshots.clear()
        self.snapshots.append(snapshot)
        if len(self.snapshots) > self.size:
            kept = self.snapshots
            gaps = [kept[i + 1].local - kept[i - 1].local for i in range(1, len(kept) - 1)]
            del kept[1 + gaps.index(min(gaps))]

    def advanced(self, mark_delete: int) -> CachedSnapshot | None:
        """The mark-delete position moved to ``mark_delete``: the newest snapshot at or below it (and
        every snapshot up to it leaves the cache), or None."""
        found = None
        while self.snapshots and self.snapshots[0].local <= mark_delete:
            found = self.snapshots.pop(0)
        return found


@dataclass
class _PendingSnapshot:
    """A snapshot being taken: the remotes still to answer, what they answered."""

    snapshot_id: str
    started: float
    remotes: set[str]
    missing: set[str]
    rounds_left: int
    responses: dict[str, Position] = field(default_factory=dict)
    done: bool = False


def _position(cluster_id: Any) -> Position:
    return int(cluster_id.message_id.ledger_id), int(cluster_id.message_id.entry_id)


class ReplicatedSubscriptions:
    """One topic's replicated subscriptions and snapshots (Pulsar's ReplicatedSubscriptionsController)."""

    def __init__(self, topic: PersistentTopic, local: str, replicators: Callable[[], dict[str, Replicator]],
                 persist: Callable[[list[str]], None]) -> None:
        self.topic = topic
        self.local = local
        self._replicators = replicators
        #: ``persist(names)``: store the names of the replicated subscriptions (called on the loop)
        self._persist = persist
        #: replicated subscription -> its snapshots
        self.caches: dict[str, SnapshotCache] = {}
        self._mark_deletes: dict[str, int] = {}
        self.pending: dict[str, _PendingSnapshot] = {}
        self.completed = 0
        #: topic.msg_in_counter less the markers that came from remotes, when the last snapshot started
        self._data_at_last_snapshot = -1
        self.inbound_markers = 0
        self._task: asyncio.Task | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Take snapshots and follow mark-delete positions (in a task of the running loop)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"replicated subs {self.topic.name}")

    async def stop(self) -> None:
        """Stop the periodic work."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(SNAPSHOT_EVERY_S)
            try:
                self.tick()
            except Exception:
                log.exception("replicated subscriptions of %s", self.topic.name)

    # -- subscriptions ---------------------------------------------------------------------
    def add(self, name: str, persist: bool = True) -> None:
        """Subscription ``name`` replicates its state from now on."""
        if name in self.caches:
            return
        self.caches[name] = SnapshotCache()
        sub = self.topic.subscriptions.get(name)
        self._mark_deletes[name] = sub.cursor.mark_delete if sub is not None else -1
        if persist:
            self._persist(sorted(self.caches))

    def remove(self, name: str) -> None:
        """Subscription ``name`` no longer replicates its state."""
        if self.caches.pop(name, None) is not None:
            self._mark_deletes.pop(name, None)
            self._persist(sorted(self.caches))

    def tick(self) -> None:
        """Forget deleted subscriptions, send updates for moved mark-delete positions, start a snapshot."""
        gone = [n for n in self.caches if n not in self.topic.subscriptions]
        for name in gone:
            del self.caches[name]
            self._mark_deletes.pop(name, None)
        if gone:
            self._persist(sorted(self.caches))
        for name, cache in self.caches.items():
            mark_delete = self.topic.subscriptions[name].cursor.mark_delete
            if mark_delete > self._mark_deletes.get(name, -1):
                self._mark_deletes[name] = mark_delete
                snapshot = cache.advanced(mark_delete)
                if snapshot is not None:
                    self._send_update(name, snapshot)
        now = time.monotonic()
        for snapshot_id in [s for s, p in self.pending.items() if now - p.started > SNAPSHOT_TIMEOUT_S]:
            log.info("replicated subscriptions of %s: snapshot %s timed out", self.topic.name, snapshot_id)
            del self.pending[snapshot_id]
        self._maybe_start_snapshot(now)

    def _send_update(self, name: str, snapshot: CachedSnapshot) -> None:
        update = SubscriptionUpdate(subscription_name=name)
        for cluster, (ledger_id, entry_id) in sorted(snapshot.clusters.items()):
            cid = update.clusters.add(cluster=cluster)
            cid.message_id.ledger_id, cid.message_id.entry_id = ledger_id, entry_id
        self._write(MarkerType.REPLICATED_SUBSCRIPTION_UPDATE, update.SerializeToString(), None)

    # -- snapshots -------------------------------------------------------------------------
    def _maybe_start_snapshot(self, now: float) -> None:
        replicators = self._replicators()
        if not self.caches or not replicators or not all(r.connected for r in replicators.values()):
            return
        data = self.topic.msg_in_counter - self.inbound_markers
        if data <= self._data_at_last_snapshot:
            return  # nothing new since the last snapshot
        self._data_at_last_snapshot = data
        remotes = set(replicators)
        pending = _PendingSnapshot(str(uuid.uuid4()), now, remotes, set(remotes), 2 if len(remotes) > 1 else 1)
        self.pending[pending.snapshot_id] = pending
        self._request(pending)

    def _request(self, pending: _PendingSnapshot) -> None:
        request = SnapshotRequest(snapshot_id=pending.snapshot_id, source_cluster=self.local)
        self._write(MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST, request.SerializeToString(), None)

    def on_marker(self, source: str, entry_id: int, marker_type: int, payload: bytes) -> None:
        """A marker from cluster ``source`` found in the topic at ``entry_id`` (by the replicator to ``source``)."""
        self.inbound_markers += 1
        try:
            if marker_type == MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST:
                self._answer(SnapshotRequest.FromString(payload))
            elif marker_type == MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_RESPONSE:
                self._response(entry_id, SnapshotResponse.FromString(payload))
            elif marker_type == MarkerType.REPLICATED_SUBSCRIPTION_UPDATE:
                self._update(SubscriptionUpdate.FromString(payload))
        except Exception:  # a marker we cannot read is skipped, as Pulsar does
            log.warning("replicated subscriptions of %s: unreadable marker %d from %s", self.topic.name, entry_id,
                        source, exc_info=True)

    def _answer(self, request: Any) -> None:
        """A snapshot request: answer with our last position, to the requester only."""
        response = SnapshotResponse(snapshot_id=request.snapshot_id)
        response.cluster.cluster = self.local
        response.cluster.message_id.ledger_id = self.topic.ledger_id
        response.cluster.message_id.entry_id = max(0, self.topic.ledger.last_entry_id)
        self._write(MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_RESPONSE, response.SerializeToString(),
                    [request.source_cluster])

    def _response(self, entry_id: int, response: Any) -> None:
        pending = self.pending.get(response.snapshot_id)
        if pending is None or pending.done:
            return  # a late answer to a snapshot that timed out
        cluster = response.cluster.cluster
        pending.responses.setdefault(cluster, _position(response.cluster))
        pending.missing.discard(cluster)
        if pending.missing:
            return
        pending.rounds_left -= 1
        if pending.rounds_left > 0:
            pending.missing = set(pending.remotes)
            self._request(pending)
            return
        pending.done = True
        del self.pending[pending.snapshot_id]
        snapshot = Snapshot(snapshot_id=pending.snapshot_id)
        snapshot.local_message_id.ledger_id, snapshot.local_message_id.entry_id = self.topic.ledger_id, entry_id
        for name, (ledger_id, remote_entry) in sorted(pending.responses.items()):
            cid: Any = snapshot.clusters.add(cluster=name)
            cid.message_id.ledger_id, cid.message_id.entry_id = ledger_id, remote_entry
        if self._write(MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT, snapshot.SerializeToString(), [self.local]):
            self.completed += 1
            for cache in self.caches.values():
                cache.add(CachedSnapshot(entry_id, dict(pending.responses)))

    def _update(self, update: Any) -> None:
        """Another cluster's subscription moved: acknowledge ours up to our position in its snapshot."""
        mine = [c for c in update.clusters if c.cluster == self.local]
        if not mine:
            return
        ledger_id, entry_id = _position(mine[0])
        topic = self.topic
        name = update.subscription_name
        sub = topic.subscriptions.get(name)
        if sub is None:
            log.info("replicated subscriptions of %s: creating %s at the latest message (update from a remote)",
                     topic.name, name)
            topic.subscribe(name, durable=True, initial_position=InitialPosition.Latest, start_message_id=None)
            self.add(name)
            return
        if ledger_id != topic.ledger_id or entry_id <= sub.cursor.mark_delete:
            return
        sub.admin_ack_before(min(entry_id, topic.last_readable_id) + 1)
        self._mark_deletes[name] = max(self._mark_deletes.get(name, -1), sub.cursor.mark_delete)

    def _write(self, marker_type: MarkerType, payload: bytes, replicate_to: list[str] | None) -> bool:
        """Append a marker to the topic; False when it could not be stored."""
        try:
            self.topic.append_marker(marker_entry(marker_type, payload, replicate_to), _nothing, _log_failure)
        except StorageError as exc:
            log.warning("replicated subscriptions of %s: marker not stored: %s", self.topic.name, exc)
            return False
        return True


def _nothing() -> None:
    return None


def _log_failure(why: str) -> None:
    log.warning("replicated subscriptions: a marker's sync failed: %s", why)


def load_names(metadata: Any, topic: str) -> list[str]:
    """The stored replicated subscriptions of ``topic`` (blocking: a metadata read)."""
    data = metadata.get_kv(KV_PREFIX + topic)
    return [str(n) for n in json.loads(data)] if data else []


def store_names(metadata: Any, topic: str, names: list[str]) -> None:
    """Store the replicated subscriptions of ``topic`` (blocking: a metadata write)."""
    if names:
        metadata.put_kv(KV_PREFIX + topic, json.dumps(names).encode())
    else:
        metadata.delete_kv(KV_PREFIX + topic)
