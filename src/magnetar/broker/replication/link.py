"""What every replicator has, persistent or not (Pulsar's AbstractReplicator): the remote cluster it
sends to, the producer ``pulsar.repl.<local>--><remote>`` it opens there, the loop that (re)connects
it with backoff while a subclass's ``_pump`` sends, and the counters its stats read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from magnetar.broker.replication.credentials import ClientCredentials
from magnetar.broker.replication.names import producer_name
from magnetar.broker.replication.outbound import (
    OutboundProducer,
    RemoteConnection,
    RemoteError,
    connect_for_topic,
)
from magnetar.protocol.enums import MarkerType
from magnetar.protocol.schema import MessageMetadata

if TYPE_CHECKING:
    import ssl

    from magnetar.broker.topics.base import Topic

log = logging.getLogger("magnetar.broker.replication")

#: reconnection backoff: first delay, longest delay (seconds)
BACKOFF_FIRST = 0.1
BACKOFF_MAX = 30.0
#: rates are measured over this many seconds
RATE_WINDOW = 10.0
_U32 = struct.Struct(">I")
_TXN_MARKERS = frozenset({MarkerType.TXN_COMMITTING, MarkerType.TXN_COMMIT, MarkerType.TXN_ABORT})


def goes_to(meta: MessageMetadata, remote: str) -> bool:
    """Whether a message goes to cluster ``remote``: not when it arrived by replication (no loops), nor
    when its ``replicate_to`` list leaves the remote out (``["__local__"]``: replication disabled), nor
    transaction markers (the remote has its own transactions)."""
    if meta.replicated_from or meta.marker_type in _TXN_MARKERS:
        return False
    targets = meta.replicate_to
    return not targets or remote in targets


def entry_with(meta: MessageMetadata, payload: bytes | memoryview) -> bytes:
    """Entry bytes of ``payload`` under (rewritten) ``meta``."""
    data = meta.SerializeToString()
    return _U32.pack(len(data)) + data + bytes(payload)


def send_ids(meta: MessageMetadata) -> tuple[int, int, int]:
    """(sequence id, highest sequence id, messages) of the SEND that carries an entry, the original
    producer's, so the remote deduplicates by them."""
    messages = meta.num_messages_in_batch if meta.HasField("num_messages_in_batch") else 1
    sequence_id = meta.sequence_id
    highest = meta.highest_sequence_id if meta.highest_sequence_id > sequence_id else sequence_id + max(0, messages - 1)
    return sequence_id, highest, messages


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


class RemoteLink:
    """A topic's producer on one remote cluster, kept connected; subclasses say what goes through it."""

    def __init__(self, topic: Topic, local: str, remote: RemoteCluster) -> None:
        self.topic = topic
        self.local = local
        self.remote = remote
        self.producer: OutboundProducer | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self.msg_out_counter = 0
        self.bytes_out_counter = 0
        self.connected_since: float | None = None
        self._samples: deque[tuple[float, int, int]] = deque()
        self.last_error = ""

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
        """Stop replicating and close the producer on the remote."""
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
        self.connected_since = time.time()
        self.last_error = ""
        self._connected()
        log.info("replicator %s -> %s connected", topic, remote.name)

    def _drop_producer(self) -> None:
        producer, self.producer = self.producer, None
        self.connected_since = None
        if producer is not None:
            producer.close()
        self._dropped()

    def _lost(self, reason: str) -> None:
        log.info("replicator %s -> %s disconnected: %s", self.topic.name, self.remote.name, reason)
        self.last_error = reason
        self.wake()

    # -- what subclasses do ----------------------------------------------------------------
    async def _pump(self) -> None:
        """Send until the producer is gone."""
        raise NotImplementedError

    def _receipt(self, sent: object, duplicate: bool) -> None:
        """The remote stored (or already had) what ``sent`` stands for."""
        raise NotImplementedError

    def _connected(self) -> None:
        """A new producer is open on the remote."""

    def _dropped(self) -> None:
        """The producer is gone (closed here or lost)."""

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
        """Entries not yet replicated."""
        return 0

    def delay_seconds(self) -> float:
        """Age of the oldest entry not yet replicated (0 with nothing to replicate)."""
        return 0.0

    def extra_stats(self) -> dict[str, float]:
        """Fields of this kind of replicator's stats beyond ReplicatorStats'."""
        return {}
