"""Backlog quotas with the official client, set per namespace over REST and checked every second:
``destination_storage`` with ``producer_exception`` (new producers and sends of existing ones
fail with ProducerBlockedQuotaExceededException), ``producer_request_hold`` (new producers fail
with ProducerBlockedQuotaExceededError, sends of existing ones are held and complete once the
backlog is cleared), ``consumer_backlog_eviction`` by size and ``message_age`` eviction.

Messages are 1000 bytes and unbatched, so one message is one stored record a little over 1000
bytes; the 10 KiB quota is exceeded by the 10th unacknowledged message.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pulsar
import pytest

from magnetar.testing import BrokerProcess

from .helpers import assert_nothing_more
from .lifecycle_helpers import FAST_LIFECYCLE, Admin, ClientPool, start_broker, wait_until

LIMIT = 10 * 1024
#: the quota checks of this module's broker: every second, not FAST_LIFECYCLE's 0.3 s (a check that
#: disconnects the producer while the ten sends over the quota are in flight fails them all on the
#: client, stored or not: test_producer_exception then finds a backlog larger than 5 + the sends
#: confirmed, 1 run in ~10 at 0.3 s)
QUOTA_LIFECYCLE = {**FAST_LIFECYCLE, "MAGNETAR_LIFECYCLE_CHECK_INTERVAL_SECONDS": "1"}
#: a wait with at least one quota check in it
CHECK_PASSES_S = 1.5
PAD = b"q" * 990


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = start_broker(tmp_path_factory, "quota-broker", QUOTA_LIFECYCLE)
    yield proc
    proc.stop()


@pytest.fixture
def clients() -> Iterator[ClientPool]:
    pool = ClientPool()
    yield pool
    pool.close()


def payload(tag: str, i: int) -> bytes:
    return f"{tag}-{i:04d}".encode().ljust(10, b"_") + PAD


def send_all(producer: pulsar.Producer, tag: str, count: int) -> list[pulsar.Result]:
    """Send ``count`` messages at once (async) and return each one's result."""
    results: list[pulsar.Result | None] = [None] * count
    done = threading.Event()

    def callback(i: int):  # noqa: ANN202
        def cb(res: pulsar.Result, _mid: pulsar.MessageId) -> None:
            results[i] = res
            if all(r is not None for r in results):
                done.set()

        return cb

    for i in range(count):
        producer.send_async(payload(tag, i), callback(i))
    assert done.wait(30), results
    return results  # type: ignore[return-value]


def setup_topic(broker: BrokerProcess, clients: ClientPool) -> tuple[Admin, pulsar.Client, str, str]:
    """A topic in a fresh namespace with a durable subscription ``slow`` without consumers
    (it never acknowledges anything); returns (admin, client, namespace, topic)."""
    admin = Admin(broker)
    ns = admin.new_namespace("quota")
    topic = f"persistent://{ns}/t"
    client = clients(broker)
    client.subscribe(topic, "slow").close()
    return admin, client, ns, topic


def publishers(admin: Admin, topic: str) -> int:
    return len(admin.stats(topic)["publishers"])


def test_producer_exception(broker: BrokerProcess, clients) -> None:
    admin, client, ns, topic = setup_topic(broker, clients)
    admin.set_backlog_quota(ns, "destination_storage", policy="producer_exception", limit_size=LIMIT)
    producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=5_000)
    assert send_all(producer, "under", 5) == [pulsar.Result.Ok] * 5
    time.sleep(CHECK_PASSES_S)  # a lifecycle check under the quota: nothing happens
    client.create_producer(topic).close()
    assert publishers(admin, topic) == 1

    # over the quota: the check disconnects the producer (sends racing it fail with the exception)
    results = send_all(producer, "over", 10)
    assert set(results) <= {pulsar.Result.Ok, pulsar.Result.ProducerBlockedQuotaExceededException}
    wait_until(lambda: publishers(admin, topic) == 0, 5, "producer disconnected by the quota check")
    with pytest.raises(pulsar.ProducerBlockedQuotaExceededException):
        client.create_producer(topic)
    with pytest.raises(pulsar.ProducerBlockedQuotaExceededException):
        producer.send(payload("refused", 0))
    backlog = admin.backlog(topic, "slow")
    assert backlog == 5 + results.count(pulsar.Result.Ok) >= 10

    # backlog cleared: producers are accepted again (from the next check on), the old one too
    admin.skip_all(topic, "slow")
    assert admin.backlog(topic, "slow") == 0
    fresh = wait_until(lambda: _try_create(client, topic), 10, "new producer accepted after skip_all")
    fresh.send(payload("fresh", 0))

    def old_producer_sends() -> bool:
        try:
            producer.send(payload("again", 0))
            return True
        except (pulsar.ProducerBlockedQuotaExceededException, pulsar.Timeout):
            return False

    wait_until(old_producer_sends, 30, "existing producer sends again", interval=0)
    consumer = client.subscribe(topic, "slow")
    got = [consumer.receive(timeout_millis=10_000).data() for _ in range(2)]
    assert got == [payload("fresh", 0), payload("again", 0)]
    assert_nothing_more(consumer)


def _try_create(client: pulsar.Client, topic: str) -> pulsar.Producer | None:
    try:
        return client.create_producer(topic, batching_enabled=False)
    except (pulsar.ProducerBlockedQuotaExceededException, pulsar.ProducerBlockedQuotaExceededError):
        return None


def test_producer_request_hold(broker: BrokerProcess, clients) -> None:
    admin, client, ns, topic = setup_topic(broker, clients)
    producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=30_000)
    assert send_all(producer, "over", 15) == [pulsar.Result.Ok] * 15
    # set once the backlog is there, so no send of the 15 races the check
    admin.set_backlog_quota(ns, "destination_storage", policy="producer_request_hold", limit_size=LIMIT)
    wait_until(lambda: publishers(admin, topic) == 0, 5, "producer disconnected by the quota check")
    with pytest.raises(pulsar.ProducerBlockedQuotaExceededError):
        client.create_producer(topic)

    # a send of the existing producer is held, neither stored nor failed
    held = []
    producer.send_async(payload("held", 0), lambda res, mid: held.append(res))
    time.sleep(CHECK_PASSES_S)
    assert held == []
    assert admin.backlog(topic, "slow") == 15

    admin.skip_all(topic, "slow")
    wait_until(lambda: held, 20, "held send completed after the backlog was cleared")
    assert held == [pulsar.Result.Ok]
    fresh = wait_until(lambda: _try_create(client, topic), 10, "new producer accepted after skip_all")
    fresh.send(payload("fresh", 0))
    consumer = client.subscribe(topic, "slow")
    got = [consumer.receive(timeout_millis=10_000).data() for _ in range(2)]
    assert got == [payload("held", 0), payload("fresh", 0)]
    assert_nothing_more(consumer)


def test_consumer_backlog_eviction_by_size(broker: BrokerProcess, clients) -> None:
    n = 60
    # every record has the same size; segments hold whole records. Measured on a twin topic without
    # a quota: on the quota's topic a lifecycle check may evict (and trim) while the sends go on
    _, twin_client, _, twin = setup_topic(broker, clients)
    assert send_all(twin_client.create_producer(twin, batching_enabled=False), "m", n) == [pulsar.Result.Ok] * n
    record = Admin(broker).stats(twin)["storageSize"] // n
    assert 1000 < record < 1100
    admin, client, ns, topic = setup_topic(broker, clients)
    admin.set_backlog_quota(ns, "destination_storage", policy="consumer_backlog_eviction", limit_size=LIMIT)
    producer = client.create_producer(topic, batching_enabled=False)
    assert send_all(producer, "m", n) == [pulsar.Result.Ok] * n
    keep = LIMIT // record  # the most messages whose bytes fit the quota

    # the slowest cursor is moved forward until its backlog fits; the producer is never touched
    wait_until(lambda: admin.backlog(topic, "slow") <= keep, 5, "backlog evicted under the quota")
    time.sleep(CHECK_PASSES_S)
    assert admin.backlog(topic, "slow") == keep
    assert publishers(admin, topic) == 1
    producer.send(payload("after", 0))
    consumer = client.subscribe(topic, "slow")
    got = [consumer.receive(timeout_millis=10_000).data() for _ in range(keep + 1)]
    assert got == [payload("m", i) for i in range(n - keep, n)] + [payload("after", 0)]
    assert_nothing_more(consumer)


def test_message_age_eviction(broker: BrokerProcess, clients) -> None:
    admin = Admin(broker)
    ns = admin.new_namespace("age")
    admin.set_backlog_quota(ns, "message_age", policy="consumer_backlog_eviction", limit_time=1)
    topic = f"persistent://{ns}/t"
    client = clients(broker)
    client.subscribe(topic, "slow").close()
    producer = client.create_producer(topic, batching_enabled=False)
    assert send_all(producer, "old", 5) == [pulsar.Result.Ok] * 5
    sent = time.time()
    assert admin.backlog(topic, "slow") == 5
    wait_until(lambda: admin.backlog(topic, "slow") == 0, 1 + 1 + 5, "messages older than 1 s evicted")
    assert time.time() - sent >= 1.0 - 0.2
    assert publishers(admin, topic) == 1

    consumer = client.subscribe(topic, "slow")
    assert_nothing_more(consumer, 500)
    producer.send(payload("new", 0))
    assert consumer.receive(timeout_millis=10_000).data() == payload("new", 0)
