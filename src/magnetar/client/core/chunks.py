"""Reassembly of chunked messages on the consumer side.

A producer splits a message larger than the broker's limit into chunks: entries sharing the
message's ``uuid``, numbered ``chunk_id`` 0 .. ``num_chunks_from_msg`` - 1, each carrying part
of the (compressed) payload; ``total_chunk_msg_size`` is the size of the whole. Chunks of one
message arrive in order but may interleave with other messages' chunks. The assembler keeps at
most ``max_pending`` incomplete messages (the oldest is dropped to make room: acknowledged when
``auto_ack_oldest`` is set, else left to the ack timeout) and drops incomplete messages older
than ``expire_ms`` (acknowledging their chunks), as the Java client does.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

log = logging.getLogger("magnetar.client.core.consumer")

EntryKey = tuple[int, int]
#: called with chunk entries dropped and whether to acknowledge them
DiscardCallback = Callable[[list[EntryKey], bool], None]


class _Pending:
    __slots__ = ("parts", "ids", "num_chunks", "total_size", "last_chunk_id", "received_at", "size")

    def __init__(self, num_chunks: int, total_size: int, now: float) -> None:
        self.parts: list[bytes] = []
        self.ids: list[EntryKey] = []
        self.num_chunks = num_chunks
        self.total_size = total_size
        self.last_chunk_id = -1
        self.received_at = now
        self.size = 0


class ChunkAssembler:
    """Collects chunks per message uuid and hands back whole payloads."""

    def __init__(
        self,
        discard: DiscardCallback,
        max_pending: int = 10,
        auto_ack_oldest: bool = False,
        expire_ms: int = 60000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.discard = discard
        self.max_pending = max_pending
        self.auto_ack_oldest = auto_ack_oldest
        self.expire = expire_ms / 1000.0
        self.clock = clock
        self._pending: OrderedDict[str, _Pending] = OrderedDict()

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, meta: Any, payload: bytes, key: EntryKey, publish_time_ms: int = 0) -> tuple[bytes, list[EntryKey]] | None:
        """Add one chunk; returns (whole payload, every chunk's entry) when it completes a message."""
        uuid = meta.uuid
        chunk_id = meta.chunk_id
        ctx = self._pending.get(uuid)
        if chunk_id == 0 and ctx is None:
            if 0 < self.max_pending <= len(self._pending):
                _, oldest = self._pending.popitem(last=False)
                log.info("more than %d chunked messages pending: dropping the oldest (%s)", self.max_pending,
                         "acknowledged" if self.auto_ack_oldest else "left for redelivery")
                self.discard(oldest.ids, self.auto_ack_oldest)
            ctx = self._pending[uuid] = _Pending(meta.num_chunks_from_msg, meta.total_chunk_msg_size, self.clock())
        if ctx is None or chunk_id != ctx.last_chunk_id + 1:
            if ctx is not None and chunk_id <= ctx.last_chunk_id:
                # a duplicate (the producer resent after a reconnection): drop it, and
                # acknowledge it unless it is a redelivery of an entry already held
                if key not in ctx.ids:
                    self.discard([key], True)
                return None
            # a chunk whose predecessors never came: the message cannot be rebuilt
            log.warning("chunk %d of message %s arrived without its predecessors: dropping the message", chunk_id, uuid)
            if ctx is not None:
                del self._pending[uuid]
            too_old = publish_time_ms and time.time() * 1000 > publish_time_ms + self.expire * 1000
            if too_old:
                self.discard([key], True)
            return None
        ctx.parts.append(payload)
        ctx.ids.append(key)
        ctx.size += len(payload)
        ctx.last_chunk_id = chunk_id
        if chunk_id < ctx.num_chunks - 1:
            return None
        del self._pending[uuid]
        whole = b"".join(ctx.parts)
        if ctx.total_size and len(whole) != ctx.total_size:
            log.error("chunked message %s: %d bytes reassembled, %d announced: dropping it", uuid, len(whole), ctx.total_size)
            self.discard(ctx.ids, True)
            return None
        return whole, ctx.ids

    def expire_incomplete(self) -> None:
        """Drop (and acknowledge) incomplete messages whose first chunk is older than expire_ms."""
        if not self._pending or self.expire <= 0:
            return
        limit = self.clock() - self.expire
        for uuid in [u for u, c in self._pending.items() if c.received_at <= limit]:
            ctx = self._pending.pop(uuid)
            log.info("chunked message %s incomplete after %g s: dropped", uuid, self.expire)
            self.discard(ctx.ids, True)

    def clear(self) -> None:
        """Forget every incomplete message (reconnection, seek: the broker sends them again)."""
        self._pending.clear()


__all__ = ["ChunkAssembler"]
