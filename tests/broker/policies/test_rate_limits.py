"""The rate limiters (token buckets on a given clock), the subscribe limiter and the resolution of
the rate policies into the limits in force."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from magnetar.broker.config import BrokerConfig, ConfigError
from magnetar.broker.errors import BrokerError
from magnetar.broker.policies.rate_limits import (
    UNLIMITED,
    RateLimiter,
    SubscribeLimiter,
    TopicRateLimits,
    dispatch_throttle,
    refreshed,
)
from magnetar.broker.policies.rate_values import (
    InactivePolicy,
    RateLimit,
    RatePolicies,
    resolve_rates,
    topic_dispatch_default,
)
from magnetar.broker.policies.resolution import TopicPolicies
from magnetar.broker.pulsar_conf import PulsarConfError, load_pulsar_conf
from magnetar.broker.topics.lifecycle import topic_inactive
from magnetar.protocol.enums import ServerError


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_messages_per_period_refill_continuously() -> None:
    clock = Clock()
    limiter = RateLimiter(RateLimit(10, 0, 1.0), clock)
    assert limiter.permits() == 10
    limiter.consume(10, 5000)
    assert limiter.permits() == 0
    assert limiter.wait_seconds() == pytest.approx(0.1)
    clock.now += 0.5
    assert limiter.permits() == 5
    clock.now += 10  # never more than one period's worth
    assert limiter.permits() == 10


def test_a_batch_overdraws_and_the_debt_is_waited_out() -> None:
    clock = Clock()
    limiter = RateLimiter(RateLimit(100, 0, 1.0), clock)
    assert limiter.consume_and_delay(50, 0) == 0
    assert limiter.consume_and_delay(100, 0) == pytest.approx(0.51)  # 50 below zero, then one token
    clock.now += 0.52
    assert limiter.permits() == 1


def test_bytes_and_longer_periods() -> None:
    clock = Clock()
    limiter = RateLimiter(RateLimit(0, 1000, 2.0), clock)  # 1000 bytes per 2 s, messages unlimited
    assert limiter.permits() == UNLIMITED
    limiter.consume(3, 1500)
    assert limiter.permits() == 0
    assert limiter.wait_seconds() == pytest.approx(1.002)  # 501 bytes at 500 bytes/s
    clock.now += 1.01
    assert limiter.permits() == UNLIMITED


def test_an_unchanged_limit_keeps_its_limiter_and_tokens() -> None:
    limiter = RateLimiter(RateLimit(5, 0, 1.0), Clock())
    limiter.consume(5, 0)
    assert refreshed(limiter, RateLimit(5, 0, 1.0)) is limiter
    assert refreshed(limiter, RateLimit(6, 0, 1.0)) is not limiter
    assert refreshed(limiter, None) is None


def test_dispatch_throttle_takes_the_smaller_limit_and_retries_once_refilled() -> None:
    async def body() -> list[float]:
        loop = asyncio.get_running_loop()
        topic_wide = RateLimiter(RateLimit(8, 0, 1.0))
        own = RateLimiter(RateLimit(3, 0, 0.1))
        throttle = dispatch_throttle(None, (topic_wide, None, own))
        assert throttle is not None and throttle.limiters == (topic_wide, own)
        assert dispatch_throttle(throttle, (topic_wide, None, own)) is throttle
        retries: list[float] = []
        assert throttle.allowed(100, lambda: retries.append(loop.time())) == 3
        throttle.consume(3, 0)
        start = loop.time()
        assert throttle.allowed(100, lambda: retries.append(loop.time())) == 0
        assert throttle.allowed(100, lambda: retries.append(loop.time())) == 0  # one retry pending, not two
        await asyncio.sleep(0.2)
        assert throttle.allowed(100, lambda: None) == 3
        return [t - start for t in retries]

    retries = asyncio.run(body())
    assert len(retries) == 1 and 0.02 < retries[0] < 0.15


def test_subscribes_per_consumer_in_windows() -> None:
    clock = Clock()
    limiter = SubscribeLimiter(RateLimit(2, 0, 30.0), clock)
    me = ("127.0.0.1", "c", 0)
    assert limiter.try_acquire(me) and limiter.try_acquire(me)
    assert not limiter.try_acquire(me)
    assert limiter.try_acquire(("127.0.0.1", "c", 1))  # another consumer id
    assert limiter.try_acquire(("127.0.0.2", "c", 0))  # another host
    clock.now += 30
    assert limiter.try_acquire(me)


def test_topic_limits_refuse_subscribes_with_pulsars_error() -> None:
    limits = TopicRateLimits()
    limits.check_subscribe("h", "c", 0)  # no limit: nothing counted
    limits.update(RatePolicies(subscribe=RateLimit(1, 0, 30.0)))
    limits.check_subscribe("h", "c", 0)
    with pytest.raises(BrokerError) as refused:
        limits.check_subscribe("h", "c", 0)
    assert refused.value.code == ServerError.NotAllowedError
    assert refused.value.message == "Subscribe limited by subscribe rate limit per consumer."


def test_resolution_topic_over_namespace_over_broker() -> None:
    config = BrokerConfig(dispatch_throttling_rate_per_subscription_messages=40, max_publish_rate_per_topic_bytes=4096,
                          inactive_topic_expiry_seconds=60, inactive_topic_delete_mode="delete_when_subscriptions_caught_up")
    stored = {
        "topicDispatchRate": {"dispatchThrottlingRateInMsg": 100, "dispatchThrottlingRateInByte": -1,
                              "relativeToPublishRate": False, "ratePeriodInSecond": 2},
        "clusterSubscribeRate": {"subscribeThrottlingRatePerConsumer": 0, "ratePeriodInSecond": 30},
    }
    rates = resolve_rates(stored.get, config)
    assert rates.dispatch == RateLimit(100, 0, 2.0)
    assert rates.subscription_dispatch == RateLimit(40, 0, 1.0)
    assert rates.publish == RateLimit(0, 4096, 1.0)
    assert rates.subscribe is None and rates.replicator_dispatch is None
    assert rates.inactive == InactivePolicy("delete_when_subscriptions_caught_up", 60.0, True)
    assert resolve_rates({}.get, BrokerConfig()) == RatePolicies()


@dataclass
class _Sub:
    backlog_count: int = 0
    consumers: list = field(default_factory=list)

    def backlog(self) -> int:
        return self.backlog_count


@dataclass
class _Topic:
    policies: TopicPolicies
    producers: dict = field(default_factory=dict)
    subscriptions: dict = field(default_factory=dict)
    last_active: float = 0.0


def _policies(mode: str, seconds: float = 10, retention: int = 0) -> TopicPolicies:
    return TopicPolicies(retention_minutes=retention, rates=RatePolicies(inactive=InactivePolicy(mode, seconds, True)))


def test_inactive_when_no_subscriptions() -> None:
    topic = _Topic(_policies("delete_when_no_subscriptions"), subscriptions={"s": _Sub()})
    assert not topic_inactive(topic, 100.0)
    assert topic.last_active == 100.0  # a subscription keeps it active
    topic.subscriptions.clear()
    assert not topic_inactive(topic, 109.0)
    assert topic_inactive(topic, 110.0)
    assert not topic_inactive(_Topic(TopicPolicies()), 1e9)  # the policy is off by default


def test_inactive_when_subscriptions_caught_up() -> None:
    behind = _Sub(backlog_count=3)
    topic = _Topic(_policies("delete_when_subscriptions_caught_up"), subscriptions={"s": behind, "t": _Sub()})
    assert not topic_inactive(topic, 100.0) and topic.last_active == 100.0
    behind.backlog_count = 0
    assert not topic_inactive(topic, 105.0)
    assert topic_inactive(topic, 110.0)
    topic.subscriptions["t"].consumers.append(object())  # a consumer makes it active again
    assert not topic_inactive(topic, 200.0) and topic.last_active == 200.0


def test_retention_time_keeps_an_inactive_topic() -> None:
    assert not topic_inactive(_Topic(_policies("delete_when_no_subscriptions", retention=-1)), 1e9)
    kept = _Topic(_policies("delete_when_no_subscriptions", retention=1))
    assert not topic_inactive(kept, 59.0)
    assert topic_inactive(kept, 60.0)


def test_broker_conf_keys_give_the_defaults() -> None:
    conf = load_pulsar_conf(
        "maxPublishRatePerTopicInMessages=500\nmaxPublishRatePerTopicInBytes=1048576\n"
        "dispatchThrottlingRatePerTopicInMsg=1000\ndispatchThrottlingRatePerSubscriptionInByte=2048\n"
        "dispatchThrottlingRatePerReplicatorInMsg=10\ndispatchThrottlingRateRelativeToPublishRate=true\n"
        "subscribeThrottlingRatePerConsumer=3\nsubscribeRatePeriodPerConsumerInSecond=10\n"
        "brokerDeleteInactiveTopicsEnabled=true\nbrokerDeleteInactiveTopicsMaxInactiveDurationSeconds=120\n"
        "brokerDeleteInactiveTopicsMode=delete_when_subscriptions_caught_up\n"
    )
    assert conf.ignored == []
    config = BrokerConfig(**conf.settings)
    rates = resolve_rates({}.get, config)
    assert rates.publish == RateLimit(500, 1048576, 1.0)
    assert rates.dispatch == RateLimit(1000, 0, 1.0)
    assert rates.subscription_dispatch == RateLimit(0, 2048, 1.0)
    assert rates.replicator_dispatch == RateLimit(10, 0, 1.0)
    assert rates.subscribe == RateLimit(3, 0, 10.0)
    assert rates.inactive == InactivePolicy("delete_when_subscriptions_caught_up", 120.0, True)
    assert topic_dispatch_default(config)["relativeToPublishRate"] is True
    with pytest.raises(PulsarConfError, match="brokerDeleteInactiveTopicsMode"):
        load_pulsar_conf("brokerDeleteInactiveTopicsMode=sometimes\n")
    with pytest.raises(ConfigError, match="inactive_topic_delete_mode"):
        BrokerConfig(inactive_topic_delete_mode="sometimes").validate()
