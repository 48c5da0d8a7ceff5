"""The payloads of Pulsar's replicated-subscription markers (PulsarMarkers.proto), and marker entries.

A marker is an entry whose MessageMetadata has ``marker_type`` set (producer ``pulsar.marker``,
sequence id 0): brokers write and read them, consumers never receive them. Field numbers and wire
types are the public ones of PulsarMarkers.proto, so markers pass between magnetar and Apache Pulsar
clusters; names are magnetar's. The classes are built from descriptors at import (no generated code).
"""

from __future__ import annotations

import time

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from magnetar.protocol.enums import MarkerType
from magnetar.protocol.framing import encode_entry
from magnetar.protocol.schema import MessageMetadata

__all__ = [
    "ClusterMessageId",
    "MarkerMessageId",
    "SnapshotRequest",
    "SnapshotResponse",
    "Snapshot",
    "SubscriptionUpdate",
    "MARKER_PRODUCER",
    "marker_entry",
]

#: the producer name of marker entries (Pulsar's)
MARKER_PRODUCER = "pulsar.marker"

_F = descriptor_pb2.FieldDescriptorProto
_PACKAGE = "magnetar.markers"
#: message name -> fields (number, name, type: a scalar's wire type or a message name, repeated)
_MESSAGES: dict[str, list[tuple[int, str, int | str, bool]]] = {
    "MarkerMessageId": [(1, "ledger_id", _F.TYPE_UINT64, False), (2, "entry_id", _F.TYPE_UINT64, False)],
    "ClusterMessageId": [(1, "cluster", _F.TYPE_STRING, False), (2, "message_id", "MarkerMessageId", False)],
    "SnapshotRequest": [(1, "snapshot_id", _F.TYPE_STRING, False), (2, "source_cluster", _F.TYPE_STRING, False)],
    "SnapshotResponse": [(1, "snapshot_id", _F.TYPE_STRING, False), (2, "cluster", "ClusterMessageId", False)],
    "Snapshot": [(1, "snapshot_id", _F.TYPE_STRING, False), (2, "local_message_id", "MarkerMessageId", False),
                 (3, "clusters", "ClusterMessageId", True)],
    "SubscriptionUpdate": [(1, "subscription_name", _F.TYPE_STRING, False), (2, "clusters", "ClusterMessageId", True)],
}


def _build() -> dict[str, type]:
    fdp = descriptor_pb2.FileDescriptorProto(name="magnetar_markers.proto", package=_PACKAGE, syntax="proto2")
    for name, fields in _MESSAGES.items():
        message = fdp.message_type.add(name=name)
        for number, field_name, kind, repeated in fields:
            field = message.field.add(name=field_name, number=number,
                                      label=_F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL)
            if isinstance(kind, str):
                field.type, field.type_name = _F.TYPE_MESSAGE, f".{_PACKAGE}.{kind}"
            else:
                field.type = kind
    pool = descriptor_pool.Default()
    try:
        file = pool.FindFileByName(fdp.name)
    except KeyError:
        file = pool.Add(fdp) or pool.FindFileByName(fdp.name)
    return {name: message_factory.GetMessageClass(file.message_types_by_name[name]) for name in _MESSAGES}


_CLASSES = _build()
MarkerMessageId = _CLASSES["MarkerMessageId"]
ClusterMessageId = _CLASSES["ClusterMessageId"]
SnapshotRequest = _CLASSES["SnapshotRequest"]
SnapshotResponse = _CLASSES["SnapshotResponse"]
Snapshot = _CLASSES["Snapshot"]
SubscriptionUpdate = _CLASSES["SubscriptionUpdate"]


def marker_entry(marker_type: MarkerType, payload: bytes, replicate_to: list[str] | None = None) -> bytes:
    """The bytes of a marker entry (``replicate_to``: the clusters it may be replicated to, None: all)."""
    meta = MessageMetadata(producer_name=MARKER_PRODUCER, sequence_id=0, publish_time=int(time.time() * 1000),
                           marker_type=int(marker_type))
    if replicate_to:
        meta.replicate_to.extend(replicate_to)
    return encode_entry(meta, payload)
