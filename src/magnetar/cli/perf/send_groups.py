"""Receipts of messages sent in groups: two callbacks per group instead of one per message.

Without a target rate, the sender hands the client a chunk of messages at a time, all with the
chunk's start as their intended send time. The consecutive messages of one producer in a chunk
form a :class:`SendGroup`: only its first and its last message carry a receipt callback (the
client builds no message id for the others), and each part of the group is counted and timed
once, with one histogram update for all its messages.

A group is never longer than the shortest batch the client can cut inside a chunk (see
:func:`group_limit`; the batching timer only fires between chunks), so it lies in one batch or
straddles two. The message ids tell how many messages each part holds: the first message's
batch holds ``batch_size - batch_index`` of them, the last one's ``batch_index + 1``. Each
part is settled with its own receipt's time and outcome, so the latency counts equal the
messages acknowledged and every message is timed to the receipt of its own batch.
"""

from __future__ import annotations

import time
from typing import Any, Protocol


class Settler(Protocol):
    """What a group reports its parts to: the producer load's counters and latency."""

    def settle_part(self, intended_ns: int, index: int, count: int, error: Exception | None, now_ns: int) -> None:
        """``count`` messages of one producer, from message ``index`` of the run on, got their receipt
        (or ``error``) at ``now_ns``."""
        ...


def group_limit(batching: bool, limited_rate: bool, batch_max_messages: int, batch_max_bytes: int,
                largest_payload: int, chunk: int) -> int:
    """The most messages of one producer that may share two receipt callbacks: 1 when every message
    may be a send of its own (no batching, a rate: messages then have their own intended times), else
    at most the fewest messages of a batch the client cuts for its count or byte limit."""
    if not batching or limited_rate:
        return 1
    size = max(1, largest_payload)
    if size >= batch_max_bytes:
        return 1  # such a message is sent on its own
    # a batch is cut before a message that would take it past the byte limit: it holds more than
    # batch_max_bytes - size bytes, so at least (batch_max_bytes - size) // size + 1 messages
    by_bytes = (batch_max_bytes - size) // size + 1
    return max(1, min(batch_max_messages, by_bytes, chunk))


def _count_from_first(message_id: Any, n: int) -> int | None:
    """Messages of a group of ``n`` in its first message's batch, from that message's id."""
    size = getattr(message_id, "batch_size", 0)
    index = getattr(message_id, "batch_index", -1)
    if not size or index < 0:
        return None
    return min(n, size - index)


def _count_to_last(message_id: Any, n: int) -> int | None:
    """Messages of a group of ``n`` in its last message's batch, from that message's id."""
    index = getattr(message_id, "batch_index", -1)
    if not getattr(message_id, "batch_size", 0) or index < 0:
        return None
    return min(n, index + 1)


class SendGroup:
    """``n`` consecutive messages of one producer with one intended send time: messages ``index``,
    ``index + stride``... of the run (``stride``: the number of producers, which take messages in
    turn). :meth:`first_settled` and :meth:`last_settled` are the receipt callbacks of its first and
    last message (``n`` >= 2)."""

    __slots__ = ("settler", "intended_ns", "index", "stride", "n", "_first")

    def __init__(self, settler: Settler, intended_ns: int, index: int, stride: int, n: int) -> None:
        self.settler = settler
        self.intended_ns = intended_ns
        self.index = index
        self.stride = stride
        self.n = n
        #: the first message's receipt: (time, error, message id), until the last one's comes
        self._first: tuple[int, Exception | None, Any] | None = None

    def first_settled(self, error: Exception | None, message_id: Any) -> None:
        """Receipt callback of the group's first message."""
        self._first = (time.perf_counter_ns(), error, message_id)

    def last_settled(self, error: Exception | None, message_id: Any) -> None:
        """Receipt callback of the group's last message: settle both parts."""
        now = time.perf_counter_ns()
        first = self._first
        n, settler = self.n, self.settler
        if first is None:
            # the first message's outcome is not known (receipts come in order, so only a failure
            # can overtake it): the last one's stands for the whole group
            settler.settle_part(self.intended_ns, self.index, n, error, now)
            return
        first_ns, first_error, first_id = first
        head = _count_from_first(first_id, n) if first_error is None else None
        if head is None:
            tail = _count_to_last(message_id, n) if error is None else None
            head = n - tail if tail is not None else 1
        self._first = None
        settler.settle_part(self.intended_ns, self.index, head, first_error, first_ns)
        if head < n:
            settler.settle_part(self.intended_ns, self.index + head * self.stride, n - head, error, now)
