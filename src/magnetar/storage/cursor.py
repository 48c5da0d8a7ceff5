"""Acknowledgement state of one subscription over one ledger (Pulsar cursor semantics)."""

from __future__ import annotations

import struct
from bisect import bisect_right

from magnetar.storage.rangeset import RangeSet

_WORD_BITS = 64
_WORD_MASK = (1 << _WORD_BITS) - 1
_SIGN_BIT = 1 << (_WORD_BITS - 1)

_FORMAT_VERSION = 1
_HEADER = struct.Struct("<BqII")  # version, mark_delete, range count, batch count
_BATCH_HEADER = struct.Struct("<qII")  # entry id, batch size, word count


def longs_to_mask(words: list[int]) -> int:
    """Convert a Java ``long[]`` bitset (word k = bits 64k..64k+63, signed) to a Python int."""
    mask = 0
    for k, word in enumerate(words):
        mask |= (word & _WORD_MASK) << (_WORD_BITS * k)
    return mask


def mask_to_longs(mask: int) -> list[int]:
    """Convert a non-negative bit mask to a Java-style ``long[]`` (signed words, no trailing zeros)."""
    if mask < 0:
        raise ValueError("mask must not be negative")
    words: list[int] = []
    while mask:
        word = mask & _WORD_MASK
        words.append(word - (1 << _WORD_BITS) if word & _SIGN_BIT else word)
        mask >>= _WORD_BITS
    return words


class CursorState:
    """Which entries of a ledger a subscription has acknowledged.

    * every entry id ``<= mark_delete`` is acknowledged;
    * ``individually_acked`` holds acknowledged ids above ``mark_delete``;
    * partially acknowledged batch entries keep a bit mask where a SET bit means the
      message at that batch index is still UNACKED.

    Invariants: ``mark_delete + 1`` is never acknowledged (the mark-delete position is
    always advanced as far as possible), and a partially acknowledged entry is not in
    ``individually_acked``.
    """

    __slots__ = ("_mark_delete", "_acked", "_batches", "_dirty")

    def __init__(self, mark_delete: int = -1) -> None:
        """Create a cursor whose entries up to ``mark_delete`` are already acknowledged."""
        self._mark_delete = mark_delete
        self._acked = RangeSet()
        self._batches: dict[int, tuple[int, int]] = {}  # entry id -> (unacked mask, batch size)
        self._dirty = False

    @property
    def mark_delete(self) -> int:
        """Every entry id ``<=`` this value is acknowledged."""
        return self._mark_delete

    @property
    def individually_acked(self) -> RangeSet:
        """Acknowledged entry ids above ``mark_delete`` (treat as read-only)."""
        return self._acked

    @property
    def batch_ack_sets(self) -> dict[int, list[int]]:
        """Partially acknowledged entries mapped to their unacked-message ack set (a copy)."""
        return {entry_id: mask_to_longs(mask) for entry_id, (mask, _) in sorted(self._batches.items())}

    @property
    def dirty(self) -> bool:
        """Whether the state changed since the last :meth:`mark_clean`."""
        return self._dirty

    def mark_clean(self) -> None:
        """Record that the current state has been persisted."""
        self._dirty = False

    def ack(self, entry_id: int) -> bool:
        """Acknowledge a whole entry; return False when it was already acknowledged."""
        if self.is_acked(entry_id):
            return False
        self._batches.pop(entry_id, None)
        self._acked.add_one(entry_id)
        self._advance()
        self._dirty = True
        return True

    def ack_runs(self, runs: list[tuple[int, int]]) -> bool:
        """Acknowledge whole entries given as sorted, disjoint runs ``(lo, hi)`` (an ACK command's
        individual acks) in one step; return False when they all were already acknowledged."""
        floor = self._mark_delete + 1
        runs = [(lo if lo >= floor else floor, hi) for lo, hi in runs if hi >= floor]
        if not runs:
            return False
        if self._batches:
            starts = [lo for lo, _ in runs]
            for key in list(self._batches):
                i = bisect_right(starts, key) - 1
                if i >= 0 and key <= runs[i][1]:
                    del self._batches[key]
        before = len(self._acked)
        self._acked.add_runs(runs)
        if len(self._acked) == before:
            return False
        self._advance()
        self._dirty = True
        return True

    def ack_cumulative(self, entry_id: int) -> bool:
        """Acknowledge every entry up to ``entry_id``; return False when nothing changed."""
        if entry_id <= self._mark_delete:
            return False
        self._mark_delete = entry_id
        self._acked.remove_below(entry_id + 1)
        if self._batches:
            for key in [k for k in self._batches if k <= entry_id]:
                del self._batches[key]
        self._advance()
        self._dirty = True
        return True

    def ack_batch_indexes(self, entry_id: int, ack_set_longs: list[int], batch_size: int) -> bool:
        """Apply a batch-index acknowledgement; return True when the entry is now fully acked.

        ``ack_set_longs`` is the ack set of a Pulsar ``CommandAck``: bits SET are the
        messages that remain UNACKED. It is intersected with what was still unacked
        (initially all ``batch_size`` messages). An empty ack set acknowledges the whole entry.
        """
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        if self.is_acked(entry_id):
            return True
        current, size = self._batches.get(entry_id, ((1 << batch_size) - 1, batch_size))
        remaining = current & longs_to_mask(ack_set_longs)
        if remaining == 0:
            self.ack(entry_id)
            return True
        if remaining != current or entry_id not in self._batches:
            self._batches[entry_id] = (remaining, size)
            self._dirty = True
        return False

    def is_acked(self, entry_id: int) -> bool:
        """Whether the whole entry is acknowledged (a partially acked batch is not)."""
        return entry_id <= self._mark_delete or entry_id in self._acked

    def unacked_batch_mask(self, entry_id: int) -> list[int] | None:
        """Ack set to send with a redelivered entry, or None when it is not partially acked."""
        state = self._batches.get(entry_id)
        return mask_to_longs(state[0]) if state is not None else None

    def ack_set_longs(self, entry_id: int) -> list[int] | None:
        """Alias of :meth:`unacked_batch_mask`."""
        return self.unacked_batch_mask(entry_id)

    def batch_size(self, entry_id: int) -> int | None:
        """Batch size recorded for a partially acknowledged entry, else None."""
        state = self._batches.get(entry_id)
        return state[1] if state is not None else None

    def reset(self, mark_delete: int) -> None:
        """Seek: acknowledge exactly the entries ``<= mark_delete``, forgetting everything else."""
        self._mark_delete = mark_delete
        self._acked.clear()
        self._batches.clear()
        self._dirty = True

    def forget_after(self, last_entry_id: int) -> int:
        """Drop every acknowledgement of an entry above ``last_entry_id`` (entries its ledger does not
        hold, which would otherwise hide the messages later given those ids); how many entries were
        acknowledged above it (a partially acknowledged batch counting as one)."""
        dropped = 0
        if self._mark_delete > last_entry_id:
            dropped += self._mark_delete - last_entry_id
            self._mark_delete = last_entry_id
        top = self._acked.last()
        if top is not None and top > last_entry_id:
            dropped += self._acked.count_between(last_entry_id + 1, top)
            self._acked.remove_range(last_entry_id + 1, top)
        for entry_id in [e for e in self._batches if e > last_entry_id]:
            del self._batches[entry_id]
            dropped += 1
        if dropped:
            self._dirty = True
        return dropped

    def next_unacked(self, entry_id: int) -> int:
        """Smallest entry id ``>= entry_id`` that is not fully acknowledged."""
        return self._acked.next_missing(max(entry_id, self._mark_delete + 1))

    def first_unacked(self, after: int = -1) -> int:
        """Smallest entry id ``> after`` that is not fully acknowledged."""
        return self.next_unacked(after + 1)

    def acked_count_between(self, lo: int, hi: int) -> int:
        """How many entries in ``[lo, hi]`` are individually acknowledged (above mark_delete)."""
        return self._acked.count_between(lo, hi)

    def backlog(self, last_entry_id: int) -> int:
        """Number of entries up to ``last_entry_id`` not yet fully acknowledged."""
        if last_entry_id <= self._mark_delete:
            return 0
        return (
            last_entry_id - self._mark_delete - self.acked_count_between(self._mark_delete + 1, last_entry_id)
        )

    def to_bytes(self) -> bytes:
        """Serialize to a compact, versioned binary form."""
        flat = self._acked.to_list()
        parts = [
            _HEADER.pack(_FORMAT_VERSION, self._mark_delete, len(flat) // 2, len(self._batches)),
            struct.pack(f"<{len(flat)}q", *flat),
        ]
        for entry_id, (mask, size) in sorted(self._batches.items()):
            words = mask_to_longs(mask)
            parts.append(_BATCH_HEADER.pack(entry_id, size, len(words)))
            parts.append(struct.pack(f"<{len(words)}q", *words))
        return b"".join(parts)

    @classmethod
    def from_bytes(cls, data: bytes) -> CursorState:
        """Rebuild a state serialized by :meth:`to_bytes`; raises ValueError if malformed."""
        try:
            version, mark_delete, range_count, batch_count = _HEADER.unpack_from(data, 0)
            if version != _FORMAT_VERSION:
                raise ValueError(f"unsupported cursor state version {version}")
            pos = _HEADER.size
            flat = struct.unpack_from(f"<{2 * range_count}q", data, pos)
            pos += 16 * range_count
            state = cls(mark_delete)
            state._acked = RangeSet.from_list(flat)
            for _ in range(batch_count):
                entry_id, size, word_count = _BATCH_HEADER.unpack_from(data, pos)
                pos += _BATCH_HEADER.size
                words = list(struct.unpack_from(f"<{word_count}q", data, pos))
                pos += 8 * word_count
                state._batches[entry_id] = (longs_to_mask(words), size)
        except struct.error as exc:
            raise ValueError(f"truncated cursor state: {exc}") from exc
        if pos != len(data):
            raise ValueError("trailing bytes after cursor state")
        return state

    def copy(self) -> CursorState:
        """Return an independent copy (with the same dirty flag)."""
        other = CursorState(self._mark_delete)
        other._acked = self._acked.copy()
        other._batches = dict(self._batches)
        other._dirty = self._dirty
        return other

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CursorState):
            return NotImplemented
        return (
            self._mark_delete == other._mark_delete
            and self._acked == other._acked
            and self._batches == other._batches
        )

    def __repr__(self) -> str:
        return (
            f"CursorState(mark_delete={self._mark_delete}, acked={self._acked.ranges()!r}, "
            f"batches={self.batch_ack_sets!r})"
        )

    def _advance(self) -> None:
        first = self._acked.first_range()
        if first is not None and first[0] == self._mark_delete + 1:
            self._mark_delete = first[1]
            self._acked.remove_range(*first)
