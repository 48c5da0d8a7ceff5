"""Receipts of messages sent in groups: counted as the producer settles them, one callback per group.

Without a target rate, the sender hands the client a chunk of messages at a time, all with the
chunk's start as their intended send time. A producer's messages of one chunk form a *run*
(:meth:`ProducerReceipts.add_run`). The producer tells its ``settled_hook`` how many of its
messages each send settled (a batch's receipt, or a failure), always its oldest unsettled ones
first and before it completes any callback of theirs: :meth:`ProducerReceipts.settled` takes that
many messages from the oldest runs, counts them as acknowledged and times each run's part from its
intended time to now, with one histogram update per part. So every message is timed to the
receipt of its own batch, and the latency counts equal the messages acknowledged.

A failure also settles its messages through the hook first; then it completes their callbacks with
the error. The last message of each *group* (consecutive messages of a run, never more than the
shortest batch the client cuts inside a chunk: :func:`group_limit`) carries
:meth:`ProducerReceipts.on_result` as its callback, so every send the client makes holds one: the
first error callback after a settlement turns that settlement's messages from acknowledged into
failed. (A checksum error may fail a send that is not the oldest: its count is right, but the
messages timed are the oldest ones, which differ only when the sends span chunks.)
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from magnetar.cli.perf.recorder import LatencyRecorder

#: settled runs kept before the lists are cut down
_COMPACT_AT = 4096


class ReceiptCounter(Protocol):
    """What a producer's receipts are counted into: the producer load's counters and latency."""

    latency: LatencyRecorder

    def count_acknowledged(self, count: int, size: int, now_ns: int) -> None:
        """``count`` messages of ``size`` bytes in all got their receipt at ``now_ns``."""
        ...

    def count_failed(self, count: int, size: int, error: Exception) -> None:
        """``count`` messages counted as acknowledged (``size`` bytes) failed with ``error`` instead."""
        ...

    def bytes_of(self, index: int, count: int) -> int:
        """Payload bytes of messages ``index``, ``index + producers``... (``count`` of them)."""
        ...


def group_limit(batching: bool, limited_rate: bool, batch_max_messages: int, batch_max_bytes: int,
                largest_payload: int, chunk: int) -> int:
    """The most messages of one producer between two receipt callbacks: 1 when every message may be
    a send of its own (no batching, a rate: messages then have their own intended times), else at
    most the fewest messages of a batch the client cuts for its count or byte limit."""
    if not batching or limited_rate:
        return 1
    size = max(1, largest_payload)
    if size >= batch_max_bytes:
        return 1  # such a message is sent on its own
    # a batch is cut before a message that would take it past the byte limit: it holds more than
    # batch_max_bytes - size bytes, so at least (batch_max_bytes - size) // size + 1 messages
    by_bytes = (batch_max_bytes - size) // size + 1
    return max(1, min(batch_max_messages, by_bytes, chunk))


class ProducerReceipts:
    """The runs of one producer's messages awaiting their receipts, oldest first.

    :meth:`settled` is the producer's ``settled_hook``; :meth:`on_result` the receipt callback of
    each group's last message. ``stride`` is the number of producers, which take messages in turn,
    and ``size`` the payload size when every payload has it (else sizes come from the counter)."""

    __slots__ = ("counter", "stride", "size", "intended", "firsts", "lengths", "head", "used", "last")

    def __init__(self, counter: ReceiptCounter, stride: int, size: int | None) -> None:
        self.counter = counter
        self.stride = stride
        self.size = size
        #: per run: intended send time, index of its first message in the run, number of messages
        self.intended: list[int] = []
        self.firsts: list[int] = []
        self.lengths: list[int] = []
        #: the oldest run with unsettled messages, and how many of its messages are settled
        self.head = 0
        self.used = 0
        #: the latest settlement, until an error callback claims it: (head, used, count, bytes, time)
        self.last: tuple[int, int, int, int, int] | None = None

    def add_run(self, intended_ns: int, index: int, count: int) -> None:
        """``count`` messages ``index``, ``index + stride``... with one intended send time are sent next."""
        self.intended.append(intended_ns)
        self.firsts.append(index)
        self.lengths.append(count)

    def settled(self, count: int) -> None:
        """The producer's ``settled_hook``: its ``count`` oldest unsettled messages are settled;
        they count as acknowledged until an error callback says otherwise."""
        now = time.perf_counter_ns()
        head = self.head
        if head >= _COMPACT_AT:
            self._compact()
            head = 0
        used, size = self.used, self.size
        if size is None:
            self.head, self.used, total = self._walk(head, used, count, now, 1)
        else:  # _walk's work inline for the usual case, one payload size: this runs for every batch
            total = count * size
            intended, lengths = self.intended, self.lengths
            counts = self.counter.latency.counts
            left_over, end = count, len(lengths)
            position = used
            run = head
            while left_over and run < end:
                left = lengths[run] - position
                take = left if left < left_over else left_over
                micros = (now - intended[run]) // 1000
                counts[micros] = counts.get(micros, 0) + take
                left_over -= take
                if take == left:
                    run += 1
                    position = 0
                else:
                    position += take
            self.head, self.used = run, position
        self.last = (head, used, count, total, now)
        self.counter.count_acknowledged(count, total, now)

    def on_result(self, error: Exception | None, _message_id: Any) -> None:
        """Receipt callback of a group's last message: an error fails the latest settlement."""
        if error is None:
            return
        last = self.last
        if last is None:
            return  # another callback of the same failure claimed it
        self.last = None
        head, used, count, size, now = last
        self._walk(head, used, count, now, -1)
        self.counter.count_failed(count, size, error)

    def _walk(self, head: int, used: int, count: int, now: int, sign: int) -> tuple[int, int, int]:
        """Add (``sign`` 1) or take back (-1) the latencies of ``count`` messages from run ``head``
        (``used`` of its messages already settled) on; the run and offset after them, and their bytes."""
        intended, lengths, firsts = self.intended, self.lengths, self.firsts
        counts = self.counter.latency.counts
        size, stride = self.size, self.stride
        total = 0
        end = len(lengths)
        while count and head < end:
            left = lengths[head] - used
            take = left if left < count else count
            micros = (now - intended[head]) // 1000
            value = counts.get(micros, 0) + sign * take
            if value:
                counts[micros] = value
            else:
                del counts[micros]
            total += take * size if size is not None else self.counter.bytes_of(firsts[head] + used * stride, take)
            count -= take
            used += take
            if used == lengths[head]:
                head += 1
                used = 0
        return head, used, total

    def _compact(self) -> None:
        """Drop the settled runs (only between settlements: :attr:`last` then refers to none)."""
        head = self.head
        del self.intended[:head], self.firsts[:head], self.lengths[:head]
        self.head = 0
        self.last = None
