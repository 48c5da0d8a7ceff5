"""Key_Shared subscriptions with the official client: affinity, order, sticky ranges, stuck consumers.

Every consumer has its own ``pulsar.Client`` (its own connection). The brokers are started
here (not by the shared conftest): one with the default auto-split hash range selector, one
with ``key_shared_selector = "consistent_hashing"``.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pulsar
import pytest

from magnetar.broker.subscriptions.selectors import (
    ConsistentHashingSelector,
    HashRangeAutoSplitSelector,
    sticky_key_hash,
)
from magnetar.protocol.hashing import key_shared_hash
from magnetar.testing import BrokerProcess

RECEIVE_MS = 200  # poll interval of the receiving threads
DEADLINE_S = 20.0  # longest wait for a complete delivery
KEY_SHARED = pulsar.ConsumerType.KeyShared


# -- fixtures ---------------------------------------------------------------------------
def _start_broker(data_dir: Path, **env: str) -> BrokerProcess:
    return BrokerProcess(data_dir, args=("--fsync", "never"), env=env).start()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = _start_broker(tmp_path_factory.mktemp("key-shared") / "data")
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def ch_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = _start_broker(
        tmp_path_factory.mktemp("key-shared-ch") / "data", MAGNETAR_KEY_SHARED_SELECTOR="consistent_hashing"
    )
    yield proc
    proc.stop()


@pytest.fixture
def new_client() -> Iterator[Callable[[BrokerProcess], pulsar.Client]]:
    """Make independent clients; every one is closed after the test."""
    clients: list[pulsar.Client] = []

    def make(broker: BrokerProcess) -> pulsar.Client:
        c = pulsar.Client(
            broker.service_url,
            operation_timeout_seconds=10,
            connection_timeout_ms=5_000,
            logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
        )
        clients.append(c)
        return c

    yield make
    for c in clients:
        try:
            c.close()
        except Exception:  # noqa: BLE001 - closing a client whose consumer was refused may fail
            pass


@pytest.fixture
def topic() -> str:
    return f"persistent://public/default/ks-{uuid.uuid4().hex}"


# -- helpers ----------------------------------------------------------------------------
@dataclass
class Log:
    """Every message received by the test's consumers, in the order the test saw them."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    events: list[tuple[str, str, int]] = field(default_factory=list)  # (consumer, key, seq)

    def add(self, consumer: str, key: str, seq: int) -> None:
        with self.lock:
            self.events.append((consumer, key, seq))

    def snapshot(self) -> list[tuple[str, str, int]]:
        with self.lock:
            return list(self.events)

    def by_consumer(self) -> dict[str, list[tuple[str, int]]]:
        out: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for consumer, key, seq in self.snapshot():
            out[consumer].append((key, seq))
        return out

    def unique(self) -> set[tuple[str, int]]:
        return {(k, s) for _, k, s in self.snapshot()}

    def wait_for(self, expected: set[tuple[str, int]], timeout: float = DEADLINE_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if expected <= self.unique():
                return
            time.sleep(0.05)
        missing = sorted(expected - self.unique())
        raise AssertionError(f"{len(missing)} messages never arrived, e.g. {missing[:10]}")


class Receiver:
    """A thread receiving (and acknowledging) for one consumer until stopped."""

    def __init__(
        self, name: str, consumer: pulsar.Consumer, log: Log, ack: bool = True, work_s: float = 0.0
    ) -> None:
        self.name = name
        self.consumer = consumer
        self.log = log
        self.ack = ack
        self.work_s = work_s
        self.batch_indexes: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"recv-{name}", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                msg = self.consumer.receive(timeout_millis=RECEIVE_MS)
            except pulsar.Timeout:
                continue
            except Exception:  # noqa: BLE001 - the consumer was closed under us
                return
            key, seq = msg.data().decode().rsplit(":", 1)
            self.log.add(self.name, key, int(seq))
            self.batch_indexes.append(msg.message_id().batch_index())
            if self.work_s:
                time.sleep(self.work_s)  # slow processing: a backlog builds in the receiver queue
            if self.ack:
                self.consumer.acknowledge(msg)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        assert not self._thread.is_alive()


def subscribe(
    client: pulsar.Client, topic: str, name: str, sub: str = "ks", **kwargs: object
) -> pulsar.Consumer:
    return client.subscribe(
        topic,
        sub,
        consumer_type=KEY_SHARED,
        consumer_name=name,
        initial_position=pulsar.InitialPosition.Earliest,
        **kwargs,
    )


def sticky(*ranges: tuple[int, int]) -> pulsar.ConsumerKeySharedPolicy:
    return pulsar.ConsumerKeySharedPolicy(
        key_shared_mode=pulsar.KeySharedMode.Sticky, sticky_ranges=list(ranges)
    )


def produce(client: pulsar.Client, topic: str, keys: list[str], per_key: int, **producer_args: object) -> set:
    """Send ``per_key`` messages "key:seq" for every key (keys interleaved); returns what was sent."""
    producer = client.create_producer(topic, **producer_args)
    sent = set()
    errors: list[object] = []
    for seq in range(per_key):
        for key in keys:
            producer.send_async(
                f"{key}:{seq}".encode(),
                lambda res, _mid: errors.append(res) if res != pulsar.Result.Ok else None,
                partition_key=key,
            )
            sent.add((key, seq))
    producer.flush()
    producer.close()
    assert not errors
    return sent


def owners_of_keys(log: Log) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for consumer, key, _ in log.snapshot():
        out[key].add(consumer)
    return out


def assert_per_key_order(log: Log) -> None:
    """Across all consumers, in the order seen, every key's first deliveries come in send order."""
    seen: set[tuple[str, int]] = set()
    last: dict[str, int] = {}
    for consumer, key, seq in log.snapshot():
        if (key, seq) in seen:
            continue
        seen.add((key, seq))
        assert seq > last.get(key, -1), f"key {key}: {seq} after {last[key]} (at {consumer})"
        last[key] = seq


def keys_named(prefix: str, n: int) -> list[str]:
    return [f"{prefix}-{i}" for i in range(n)]


class Named:
    """What a selector model needs of a consumer."""

    def __init__(self, name: str) -> None:
        self.name = name


# -- tests ------------------------------------------------------------------------------
def test_key_affinity_with_stable_consumers(broker, new_client, topic) -> None:
    names = ["C1", "C2", "C3"]
    consumers = {n: subscribe(new_client(broker), topic, n) for n in names}
    log = Log()
    receivers = [Receiver(n, c, log) for n, c in consumers.items()]
    keys = keys_named("order", 24)
    sent = produce(new_client(broker), topic, keys, per_key=12)
    log.wait_for(sent)
    time.sleep(0.3)
    for r in receivers:
        r.stop()
    events = log.snapshot()
    assert len(events) == len(sent), "duplicates with stable membership"
    assert_per_key_order(log)
    # auto-split regions after C1, C2, C3 joined: C3 [0, 16383], C2 [16384, 32767], C1 [32768, 65535]
    model = HashRangeAutoSplitSelector()
    stand_ins = {n: Named(n) for n in names}
    for n in names:
        model.add_consumer(stand_ins[n])
    for key, owners in owners_of_keys(log).items():
        assert owners == {model.select(sticky_key_hash(key.encode())).name}, key
    assert len({c for _, c in ((k, next(iter(o))) for k, o in owners_of_keys(log).items())}) == 3


def test_order_and_no_loss_while_consumers_join_and_leave(broker, new_client, topic) -> None:
    log = Log()
    receivers: dict[str, Receiver] = {}
    consumers: dict[str, pulsar.Consumer] = {}

    def join(name: str) -> None:
        consumers[name] = subscribe(new_client(broker), topic, name)
        receivers[name] = Receiver(name, consumers[name], log, work_s=0.003)

    join("A")
    keys = keys_named("acct", 30)
    total_per_key = 50
    sent: set[tuple[str, int]] = set()
    done = threading.Event()
    producer_client = new_client(broker)

    def run_producer() -> None:
        producer = producer_client.create_producer(topic)
        for seq in range(total_per_key):
            for key in keys:
                producer.send(f"{key}:{seq}".encode(), partition_key=key)
                sent.add((key, seq))
            time.sleep(0.04)
        producer.close()
        done.set()

    thread = threading.Thread(target=run_producer, daemon=True)
    thread.start()
    time.sleep(0.4)
    join("B")
    time.sleep(0.4)
    join("C")
    time.sleep(0.4)
    receivers["A"].stop()  # A leaves mid-stream: what it had not processed goes to the others
    consumers["A"].close()
    time.sleep(0.3)
    join("D")
    assert done.wait(DEADLINE_S)
    thread.join(5)
    assert len(sent) == len(keys) * total_per_key
    log.wait_for(sent)
    time.sleep(0.5)
    for name, r in receivers.items():
        if name != "A":
            r.stop()
    events = log.snapshot()
    assert log.unique() == sent
    # a message may be seen twice only if the consumer that left saw it first (its ack was lost)
    first_seen: dict[tuple[str, int], str] = {}
    for consumer, key, seq in events:
        if (key, seq) in first_seen:
            assert first_seen[(key, seq)] == "A", f"{key}:{seq} delivered twice ({consumer})"
        else:
            first_seen[(key, seq)] = consumer
    assert_per_key_order(log)
    assert {c for c, _, _ in events} >= {"A", "B", "C", "D"}
    # after the last change, each key stays with one consumer: the tail of every key has one owner
    tail: dict[str, set[str]] = defaultdict(set)
    for consumer, key, seq in events:
        if seq >= total_per_key - 3:
            tail[key].add(consumer)
    assert all(len(owners) == 1 for owners in tail.values()), tail


def test_sticky_consumers_get_exactly_their_ranges(broker, new_client, topic) -> None:
    ranges = {
        "C1": [(0, 16383), (32768, 49151)],
        "C2": [(16384, 32767), (49152, 65535)],
    }
    log = Log()
    receivers = [
        Receiver(n, subscribe(new_client(broker), topic, n, key_shared_policy=sticky(*r)), log)
        for n, r in ranges.items()
    ]
    keys = ["Order-3459134", *keys_named("item", 40)]
    sent = produce(new_client(broker), topic, keys, per_key=5)
    log.wait_for(sent)
    time.sleep(0.3)
    for r in receivers:
        r.stop()
    assert len(log.snapshot()) == len(sent)
    for consumer, key, _ in log.snapshot():
        slot = key_shared_hash(key)
        assert any(s <= slot <= e for s, e in ranges[consumer]), (consumer, key, slot)
    assert owners_of_keys(log)["Order-3459134"] == {"C1"}  # slot 6067, as in the documents
    assert_per_key_order(log)


def test_sticky_uncovered_slots_wait_for_a_consumer(broker, new_client, topic) -> None:
    log = Log()
    low = Receiver(
        "low", subscribe(new_client(broker), topic, "low", key_shared_policy=sticky((0, 32767))), log
    )
    keys = keys_named("k", 30)
    sent = produce(new_client(broker), topic, keys, per_key=3)
    low_part = {(k, s) for k, s in sent if key_shared_hash(k) <= 32767}
    assert low_part and low_part != sent
    log.wait_for(low_part)
    time.sleep(0.5)
    assert log.unique() == low_part  # nobody covers the upper half yet
    high = Receiver(
        "high", subscribe(new_client(broker), topic, "high", key_shared_policy=sticky((32768, 65535))), log
    )
    log.wait_for(sent)
    low.stop()
    high.stop()
    assert len(log.snapshot()) == len(sent)
    assert all(key_shared_hash(k) >= 32768 for c, k, _ in log.snapshot() if c == "high")


def test_overlapping_or_invalid_sticky_ranges_are_refused(broker, new_client, topic) -> None:
    first = subscribe(new_client(broker), topic, "first", key_shared_policy=sticky((0, 32767)))
    with pytest.raises(pulsar.ConsumerAssignError):
        subscribe(new_client(broker), topic, "overlap", key_shared_policy=sticky((30000, 65535)))
    # (ranges overlapping each other are refused by the client itself; the broker checks them too)
    with pytest.raises(pulsar.ConsumerBusy):  # an AUTO_SPLIT consumer on a STICKY subscription
        subscribe(new_client(broker), topic, "auto")
    # the refusals left no trace: the rest of the range can still be taken, and both get their keys
    second = subscribe(new_client(broker), topic, "second", key_shared_policy=sticky((32768, 65535)))
    log = Log()
    receivers = [Receiver("first", first, log), Receiver("second", second, log)]
    sent = produce(new_client(broker), topic, keys_named("z", 20), per_key=2)
    log.wait_for(sent)
    for r in receivers:
        r.stop()
    assert len(log.snapshot()) == len(sent)
    for consumer, key, _ in log.snapshot():
        assert (key_shared_hash(key) >= 32768) == (consumer == "second")


def test_stuck_consumer_does_not_stop_other_keys(broker, new_client, topic) -> None:
    # the stuck consumer joins first (upper half), the healthy one takes the lower half
    stuck = subscribe(new_client(broker), topic, "stuck", receiver_queue_size=5)
    log = Log()
    healthy = Receiver(
        "healthy", subscribe(new_client(broker), topic, "healthy", receiver_queue_size=20), log
    )
    keys = keys_named("dev", 20)
    sent = produce(new_client(broker), topic, keys, per_key=20)
    healthy_part = {(k, s) for k, s in sent if key_shared_hash(k) < 32768}
    assert healthy_part and len(healthy_part) < len(sent)
    log.wait_for(healthy_part)
    time.sleep(0.3)
    healthy.stop()
    assert log.unique() == healthy_part
    assert len(log.snapshot()) == len(healthy_part)
    assert_per_key_order(log)
    # the stuck consumer holds only keys of its own half, in order
    got = []
    for _ in range(10):
        try:
            got.append(stuck.receive(timeout_millis=300).data().decode().rsplit(":", 1))
        except pulsar.Timeout:
            break
    assert got
    assert all(key_shared_hash(k) >= 32768 for k, _ in got)


def test_key_based_batching_keeps_keys_apart(broker, new_client, topic) -> None:
    log = Log()
    upper = Receiver("upper", subscribe(new_client(broker), topic, "upper"), log)  # joins first
    lower = Receiver("lower", subscribe(new_client(broker), topic, "lower"), log)  # takes [0, 32767]
    keys = keys_named("user", 16)
    sent = produce(
        new_client(broker),
        topic,
        keys,
        per_key=25,
        batching_enabled=True,
        batching_type=pulsar.BatchingType.KeyBased,
        batching_max_messages=50,
        batching_max_publish_delay_ms=50,
    )
    log.wait_for(sent)
    time.sleep(0.3)
    upper.stop()
    lower.stop()
    assert len(log.snapshot()) == len(sent)
    for consumer, key, _ in log.snapshot():
        assert consumer == ("lower" if key_shared_hash(key) < 32768 else "upper"), key
    assert_per_key_order(log)
    assert max(upper.batch_indexes + lower.batch_indexes) > 0, "the producer sent no batches"


def test_messages_without_key_share_one_consumer(broker, new_client, topic) -> None:
    log = Log()
    receivers = [Receiver(n, subscribe(new_client(broker), topic, n), log) for n in ("n1", "n2", "n3")]
    producer = new_client(broker).create_producer(topic)
    for i in range(30):
        producer.send(f"none:{i}".encode())
    sent = {("none", i) for i in range(30)}
    log.wait_for(sent)
    for r in receivers:
        r.stop()
    assert len(owners_of_keys(log)["none"]) == 1
    model = HashRangeAutoSplitSelector()
    for n in ("n1", "n2", "n3"):
        model.add_consumer(Named(n))
    assert owners_of_keys(log)["none"] == {model.select(sticky_key_hash(b"NONE_KEY")).name}
    assert_per_key_order(log)


def test_consistent_hashing_selector(ch_broker, new_client, topic) -> None:
    names = ["worker-a", "worker-b", "worker-c"]
    log = Log()
    receivers = [Receiver(n, subscribe(new_client(ch_broker), topic, n), log) for n in names]
    keys = keys_named("session", 30)
    sent = produce(new_client(ch_broker), topic, keys, per_key=6)
    log.wait_for(sent)
    time.sleep(0.3)
    for r in receivers:
        r.stop()
    assert len(log.snapshot()) == len(sent)
    model = ConsistentHashingSelector()
    for n in names:
        model.add_consumer(Named(n))
    owners = owners_of_keys(log)
    for key in keys:
        assert owners[key] == {model.select(sticky_key_hash(key.encode())).name}, key
    assert len({next(iter(o)) for o in owners.values()}) == 3
    assert_per_key_order(log)
