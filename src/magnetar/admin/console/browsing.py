"""Reading a topic's messages for display, through the admin core's peek and examine operations.

A subscription's next messages come from ``peek``; a topic is browsed from its earliest or latest
entry, from a message id, or from the first entry published at or after a time (a binary search
over publish times with ``examine``). Nothing here moves a cursor.
"""

from __future__ import annotations

from typing import Any

from magnetar.admin.console.decoding import SchemaLookup, entry_messages
from magnetar.admin.errors import HttpError
from magnetar.broker.resources.admin import BrokerAdmin
from magnetar.broker.resources.errors import NotFoundError, PreconditionFailedError
from magnetar.broker.resources.messages import PeekedEntry
from magnetar.protocol.framing import ProtocolError, parse_entry_metadata
from magnetar.protocol.topic_name import TopicName

#: entries read by one request at most
MAX_COUNT = 100


def _messages(peeked: PeekedEntry, schema_of: SchemaLookup) -> list[dict[str, Any]]:
    message_id = f"{peeked.ledger_id}:{peeked.entry.entry_id}"
    return entry_messages(bytes(peeked.entry.data), message_id, schema_of)


async def peek_messages(admin: BrokerAdmin, tn: TopicName, sub: str, count: int, schema_of: SchemaLookup) -> list[dict[str, Any]]:
    """The next ``count`` unacknowledged entries of a subscription, as messages."""
    out: list[dict[str, Any]] = []
    seen: set[int] = set()
    for position in range(1, min(count, MAX_COUNT) + 1):
        try:
            peeked = await admin.messages.peek(tn, sub, position)
        except NotFoundError:
            break
        if peeked.entry.entry_id in seen:
            break
        seen.add(peeked.entry.entry_id)
        out.extend(_messages(peeked, schema_of))
    return out


async def _examine(admin: BrokerAdmin, tn: TopicName, where: str, position: int) -> PeekedEntry | None:
    try:
        return await admin.messages.examine(tn, where, position)
    except (NotFoundError, PreconditionFailedError):
        return None


def _publish_time(peeked: PeekedEntry) -> int:
    try:
        return parse_entry_metadata(bytes(peeked.entry.data)).publish_time
    except ProtocolError:
        return 0


async def _first_at_or_after(admin: BrokerAdmin, tn: TopicName, total: int, time_ms: int) -> int:
    """The position (from 1, from the earliest) of the first entry published at or after ``time_ms``."""
    low, high = 1, total + 1
    while low < high:
        middle = (low + high) // 2
        peeked = await _examine(admin, tn, "earliest", middle)
        if peeked is None or _publish_time(peeked) >= time_ms:
            high = middle
        else:
            low = middle + 1
    return low


def _parse_message_id(text: str) -> int:
    try:
        return int(text.split(":")[1])
    except (IndexError, ValueError):
        raise HttpError(412, f"Invalid message id {text!r}: expected ledgerId:entryId") from None


async def browse_messages(
    admin: BrokerAdmin, tn: TopicName, start: str, count: int, schema_of: SchemaLookup
) -> list[dict[str, Any]]:
    """Up to ``count`` entries from ``start`` (earliest, latest, ledger:entry or a time in ms), oldest first.

    ``latest`` reads the last ``count`` entries.
    """
    count = max(1, min(count, MAX_COUNT))
    first = await _examine(admin, tn, "earliest", 1)
    last = await _examine(admin, tn, "latest", 1)
    if first is None or last is None:
        return []
    first_id, last_id = first.entry.entry_id, last.entry.entry_id
    total = last_id - first_id + 1
    where = start.strip().lower() or "earliest"
    if where == "earliest":
        position = 1
    elif where == "latest":
        position = max(1, total - count + 1)
    elif ":" in where:
        position = _parse_message_id(where) - first_id + 1
    else:
        try:
            time_ms = int(where)
        except ValueError:
            raise HttpError(412, f"Invalid start {start!r}: earliest, latest, ledgerId:entryId or a time in ms") from None
        position = await _first_at_or_after(admin, tn, total, time_ms)
    out: list[dict[str, Any]] = []
    for offset in range(max(1, position), min(total, max(1, position) + count - 1) + 1):
        peeked = await _examine(admin, tn, "earliest", offset)
        if peeked is not None:
            out.extend(_messages(peeked, schema_of))
    return out
