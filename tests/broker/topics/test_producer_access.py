"""Producer access modes on a topic: WaitForExclusive queueing and ExclusiveWithFencing, without sockets."""

from __future__ import annotations

import pytest

from magnetar.broker.errors import BrokerError
from magnetar.protocol.enums import ProducerAccessMode, ServerError
from tests.broker.topics.topic_harness import TopicHarness

WAIT = ProducerAccessMode.WaitForExclusive
FENCE = ProducerAccessMode.ExclusiveWithFencing


def test_wait_for_exclusive_queues_then_takes_over_in_order(harness: TopicHarness) -> None:
    topic = harness.topic
    first, second, third = harness.producer("a", WAIT), harness.producer("b", WAIT), harness.producer("c", WAIT)
    assert topic.add_producer(first) is True
    assert topic.exclusive_producer is first and topic.topic_epoch == 1
    assert topic.add_producer(second) is False  # queued: its PRODUCER request stays open
    assert topic.add_producer(third) is False
    assert list(topic.producers) == ["a"] and harness.session.calls == []
    with pytest.raises(BrokerError) as refused:
        topic.add_producer(harness.producer("d"))  # a Shared producer while one holds the topic
    assert refused.value.code == ServerError.ProducerBusy
    topic.remove_producer(first)
    assert harness.session.calls == [("ready", second.producer_id)]
    assert topic.exclusive_producer is second and list(topic.producers) == ["b"] and topic.topic_epoch == 2
    topic.remove_producer(second)
    assert harness.session.calls[-1] == ("ready", third.producer_id)
    assert topic.topic_epoch == 3


def test_a_queued_producer_that_leaves_is_skipped(harness: TopicHarness) -> None:
    topic = harness.topic
    holder, gone, next_one = harness.producer("a", WAIT), harness.producer("b", WAIT), harness.producer("c", WAIT)
    topic.add_producer(holder)
    topic.add_producer(gone)
    topic.add_producer(next_one)
    topic.remove_producer(gone)  # its client closed it while waiting
    topic.remove_producer(holder)
    assert harness.session.calls == [("ready", next_one.producer_id)]
    assert topic.exclusive_producer is next_one


def test_exclusive_with_fencing_refuses_the_queue_and_closes_the_holder(harness: TopicHarness) -> None:
    topic = harness.topic
    holder, waiting = harness.producer("a", WAIT), harness.producer("b", WAIT)
    topic.add_producer(holder)
    topic.add_producer(waiting)
    fencer = harness.producer("c", FENCE)
    assert topic.add_producer(fencer) is True
    assert harness.session.calls == [("refused", waiting.producer_id), ("closed", holder.producer_id)]
    assert harness.session.reasons == ["fenced by producer 'c'"]
    assert waiting.closed and holder.closed
    assert topic.exclusive_producer is fencer and list(topic.producers) == ["c"]
    assert topic.topic_epoch == 2


def test_exclusive_with_fencing_closes_shared_producers(harness: TopicHarness) -> None:
    topic = harness.topic
    shared = [harness.producer(name) for name in ("s1", "s2")]
    for producer in shared:
        topic.add_producer(producer)
    fencer = harness.producer("f", FENCE)
    topic.add_producer(fencer)
    assert harness.session.calls == [("closed", p.producer_id) for p in shared]
    assert list(topic.producers) == ["f"]


def test_a_fenced_producer_reconnecting_with_an_old_epoch_is_refused(harness: TopicHarness) -> None:
    topic = harness.topic
    old = harness.producer("a", FENCE)
    topic.add_producer(old)
    newer = harness.producer("b", FENCE)
    topic.add_producer(newer)
    assert topic.topic_epoch == 2
    topic.remove_producer(newer)
    stale = harness.producer("a2", FENCE)
    stale.topic_epoch = 1  # the epoch its client last held
    with pytest.raises(BrokerError) as fenced:
        topic.add_producer(stale)
    assert fenced.value.code == ServerError.ProducerFenced
    current = harness.producer("a3", FENCE)
    current.topic_epoch = 2
    assert topic.add_producer(current) and topic.topic_epoch == 3


def test_exclusive_is_refused_while_other_producers_are_attached(harness: TopicHarness) -> None:
    topic = harness.topic
    topic.add_producer(harness.producer("s"))
    with pytest.raises(BrokerError) as refused:
        topic.add_producer(harness.producer("x", ProducerAccessMode.Exclusive))
    assert refused.value.code == ServerError.ProducerFenced


def test_a_fenced_waiter_is_refused_on_its_own_request_and_the_next_waiter_gets_the_topic(
    harness: TopicHarness,
) -> None:
    """Issue 12 defect 9: W (WaitForExclusive, epoch 1) is fenced by F (ExclusiveWithFencing),
    reconnects with its old epoch and waits behind F with another waiter V. When F closes, W's own
    request fails with ProducerFenced (not the CLOSE_PRODUCER of F) and V takes the topic."""
    topic = harness.topic
    first = harness.producer("w", WAIT)
    topic.add_producer(first)
    assert topic.topic_epoch == 1
    fencer = harness.producer("f", FENCE)
    topic.add_producer(fencer)
    assert topic.topic_epoch == 2
    stale = harness.producer("w", WAIT)
    stale.topic_epoch = 1  # the reconnection of w carries the epoch it held
    assert topic.add_producer(stale) is False
    behind = harness.producer("v", WAIT)
    assert topic.add_producer(behind) is False
    harness.session.calls.clear()
    topic.remove_producer(fencer)  # must not raise: F's close succeeds
    assert harness.session.calls == [("refused", stale.producer_id), ("ready", behind.producer_id)]
    assert "fenced" in harness.session.reasons[-1]
    assert stale.closed and topic.exclusive_producer is behind and list(topic.producers) == ["v"]
    assert topic.topic_epoch == 3
