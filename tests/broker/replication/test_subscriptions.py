"""Replicated subscriptions without a network: two controllers over in-memory topics, the markers
carried between them as replicators carry them (``replicate_to`` honoured, never back to their
source), the snapshot cache, the marker payloads' wire form."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from magnetar.broker.replication.subscriptions import CachedSnapshot, ReplicatedSubscriptions, SnapshotCache
from magnetar.protocol.enums import MarkerType
from magnetar.protocol.framing import parse_entry_metadata, split_entry
from magnetar.protocol.markers import SnapshotRequest, SnapshotResponse, SubscriptionUpdate, marker_entry


@dataclass
class _Cursor:
    mark_delete: int = -1


@dataclass
class _Sub:
    cursor: _Cursor = field(default_factory=_Cursor)

    def admin_ack_before(self, entry_id: int) -> int:
        self.cursor.mark_delete = max(self.cursor.mark_delete, entry_id - 1)
        return 0


class _Ledger:
    def __init__(self, topic: _Topic) -> None:
        self.topic = topic

    @property
    def last_entry_id(self) -> int:
        return len(self.topic.entries) - 1


class _Topic:
    """What a controller uses of a persistent topic; entries are (source cluster, bytes)."""

    def __init__(self, ledger_id: int) -> None:
        self.name = f"persistent://t/ns/topic-{ledger_id}"
        self.ledger_id = ledger_id
        self.ledger = _Ledger(self)
        self.entries: list[tuple[str, bytes]] = []
        self.subscriptions: dict[str, Any] = {}
        self.msg_in_counter = 0
        self.closed = False

    @property
    def last_readable_id(self) -> int:
        return len(self.entries) - 1

    def append_marker(self, entry: bytes, durable: Any, failed: Any) -> int:
        self.entries.append(("", entry))
        return len(self.entries) - 1

    def publish(self, data: str) -> None:
        self.entries.append(("", data.encode()))
        self.msg_in_counter += 1

    def subscribe(self, name: str, **_: Any) -> _Sub:
        sub = self.subscriptions[name] = _Sub(_Cursor(self.last_readable_id))
        return sub


class _Replicator:
    connected = True


class _Cluster:
    def __init__(self, name: str, ledger_id: int, remotes: list[str]) -> None:
        self.name = name
        self.topic = _Topic(ledger_id)
        self.stored: list[str] = []
        self.controller = ReplicatedSubscriptions(self.topic, name,  # type: ignore[arg-type]
                                                  lambda: {r: _Replicator() for r in remotes},  # type: ignore[misc]
                                                  self.stored.extend)
        #: per remote, the next entry its replicator reads
        self.sent = dict.fromkeys(remotes, 0)


def _carry(clusters: dict[str, _Cluster]) -> None:
    """Run every replicator until nothing moves: local entries go to the remotes their replicate_to
    allows; a marker read from a remote's replicated entries goes to the controller."""
    moved = True
    while moved:
        moved = False
        for here in clusters.values():
            for remote in here.sent:
                entries = here.topic.entries
                while here.sent[remote] < len(entries):
                    entry_id = here.sent[remote]
                    here.sent[remote] += 1
                    source, data = entries[entry_id]
                    marker = _marker(data)
                    if source == remote and marker is not None:
                        here.controller.on_marker(source, entry_id, marker[0], marker[1])
                    targets = marker[2] if marker is not None else []
                    if not source and (not targets or remote in targets):
                        clusters[remote].topic.entries.append((here.name, data))
                        clusters[remote].topic.msg_in_counter += 1
                        moved = True


def _marker(data: bytes) -> tuple[int, bytes, list[str]] | None:
    if data[:1] != b"\0":
        return None
    meta = parse_entry_metadata(data)
    return meta.marker_type, bytes(split_entry(data)[1]), list(meta.replicate_to)


def test_marker_payloads_have_pulsars_wire_form() -> None:
    request = SnapshotRequest(snapshot_id="s1", source_cluster="east")
    assert request.SerializeToString() == b"\n\x02s1\x12\x04east"
    update = SubscriptionUpdate(subscription_name="sub")
    cid = update.clusters.add(cluster="west")
    cid.message_id.ledger_id, cid.message_id.entry_id = 7, 9
    assert update.SerializeToString() == b"\n\x03sub\x12\x0c\n\x04west\x12\x04\x08\x07\x10\x09"
    entry = marker_entry(MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_RESPONSE, SnapshotResponse().SerializeToString(),
                         ["east"])
    meta = parse_entry_metadata(entry)
    assert (meta.producer_name, meta.sequence_id, meta.marker_type, list(meta.replicate_to)) == (
        "pulsar.marker", 0, 11, ["east"])


def test_snapshot_cache() -> None:
    cache = SnapshotCache(4)
    for local in (10, 20, 21, 22, 40):
        cache.add(CachedSnapshot(local, {"west": (1, local)}))
    assert [s.local for s in cache.snapshots] == [10, 20, 22, 40]  # 21: its neighbours were the closest
    assert cache.advanced(9) is None
    found = cache.advanced(30)
    assert found is not None and found.local == 22 and [s.local for s in cache.snapshots] == [40]
    cache.add(CachedSnapshot(5, {}))  # older than the newest: the subscription was reset
    assert [s.local for s in cache.snapshots] == [5]


def test_acks_on_east_move_the_subscription_on_west() -> None:
    east, west = _Cluster("east", 100, ["west"]), _Cluster("west", 200, ["east"])
    clusters = {"east": east, "west": west}
    for c in (east, west):
        c.topic.subscribe("orders")
    east.controller.add("orders")
    assert east.stored == ["orders"]
    for i in range(5):
        east.topic.publish(f"m{i}")
    _carry(clusters)
    assert west.topic.last_readable_id == 4
    east.controller.tick()  # new data: a snapshot request
    _carry(clusters)  # the request to west, west's response back: the snapshot is complete
    assert east.controller.completed == 1 and not east.controller.pending
    snapshot_at = east.controller.caches["orders"].snapshots[0]
    assert snapshot_at.clusters == {"west": (200, 5)}  # west had m0..m4 and the request
    east.controller.tick()  # no new data: no new snapshot
    assert east.controller.completed == 1 and not east.controller.pending
    for i in range(5, 8):
        east.topic.publish(f"m{i}")
    _carry(clusters)
    east.topic.subscriptions["orders"].cursor.mark_delete = 4  # m0..m4 acknowledged: before the snapshot
    east.controller.tick()
    _carry(clusters)
    assert west.topic.subscriptions["orders"].cursor.mark_delete == -1
    east.topic.subscriptions["orders"].cursor.mark_delete = snapshot_at.local + 1  # past the snapshot
    east.controller.tick()
    _carry(clusters)
    assert west.topic.subscriptions["orders"].cursor.mark_delete == 5


def test_an_update_creates_a_missing_subscription_at_the_latest_message() -> None:
    west = _Cluster("west", 200, ["east"])
    west.topic.publish("m0")
    update = SubscriptionUpdate(subscription_name="late")
    cid = update.clusters.add(cluster="west")
    cid.message_id.ledger_id, cid.message_id.entry_id = 200, 0
    west.controller.on_marker("east", 1, MarkerType.REPLICATED_SUBSCRIPTION_UPDATE, update.SerializeToString())
    assert west.topic.subscriptions["late"].cursor.mark_delete == 0 and "late" in west.controller.caches
