"""Positions in a topic-partition and the streaming offsets built from them.

A position is ``(ledger, entry, batch)``: the place of the *next* message to read. Message ids
order the same way (ledger, then entry, then batch index; -1 when the entry is not a batch), so
"message ``m`` is at or after position ``p``" is a tuple comparison. A magnetar topic keeps one
ledger whose entry ids are consecutive, which makes two things exact:

- the position right after a message: the next batch index inside the same entry, or the next
  entry once the message was the last of its entry;
- a count of entries between two positions, used to split ranges and to apply read limits.

Offsets (the streaming checkpoint) are ``{"v": 1, "offsets": {topic-partition: "L:E:B"}}``,
keys sorted so that equal offsets have equal JSON.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

#: version of the offsets JSON
OFFSETS_VERSION = 1


class Position(NamedTuple):
    """Place of the next message to read (inclusive start, or exclusive end)."""

    ledger: int
    entry: int
    batch: int = -1

    def __str__(self) -> str:
        return f"{self.ledger}:{self.entry}:{self.batch}"

    @property
    def is_earliest(self) -> bool:
        """The symbolic "earliest available message" (resolved by the broker)."""
        return self == EARLIEST

    def entries_until(self, end: Position) -> int:
        """Number of entries holding messages in ``[self, end)`` (an entry cut by either side counts)."""
        if end <= self:
            return 0
        if end.ledger != self.ledger:
            # another ledger (the topic was deleted and created again): everything up to ``end``
            return end.entry + (1 if end.batch >= 0 else 0)
        return end.entry - self.entry + (1 if end.batch >= 0 else 0)

    def advance(self, entries: int) -> Position:
        """The position ``entries`` whole entries further (a partly read entry counts as one)."""
        if entries <= 0:
            return self
        return Position(self.ledger, self.entry + entries, -1)


#: before the first available message (the broker starts at the oldest entry it still has)
EARLIEST = Position(-1, -1, -1)


def after(ledger: int, entry: int, batch: int, batch_size: int) -> Position:
    """The position right after the message ``ledger:entry:batch`` of an entry of ``batch_size``."""
    if batch >= 0 and batch + 1 < batch_size:
        return Position(ledger, entry, batch + 1)
    return Position(ledger, entry + 1, -1)


def parse(text: str) -> Position:
    """``"L:E"`` or ``"L:E:B"`` (or ``"earliest"``)."""
    if text == "earliest":
        return EARLIEST
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise ValueError(f"invalid position {text!r}: expected ledger:entry[:batch]")
    try:
        nums = [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"invalid position {text!r}: expected integers ledger:entry[:batch]") from None
    return Position(nums[0], nums[1], nums[2] if len(nums) == 3 else -1)


def from_message_id_bytes(data: bytes) -> Position:
    """A position from a serialized MessageIdData (the Scala connector's JSON arrays of bytes)."""
    # the client, when a query runs, not when the module loads: 200-350 ms CPU (python -X importtime)
    from magnetar.client.api.message import MessageId

    mid = MessageId.deserialize(bytes(b & 0xFF for b in data))
    return Position(mid.ledger_id, mid.entry_id, mid.batch_index)


def dump_offsets(positions: dict[str, Position]) -> dict[str, Any]:
    """The offset dict handed to Spark."""
    return {"v": OFFSETS_VERSION, "offsets": {tp: str(positions[tp]) for tp in sorted(positions)}}


def load_offsets(offset: dict[str, Any]) -> dict[str, Position]:
    """Inverse of :func:`dump_offsets` (raises ValueError on an unknown version)."""
    if not isinstance(offset, dict):
        raise ValueError(f"pulsar source offset must be a JSON object, not {offset!r}")
    version = offset.get("v")
    if version != OFFSETS_VERSION:
        raise ValueError(
            f"pulsar source offset has version {version!r}; this connector reads version {OFFSETS_VERSION}"
            " (was the checkpoint written by another connector?)"
        )
    return {tp: parse(text) for tp, text in offset.get("offsets", {}).items()}


def offsets_json(positions: dict[str, Position]) -> str:
    """The offsets as a JSON string (docs and logs)."""
    return json.dumps(dump_offsets(positions), sort_keys=True)
