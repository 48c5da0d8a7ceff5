"""Effective policies of a topic: the topic's own, else its namespace's, else the broker's.

Policies are stored with Pulsar's field names: namespace policies in the metadata store's
namespace row, topic policies as JSON under the key ``topic-policies/<topic>``. Partitions use
the policies of their partitioned topic. :func:`resolve` turns them into a
:class:`TopicPolicies` the broker reads on its hot paths; the service re-resolves loaded topics
whenever an admin call changes a policy, so policies take effect on live topics.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from magnetar.broker.config import BrokerConfig
from magnetar.broker.policies.rate_values import RatePolicies, resolve_rates
from magnetar.broker.policies.registry import (
    AUTO_SUBSCRIPTION_CREATION,
    BACKLOG_QUOTAS,
    COMPACTION_THRESHOLD,
    DEDUPLICATION,
    DELAYED_DELIVERY,
    ENCRYPTION_REQUIRED,
    MAX_CONSUMERS_PER_SUBSCRIPTION,
    MAX_CONSUMERS_PER_TOPIC,
    MAX_PRODUCERS,
    MAX_SUBSCRIPTIONS_PER_TOPIC,
    MAX_UNACKED_PER_CONSUMER,
    MAX_UNACKED_PER_SUBSCRIPTION,
    MESSAGE_TTL,
    RETENTION,
    SUBSCRIPTION_EXPIRATION,
    SUBSCRIPTION_TYPES_ENABLED,
    Policy,
)
from magnetar.protocol.topic_name import TopicName
from magnetar.storage import MetadataStore

TOPIC_POLICIES_PREFIX = "topic-policies/"
MiB = 1024 * 1024


@dataclass(frozen=True)
class BacklogQuota:
    """One backlog quota: a limit and what happens past it."""

    #: bytes for destination_storage, seconds for message_age; -1 = no limit
    limit: int
    #: producer_request_hold | producer_exception | consumer_backlog_eviction
    policy: str


@dataclass(frozen=True)
class TopicPolicies:
    """The policies in force for one topic."""

    retention_minutes: int = 0
    retention_mb: int = 0
    message_ttl_seconds: int = 0
    deduplication: bool = False
    size_quota: BacklogQuota | None = None
    time_quota: BacklogQuota | None = None
    max_producers: int = 0
    max_consumers_per_subscription: int = 0
    max_unacked_per_consumer: int | None = None
    delayed_delivery_active: bool = True
    #: durable subscriptions without consumers are deleted after this long (0 = never)
    subscription_expiration_minutes: float = 0
    #: compact once the entries not yet compacted exceed this many bytes (0 = never by size)
    compaction_threshold: int = 0
    #: admission limits (0 = none; None: the broker setting applies)
    max_consumers_per_topic: int | None = None
    max_subscriptions_per_topic: int | None = None
    #: a Shared / Key_Shared subscription with this many unacked messages stops dispatching
    #: (0 = none; None: the broker setting applies)
    max_unacked_per_subscription: int | None = None
    #: the subscription types consumers may use (empty: every type)
    subscription_types_enabled: frozenset[str] = frozenset()
    #: producers must declare encryption and every message must carry encryption keys
    encryption_required: bool = False
    #: durable subscriptions are created on first subscribe
    auto_subscription_creation: bool = True
    #: rate limits and the inactive-topic policy
    rates: RatePolicies = RatePolicies()

    @property
    def retains_acknowledged(self) -> bool:
        """Whether acknowledged data may have to stay for a while."""
        return self.retention_minutes != 0 or self.retention_mb != 0


def topic_policies(metadata: MetadataStore, topic_name: TopicName) -> dict[str, Any]:
    """The policies in force on a topic itself (partitions read their partitioned topic's)."""
    return stored_topic_policies(metadata, topic_name.partitioned_parent)


def stored_topic_policies(metadata: MetadataStore, topic_name: TopicName) -> dict[str, Any]:
    """The policies stored under exactly this topic name."""
    raw = metadata.get_kv(TOPIC_POLICIES_PREFIX + str(topic_name))
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def effective(metadata: MetadataStore, topic_name: TopicName, policy: Policy | str) -> Any:
    """The topic's value for a policy, else its namespace's; None when neither sets it."""
    key = policy if isinstance(policy, str) else policy.name
    for source in (topic_policies(metadata, topic_name), metadata.get_namespace(topic_name.namespace) or {}):
        value = source.get(key)
        if value is not None and value != {}:
            return value
    return None


def resolve(metadata: MetadataStore, config: BrokerConfig, topic_name: TopicName) -> TopicPolicies:
    """Every policy of a topic, with broker defaults filled in."""

    def of(policy: Policy) -> Any:
        return effective(metadata, topic_name, policy)

    retention = of(RETENTION) or {}
    dedup = of(DEDUPLICATION)
    quotas = of(BACKLOG_QUOTAS) or {}
    delayed = of(DELAYED_DELIVERY) or {}
    unacked = of(MAX_UNACKED_PER_CONSUMER)
    return TopicPolicies(
        retention_minutes=_int(retention.get("retentionTimeInMinutes"), config.default_retention_minutes),
        retention_mb=_int(retention.get("retentionSizeInMB"), config.default_retention_mb),
        message_ttl_seconds=_int(of(MESSAGE_TTL), MESSAGE_TTL.default(config)),
        deduplication=bool(dedup) if dedup is not None else DEDUPLICATION.default(config),
        size_quota=_quota(quotas.get("destination_storage"), "limitSize"),
        time_quota=_quota(quotas.get("message_age"), "limitTime"),
        max_producers=_int(of(MAX_PRODUCERS), MAX_PRODUCERS.default(config)),
        max_consumers_per_subscription=_int(
            of(MAX_CONSUMERS_PER_SUBSCRIPTION), MAX_CONSUMERS_PER_SUBSCRIPTION.default(config)
        ),
        # None: the consumer applies the broker setting itself
        max_unacked_per_consumer=_int(unacked, None) if unacked is not None else None,
        delayed_delivery_active=bool(delayed.get("active", True)),
        subscription_expiration_minutes=float(
            _int(of(SUBSCRIPTION_EXPIRATION), None) or config.subscription_expiration_minutes
        ),
        compaction_threshold=_int(of(COMPACTION_THRESHOLD), COMPACTION_THRESHOLD.default(config)),
        max_consumers_per_topic=_int(of(MAX_CONSUMERS_PER_TOPIC), None),
        max_subscriptions_per_topic=_int(of(MAX_SUBSCRIPTIONS_PER_TOPIC), None),
        max_unacked_per_subscription=_int(of(MAX_UNACKED_PER_SUBSCRIPTION), None),
        subscription_types_enabled=frozenset(of(SUBSCRIPTION_TYPES_ENABLED) or ()),
        encryption_required=of(ENCRYPTION_REQUIRED) is True,
        auto_subscription_creation=bool((of(AUTO_SUBSCRIPTION_CREATION) or AUTO_SUBSCRIPTION_CREATION.default(config))
                                        .get("allowAutoSubscriptionCreation", True)),
        rates=resolve_rates(lambda name: effective(metadata, topic_name, name), config),
    )


def namespace_value(metadata: MetadataStore, config: BrokerConfig, namespace: str, policy: Policy) -> Any:
    """A namespace policy's value: the namespace's own, else the broker default."""
    value = (metadata.get_namespace(namespace) or {}).get(policy.name)
    return policy.default(config) if value is None else value


def _int(value: Any, default: Any) -> Any:
    if value is None or isinstance(value, bool):
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _quota(value: Any, field: str) -> BacklogQuota | None:
    if not isinstance(value, dict):
        return None
    limit = _int(value.get(field, value.get("limit") if field == "limitSize" else None), -1)
    if limit < 0:
        return None
    return BacklogQuota(limit, value.get("policy") or "producer_request_hold")
