"""Subscription and consumer timestamps of topic stats, filled as Pulsar fills them: a consumer's
lastConsumedTimestamp (a message sent to it) and lastAckedTimestamp (an ACK from it), the
subscription's lastConsumedFlowTimestamp (a FLOW), lastMarkDeleteAdvancedTimestamp (an ack that
moved the mark-delete position) and the latest of its consumers' two."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pulsar
import pytest

from magnetar.testing import BrokerProcess

from .helpers import RECEIVE_MS
from .lifecycle_helpers import Admin, ClientPool, start_broker, wait_until


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = start_broker(tmp_path_factory, "timestamps-broker", {})
    yield proc
    proc.stop()


def _now_ms() -> int:
    return int(time.time() * 1000)


def test_timestamps_follow_flow_delivery_acks_and_the_mark_delete(broker: BrokerProcess) -> None:
    admin = Admin(broker)
    topic = f"persistent://{admin.new_namespace('ts')}/t"
    path = f"/admin/v2/persistent/{topic.split('://', 1)[1]}/stats"
    pool = ClientPool()

    def stats() -> dict:
        return admin._ok("GET", path, status=200)["subscriptions"]["s"]

    try:
        client = pool(broker)
        started = _now_ms()
        consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
        sub = wait_until(stats, 10, "the subscription")
        assert started <= sub["lastConsumedFlowTimestamp"] <= _now_ms()  # the client's first FLOW
        assert (sub["lastConsumedTimestamp"], sub["lastAckedTimestamp"], sub["lastMarkDeleteAdvancedTimestamp"]) == (0, 0, 0)

        producer = client.create_producer(topic, batching_enabled=False)
        sent = _now_ms()
        for payload in (b"a", b"b"):
            producer.send(payload)
        first, second = consumer.receive(RECEIVE_MS), consumer.receive(RECEIVE_MS)
        received = _now_ms()
        sub = stats()
        (c,) = sub["consumers"]
        assert sent <= c["lastConsumedTimestamp"] <= received and sub["lastConsumedTimestamp"] == c["lastConsumedTimestamp"]
        assert (c["lastAckedTimestamp"], sub["lastAckedTimestamp"], sub["lastMarkDeleteAdvancedTimestamp"]) == (0, 0, 0)

        consumer.acknowledge(second)  # a hole before it: the mark-delete position stays
        wait_until(lambda: stats()["lastAckedTimestamp"], 10, "the first ack")
        sub = stats()
        acked = sub["lastAckedTimestamp"]
        assert received <= acked <= _now_ms() and sub["consumers"][0]["lastAckedTimestamp"] == acked
        assert sub["lastMarkDeleteAdvancedTimestamp"] == 0

        consumer.acknowledge(first)  # now the mark-delete position moves past both
        wait_until(lambda: stats()["lastMarkDeleteAdvancedTimestamp"], 10, "the mark-delete advance")
        sub = stats()
        assert acked <= sub["lastMarkDeleteAdvancedTimestamp"] == sub["lastAckedTimestamp"] <= _now_ms()
        assert sub["msgBacklog"] == 0

        consumer.close()
        sub = stats()
        # as Pulsar: the consumers' timestamps go with them, the subscription's own stay
        assert (sub["lastConsumedTimestamp"], sub["lastAckedTimestamp"]) == (0, 0)
        assert sub["lastMarkDeleteAdvancedTimestamp"] > 0 and sub["lastConsumedFlowTimestamp"] >= started
    finally:
        pool.close()
