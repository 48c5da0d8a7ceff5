"""Every namespace and topic policy, once: adding a policy is one entry of :data:`POLICIES`.

An entry names the policy as Pulsar's ``Policies`` JSON field (how it is stored and returned),
the REST path segment and CLI command stem of each scope it may be set on (namespace, topic), the
shape of its value (which the REST layer maps to a body model and the CLI to its flags), its
validator and its default (from the broker setting where one exists: the registry reads
:class:`BrokerConfig`, which stays free of policy knowledge at the bottom of the broker). Policy
resolution (:mod:`magnetar.broker.policies.resolution`), the admin core, the REST routes and the
CLI read this table; none of them spells a policy name of its own.
"""

from __future__ import annotations

from typing import Any

from magnetar.broker.config import BrokerConfig

# NAMESPACE and TOPIC are re-exported: the routes, the CLI and resolution name scopes through the registry
from magnetar.broker.policies.model import NAMESPACE as NAMESPACE
from magnetar.broker.policies.model import TOPIC as TOPIC
from magnetar.broker.policies.model import Policy, Scope
from magnetar.broker.policies.rate_values import (
    inactive_topic_default,
    publish_rate_default,
    replicator_dispatch_default,
    subscribe_rate_default,
    subscription_dispatch_default,
    topic_dispatch_default,
    validate_dispatch_rate,
    validate_inactive_topic_policies,
    validate_publish_rate,
    validate_subscribe_rate,
)
from magnetar.broker.policies.stored import (
    ALLOW_AUTO_UPDATE_SCHEMA,
    ALLOWED_CLUSTERS,
    ANTI_AFFINITY_GROUP,
    AUTO_SUBSCRIPTION_CREATION,
    BOOKIE_AFFINITY_GROUP,
    DEDUP_SNAPSHOT_INTERVAL,
    DISPATCHER_PAUSE_ON_ACK_STATE,
    ENCRYPTION_REQUIRED,
    ENTRY_FILTERS,
    MAX_CONSUMERS_PER_TOPIC,
    MAX_SUBSCRIPTIONS_PER_TOPIC,
    MAX_TOPICS_PER_NAMESPACE,
    MAX_UNACKED_PER_SUBSCRIPTION,
    OFFLOAD_DELETION_LAG,
    OFFLOAD_POLICIES,
    OFFLOAD_THRESHOLD,
    OFFLOAD_THRESHOLD_SECONDS,
    PERSISTENCE,
    RESOURCE_GROUP,
    SCHEMA_AUTO_UPDATE_STRATEGY,
    SCHEMA_VALIDATION_ENFORCED,
    SUBSCRIPTION_AUTH_MODE,
    SUBSCRIPTION_TYPES_ENABLED,
)
from magnetar.broker.policies.validation import (
    INT64_MAX,
    non_negative,
    validate_auto_topic_creation,
    validate_backlog_quotas,
    validate_bool,
    validate_clusters,
    validate_delayed_delivery,
    validate_retention,
    validate_strategy,
)

RETENTION = Policy(
    "retention_policies",
    "retention",
    lambda value, current: validate_retention(value, current.get(BACKLOG_QUOTAS.name)),
    lambda c: {"retentionTimeInMinutes": c.default_retention_minutes, "retentionSizeInMB": c.default_retention_mb},
    namespace=Scope(
        "retention", "retention", "the retention policy",
        "Set the retention policy (time in minutes, size in MB; -1 for no limit).",
    ),
    topic=Scope("retention", "retention", "the topic's retention policy", "Set the topic's retention policy."),
)
MESSAGE_TTL = Policy(
    "message_ttl_in_seconds",
    "seconds",
    non_negative("message TTL", "Invalid value for message TTL, message TTL must >= 0"),
    lambda c: c.default_message_ttl_seconds,
    namespace=Scope(
        "messageTTL", "message-ttl", "the message TTL (seconds)", "Set the message TTL.",
        option=("--ttl", "-t", "TTL: seconds, or 10m, 3h, 2d"),
    ),
    topic=Scope(
        "messageTTL", "message-ttl", "the topic's message TTL (seconds)", "Set the topic's message TTL.",
        option=("--ttl", "-t", "TTL: seconds, or 10m, 3h"), query="messageTTL", generic_routes=False,
    ),
)
DEDUPLICATION = Policy(
    "deduplicationEnabled",
    "bool",
    validate_bool("deduplication"),
    lambda c: c.deduplication_enabled,
    namespace=Scope("deduplication", "deduplication", "whether deduplication is enabled", "Enable or disable deduplication."),
    topic=Scope(
        "deduplicationEnabled", "deduplication", "whether deduplication is enabled on the topic",
        "Enable or disable deduplication on the topic.",
    ),
)
BACKLOG_QUOTAS = Policy(
    "backlog_quota_map",
    "backlog_quotas",
    validate_backlog_quotas,
    lambda c: {},
    namespace=Scope("backlogQuotaMap", "backlog-quotas", "the backlog quotas", generic_routes=False, commands=("get",)),
    topic=Scope("backlogQuotaMap", generic_routes=False),
)
SCHEMA_COMPATIBILITY = Policy(
    "schema_compatibility_strategy",
    "str",
    validate_strategy,
    lambda c: c.schema_compatibility_strategy,
    namespace=Scope(
        "schemaCompatibilityStrategy", "schema-compatibility-strategy", "the schema compatibility strategy",
        "Set the schema compatibility strategy.",
        option=("--compatibility", "-c", "e.g. FULL, BACKWARD, ALWAYS_COMPATIBLE"),
        generic_routes=False, commands=("get", "set"),
    ),
    topic=Scope("schemaCompatibilityStrategy", generic_routes=False),
)
MAX_PRODUCERS = Policy(
    "max_producers_per_topic",
    "int",
    non_negative("maxProducersPerTopic", "maxProducersPerTopic must be 0 or more"),
    lambda c: c.max_producers_per_topic,
    namespace=Scope(
        "maxProducersPerTopic", "max-producers-per-topic", "the maximum producers per topic",
        "Set the maximum producers per topic.",
        option=("--max-producers-per-topic", "-p", "Maximum producers per topic"),
    ),
    topic=Scope(
        "maxProducers", "max-producers", "the topic's maximum producers", "Set the topic's maximum producers.",
        option=("--max-producers", "-p", "Maximum producers"),
    ),
)
MAX_CONSUMERS_PER_SUBSCRIPTION = Policy(
    "max_consumers_per_subscription",
    "int",
    non_negative("maxConsumersPerSubscription", "maxConsumersPerSubscription must be 0 or more"),
    lambda c: c.max_consumers_per_subscription,
    namespace=Scope(
        "maxConsumersPerSubscription", "max-consumers-per-subscription", "the maximum consumers per subscription",
        "Set the maximum consumers per subscription.",
        option=("--max-consumers-per-subscription", "-c", "Maximum consumers per subscription"),
    ),
    topic=Scope("maxConsumersPerSubscription"),
)
MAX_UNACKED_PER_CONSUMER = Policy(
    "max_unacked_messages_per_consumer",
    "int",
    non_negative("maxUnackedMessagesPerConsumer", "maxUnackedMessagesPerConsumer must be 0 or more"),
    lambda c: c.max_unacked_messages_per_consumer,
    namespace=Scope(
        "maxUnackedMessagesPerConsumer", "max-unacked-messages-per-consumer", "the maximum unacked messages per consumer",
        "Set the maximum unacknowledged messages per consumer.",
        option=("--max-unacked-messages-per-consumer", "-c", "Maximum unacked messages"),
    ),
    topic=Scope("maxUnackedMessagesOnConsumer"),
)
SUBSCRIPTION_EXPIRATION = Policy(
    "subscription_expiration_time_minutes",
    "int",
    non_negative("subscription expiration time", "Invalid value for subscription expiration time"),
    lambda c: 0,
    namespace=Scope(
        "subscriptionExpirationTime", "subscription-expiration-time", "the subscription expiration time (minutes)",
        "Set the subscription expiration time (minutes).",
        option=("--time", "-t", "Minutes without consumers before a subscription expires"),
    ),
)
DELAYED_DELIVERY = Policy(
    "delayed_delivery_policies",
    "delayed_delivery",
    validate_delayed_delivery,
    lambda c: {"active": True, "tickTime": 1000, "maxDeliveryDelayInMillis": 0},
    namespace=Scope("delayedDelivery", "delayed-delivery", "the delayed delivery policy", "Enable or disable delayed delivery."),
    topic=Scope("delayedDelivery"),
)
AUTO_TOPIC_CREATION = Policy(
    "autoTopicCreationOverride",
    "auto_topic_creation",
    validate_auto_topic_creation,
    lambda c: {"allowAutoTopicCreation": c.allow_auto_topic_creation, "topicType": "non-partitioned"},
    namespace=Scope(
        "autoTopicCreation", "auto-topic-creation", "the auto topic creation policy",
        "Set whether (and how) topics are created on first use.",
    ),
)
COMPACTION_THRESHOLD = Policy(
    "compaction_threshold",
    "int",
    non_negative("compaction threshold", "compactionThreshold must be 0 or more", INT64_MAX),
    lambda c: c.compaction_threshold_bytes,
    namespace=Scope("compactionThreshold", set_methods=("PUT", "POST")),
    topic=Scope("compactionThreshold"),
)
REPLICATION_CLUSTERS = Policy(
    "replication_clusters",
    "clusters",
    validate_clusters,
    lambda c: [c.cluster_name],
    namespace=Scope(
        "replication", "clusters", "the replication clusters", "Set the replication clusters.",
        option=("--clusters", "-c", "Replication cluster ids, comma separated"), generic_routes=False,
        commands=("get", "set"),
    ),
    topic=Scope(
        "replication", "replication-clusters", "the topic's replication clusters",
        "Set the topic's replication clusters.",
        option=("--clusters", "-c", "Replication cluster ids, comma separated"), generic_routes=False,
    ),
)



# -- rate limits and inactive topics (enforced by policies/rate_limits.py and the lifecycle sweep) -----------
# Stored on a namespace under the field of Pulsar's Policies, which keeps the rates per cluster
# ({"standalone": {...}}): magnetar stores the value of its own cluster and shows it in that map.
PUBLISH_RATE = Policy(
    "publishMaxMessageRate",
    "publish_rate",
    validate_publish_rate,
    publish_rate_default,
    namespace=Scope("publishRate", "publish-rate", "the publish rate of each topic", "Set the publish rate of each topic."),
    topic=Scope("publishRate", "publish-rate", "the topic's publish rate", "Set the topic's publish rate."),
)
DISPATCH_RATE = Policy(
    "topicDispatchRate",
    "dispatch_rate",
    validate_dispatch_rate,
    topic_dispatch_default,
    namespace=Scope("dispatchRate", "dispatch-rate", "the dispatch rate of each topic", "Set the dispatch rate of each topic."),
    topic=Scope("dispatchRate", "dispatch-rate", "the topic's dispatch rate", "Set the topic's dispatch rate."),
)
SUBSCRIPTION_DISPATCH_RATE = Policy(
    "subscriptionDispatchRate",
    "dispatch_rate",
    validate_dispatch_rate,
    subscription_dispatch_default,
    namespace=Scope(
        "subscriptionDispatchRate", "subscription-dispatch-rate", "the dispatch rate of each subscription",
        "Set the dispatch rate of each subscription.",
    ),
    topic=Scope(
        "subscriptionDispatchRate", "subscription-dispatch-rate", "the dispatch rate of each of the topic's subscriptions",
        "Set the dispatch rate of each of the topic's subscriptions.",
    ),
)
SUBSCRIBE_RATE = Policy(
    "clusterSubscribeRate",
    "subscribe_rate",
    validate_subscribe_rate,
    subscribe_rate_default,
    namespace=Scope("subscribeRate", "subscribe-rate", "the subscribe rate per consumer", "Set the subscribe rate per consumer."),
    topic=Scope("subscribeRate", "subscribe-rate", "the topic's subscribe rate per consumer", "Set the topic's subscribe rate."),
)
REPLICATOR_DISPATCH_RATE = Policy(
    "replicatorDispatchRate",
    "dispatch_rate",
    validate_dispatch_rate,
    replicator_dispatch_default,
    namespace=Scope(
        "replicatorDispatchRate", "replicator-dispatch-rate", "the dispatch rate of each replicator",
        "Set the dispatch rate of each replicator.",
    ),
    topic=Scope(
        "replicatorDispatchRate", "replicator-dispatch-rate", "the dispatch rate of the topic's replicators",
        "Set the dispatch rate of the topic's replicators.",
    ),
)
INACTIVE_TOPIC_POLICIES = Policy(
    "inactive_topic_policies",
    "inactive_topic_policies",
    validate_inactive_topic_policies,
    inactive_topic_default,
    namespace=Scope(
        "inactiveTopicPolicies", "inactive-topic-policies", "the inactive topic policies",
        "Set when inactive topics are deleted.",
    ),
    topic=Scope(
        "inactiveTopicPolicies", "inactive-topic-policies", "the topic's inactive topic policies",
        "Set when the topic is deleted while inactive.",
    ),
)
RATE_POLICIES: tuple[Policy, ...] = (
    PUBLISH_RATE,
    DISPATCH_RATE,
    SUBSCRIPTION_DISPATCH_RATE,
    SUBSCRIBE_RATE,
    REPLICATOR_DISPATCH_RATE,
    INACTIVE_TOPIC_POLICIES,
)
#: the Policies fields Pulsar keeps per cluster (a namespace's Policies object shows {cluster: value})
PER_CLUSTER_FIELDS = frozenset(p.name for p in RATE_POLICIES if p is not INACTIVE_TOPIC_POLICIES)
# -- end of rate limits and inactive topics ---------------------------------------------------------------

#: every policy; the CLI lists its commands in this order
POLICIES: tuple[Policy, ...] = (
    RETENTION,
    MESSAGE_TTL,
    DEDUPLICATION,
    MAX_PRODUCERS,
    MAX_CONSUMERS_PER_SUBSCRIPTION,
    MAX_UNACKED_PER_CONSUMER,
    SUBSCRIPTION_EXPIRATION,
    DELAYED_DELIVERY,
    AUTO_TOPIC_CREATION,
    BACKLOG_QUOTAS,
    SCHEMA_COMPATIBILITY,
    COMPACTION_THRESHOLD,
    REPLICATION_CLUSTERS,
    # -- stored policies of issue #28 --
    PERSISTENCE,
    MAX_CONSUMERS_PER_TOPIC,
    MAX_SUBSCRIPTIONS_PER_TOPIC,
    MAX_TOPICS_PER_NAMESPACE,
    MAX_UNACKED_PER_SUBSCRIPTION,
    SUBSCRIPTION_TYPES_ENABLED,
    ENCRYPTION_REQUIRED,
    AUTO_SUBSCRIPTION_CREATION,
    DEDUP_SNAPSHOT_INTERVAL,
    ALLOW_AUTO_UPDATE_SCHEMA,
    SCHEMA_VALIDATION_ENFORCED,
    SCHEMA_AUTO_UPDATE_STRATEGY,
    SUBSCRIPTION_AUTH_MODE,
    OFFLOAD_THRESHOLD,
    OFFLOAD_THRESHOLD_SECONDS,
    OFFLOAD_DELETION_LAG,
    OFFLOAD_POLICIES,
    ANTI_AFFINITY_GROUP,
    BOOKIE_AFFINITY_GROUP,
    RESOURCE_GROUP,
    ENTRY_FILTERS,
    DISPATCHER_PAUSE_ON_ACK_STATE,
    ALLOWED_CLUSTERS,
    # -- end of the stored policies of issue #28 --
    *RATE_POLICIES,
)
BY_NAME: dict[str, Policy] = {p.name: p for p in POLICIES}


def on_scope(scope: str) -> tuple[Policy, ...]:
    """The policies that can be set on ``scope`` (NAMESPACE or TOPIC)."""
    return tuple(p for p in POLICIES if p.scope(scope) is not None)


def broker_default(name: str, config: BrokerConfig) -> Any:
    """The value of policy ``name`` when neither the topic nor its namespace sets it (None: unknown)."""
    policy = BY_NAME.get(name)
    return policy.default(config) if policy is not None else None
