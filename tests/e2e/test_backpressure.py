"""Backpressure with the official client, measured by the broker's resident memory (VmRSS):

* a producer outrunning a stalled consumer (connected, 10 permits, never receiving) for 20 s:
  memory stays bounded and does not grow with the messages sent, and afterwards that consumer
  gets every message exactly once, in order;
* a 1 MiB per-connection pending-publish limit with fsync=always: memory stays bounded while
  the client keeps far more than that in flight, and after a kill -9 every message the broker
  acknowledged is stored;
* many topics with many subscriptions whose consumers never read: memory stays bounded.

Measured on a 2-core box (broker RSS, MiB): idle ~68; a 60 s stalled run peaked at 86-87 while
~1.7 million messages (1.7 GB) piled up, and at 87 while draining; the pending-limit run at 84;
1,000 topics x 10 subscriptions at ~120 with 10,000 idle consumers and ~150 with 10 messages per
topic. The bounds below leave about twice that. The 1,000 x 10 case runs in ~16 s, unscaled.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pulsar
import pulsar.asyncio
import pytest

from magnetar.testing import BrokerProcess

from .helpers import assert_nothing_more
from .lifecycle_helpers import Admin, ClientPool, rss_mb

#: broker RSS bound of the stalled run and of the drain after it (measured peak 87)
STALLED_RUN_MAX_RSS_MB = 200
#: how long the stalled run produces
STALLED_RUN_SECONDS = 20
#: bound of the broker's RSS growth per million messages over the stalled run's last three quarters;
#: the old 60 s run's absolute bound (200 MiB, idle ~68) caught a leak of ~(200 - 87) MiB per
#: ~1.7 million messages, ~66 MiB per million
STALLED_RUN_MAX_MIB_PER_MILLION = 30
#: broker RSS bound with a 1 MiB pending-publish limit per connection (measured peak 84)
PENDING_LIMIT_MAX_RSS_MB = 150
#: broker RSS bound with 1,000 topics x 10 subscriptions and 10 messages per topic (measured 150)
MANY_TOPICS_MAX_RSS_MB = 300


@pytest.fixture
def clients() -> Iterator[ClientPool]:
    pool = ClientPool()
    yield pool
    pool.close()


@pytest.fixture
def brokers() -> Iterator[list[BrokerProcess]]:
    """Brokers of one test; each is stopped (or was killed) afterwards."""
    procs: list[BrokerProcess] = []
    yield procs
    for proc in procs:
        proc.stop()


class RssSampler:
    """Samples a broker's VmRSS every ``interval`` seconds in a thread; ``peak`` in MiB. With
    ``progress`` (e.g. how many messages were sent so far), each sample is also paired with it."""

    def __init__(self, broker: BrokerProcess, interval: float = 0.2, progress: Callable[[], int] | None = None) -> None:
        self.broker = broker
        self.interval = interval
        self.progress = progress
        self.samples: list[float] = []
        self.paired: list[tuple[int, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            done = self.progress() if self.progress is not None else 0
            try:
                self.samples.append(rss_mb(self.broker))
            except (OSError, AssertionError):  # the broker was killed
                return
            self.paired.append((done, self.samples[-1]))
            self._stop.wait(self.interval)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    @property
    def peak(self) -> float:
        return max(self.samples)

    def growth_per_million(self, skip: float) -> float:
        """Least-squares slope of RSS (MiB) against progress (millions), over the samples after
        the first ``skip`` fraction of the progress (start-up: caches and buffers filling)."""
        last = self.paired[-1][0]
        points = [(done / 1e6, mib) for done, mib in self.paired if done >= skip * last]
        mean_x = sum(x for x, _ in points) / len(points)
        mean_y = sum(y for _, y in points) / len(points)
        spread = sum((x - mean_x) ** 2 for x, _ in points)
        return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


class Acks:
    """Send callbacks of one producer: how many succeeded, in order, and the first failures."""

    def __init__(self) -> None:
        self.ok = 0
        self.errors: list[tuple[int, pulsar.Result]] = []
        self.out_of_order = 0
        self.lock = threading.Lock()

    def callback(self, seq: int):  # noqa: ANN201
        def done(res: pulsar.Result, _mid: pulsar.MessageId) -> None:
            with self.lock:
                if res != pulsar.Result.Ok:
                    if len(self.errors) < 10:
                        self.errors.append((seq, res))
                    return
                if seq != self.ok:
                    self.out_of_order += 1
                self.ok += 1

        return done


def payload(seq: int, size: int) -> bytes:
    return (b"%010d" % seq).ljust(size, b".")


@pytest.mark.timeout(300)
def test_producer_outrunning_a_stalled_consumer(tmp_path: Path, brokers, clients) -> None:
    """20 s of 1000-byte messages as fast as the client sends them (batched, 1000 pending at
    most; ~0.5 million messages, ~0.5 GB here) to a topic whose only consumer never receives.

    What it proves: the broker's memory does not follow the backlog. 20 s suffice where the test
    once ran 60 s because a leak shows as growth per message, which is measured: over the last three
    quarters of the run the broker's RSS grows by less than ``STALLED_RUN_MAX_MIB_PER_MILLION`` MiB per
    million messages (the 60 s run's absolute bound caught ~66), and the backlog is still ~100x the
    4 MiB entry cache and ~30x the 16 MiB pending-publish limit. The drain then re-grants the
    10-permit consumer 5 permits at a time, each message checked."""
    broker = BrokerProcess(tmp_path / "data").start()  # defaults: fsync always, 4 MiB entry cache, 16 MiB pending per connection
    brokers.append(broker)
    topic = "persistent://public/default/stalled"
    client = clients(broker)
    consumer = client.subscribe(topic, "stalled", receiver_queue_size=10)
    producer = client.create_producer(
        topic,
        batching_enabled=True,
        max_pending_messages=1000,
        block_if_queue_full=True,
        send_timeout_millis=0,
    )
    acks = Acks()
    sent = 0
    with RssSampler(broker, 0.25, progress=lambda: sent) as rss:
        started = time.monotonic()
        # 20 s, and at least the 200,000 messages asserted below (a slow, loaded machine: at most 60 s)
        while (elapsed := time.monotonic() - started) < STALLED_RUN_SECONDS or (sent <= 200_000 and elapsed < 60):
            for _ in range(100):
                producer.send_async(payload(sent, 1000), acks.callback(sent))
                sent += 1
        producer.flush()
    assert acks.errors == [] and acks.out_of_order == 0
    assert acks.ok == sent
    assert sent > 200_000  # it really outran the consumer (it got 10 of them)
    stats = Admin(broker).stats(topic)
    assert stats["subscriptions"]["stalled"]["unackedMessages"] <= 10 + 1000  # a batch may overshoot 10
    print(
        f"stalled run: {sent} messages, {stats['storageSize'] / 1e6:.0f} MB stored, "
        f"broker RSS peak {rss.peak:.0f} MiB (first {rss.samples[0]:.0f}, last {rss.samples[-1]:.0f}), "
        f"growth {rss.growth_per_million(0.25):.1f} MiB per million messages"
    )
    assert rss.peak < STALLED_RUN_MAX_RSS_MB
    assert rss.growth_per_million(0.25) < STALLED_RUN_MAX_MIB_PER_MILLION

    # the same consumer now gets everything, exactly once and in order
    with RssSampler(broker, 0.5) as drain_rss:
        for i in range(sent):
            msg = consumer.receive(timeout_millis=10_000)
            data = msg.data()
            if data[:10] != b"%010d" % i or len(data) != 1000:
                raise AssertionError(f"message {i}: got {data[:10]!r} ({len(data)} bytes)")
            if i % 1000 == 999:
                consumer.acknowledge_cumulative(msg)
        consumer.acknowledge_cumulative(msg)
        assert_nothing_more(consumer)
    print(f"drain: broker RSS peak {drain_rss.peak:.0f} MiB")
    assert drain_rss.peak < STALLED_RUN_MAX_RSS_MB


def test_pending_publish_limit_keeps_memory_bounded_and_acked_messages_stored(
    tmp_path: Path, brokers, clients
) -> None:
    """64 KiB messages, up to 2000 in flight (125 MiB) from one connection, against a broker
    that reads no more once 1 MiB of its publishes await their fsync; then kill -9 mid-stream."""
    env = {"MAGNETAR_MAX_PENDING_PUBLISH_BYTES_PER_CONNECTION": "1048576", "MAGNETAR_FSYNC": "always"}
    broker = BrokerProcess(tmp_path / "data", env=env).start()
    brokers.append(broker)
    topic = "persistent://public/default/pending"
    client = clients(broker)
    producer = client.create_producer(
        topic,
        batching_enabled=False,
        max_pending_messages=2000,
        block_if_queue_full=True,
        send_timeout_millis=0,
    )
    size = 64 * 1024
    acks = Acks()
    sent = 0
    with RssSampler(broker, 0.1) as rss:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            producer.send_async(payload(sent, size), acks.callback(sent))
            sent += 1
        acked_before_kill = acks.ok
        broker.kill()
    print(
        f"pending limit: {sent} sent, {acked_before_kill} acknowledged before kill -9, "
        f"broker RSS peak {rss.peak:.0f} MiB"
    )
    assert acked_before_kill > 1000
    assert rss.peak < PENDING_LIMIT_MAX_RSS_MB
    client.close()  # fails what is still pending; nothing is resent to the restarted broker
    with acks.lock:
        acked = acks.ok
        assert acks.out_of_order == 0

    restarted = BrokerProcess(tmp_path / "data", env=env).start()
    brokers.append(restarted)
    reader_client = clients(restarted)
    reader = reader_client.create_reader(topic, pulsar.MessageId.earliest)
    stored = 0
    while reader.has_message_available():
        data = reader.read_next(timeout_millis=10_000).data()
        assert data == payload(stored, size), f"stored message {stored} is {data[:10]!r}"
        stored += 1
    reader.close()
    # every acknowledged message is there, in order, once; at most the unacknowledged tail more
    assert acked <= stored <= sent


def test_many_topics_and_subscriptions_with_idle_consumers(tmp_path: Path, brokers) -> None:
    """1,000 topics x 10 subscriptions, each with a connected consumer that never reads (10
    permits), then 10 messages of 1 KB per topic: broker memory stays bounded."""
    broker = BrokerProcess(tmp_path / "data").start()
    brokers.append(broker)
    idle = rss_mb(broker)
    topics = [f"persistent://public/default/many-{i:04d}" for i in range(1000)]
    subs = 10

    async def run() -> tuple[float, float]:
        client = pulsar.asyncio.Client(
            broker.service_url,
            operation_timeout_seconds=30,
            logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
        )
        try:
            gate = asyncio.Semaphore(200)

            async def subscribe(topic: str, sub: int) -> pulsar.asyncio.Consumer:
                async with gate:
                    return await client.subscribe(topic, f"sub-{sub}", receiver_queue_size=10)

            consumers = await asyncio.gather(*[subscribe(t, s) for t in topics for s in range(subs)])
            assert len(consumers) == len(topics) * subs
            subscribed = rss_mb(broker)

            async def produce(topic: str) -> None:
                async with gate:
                    producer = await client.create_producer(topic, batching_enabled=False)
                    await asyncio.gather(*[producer.send(payload(i, 1000)) for i in range(10)])
                    await producer.close()

            await asyncio.gather(*[produce(t) for t in topics])
            await asyncio.sleep(1)  # dispatch to 10,000 consumers settles
            return subscribed, rss_mb(broker)
        finally:
            await client.close()

    subscribed, loaded = asyncio.run(run())
    admin = Admin(broker)
    stats = admin.stats(topics[-1])
    assert sorted(stats["subscriptions"]) == [f"sub-{s}" for s in range(subs)]
    assert all(s["msgBacklog"] == 10 for s in stats["subscriptions"].values())
    print(
        f"many topics: broker RSS idle {idle:.0f} MiB, 10,000 consumers {subscribed:.0f} MiB, "
        f"with 10 messages per topic {loaded:.0f} MiB"
    )
    assert loaded < MANY_TOPICS_MAX_RSS_MB
