"""The acknowledgements of a consumer, grouped: what is sent in ACK frames, and when.

Acknowledged entries are collected and sent every ``ack_group_time_ms`` (at once when it is 0),
up to 1000 ids per ACK frame, the cumulative position in its own frame. A batched message is
acknowledged by entry once every message of its batch is, or (``batch_index_ack_enabled``) by
batch index with an ack set. Nothing is sent while the consumer is not connected: what is
pending waits for the next connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from magnetar.client.message import MessageId
from magnetar.protocol.enums import AckType
from magnetar.protocol.schema import MessageIdData

EntryKey = tuple[int, int]
_U64 = (1 << 64) - 1
#: ids per ACK frame
_IDS_PER_FRAME = 1000


class AckGroupingTracker:
    """Pending acknowledgements of one consumer, flushed on a timer.

    ``send(ids, ack_type)`` writes one ACK frame; ``connected()`` says whether it can;
    ``acked(key)`` is told of every entry acknowledged individually, ``acked_through(key)`` of
    every cumulative position, so that redelivery trackers forget them.
    """

    def __init__(
        self,
        group_time_ms: int,
        batch_index_acks: bool,
        send: Callable[[list[MessageIdData], AckType], None],
        connected: Callable[[], bool],
        acked: Callable[[EntryKey], None],
        acked_through: Callable[[EntryKey], None],
    ) -> None:
        self.group_time = group_time_ms / 1000.0
        self.batch_index_acks = batch_index_acks
        self._send = send
        self._connected = connected
        self._acked = acked
        self._acked_through = acked_through
        #: per batch entry, the batch indexes not acknowledged yet (never rebound: the consumer
        #: reads it on its hot path)
        self.batch_remaining: dict[EntryKey, set[int]] = {}
        self._individual: dict[EntryKey, MessageIdData] = {}
        self._cumulative: MessageIdData | None = None
        self._timer: asyncio.TimerHandle | None = None

    def has_pending(self) -> bool:
        """Whether acknowledgements wait to be sent."""
        return bool(self._individual) or self._cumulative is not None

    def track_batch(self, key: EntryKey, indexes: set[int]) -> None:
        """A batch entry was delivered with these messages (kept if already known)."""
        self.batch_remaining.setdefault(key, indexes)

    def clear_batches(self) -> None:
        """Forget the batches delivered (they come again after a redelivery)."""
        self.batch_remaining.clear()

    def clear(self) -> None:
        """Forget everything pending (a seek)."""
        self._individual.clear()
        self._cumulative = None
        self.batch_remaining.clear()

    def cancel(self) -> None:
        """Stop the flush timer (closing)."""
        if self._timer is not None:
            self._timer.cancel()

    # -- acknowledging ---------------------------------------------------------------------------
    def acknowledge(self, mid: MessageId) -> None:
        """Acknowledge one message (its batch permitting) and schedule the flush."""
        if mid._chunk_ids:
            for key in mid._chunk_ids:
                self.ack_entry(key)
            self.schedule_flush()
            return
        key = (mid.ledger_id, mid.entry_id)
        if mid.batch_index >= 0:
            if self.batch_index_acks:
                self._ack_batch_index(key, mid)
                return
            remaining = self.batch_remaining.get(key)
            if remaining is not None:
                remaining.discard(mid.batch_index)
                if remaining:
                    return
                del self.batch_remaining[key]
        self.ack_entry(key)
        self.schedule_flush()

    def _ack_batch_index(self, key: EntryKey, mid: MessageId) -> None:
        data = self._individual.get(key)
        if data is None:
            data = MessageIdData(ledger_id=mid.ledger_id & _U64, entry_id=mid.entry_id & _U64)
            size = mid.batch_size or 64
            data.ack_set.extend(_mask_to_words((1 << size) - 1))
            data.batch_size = size
            self._individual[key] = data
        elif not data.ack_set:
            return  # the whole entry is already acknowledged
        mask = _words_to_mask(data.ack_set) & ~(1 << mid.batch_index)
        del data.ack_set[:]
        if mask == 0:
            data.ClearField("batch_size")
            self._acked(key)
        else:
            data.ack_set.extend(_mask_to_words(mask))
        self.schedule_flush()

    def ack_entry(self, key: EntryKey) -> None:
        """Acknowledge a whole entry (sent with the next flush)."""
        self._acked(key)
        self._individual[key] = MessageIdData(ledger_id=key[0] & _U64, entry_id=key[1] & _U64)

    def acknowledge_cumulative(self, mid: MessageId) -> None:
        """Acknowledge every message up to and including ``mid``."""
        entry_id = mid.entry_id
        if mid.batch_index >= 0 and mid.batch_size and mid.batch_index < mid.batch_size - 1:
            remaining = self.batch_remaining.get((mid.ledger_id, mid.entry_id))
            if remaining is not None:
                remaining.difference_update(range(mid.batch_index + 1))
            entry_id -= 1
            if entry_id < 0:
                return
        else:
            self.batch_remaining.pop((mid.ledger_id, mid.entry_id), None)
        data = MessageIdData(ledger_id=mid.ledger_id & _U64, entry_id=entry_id & _U64)
        current = self._cumulative
        if current is None or (current.ledger_id, current.entry_id) < (data.ledger_id, data.entry_id):
            self._cumulative = data
        upto = (mid.ledger_id, entry_id)
        for key in [k for k in self.batch_remaining if k <= upto]:
            del self.batch_remaining[key]
        self._acked_through(upto)
        self.schedule_flush()

    # -- sending ---------------------------------------------------------------------------------
    def schedule_flush(self) -> None:
        """Send within the group time (at once when it is 0)."""
        if self._timer is None:
            if self.group_time <= 0:
                self.flush()
            else:
                self._timer = asyncio.get_running_loop().call_later(self.group_time, self.flush)

    def flush(self) -> None:
        """Send what is pending now (kept for later when not connected)."""
        self._timer = None
        if not self._connected():
            return
        if self._cumulative is not None:
            self._send([self._cumulative], AckType.Cumulative)
            self._cumulative = None
        if self._individual:
            ids = list(self._individual.values())
            self._individual.clear()
            for i in range(0, len(ids), _IDS_PER_FRAME):
                self._send(ids[i : i + _IDS_PER_FRAME], AckType.Individual)


def _mask_to_words(mask: int) -> list[int]:
    words = []
    while mask:
        w = mask & _U64
        words.append(w - (1 << 64) if w >= 1 << 63 else w)
        mask >>= 64
    return words


def _words_to_mask(words: Any) -> int:
    mask = 0
    for i, w in enumerate(words):
        mask |= (w & _U64) << (64 * i)
    return mask
