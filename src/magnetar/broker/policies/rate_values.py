"""Values of the rate-limit and inactive-topic policies (Pulsar's ``PublishRate``, ``DispatchRate``,
``SubscribeRate`` and ``InactiveTopicPolicies``): their checks and their broker defaults.

A rate of 0 or less is no limit, as in Pulsar (its classes default every rate to -1). The broker
defaults come from Pulsar's settings: ``maxPublishRatePerTopicInMessages`` / ``InBytes``,
``dispatchThrottlingRatePer{Topic,Subscription,Replicator}In{Msg,Byte}``,
``dispatchThrottlingRateRelativeToPublishRate``, ``subscribeThrottlingRatePerConsumer`` /
``subscribeRatePeriodPerConsumerInSecond`` and ``brokerDeleteInactiveTopics*``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from magnetar.broker.config import BrokerConfig
from magnetar.broker.errors import BadRequestError
from magnetar.broker.policies.validation import INT32_MAX, INT64_MAX

DELETE_MODES = ("delete_when_no_subscriptions", "delete_when_subscriptions_caught_up")


def _number(value: Any, field: str, what: str, maximum: int, default: int) -> int:
    """One integer field of a rate object (absent: ``default``); 400 as Pulsar's JSON mapping gives."""
    number = value.get(field, default)
    if number is None:
        return default
    if not isinstance(number, int) or isinstance(number, bool) or not -maximum - 1 <= number <= maximum:
        raise BadRequestError(f"Invalid {what}: {field} must be an integer, got {number!r}")
    return number


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise BadRequestError(f"Invalid {what}: expected a JSON object")
    return value


def validate_publish_rate(value: Any, current: Mapping[str, Any]) -> dict[str, int]:
    """A PublishRate: messages and bytes per second a topic's producers may publish (<= 0: no limit)."""
    body = _object(value, "publish rate")
    return {
        "publishThrottlingRateInMsg": _number(body, "publishThrottlingRateInMsg", "publish rate", INT32_MAX, -1),
        "publishThrottlingRateInByte": _number(body, "publishThrottlingRateInByte", "publish rate", INT64_MAX, -1),
    }


def validate_dispatch_rate(value: Any, current: Mapping[str, Any]) -> dict[str, Any]:
    """A DispatchRate: messages and bytes dispatched per period of ``ratePeriodInSecond`` seconds."""
    body = _object(value, "dispatch rate")
    relative = body.get("relativeToPublishRate", False)
    if not isinstance(relative, bool):
        raise BadRequestError("Invalid dispatch rate: relativeToPublishRate must be true or false")
    return {
        "dispatchThrottlingRateInMsg": _number(body, "dispatchThrottlingRateInMsg", "dispatch rate", INT32_MAX, -1),
        "dispatchThrottlingRateInByte": _number(body, "dispatchThrottlingRateInByte", "dispatch rate", INT64_MAX, -1),
        "relativeToPublishRate": relative,
        "ratePeriodInSecond": _number(body, "ratePeriodInSecond", "dispatch rate", INT32_MAX, 1),
    }


def validate_subscribe_rate(value: Any, current: Mapping[str, Any]) -> dict[str, int]:
    """A SubscribeRate: subscribes per consumer name per period of ``ratePeriodInSecond`` seconds."""
    body = _object(value, "subscribe rate")
    return {
        "subscribeThrottlingRatePerConsumer": _number(
            body, "subscribeThrottlingRatePerConsumer", "subscribe rate", INT32_MAX, -1
        ),
        "ratePeriodInSecond": _number(body, "ratePeriodInSecond", "subscribe rate", INT32_MAX, 30),
    }


def validate_inactive_topic_policies(value: Any, current: Mapping[str, Any]) -> dict[str, Any]:
    """An InactiveTopicPolicies object: whether, after how long and when inactive topics are deleted."""
    body = _object(value, "inactive topic policies")
    mode = body.get("inactiveTopicDeleteMode", DELETE_MODES[0])
    if mode not in DELETE_MODES:
        raise BadRequestError(
            f"Invalid inactive topic policies: inactiveTopicDeleteMode {mode!r} is not one of {', '.join(DELETE_MODES)}"
        )
    enabled = body.get("deleteWhileInactive", False)
    if not isinstance(enabled, bool):
        raise BadRequestError("Invalid inactive topic policies: deleteWhileInactive must be true or false")
    seconds = _number(body, "maxInactiveDurationSeconds", "inactive topic policies", INT32_MAX, 0)
    return {"inactiveTopicDeleteMode": mode, "maxInactiveDurationSeconds": seconds, "deleteWhileInactive": enabled}


def publish_rate_default(config: BrokerConfig) -> dict[str, int]:
    """The broker's publish rate per topic."""
    return {
        "publishThrottlingRateInMsg": config.max_publish_rate_per_topic_messages,
        "publishThrottlingRateInByte": config.max_publish_rate_per_topic_bytes,
    }


def _dispatch_default(msgs: int, size: int, config: BrokerConfig) -> dict[str, Any]:
    return {
        "dispatchThrottlingRateInMsg": msgs,
        "dispatchThrottlingRateInByte": size,
        "relativeToPublishRate": config.dispatch_throttling_rate_relative_to_publish_rate,
        "ratePeriodInSecond": 1,
    }


def topic_dispatch_default(config: BrokerConfig) -> dict[str, Any]:
    """The broker's dispatch rate per topic."""
    return _dispatch_default(
        config.dispatch_throttling_rate_per_topic_messages, config.dispatch_throttling_rate_per_topic_bytes, config
    )


def subscription_dispatch_default(config: BrokerConfig) -> dict[str, Any]:
    """The broker's dispatch rate per subscription."""
    return _dispatch_default(
        config.dispatch_throttling_rate_per_subscription_messages,
        config.dispatch_throttling_rate_per_subscription_bytes,
        config,
    )


def replicator_dispatch_default(config: BrokerConfig) -> dict[str, Any]:
    """The broker's dispatch rate per replicator."""
    return _dispatch_default(
        config.dispatch_throttling_rate_per_replicator_messages,
        config.dispatch_throttling_rate_per_replicator_bytes,
        config,
    )


def subscribe_rate_default(config: BrokerConfig) -> dict[str, int]:
    """The broker's subscribe rate per consumer."""
    return {
        "subscribeThrottlingRatePerConsumer": config.subscribe_throttling_rate_per_consumer,
        "ratePeriodInSecond": config.subscribe_rate_period_per_consumer_seconds,
    }


def inactive_topic_default(config: BrokerConfig) -> dict[str, Any]:
    """The broker's inactive topic policies (``brokerDeleteInactiveTopics*``)."""
    seconds = config.inactive_topic_expiry_seconds
    return {
        "inactiveTopicDeleteMode": config.inactive_topic_delete_mode,
        "maxInactiveDurationSeconds": int(seconds),
        "deleteWhileInactive": seconds > 0,
    }


# -- the values in force for one topic ------------------------------------------------------------
@dataclass(frozen=True)
class RateLimit:
    """A rate in force: at most ``messages`` and ``size`` bytes per ``period`` seconds (0: that one unlimited)."""

    messages: int
    size: int
    period: float = 1.0


@dataclass(frozen=True)
class InactivePolicy:
    """When a topic is deleted for inactivity (Pulsar's InactiveTopicPolicies, resolved)."""

    mode: str = DELETE_MODES[0]
    seconds: float = 0.0
    enabled: bool = False


@dataclass(frozen=True)
class RatePolicies:
    """The rate limits (None: none) and the inactive-topic policy of one topic."""

    publish: RateLimit | None = None
    dispatch: RateLimit | None = None
    subscription_dispatch: RateLimit | None = None
    replicator_dispatch: RateLimit | None = None
    #: ``messages`` is the subscribes allowed per consumer per period
    subscribe: RateLimit | None = None
    inactive: InactivePolicy = InactivePolicy()


def _limit(value: Any, msgs: str, size: str | None, period: str | None, default_period: float) -> RateLimit | None:
    if not isinstance(value, dict):
        return None
    messages = max(0, _plain_int(value.get(msgs)))
    nbytes = max(0, _plain_int(value.get(size))) if size else 0
    seconds = _plain_int(value.get(period)) if period else 0
    if not messages and not nbytes:
        return None
    return RateLimit(messages, nbytes, float(seconds) if seconds > 0 else default_period)


def _plain_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _dispatch_limit(value: Any) -> RateLimit | None:
    return _limit(value, "dispatchThrottlingRateInMsg", "dispatchThrottlingRateInByte", "ratePeriodInSecond", 1.0)


def resolve_rates(lookup: Callable[[str], Any], config: BrokerConfig) -> RatePolicies:
    """The rate policies of a topic: ``lookup(policy name)`` gives the topic's or its namespace's value
    (None when neither sets it); the broker's settings fill in the rest."""

    def of(name: str, default: Callable[[BrokerConfig], Any]) -> Any:
        value = lookup(name)
        return value if value is not None else default(config)

    inactive = of("inactive_topic_policies", inactive_topic_default)
    return RatePolicies(
        publish=_limit(of("publishMaxMessageRate", publish_rate_default),
                       "publishThrottlingRateInMsg", "publishThrottlingRateInByte", None, 1.0),
        dispatch=_dispatch_limit(of("topicDispatchRate", topic_dispatch_default)),
        subscription_dispatch=_dispatch_limit(of("subscriptionDispatchRate", subscription_dispatch_default)),
        replicator_dispatch=_dispatch_limit(of("replicatorDispatchRate", replicator_dispatch_default)),
        subscribe=_limit(of("clusterSubscribeRate", subscribe_rate_default),
                         "subscribeThrottlingRatePerConsumer", None, "ratePeriodInSecond", 30.0),
        inactive=InactivePolicy(
            inactive.get("inactiveTopicDeleteMode", DELETE_MODES[0]),
            float(max(0, _plain_int(inactive.get("maxInactiveDurationSeconds")))),
            inactive.get("deleteWhileInactive") is True,
        ),
    )
