"""Replication of non-persistent topics (Pulsar's NonPersistentReplicator): each message published
locally is handed to the topic's replicators as it is published and sent to each remote at once,
or dropped and counted when that remote's producer is not connected or has too many SENDs in
flight (``replicationProducerQueueSize``). No cursor, no backlog: what is dropped is gone, as the
topic itself drops a message a consumer has no permits for.
"""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING

from magnetar.broker.replication.link import (
    RATE_WINDOW,
    RemoteCluster,
    RemoteLink,
    entry_with,
    goes_to,
    send_ids,
)
from magnetar.protocol.framing import split_entry
from magnetar.protocol.schema import MessageMetadata

if TYPE_CHECKING:
    from magnetar.broker.topics.nonpersistent import NonPersistentTopic


class NonPersistentReplicator(RemoteLink):
    """Sends one non-persistent topic's messages to one remote cluster as they are published."""

    def __init__(self, topic: NonPersistentTopic, local: str, remote: RemoteCluster, queue_size: int) -> None:
        super().__init__(topic, local, remote)
        #: SENDs in flight at most; a message offered past them is dropped
        self.queue_size = queue_size
        #: entries dropped (not connected, or too many in flight), since the replicator started
        self.msg_drop_counter = 0
        #: (when, drops) samples of the drop rate, from the replicator's start on
        self._drop_samples: deque[tuple[float, int]] = deque([(time.monotonic(), 0)])

    async def _pump(self) -> None:
        """Nothing to read: messages come through :meth:`offer`; wait for the producer to go."""
        while self.connected:
            self._wake.clear()
            await self._wake.wait()

    def offer(self, entry: bytes, sequence_id: int, highest_sequence_id: int, messages: int) -> None:
        """Send one rewritten entry now, or drop it (counted) when the remote cannot take it."""
        producer = self.producer
        if producer is None or producer.closed or producer.in_flight >= self.queue_size:
            self.msg_drop_counter += 1
            return
        producer.send(entry, sequence_id, highest_sequence_id, messages, (messages, len(entry)))

    def _receipt(self, sent: object, duplicate: bool) -> None:
        """The remote took an entry: count it out."""
        messages, size = sent  # type: ignore[misc]
        self.msg_out_counter += messages
        self.bytes_out_counter += size

    def extra_stats(self) -> dict[str, float]:
        """NonPersistentReplicatorStats' ``msgDropRate``."""
        return {"msgDropRate": self.drop_rate()}

    def drop_rate(self) -> float:
        """Entries dropped per second over the last few seconds (Pulsar's msgDropRate)."""
        now = time.monotonic()
        samples = self._drop_samples
        samples.append((now, self.msg_drop_counter))
        while len(samples) > 2 and now - samples[1][0] >= RATE_WINDOW:
            samples.popleft()
        t0, d0 = samples[0]
        elapsed = now - t0
        return (self.msg_drop_counter - d0) / elapsed if elapsed > 0 else 0.0


class LiveReplication:
    """The hook a replicated non-persistent topic calls with each message published by a local
    producer: the metadata is read and rewritten once (``replicated_from`` = this cluster) and the
    entry offered to every replicator its ``replicate_to`` allows."""

    __slots__ = ("local", "replicators")

    def __init__(self, local: str, replicators: dict[str, NonPersistentReplicator]) -> None:
        self.local = local
        #: remote cluster -> its replicator (the manager's own dict for the topic: one owner)
        self.replicators = replicators

    def __call__(self, entry: bytes) -> None:
        """Hand one published entry to the replicators (an unreadable one goes nowhere)."""
        try:
            meta_bytes, payload = split_entry(entry)
            meta = MessageMetadata.FromString(bytes(meta_bytes))
        except Exception:  # protobuf raises its DecodeError, split_entry a ProtocolError
            return
        targets = [r for name, r in self.replicators.items() if goes_to(meta, name)]
        if not targets:
            return
        meta.replicated_from = self.local
        rewritten = entry_with(meta, payload)
        ids = send_ids(meta)
        for replicator in targets:
            replicator.offer(rewritten, *ids)
