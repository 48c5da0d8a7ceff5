"""Message TTL with the official client: unacknowledged messages older than the TTL are
acknowledged on every durable subscription by the periodic lifecycle check (every 0.3 s here),
never before their TTL; later messages are still delivered; a topic's TTL overrides its
namespace's, live, and removing it falls back to the namespace's."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pulsar
import pytest

from magnetar.testing import BrokerProcess

from .helpers import assert_nothing_more
from .lifecycle_helpers import CHECKS_PASS_S, FAST_LIFECYCLE, Admin, ClientPool, start_broker, wait_until

TTL_S = 2


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = start_broker(tmp_path_factory, "ttl-broker", FAST_LIFECYCLE)
    yield proc
    proc.stop()


@pytest.fixture
def clients() -> Iterator[ClientPool]:
    pool = ClientPool()
    yield pool
    pool.close()


def produce(client: pulsar.Client, topic: str, payloads: list[bytes]) -> None:
    producer = client.create_producer(topic, batching_enabled=False)
    for p in payloads:
        producer.send(p)
    producer.close()


def test_namespace_ttl_expires_unacknowledged_messages(broker: BrokerProcess, clients) -> None:
    admin = Admin(broker)
    ns = admin.new_namespace("ttl")
    admin.set_namespace_policy(ns, "messageTTL", TTL_S)
    topic = f"persistent://{ns}/t"
    client = clients(broker)
    # connected, messages dispatched to it, never acknowledged
    consumer = client.subscribe(topic, "s", receiver_queue_size=5)
    n = 20
    started = time.time()
    produce(client, topic, [b"old-%d" % i for i in range(n)])
    last_sent = time.time()
    assert admin.backlog(topic, "s") == n

    # nothing expires before its TTL: at +1 s every message is younger than 2 s
    time.sleep(max(0.0, started + 1.0 - time.time()))
    assert admin.backlog(topic, "s") == n
    wait_until(lambda: admin.backlog(topic, "s") == 0, TTL_S + 1 + 5, "backlog expired")
    expired_at = time.time()
    # the last message (published after last_sent - its send time) had to be TTL_S old
    assert expired_at - last_sent >= TTL_S - 0.2
    assert admin.stats(topic)["subscriptions"]["s"]["unackedMessages"] == 0

    consumer.close()
    consumer = client.subscribe(topic, "s")
    assert_nothing_more(consumer)
    produce(client, topic, [b"new-%d" % i for i in range(3)])
    got = [consumer.receive(timeout_millis=10_000) for _ in range(3)]
    assert [m.data() for m in got] == [b"new-%d" % i for i in range(3)]
    for m in got:
        consumer.acknowledge(m)
    assert_nothing_more(consumer)


def test_topic_ttl_overrides_namespace_ttl(broker: BrokerProcess, clients) -> None:
    admin = Admin(broker)
    ns = admin.new_namespace("ttl")
    admin.set_namespace_policy(ns, "messageTTL", TTL_S)
    no_ttl_ns = admin.new_namespace("nottl")
    keep = f"persistent://{ns}/keep"  # topic TTL 3600 s over the namespace's 2 s
    sibling = f"persistent://{ns}/sibling"  # namespace TTL 2 s
    short = f"persistent://{no_ttl_ns}/short"  # topic TTL 2 s, namespace without TTL
    plain = f"persistent://{no_ttl_ns}/plain"  # no TTL at all
    client = clients(broker)
    for t in (keep, sibling, short, plain):
        client.subscribe(t, "s").close()
    admin.set_topic_policy(keep, "messageTTL?messageTTL=3600")
    admin.set_topic_policy(short, "messageTTL?messageTTL=2")
    assert admin.get_topic_policy(keep, "messageTTL") == 3600
    assert admin.get_topic_policy(short, "messageTTL") == 2
    n = 10
    for t in (keep, sibling, short, plain):
        produce(client, t, [b"m-%d" % i for i in range(n)])

    wait_until(
        lambda: admin.backlog(sibling, "s") == 0 and admin.backlog(short, "s") == 0,
        TTL_S + 1 + 5,
        "namespace-TTL and topic-TTL topics expired",
    )
    time.sleep(CHECKS_PASS_S)  # at least two more lifecycle checks
    assert admin.backlog(keep, "s") == n
    assert admin.backlog(plain, "s") == n

    # without its own TTL the topic falls back to the namespace's 2 s, at once
    admin.remove_topic_policy(keep, "messageTTL")
    wait_until(lambda: admin.backlog(keep, "s") == 0, 5, "topic expired under the namespace TTL")
    assert admin.backlog(plain, "s") == n
    consumer = client.subscribe(plain, "s")
    got = [consumer.receive(timeout_millis=10_000) for _ in range(n)]
    assert [m.data() for m in got] == [b"m-%d" % i for i in range(n)]
