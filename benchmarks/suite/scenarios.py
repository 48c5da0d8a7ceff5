"""What the suite measures: the systems (a peer + a client driver) and the scenarios, with their sizes
for a full run and for ``--quick``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class System:
    """A server with one client library: ``peer`` names a peer of peers.py, ``driver`` a driver."""

    label: str
    peer: str
    driver: str
    client: str


#: every pair the suite knows, in the order of its tables
SYSTEMS = [
    System("magnetar + magnetar.client", "magnetar", "magnetar-client", "magnetar.client (magnetar perf)"),
    System("magnetar + official client", "magnetar", "official", "pulsar-client (C++)"),
    System("Apache Pulsar + official client", "apache-pulsar", "official", "pulsar-client (C++)"),
    System("pulsar-lite + official client", "pulsar-lite", "official", "pulsar-client (C++)"),
    System("pulsar-lite + magnetar.client", "pulsar-lite", "magnetar-client", "magnetar.client (magnetar perf)"),
    System("Redis Streams everysec + redis-py", "redis-everysec", "redis", "redis-py asyncio + hiredis"),
    System("Redis Streams always + redis-py", "redis-always", "redis", "redis-py asyncio + hiredis"),
    System("NATS JetStream + nats-py", "nats", "nats", "nats-py"),
    System("RabbitMQ stream + rstream", "rabbitmq-stream", "rabbitmq", "rstream"),
]


@dataclass(frozen=True)
class Scenario:
    """One measurement kind: the driver function, its parameters, and which figure it reports."""

    key: str
    title: str
    function: str
    params: dict[str, Any] = field(default_factory=dict)
    #: ``throughput`` (msg/s, higher is better), ``latency`` (ms percentiles, lower is better) or ``cost``
    #: (the broker's CPU seconds per million messages and its memory, lower is better)
    kind: str = "throughput"
    #: the drivers that run it (empty: all)
    drivers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Sizes:
    """How big each scenario is."""

    count: int
    backlog: int
    rate_duration_s: float
    rates: tuple[int, ...]
    e2e_rate: int
    fanout_count: int
    topics_count: int
    sync_count: int
    sync_duration_s: float
    cost_count: int
    cost_unbatched_count: int
    sizes: tuple[int, ...] = (100, 1024)
    rounds: int = 2


FULL = Sizes(count=200_000, backlog=1_000_000, rate_duration_s=8, rates=(1000, 10_000, 50_000), e2e_rate=10_000,
             fanout_count=100_000, topics_count=100_000, sync_count=20_000, sync_duration_s=8,
             cost_count=200_000, cost_unbatched_count=50_000)
QUICK = Sizes(count=20_000, backlog=50_000, rate_duration_s=1.5, rates=(10_000,), e2e_rate=5000,
              fanout_count=10_000, topics_count=10_000, sync_count=2000, sync_duration_s=1.5,
              cost_count=20_000, cost_unbatched_count=5000, sizes=(100,), rounds=1)


#: the drivers of Pulsar's protocol: the broker cost scenarios compare brokers under one client
PULSAR_DRIVERS = ("official", "magnetar-client")


def cost_scenarios(sizes: Sizes) -> list[Scenario]:
    """The broker's CPU seconds per million messages, produced + received + acknowledged (issue 27):
    100 B and 1 KiB batched (1,000 / 10 ms), 100 B unbatched."""
    batched = {"batch": 1000, "batch_delay_ms": 10}
    out = [Scenario(f"cost-{size}", f"broker cost, produce + consume + ack, {size} B batched", "cost",
                    {"count": sizes.cost_count, "size": size, **batched}, kind="cost", drivers=PULSAR_DRIVERS)
           for size in sizes.sizes]
    out.append(Scenario("cost-100-unbatched", "broker cost, produce + consume + ack, 100 B unbatched", "cost",
                        {"count": sizes.cost_unbatched_count, "size": 100, "batch": 1, "batch_delay_ms": 0},
                        kind="cost", drivers=PULSAR_DRIVERS))
    return out


def scenarios(sizes: Sizes) -> list[Scenario]:
    """The scenarios of a run, in order."""
    batched = {"batch": 1000, "batch_delay_ms": 10}
    paced = {"batch": 1000, "batch_delay_ms": 1, "size": 100}
    out = cost_scenarios(sizes)
    for size in sizes.sizes:
        out.append(Scenario(f"produce-{size}", f"max produce, {size} B", "produce",
                            {"count": sizes.count, "size": size, **batched}))
        out.append(Scenario(f"consume-{size}", f"max consume (receive + ack), {size} B", "consume",
                            {"count": sizes.count, "size": size, **batched}))
    for rate in sizes.rates:
        out.append(Scenario(f"rate-{rate // 1000}k", f"publish latency at {rate:,} msg/s, 100 B", "rate",
                            {"rate": rate, "duration_s": sizes.rate_duration_s,
                             "count": int(rate * sizes.rate_duration_s), **paced}, kind="latency"))
    out.append(Scenario("e2e", f"end-to-end latency at {sizes.e2e_rate:,} msg/s, 100 B", "e2e",
                        {"rate": sizes.e2e_rate, "duration_s": sizes.rate_duration_s,
                         "count": int(sizes.e2e_rate * sizes.rate_duration_s), **paced}, kind="latency"))
    out.append(Scenario("fanout", "fan-out: 1 producer, 4 subscriptions (deliveries/s), 100 B", "fanout",
                        {"count": sizes.fanout_count, "subscriptions": 4, "size": 100, **batched}))
    out.append(Scenario("topics-100", "produce over 100 topics, 100 B", "topics",
                        {"count": sizes.topics_count, "topics": 100, "size": 100, **batched}))
    out.append(Scenario("catch-up", f"catch-up read of a {sizes.backlog:,}-message backlog, 100 B", "consume",
                        {"count": sizes.backlog, "size": 100, **batched}))
    out.append(Scenario("sync", "one-at-a-time durable sends, 100 B", "sync",
                        {"count": sizes.sync_count, "duration_s": sizes.sync_duration_s, "size": 100},
                        kind="latency"))
    return out
