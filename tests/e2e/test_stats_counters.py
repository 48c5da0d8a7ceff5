"""Topic and subscription stats counters against Pulsar's definitions (issue 12, defects 5 and 11).

* msgOutCounter / bytesOutCounter of a subscription include what consumers that left had received
  (Pulsar's msgOutFromRemovedConsumer), and the topic's sum its subscriptions'.
* earliestMsgPublishTimeInBacklog(s): the publish time of the oldest unacknowledged message.
* totalMsgExpired counts what message TTL expired, not only admin expire-messages.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pulsar
import pytest

from magnetar.testing import BrokerProcess

from .helpers import RECEIVE_MS
from .lifecycle_helpers import FAST_LIFECYCLE, Admin, ClientPool, start_broker, wait_until


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = start_broker(tmp_path_factory, "stats-broker", FAST_LIFECYCLE)
    yield proc
    proc.stop()


@pytest.fixture
def clients() -> Iterator[ClientPool]:
    pool = ClientPool()
    yield pool
    pool.close()


def _stats(admin: Admin, topic: str, query: str = "") -> dict:
    return admin._ok("GET", f"/admin/v2/persistent/{topic.split('://', 1)[1]}/stats{query}", status=200)


def test_out_counters_keep_what_consumers_that_left_received(broker: BrokerProcess, clients: ClientPool) -> None:
    admin = Admin(broker)
    ns = admin.new_namespace("stats")
    topic = f"persistent://{ns}/out"
    client = clients(broker)
    consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"0123456789")
    consumer.acknowledge(consumer.receive(timeout_millis=RECEIVE_MS))
    before = _stats(admin, topic)
    sub = before["subscriptions"]["s"]
    assert (sub["msgOutCounter"], before["msgOutCounter"]) == (1, 1)
    entry_bytes = sub["bytesOutCounter"]
    assert entry_bytes > 10 and before["bytesOutCounter"] == entry_bytes
    consumer.close()
    after = _stats(admin, topic)
    sub = after["subscriptions"]["s"]
    assert sub["consumers"] == []
    assert (sub["msgOutCounter"], sub["bytesOutCounter"]) == (1, entry_bytes)
    assert (after["msgOutCounter"], after["bytesOutCounter"]) == (1, entry_bytes)
    # a second consumer adds to what the first one received
    again = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
    producer.send(b"0123456789")
    again.acknowledge(again.receive(timeout_millis=RECEIVE_MS))
    again.close()
    final = _stats(admin, topic)
    assert final["subscriptions"]["s"]["msgOutCounter"] == 2
    assert (final["msgOutCounter"], final["bytesOutCounter"]) == (2, 2 * entry_bytes)
    assert final["msgInCounter"] == 2


def test_earliest_publish_time_in_backlog(broker: BrokerProcess, clients: ClientPool) -> None:
    admin = Admin(broker)
    ns = admin.new_namespace("stats")
    topic = f"persistent://{ns}/earliest"
    client = clients(broker)
    consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(4):
        producer.send(b"m%d" % i)
    received = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(4)]
    first_time = received[0].publish_timestamp()
    stats = _stats(admin, topic, "?getEarliestTimeInBacklog=true")
    assert stats["subscriptions"]["s"]["msgBacklog"] == 4
    assert stats["subscriptions"]["s"]["earliestMsgPublishTimeInBacklog"] == first_time
    assert stats["earliestMsgPublishTimeInBacklogs"] == first_time
    consumer.acknowledge(received[0])
    second_time = received[1].publish_timestamp()
    wait_until(
        lambda: _stats(admin, topic, "?getEarliestTimeInBacklog=true")["subscriptions"]["s"]["earliestMsgPublishTimeInBacklog"]
        == second_time,
        5, "the oldest unacknowledged message is the second one",
    )
    for msg in received[1:]:
        consumer.acknowledge(msg)
    wait_until(lambda: _stats(admin, topic)["subscriptions"]["s"]["msgBacklog"] == 0, 5, "no backlog")
    stats = _stats(admin, topic, "?getEarliestTimeInBacklog=true")
    assert stats["subscriptions"]["s"]["earliestMsgPublishTimeInBacklog"] == 0
    assert stats["earliestMsgPublishTimeInBacklogs"] == 0


def test_total_msg_expired_counts_message_ttl(broker: BrokerProcess, clients: ClientPool) -> None:
    admin = Admin(broker)
    ns = admin.new_namespace("stats")
    admin.set_namespace_policy(ns, "messageTTL", 1)
    topic = f"persistent://{ns}/ttl"
    client = clients(broker)
    client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared).close()
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(5):
        producer.send(b"m%d" % i)
    started = time.time()
    wait_until(lambda: _stats(admin, topic)["subscriptions"]["s"]["msgBacklog"] == 0, 10, "TTL expired the backlog")
    sub = _stats(admin, topic)["subscriptions"]["s"]
    assert sub["totalMsgExpired"] == 5
    assert sub["lastExpireTimestamp"] >= int(started * 1000)
