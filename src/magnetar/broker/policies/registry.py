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

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from magnetar.broker.config import BrokerConfig
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
from magnetar.broker.policies.validation import (
    AUTO_UPDATE_STRATEGIES,
    INT64_MAX,
    SUBSCRIPTION_AUTH_MODES,
    SUBSCRIPTION_TYPES,
    any_int,
    non_negative,
    one_of,
    validate_auto_subscription_creation,
    validate_auto_topic_creation,
    validate_backlog_quotas,
    validate_bookie_affinity,
    validate_bool,
    validate_cluster_list,
    validate_clusters,
    validate_delayed_delivery,
    validate_entry_filters,
    validate_offload_policies,
    validate_persistence,
    validate_retention,
    validate_strategy,
    validate_subscription_types,
    validate_text,
)

NAMESPACE = "namespace"
TOPIC = "topic"


@dataclass(frozen=True)
class Scope:
    """How a policy appears on one scope: its REST path segment and its CLI commands."""

    #: path segment after /namespaces/{tenant}/{namespace}/ or after the topic
    path: str
    #: CLI command stem (``get-<cli>``, ``set-<cli>``, ``remove-<cli>``); None: no CLI commands
    cli: str | None = None
    #: what the policy is, for the CLI's help ("the message TTL (seconds)")
    help: str = ""
    #: the CLI set command's help
    set_help: str = ""
    #: the CLI option that takes the value: (long flag, short flag, help)
    option: tuple[str, str, str] | None = None
    #: the CLI sends the value as this query parameter instead of the body
    query: str | None = None
    #: GET / POST / DELETE routes are generated from this entry (False: hand-written routes)
    generic_routes: bool = True
    #: which CLI commands are generated: any of "get", "set", "remove"
    commands: tuple[str, ...] = ("get", "set", "remove")
    #: the HTTP methods of the generic set route (Pulsar sets some policies with PUT)
    set_methods: tuple[str, ...] = ("POST",)
    #: the path of the generic DELETE route when it differs from ``path``; "" for no DELETE route
    remove_path: str | None = None
    #: a set call whose body is empty or null removes the policy (pulsar-admin's remove verb does that)
    null_removes: bool = False


@dataclass(frozen=True)
class Policy:
    """One policy: Pulsar field name, value shape, validator, default and the scopes it is set on."""

    #: the field of Pulsar's Policies object (storage key and JSON field)
    name: str
    #: value shape: int, bool, seconds, str, retention, backlog_quotas, delayed_delivery, auto_topic_creation,
    #: clusters, publish_rate, dispatch_rate, subscribe_rate, inactive_topic_policies
    shape: str
    #: (value, the other policies of the same scope) -> the value normalized; raises a broker error
    validate: Callable[[Any, Mapping[str, Any]], Any]
    #: the value in force when neither the topic nor its namespace sets it
    default: Callable[[BrokerConfig], Any]
    namespace: Scope | None = None
    topic: Scope | None = None
    #: what a namespace GET returns while the policy is not set (Pulsar's Policies field default;
    #: None: null)
    unset: Callable[[BrokerConfig], Any] | None = None

    def scope(self, scope: str) -> Scope | None:
        """This policy on ``scope`` (NAMESPACE or TOPIC), None when it cannot be set there."""
        return self.namespace if scope == NAMESPACE else self.topic


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

# -- stored namespace / topic policies (issue #28): limits, schema flags, persistence, offload -----
# Enforced where the broker owns the decision (limits, subscription types, auto subscription
# creation, encryption, schema flags); persistence, offload, affinity groups, resource groups and
# entry filters are stored and returned as Pulsar returns them (docs/FEATURES.md).
PERSISTENCE = Policy(
    "persistence",
    "persistence",
    validate_persistence,
    # no bookies: every entry is written once to the local disk, as a standalone Pulsar's 1/1/1
    lambda c: {"bookkeeperEnsemble": 1, "bookkeeperWriteQuorum": 1, "bookkeeperAckQuorum": 1,
               "managedLedgerMaxMarkDeleteRate": 1.0},
    namespace=Scope("persistence"),
    topic=Scope("persistence"),
)
MAX_CONSUMERS_PER_TOPIC = Policy(
    "max_consumers_per_topic",
    "int",
    non_negative("maxConsumersPerTopic", "maxConsumersPerTopic must be 0 or more"),
    lambda c: c.max_consumers_per_topic,
    namespace=Scope(
        "maxConsumersPerTopic", "max-consumers-per-topic", "the maximum consumers per topic",
        "Set the maximum consumers per topic.",
        option=("--max-consumers-per-topic", "-c", "Maximum consumers per topic"),
    ),
    topic=Scope(
        "maxConsumers", "max-consumers", "the topic's maximum consumers", "Set the topic's maximum consumers.",
        option=("--max-consumers", "-c", "Maximum consumers"),
    ),
)
MAX_SUBSCRIPTIONS_PER_TOPIC = Policy(
    "max_subscriptions_per_topic",
    "int",
    non_negative("maxSubscriptionsPerTopic", "maxSubscriptionsPerTopic must be 0 or more"),
    lambda c: c.max_subscriptions_per_topic,
    namespace=Scope(
        "maxSubscriptionsPerTopic", "max-subscriptions-per-topic", "the maximum subscriptions per topic",
        "Set the maximum subscriptions per topic.",
        option=("--max-subscriptions-per-topic", "-m", "Maximum subscriptions per topic"),
    ),
    topic=Scope(
        "maxSubscriptionsPerTopic", "max-subscriptions", "the topic's maximum subscriptions",
        "Set the topic's maximum subscriptions.",
        option=("--max-subscriptions-per-topic", "-m", "Maximum subscriptions"),
    ),
)
MAX_TOPICS_PER_NAMESPACE = Policy(
    "max_topics_per_namespace",
    "int",
    non_negative("maxTopicsPerNamespace", "maxTopicsPerNamespace must be 0 or more"),
    lambda c: c.max_topics_per_namespace,
    namespace=Scope(
        "maxTopicsPerNamespace", "max-topics-per-namespace", "the maximum topics of the namespace",
        "Set the maximum topics of the namespace (partitions count one each).",
        option=("--max-topics-per-namespace", "-t", "Maximum topics"),
    ),
    unset=lambda c: 0,
)
MAX_UNACKED_PER_SUBSCRIPTION = Policy(
    "max_unacked_messages_per_subscription",
    "int",
    non_negative("maxUnackedMessagesPerSubscription", "maxUnackedMessagesPerSubscription must be 0 or more"),
    lambda c: c.max_unacked_messages_per_subscription,
    namespace=Scope(
        "maxUnackedMessagesPerSubscription", "max-unacked-messages-per-subscription",
        "the maximum unacked messages per subscription", "Set the maximum unacknowledged messages per subscription.",
        option=("--max-unacked-messages-per-subscription", "-c", "Maximum unacked messages"),
    ),
    topic=Scope(
        "maxUnackedMessagesOnSubscription", "max-unacked-messages-per-subscription",
        "the topic's maximum unacked messages per subscription",
        "Set the topic's maximum unacknowledged messages per subscription.",
        option=("--max-unacked-messages-per-subscription", "-m", "Maximum unacked messages"),
    ),
)
SUBSCRIPTION_TYPES_ENABLED = Policy(
    "subscription_types_enabled",
    "sub_types",
    validate_subscription_types,
    lambda c: list(SUBSCRIPTION_TYPES),
    namespace=Scope("subscriptionTypesEnabled"),
    topic=Scope("subscriptionTypesEnabled"),
    unset=lambda c: [],
)
ENCRYPTION_REQUIRED = Policy(
    "encryption_required",
    "bool",
    validate_bool("encryptionRequired"),
    lambda c: False,
    namespace=Scope(
        "encryptionRequired", "encryption-required", "whether messages must be encrypted",
        "Require (or stop requiring) encrypted messages.", remove_path="", commands=("get", "set"),
    ),
    unset=lambda c: False,
)
AUTO_SUBSCRIPTION_CREATION = Policy(
    "autoSubscriptionCreationOverride",
    "auto_subscription_creation",
    validate_auto_subscription_creation,
    lambda c: {"allowAutoSubscriptionCreation": c.allow_auto_subscription_creation},
    namespace=Scope("autoSubscriptionCreation"),
    topic=Scope("autoSubscriptionCreation"),
)
DEDUP_SNAPSHOT_INTERVAL = Policy(
    "deduplicationSnapshotIntervalSeconds",
    "int",
    non_negative("deduplicationSnapshotInterval", "interval must be greater than or equal to 0"),
    lambda c: 120,
    namespace=Scope(
        "deduplicationSnapshotInterval", "deduplication-snapshot-interval",
        "the deduplication snapshot interval (seconds)", "Set the deduplication snapshot interval.",
        option=("--interval", "-i", "Seconds between deduplication snapshots"), null_removes=True,
    ),
    topic=Scope(
        "deduplicationSnapshotInterval", "deduplication-snapshot-interval",
        "the topic's deduplication snapshot interval (seconds)", "Set the topic's deduplication snapshot interval.",
        option=("--interval", "-i", "Seconds between deduplication snapshots"),
    ),
)
ALLOW_AUTO_UPDATE_SCHEMA = Policy(
    "is_allow_auto_update_schema",
    "bool",
    validate_bool("isAllowAutoUpdateSchema"),
    lambda c: c.allow_auto_update_schema,
    namespace=Scope(
        "isAllowAutoUpdateSchema", "is-allow-auto-update-schema", "whether clients may register new schemas",
        "Allow or refuse new schema versions from clients.", remove_path="", commands=("get", "set"),
    ),
    unset=lambda c: c.allow_auto_update_schema,
)
SCHEMA_VALIDATION_ENFORCED = Policy(
    "schema_validation_enforced",
    "bool",
    validate_bool("schemaValidationEnforced"),
    lambda c: c.schema_validation_enforced,
    namespace=Scope(
        "schemaValidationEnforced", "schema-validation-enforce",
        "whether producers without a schema are refused on topics with one",
        "Enforce (or not) schema validation.", remove_path="", commands=("get", "set"),
    ),
    topic=Scope(
        "schemaValidationEnforced", "schema-validation-enforce",
        "whether producers without a schema are refused on the topic", "Enforce (or not) schema validation on the topic.",
        commands=("get", "set"),
    ),
    unset=lambda c: False,
)
SCHEMA_AUTO_UPDATE_STRATEGY = Policy(
    "schema_auto_update_compatibility_strategy",
    "name",
    one_of("schemaAutoUpdateCompatibilityStrategy", AUTO_UPDATE_STRATEGIES),
    lambda c: "Full",
    namespace=Scope("schemaAutoUpdateCompatibilityStrategy", set_methods=("PUT",), remove_path=""),
    unset=lambda c: "Full",
)
SUBSCRIPTION_AUTH_MODE = Policy(
    "subscription_auth_mode",
    "name",
    one_of("subscriptionAuthMode", SUBSCRIPTION_AUTH_MODES),
    lambda c: "None",
    namespace=Scope("subscriptionAuthMode", remove_path=""),
    unset=lambda c: "None",
)
OFFLOAD_THRESHOLD = Policy(
    "offload_threshold",
    "long",
    any_int("offloadThreshold"),
    lambda c: -1,
    namespace=Scope("offloadThreshold", set_methods=("PUT",), remove_path=""),
    unset=lambda c: -1,
)
OFFLOAD_THRESHOLD_SECONDS = Policy(
    "offload_threshold_in_seconds",
    "long",
    any_int("offloadThresholdInSeconds"),
    lambda c: -1,
    namespace=Scope("offloadThresholdInSeconds", set_methods=("PUT",), remove_path=""),
    unset=lambda c: -1,
)
OFFLOAD_DELETION_LAG = Policy(
    "offload_deletion_lag_ms",
    "long",
    any_int("offloadDeletionLagMs"),
    lambda c: None,
    namespace=Scope("offloadDeletionLagMs", set_methods=("PUT",)),
)
OFFLOAD_POLICIES = Policy(
    "offload_policies",
    "offload_policies",
    validate_offload_policies,
    lambda c: None,
    namespace=Scope("offloadPolicies", remove_path="removeOffloadPolicies"),
    topic=Scope("offloadPolicies"),
)
ANTI_AFFINITY_GROUP = Policy(
    "namespaceAntiAffinityGroup",
    "text",
    validate_text("Anti-affinity group"),
    lambda c: None,
    namespace=Scope("antiAffinity"),
)
BOOKIE_AFFINITY_GROUP = Policy(
    "bookieAffinityGroup",
    "bookie_affinity",
    validate_bookie_affinity,
    lambda c: None,
    namespace=Scope("persistence/bookieAffinity"),
)
RESOURCE_GROUP = Policy(
    "resource_group_name",
    "text",
    validate_text("Resource group"),
    lambda c: None,
    # set through POST resourcegroup/{name} (a hand-written route: no resource groups exist here)
    namespace=Scope("resourcegroup", set_methods=()),
)
ENTRY_FILTERS = Policy(
    "entryFilters",
    "entry_filters",
    validate_entry_filters,
    lambda c: None,
    namespace=Scope("entryFilters"),
    topic=Scope("entryFilters"),
)
DISPATCHER_PAUSE_ON_ACK_STATE = Policy(
    "dispatcherPauseOnAckStatePersistentEnabled",
    "flag",
    validate_bool("dispatcherPauseOnAckStatePersistent"),
    lambda c: False,
    namespace=Scope("dispatcherPauseOnAckStatePersistent"),
    topic=Scope("dispatcherPauseOnAckStatePersistent"),
    unset=lambda c: False,
)
ALLOWED_CLUSTERS = Policy(
    "allowed_clusters",
    "cluster_list",
    validate_cluster_list,
    lambda c: [],
    namespace=Scope("allowedClusters", remove_path=""),
    unset=lambda c: [],
)
# -- end of the stored policies of issue #28 ----------------------------------------------------


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
