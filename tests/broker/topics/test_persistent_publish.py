"""Publishing to a persistent topic through its publish context: receipts, order, deduplication."""

from __future__ import annotations

from magnetar.protocol.enums import ServerError
from tests.broker.topics.topic_harness import LEDGER_ID, TopicHarness


def test_receipts_wait_for_durability_and_carry_ids_in_order(harness: TopicHarness) -> None:
    producer = harness.producer("p")
    assert harness.topic.add_producer(producer)
    assert [harness.publish(producer, seq) for seq in range(3)] == [True, True, True]
    assert harness.log == []  # nothing is durable yet
    assert harness.committer.appended_topics == [harness.topic] * 3
    assert harness.topic.last_entry_id == -1  # consumers cannot read it either
    harness.make_durable(upto=0)
    assert harness.log == [("receipt", 0, LEDGER_ID, 0)]
    harness.make_durable()
    assert harness.log == [("receipt", 0, LEDGER_ID, 0), ("receipt", 1, LEDGER_ID, 1), ("receipt", 2, LEDGER_ID, 2)]
    assert harness.topic.last_entry_id == 2
    assert producer.msg_in_counter == 3 and harness.topic.msg_in_counter == 3


def test_a_closed_producer_still_gets_its_entries_stored(harness: TopicHarness) -> None:
    producer = harness.producer("p")
    harness.topic.add_producer(producer)
    harness.publish(producer, 0)
    harness.topic.remove_producer(producer)
    harness.make_durable()
    assert harness.topic.last_entry_id == 0
    assert harness.log == [("receipt", 0, LEDGER_ID, 0)]  # the session decides not to send it


def test_duplicates_are_answered_after_what_was_published_before_them(harness: TopicHarness) -> None:
    harness.enable_deduplication()
    producer = harness.producer("p")
    harness.topic.add_producer(producer)
    assert harness.publish(producer, 0)
    assert harness.publish(producer, 1)
    assert not harness.publish(producer, 1)  # a duplicate of a pending entry: not stored
    assert harness.log == []  # and not answered before the entries ahead of it
    harness.make_durable()
    assert harness.log == [("receipt", 0, LEDGER_ID, 0), ("receipt", 1, LEDGER_ID, 1), ("duplicate", 1)]
    assert not harness.publish(producer, 0)  # nothing pending: answered at once
    assert harness.log[-1] == ("duplicate", 0)
    assert harness.ledger.last_entry_id == 1
    assert harness.topic.last_sequence_id("p") == 1


def test_a_batch_is_deduplicated_by_its_highest_sequence_id(harness: TopicHarness) -> None:
    harness.enable_deduplication()
    producer = harness.producer("p")
    harness.topic.add_producer(producer)
    assert harness.publish(producer, 0, highest_sequence_id=4)
    assert not harness.publish(producer, 3)
    assert harness.publish(producer, 5)
    harness.make_durable()
    assert harness.log == [("receipt", 0, LEDGER_ID, 0), ("duplicate", 3), ("receipt", 5, LEDGER_ID, 1)]
    assert harness.topic.dedup_snapshot() == (1, {"p": 5})


def test_every_chunk_of_a_message_is_stored_and_a_resent_message_is_not(harness: TopicHarness) -> None:
    harness.enable_deduplication()
    producer = harness.producer("p")
    harness.topic.add_producer(producer)
    assert [harness.publish(producer, 7, chunk=(i, 3)) for i in range(3)] == [True, True, True]
    harness.make_durable()
    assert harness.log == [("receipt", 7, LEDGER_ID, 0), ("receipt", 7, LEDGER_ID, 1), ("receipt", 7, LEDGER_ID, 2)]
    assert harness.topic.last_sequence_id("p") == 7
    assert harness.topic.dedup_snapshot() == (2, {"p": 7})
    assert [harness.publish(producer, 7, chunk=(i, 3)) for i in range(3)] == [False, False, False]
    assert harness.ledger.last_entry_id == 2


def test_replay_does_not_count_a_message_whose_last_chunk_is_missing(harness: TopicHarness) -> None:
    harness.enable_deduplication()
    producer = harness.producer("p")
    harness.topic.add_producer(producer)
    harness.publish(producer, 3)
    harness.publish(producer, 4, chunk=(0, 2))  # the broker died before the last chunk
    harness.make_durable()
    harness.topic.restore_sequence_ids({}, -1)
    assert harness.topic.last_sequence_id("p") == 3  # the resent message is stored, not dropped
    assert harness.publish(producer, 4, chunk=(0, 2)) and harness.publish(producer, 4, chunk=(1, 2))


def test_without_deduplication_repeated_sequence_ids_are_stored(harness: TopicHarness) -> None:
    producer = harness.producer("p")
    harness.topic.add_producer(producer)
    assert harness.publish(producer, 0) and harness.publish(producer, 0)
    harness.make_durable()
    assert harness.log == [("receipt", 0, LEDGER_ID, 0), ("receipt", 0, LEDGER_ID, 1)]
    assert harness.topic.last_sequence_id("p") == -1


def test_a_terminated_topic_refuses_the_publish_at_once(harness: TopicHarness) -> None:
    producer = harness.producer("p")
    harness.topic.add_producer(producer)
    harness.publish(producer, 0)
    harness.make_durable()
    ended: list[tuple[int, int]] = []
    harness.topic.terminate(lambda *last: ended.append(last))
    assert ended == [(LEDGER_ID, 0)]
    assert harness.session.calls == [("closed", producer.producer_id)] and producer.closed
    assert not harness.publish(producer, 1)
    assert harness.log[-1] == ("error", 1, ServerError.TopicTerminatedError)
    assert harness.ledger.last_entry_id == 0


def test_a_failed_sync_fails_every_pending_publish(harness: TopicHarness) -> None:
    producer = harness.producer("p")
    harness.topic.add_producer(producer)
    harness.publish(producer, 0)
    harness.publish(producer, 1)
    harness.topic.on_sync_failed(OSError("disk gone"))
    assert harness.log == [("error", 0, ServerError.PersistenceError), ("error", 1, ServerError.PersistenceError)]
    harness.make_durable()
    assert len(harness.log) == 2  # each publish completes exactly once


def test_without_deduplication_no_snapshot_is_written_for_named_producers(harness: TopicHarness) -> None:
    producer = harness.producer("p")
    harness.topic.add_producer(producer)
    assert harness.publish(producer, 0) and harness.publish(producer, 1)
    harness.make_durable()
    assert not harness.topic.dedup_dirty and harness.topic.dedup_snapshot() is None
    harness.enable_deduplication()  # turned on later: the state kept meanwhile is whole
    assert not harness.publish(producer, 1)
    assert harness.publish(producer, 2)
    harness.make_durable()
    assert harness.topic.dedup_snapshot() == (2, {"p": 2})


def test_a_restored_topic_replays_the_entries_after_its_snapshot_once_deduplication_is_on(harness: TopicHarness) -> None:
    producer = harness.producer("p")
    harness.topic.add_producer(producer)
    for seq in (3, 4, 5):
        harness.publish(producer, seq)
    harness.make_durable()
    harness.topic.restore_sequence_ids({"p": 3}, 0)  # as a load finds it: the snapshot covers entry 0
    assert harness.topic.last_sequence_ids == {"p": 3}  # deduplication off: entries 1-2 not read
    harness.enable_deduplication()
    assert harness.topic.last_sequence_id("p") == 5
    assert harness.topic.dedup_snapshot() == (2, {"p": 5})  # persisted with the next round
    assert not harness.publish(producer, 5)
    assert harness.publish(producer, 6)
