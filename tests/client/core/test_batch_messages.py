"""has_message_after: whether a reader or consumer still has a message to receive, from the topic's
last message id, its mark-delete position, the last message it received and its start position."""

from __future__ import annotations

from magnetar.client import MessageId
from magnetar.client.core.batch_messages import has_message_after


def _id(entry: int, index: int = -1) -> MessageId:
    return MessageId(5, entry, index)


def test_after_the_last_message_received() -> None:
    assert has_message_after(_id(4), None, _id(3), MessageId.earliest, False)
    assert not has_message_after(_id(4), None, _id(4), MessageId.earliest, False)
    assert has_message_after(_id(4, 2), None, _id(4, 1), None, False)


def test_from_the_start_position_when_nothing_was_received() -> None:
    assert has_message_after(_id(0), None, None, MessageId.earliest, False)
    assert has_message_after(_id(4), None, None, _id(3), False)
    assert not has_message_after(_id(4), None, None, _id(4), False)
    assert has_message_after(_id(4), None, None, _id(4), True)


def test_started_or_sought_at_latest_counts_what_came_after_the_mark_delete_position() -> None:
    # the end when the reader started (or sought to latest) is its mark-delete position
    assert not has_message_after(_id(4), _id(4), None, MessageId.latest, False)
    assert has_message_after(_id(5), _id(4), None, MessageId.latest, False)
    assert not has_message_after(_id(5), None, None, MessageId.latest, False)


def test_after_a_seek_by_time_counts_what_follows_the_position_moved_to() -> None:
    assert has_message_after(_id(7), _id(6), None, None, False)
    assert not has_message_after(_id(6), _id(6), None, None, False)
