"""Topic, subscription, consumer and internal stats with the values Apache Pulsar 4.2 gives for the same
scenario (tools/stats_compare.py ran it on both; docs/STATS.md has the field-by-field table)."""

from __future__ import annotations

from collections.abc import Callable

import pulsar

from magnetar.broker.resources.stats import instant
from magnetar.testing import BrokerProcess

from .admin_http import Http
from .helpers import wait_until

NS = "public/default"


def _path(name: str) -> str:
    return f"/admin/v2/persistent/{NS}/{name}"


def test_instant_prints_as_javas() -> None:
    assert instant(0) == "1970-01-01T00:00:00Z"
    assert instant(1000) == "1970-01-01T00:00:01Z"
    assert instant(1795926373868) == "2026-11-29T04:26:13.868Z"  # Pulsar's lastAckedTime of that timestamp


def _scenario(client: pulsar.Client, topic: str) -> tuple[pulsar.Consumer, pulsar.Consumer]:
    """15 messages (2 batches of 5, 5 plain); ``ex`` acknowledges 8, ``sh`` 3 (of a batch: the client
    holds them back) and negatively acknowledges one it then receives again."""
    ex = client.subscribe(topic, "ex", consumer_type=pulsar.ConsumerType.Exclusive)
    sh = client.subscribe(topic, "sh", consumer_type=pulsar.ConsumerType.Shared, negative_ack_redelivery_delay_ms=100)
    batched = client.create_producer(topic, batching_enabled=True, batching_max_messages=5,
                                     batching_max_publish_delay_ms=1000)
    for _ in range(10):
        batched.send_async(b"x" * 100, None)
    batched.flush()
    plain = client.create_producer(topic, batching_enabled=False)
    for _ in range(5):
        plain.send(b"x" * 100)
    for msg in [ex.receive(10_000) for _ in range(15)][:8]:
        ex.acknowledge(msg)
    shared = [sh.receive(10_000) for _ in range(15)]
    for msg in shared[:3]:
        sh.acknowledge(msg)
    sh.negative_acknowledge(shared[10])
    assert sh.receive(10_000).data() == shared[10].data()
    return ex, sh


def test_subscription_and_consumer_stats(http: Http, client: pulsar.Client, name: str) -> None:
    ex, sh = _scenario(client, f"persistent://{NS}/{name}")
    wait_until(lambda: http.get(_path(name) + "/stats").json()["subscriptions"]["ex"]["msgBacklog"] == 6)
    stats = http.get(_path(name) + "/stats").json()
    exs, shs = stats["subscriptions"]["ex"], stats["subscriptions"]["sh"]
    # Exclusive: no unacked count (Pulsar keeps pending acks for Shared and Key_Shared only), one active consumer
    assert (exs["unackedMessages"], exs["consumers"][0]["unackedMessages"]) == (0, 0)
    assert exs["activeConsumerName"] == ex.consumer_name() == exs["consumers"][0]["consumerName"]
    assert (exs["msgOutCounter"], exs["msgBacklog"], exs["type"]) == (15, 6, "Exclusive")
    consumer = exs["consumers"][0]
    assert consumer["lastAckedTimestamp"] == exs["lastAckedTimestamp"] == exs["lastMarkDeleteAdvancedTimestamp"] > 0
    assert consumer["lastAckedTime"] == instant(consumer["lastAckedTimestamp"])
    assert consumer["lastConsumedTime"] == instant(consumer["lastConsumedTimestamp"])
    assert 0 < consumer["firstConsumedFlowTimestamp"] <= consumer["lastConsumedFlowTimestamp"]
    assert consumer["firstConsumedFlowTimestamp"] <= consumer["firstMessagesSentTimestamp"] <= consumer["lastConsumedTimestamp"]
    # Shared: 15 unacked (the batch-index acks stay in the client), 16 out with the redelivery, no ack yet
    assert "activeConsumerName" not in shs
    assert (shs["unackedMessages"], shs["msgOutCounter"], shs["msgBacklog"], shs["lastAckedTimestamp"]) == (15, 16, 7, 0)
    assert (shs["consumers"][0]["unackedMessages"], shs["consumers"][0]["lastAckedTime"]) == (15, "1970-01-01T00:00:00Z")
    assert (shs["durable"], shs["isDurable"], shs["replicated"], shs["msgInReplay"], shs["drainingHashesCount"]) == (
        True, True, False, 0, 0)
    # the topic: no quota, no epoch, and the earliest publish time only when asked for
    assert (stats["backlogQuotaLimitSize"], stats["backlogQuotaLimitTime"], stats["oldestBacklogMessageAgeSeconds"]) == (
        -1, -1, -1)
    assert "topicEpoch" not in stats and stats["earliestMsgPublishTimeInBacklogs"] == 0
    assert (stats["msgInCounter"], stats["publishRateLimitedTimes"], stats["lastOffloadLedgerId"]) == (15, 0, 0)
    asked = http.get(_path(name) + "/stats?getEarliestTimeInBacklog=true").json()
    assert asked["earliestMsgPublishTimeInBacklogs"] == asked["subscriptions"]["sh"]["earliestMsgPublishTimeInBacklog"] > 0


def test_internal_stats_cursors(http: Http, client: pulsar.Client, name: str) -> None:
    _scenario(client, f"persistent://{NS}/{name}")
    wait_until(lambda: http.get(_path(name) + "/internalStats").json()["cursors"]["ex"]["markDeletePosition"].endswith(":0"))
    internal = http.get(_path(name) + "/internalStats").json()
    ex, sh = internal["cursors"]["ex"], internal["cursors"]["sh"]
    # Pulsar counts (mark-delete, read position]: entries 1..7 for ex, -1..7 for sh
    assert (ex["numberOfEntriesSinceFirstNotAckedMessage"], sh["numberOfEntriesSinceFirstNotAckedMessage"]) == (7, 8)
    assert (ex["state"], sh["state"]) == ("Open", "NoLedger")  # sh never moved: no cursor ledger in Pulsar
    assert (ex["waitingReadOp"], ex["subscriptionHavePendingRead"], sh["waitingReadOp"]) == (True, True, True)
    assert internal["waitingCursorsCount"] == 2
    assert (internal["numberOfEntries"], internal["currentLedgerEntries"], internal["entriesAddedCounter"]) == (7, 7, 7)
    assert (internal["ledgers"][0]["entries"], internal["ledgers"][0]["size"], internal["properties"]) == (0, 0, {})


def test_partitioned_stats_merge_publishers_and_consumers(
        http: Http, client_factory: Callable[[str], pulsar.Client], broker: BrokerProcess, name: str) -> None:
    assert http.put(_path(name) + "/partitions", 2).status == 204
    client = client_factory(broker.service_url)
    topic = f"persistent://{NS}/{name}"
    consumer = client.subscribe(topic, "psub", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic, batching_enabled=False)
    for _ in range(6):
        producer.send(b"x" * 100)
    received = [consumer.receive(10_000) for _ in range(6)]
    for msg in received:
        if msg.topic_name().endswith("-partition-0"):
            consumer.acknowledge(msg)
    path = _path(name) + "/partitioned-stats?perPartition=true"
    wait_until(lambda: http.get(path).json()["subscriptions"]["psub"]["msgBacklog"] == 3)
    stats = http.get(path).json()
    assert stats["metadata"] == {"partitions": 2, "deleted": False}
    # one producer and one consumer per partition: merged into one each, as Pulsar adds them position by position
    [publisher] = stats["publishers"]
    assert sorted(publisher) == ["averageMsgSize", "chunkedMessageRate", "msgRateIn", "msgThroughputIn", "producerId",
                                 "supportsPartialProducer"]
    sub = stats["subscriptions"]["psub"]
    [merged] = sub["consumers"]
    assert (merged["msgOutCounter"], merged["unackedMessages"], merged["lastAckedTimestamp"]) == (6, 3, 0)
    assert merged["consumerName"] == consumer.consumer_name() and "address" not in merged
    assert (sub["msgOutCounter"], sub["unackedMessages"], sub["lastAckedTimestamp"], sub["lastConsumedTimestamp"]) == (
        6, 3, 0, 0)
    assert (stats["msgInCounter"], stats["ongoingTxnCount"], stats["oldestBacklogMessageAgeSeconds"]) == (6, 0, 0)
    assert "deduplicationStatus" not in stats
    p0 = stats["partitions"][f"{topic}-partition-0"]["subscriptions"]["psub"]
    p1 = stats["partitions"][f"{topic}-partition-1"]["subscriptions"]["psub"]
    assert (p0["msgBacklog"], p0["unackedMessages"], p1["msgBacklog"], p1["unackedMessages"]) == (0, 0, 3, 3)
    assert p0["lastAckedTimestamp"] > 0 and p1["lastAckedTimestamp"] == 0
    # one message per entry: the dispatch average is 1 in each partition (Pulsar's too); not summed
    assert (p0["consumers"][0]["avgMessagesPerEntry"], p1["consumers"][0]["avgMessagesPerEntry"]) == (1, 1)
    assert merged["avgMessagesPerEntry"] == 0


def test_a_readers_ack_before_the_first_entry_moves_nothing(http: Http, client: pulsar.Client, name: str) -> None:
    """The C++ reader acknowledges the first message of a batch cumulatively as the entry before it
    (entry -1 for the first batch): Pulsar's mark-delete stays, so the reader's backlog is all there is."""
    topic = f"persistent://{NS}/{name}"
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=5,
                                      batching_max_publish_delay_ms=1000)
    for _ in range(10):
        producer.send_async(b"x", None)
    producer.flush()
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert [reader.read_next(10_000).message_id().batch_index() for _ in range(4)] == [0, 1, 2, 3]

    def reader_stats() -> dict:
        [sub] = http.get(_path(name) + "/stats").json()["subscriptions"].values()
        return sub

    wait_until(lambda: reader_stats()["lastAckedTimestamp"] > 0)  # the ack came
    sub = reader_stats()
    assert (sub["msgBacklog"], sub["lastMarkDeleteAdvancedTimestamp"], sub["isDurable"]) == (2, 0, False)
    [cursor] = http.get(_path(name) + "/internalStats").json()["cursors"].values()
    assert (cursor["markDeletePosition"].split(":")[1], cursor["messagesConsumedCounter"]) == ("-1", 0)
    assert cursor["numberOfEntriesSinceFirstNotAckedMessage"] == 3  # (-1, 2]: read position 2
    reader.close()
