"""Rate-limit and inactive-topic policies enforced on a broker process, measured with
magnetar.client and the official client: a publish rate and dispatch rates held within 20% over a
bounded run, excess subscribes refused with Pulsar's error, inactive topics deleted as the delete
mode says."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pulsar
import pytest

import magnetar.client
from magnetar.testing import BrokerProcess
from magnetar.testing.admin import Admin

RATE = 100  # messages per second
RUN = 3.0  # seconds of a measured run; the rate is read over its last two seconds (the first holds a full bucket)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    # a keep-alive of 1 s: a connection the publish rate holds for longer must not be closed as silent
    env = {"MAGNETAR_LIFECYCLE_CHECK_INTERVAL_SECONDS": "0.3", "MAGNETAR_KEEPALIVE_SECONDS": "1"}
    proc = BrokerProcess(tmp_path_factory.mktemp("rates") / "data", args=("--fsync", "never"), env=env).start()
    yield proc
    proc.stop()


@pytest.fixture
def admin(broker: BrokerProcess) -> Iterator[Admin]:
    client = Admin(broker.http_url)
    yield client
    client.close()


@pytest.fixture
def ns(admin: Admin) -> str:
    tenant = f"rates-{uuid.uuid4().hex[:8]}"
    admin.create_tenant(tenant, ["standalone"])
    admin.create_namespace(f"{tenant}/ns")
    return f"{tenant}/ns"


def _steady_rate(stamps: list[float], start: float) -> float:
    """Messages per second over the last two seconds of a run that began at ``start``."""
    return sum(1 for t in stamps if start + RUN - 2.0 <= t < start + RUN) / 2.0


def test_publish_rate_holds_the_producer_at_the_limit(broker: BrokerProcess, admin: Admin, ns: str) -> None:
    admin.set_namespace_policy(ns, "publishRate", {"publishThrottlingRateInMsg": RATE, "publishThrottlingRateInByte": -1})
    client = magnetar.client.Client(broker.service_url)
    try:
        # 1000 sends in flight: what the broker already read waits with the connection, so no burst overdraws
        producer = client.create_producer(f"persistent://{ns}/pub", batching_enabled=False, max_pending_messages=1000,
                                          block_if_queue_full=True)
        receipts: list[float] = []
        errors: list[object] = []

        def done(result: object, _msg_id: object) -> None:
            (receipts if result == magnetar.client.Result.Ok else errors).append(time.monotonic())

        start = time.monotonic()
        for _ in range(int(RATE * (RUN + 1))):  # a second's worth more than the run takes: the queue stays full
            producer.send_async(b"x" * 100, done)
        time.sleep(max(0.0, start + RUN - time.monotonic()))
        rate = _steady_rate(receipts, start)
        assert RATE * 0.8 <= rate <= RATE * 1.2, (rate, len(receipts))
        producer.flush()
        assert errors == [] and len(receipts) == int(RATE * (RUN + 1))  # throttled, never refused
    finally:
        client.close()


def test_a_connection_held_longer_than_the_keepalive_stays_open(broker: BrokerProcess, admin: Admin, ns: str) -> None:
    topic = f"persistent://{ns}/slow"
    admin.create_topic(topic)
    admin.request("POST", f"persistent/{ns}/slow/publishRate", {"publishThrottlingRateInMsg": 5, "publishThrottlingRateInByte": -1})
    time.sleep(0.2)
    client = magnetar.client.Client(broker.service_url)
    try:
        producer = client.create_producer(topic, batching_enabled=False)
        connected = admin.topic_stats(topic)["publishers"][0]["connectedSince"]
        results: list[object] = []
        start = time.monotonic()
        for i in range(25):
            producer.send_async(str(i).encode(), lambda result, _id: results.append(result))
        producer.flush()
        elapsed = time.monotonic() - start
        assert results == [magnetar.client.Result.Ok] * 25
        assert 3.2 <= elapsed <= 6.0, elapsed  # 5 at once, 20 more at 5 a second
        assert admin.topic_stats(topic)["publishers"][0]["connectedSince"] == connected  # never reconnected
    finally:
        client.close()


def test_publish_rate_with_the_official_client(broker: BrokerProcess, admin: Admin, ns: str) -> None:
    topic = f"persistent://{ns}/pub-official"
    admin.create_topic(topic)
    admin.request("POST", f"persistent/{ns}/pub-official/publishRate",
                  {"publishThrottlingRateInMsg": 50, "publishThrottlingRateInByte": -1})
    time.sleep(0.2)
    client = pulsar.Client(broker.service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer(topic, batching_enabled=False)
        stamps = []
        start = time.monotonic()
        while time.monotonic() - start < RUN:
            producer.send(b"y")
            stamps.append(time.monotonic())
        rate = _steady_rate(stamps, start)
        assert 40 <= rate <= 60, (rate, len(stamps))
    finally:
        client.close()


def _consume_rate(broker: BrokerProcess, topic: str, subscription: str, kind: str = "Exclusive") -> float:
    stamps, start = _consume(broker, topic, subscription, kind)
    return _steady_rate(stamps, start)


def _consume(broker: BrokerProcess, topic: str, subscription: str, kind: str = "Exclusive") -> tuple[list[float], float]:
    """When each message arrived over a run, and when the run began."""
    client = magnetar.client.Client(broker.service_url)
    try:
        consumer = client.subscribe(topic, subscription, initial_position=magnetar.client.InitialPosition.Earliest,
                                    consumer_type=getattr(magnetar.client.ConsumerType, kind))
        stamps = []
        start = time.monotonic()
        while time.monotonic() - start < RUN:
            try:
                consumer.acknowledge(consumer.receive(timeout_millis=200))
            except magnetar.client.Timeout:
                continue
            stamps.append(time.monotonic())
        return stamps, start
    finally:
        client.close()


def _fill(broker: BrokerProcess, topic: str, count: int) -> None:
    client = magnetar.client.Client(broker.service_url)
    try:
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(count):
            producer.send_async(str(i).encode(), None)
        producer.flush()
    finally:
        client.close()


@pytest.mark.parametrize("kind", ["Exclusive", "Shared", "KeyShared"])
def test_subscription_dispatch_rate(broker: BrokerProcess, admin: Admin, ns: str, kind: str) -> None:
    topic = f"persistent://{ns}/sub-dispatch"
    admin.create_topic(topic)
    _fill(broker, topic, 1000)
    admin.set_namespace_policy(ns, "subscriptionDispatchRate", {
        "dispatchThrottlingRateInMsg": RATE, "dispatchThrottlingRateInByte": -1, "relativeToPublishRate": False,
        "ratePeriodInSecond": 1})
    time.sleep(0.2)
    rate = _consume_rate(broker, topic, "s1", kind)
    assert RATE * 0.8 <= rate <= RATE * 1.2, rate


def test_topic_dispatch_rate_over_a_longer_period(broker: BrokerProcess, admin: Admin, ns: str) -> None:
    topic = f"persistent://{ns}/topic-dispatch"
    admin.create_topic(topic)
    _fill(broker, topic, 1000)
    admin.request("POST", f"persistent/{ns}/topic-dispatch/dispatchRate", {
        "dispatchThrottlingRateInMsg": 2 * RATE, "dispatchThrottlingRateInByte": -1, "relativeToPublishRate": False,
        "ratePeriodInSecond": 2})  # 200 per 2 s: 100 a second
    time.sleep(0.2)
    rate = _consume_rate(broker, topic, "s1")
    assert RATE * 0.8 <= rate <= RATE * 1.2, rate
    admin.request("DELETE", f"persistent/{ns}/topic-dispatch/dispatchRate")
    time.sleep(0.2)
    stamps, start = _consume(broker, topic, "s2")  # removed: no limit, the backlog of 1000 goes at once
    assert len(stamps) == 1000 and stamps[-1] - start < 1.5, (len(stamps), stamps[-1] - start)


def test_subscribe_rate_refuses_excess_subscribes(broker: BrokerProcess, admin: Admin, ns: str) -> None:
    topic = f"persistent://{ns}/subscribe"
    admin.create_topic(topic)
    admin.set_namespace_policy(ns, "subscribeRate", {"subscribeThrottlingRatePerConsumer": 1, "ratePeriodInSecond": 30})
    time.sleep(0.2)
    # a client's first consumer has consumer id 0: two clients subscribing under one consumer name from
    # one host are the same consumer to the limiter, as to Pulsar's
    first = pulsar.Client(broker.service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    second = pulsar.Client(broker.service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    ours = magnetar.client.Client(broker.service_url)
    try:
        first.subscribe(topic, "a", consumer_name="c").close()
        with pytest.raises(pulsar.NotAllowedError):
            second.subscribe(topic, "b", consumer_name="c")
        other = second.subscribe(topic, "b", consumer_name="d")  # another consumer name: its own window
        other.close()
        ours.subscribe(topic, "c", consumer_name="m").close()  # magnetar.client: a consumer of its own
    finally:
        for c in (first, second, ours):
            c.close()
    assert sorted(admin.subscriptions(topic)) == ["a", "b", "c"]


def _wait_for(predicate, seconds: float) -> bool:  # noqa: ANN001 - a condition
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def test_inactive_topic_without_subscriptions_is_deleted(broker: BrokerProcess, admin: Admin, ns: str) -> None:
    admin.set_namespace_policy(ns, "inactiveTopicPolicies", {
        "inactiveTopicDeleteMode": "delete_when_no_subscriptions", "maxInactiveDurationSeconds": 1,
        "deleteWhileInactive": True})
    gone, kept = f"persistent://{ns}/idle", f"persistent://{ns}/subscribed"
    client = magnetar.client.Client(broker.service_url)
    try:
        client.create_producer(gone).send(b"m")
        client.subscribe(kept, "s").close()
        client.close()
        start = time.monotonic()
        assert _wait_for(lambda: gone not in admin.topics(ns), 5.0)
        assert time.monotonic() - start >= 0.9  # not before its inactive time
        time.sleep(1.5)
        assert kept in admin.topics(ns)  # a subscription keeps it in this mode
    finally:
        client.close()


def test_caught_up_mode_keeps_a_backlog_and_deletes_once_acknowledged(
    broker: BrokerProcess, admin: Admin, ns: str
) -> None:
    topic = f"persistent://{ns}/caught-up"
    admin.create_topic(topic)
    admin.request("POST", f"persistent/{ns}/caught-up/inactiveTopicPolicies", {
        "inactiveTopicDeleteMode": "delete_when_subscriptions_caught_up", "maxInactiveDurationSeconds": 1,
        "deleteWhileInactive": True})
    client = pulsar.Client(broker.service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        client.subscribe(topic, "s").close()
        producer = client.create_producer(topic)
        producer.send(b"kept")
        producer.close()
        time.sleep(2.5)
        assert topic in admin.topics(ns)  # the subscription's backlog keeps it
        assert admin.backlog(topic, "s") == 1
        consumer = client.subscribe(topic, "s")
        consumer.acknowledge(consumer.receive(5000))
        consumer.close()
        assert _wait_for(lambda: topic not in admin.topics(ns), 5.0)
    finally:
        client.close()

