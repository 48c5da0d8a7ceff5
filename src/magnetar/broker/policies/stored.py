"""The stored namespace and topic policies of issue #28 (pulsar-admin's limits, schema flags,
persistence, offload, affinity groups, ...): one block of entries that :mod:`.registry` lists in
:data:`~.registry.POLICIES`. Which of them the broker enforces, and where, is in docs/FEATURES.md."""

from __future__ import annotations

from magnetar.broker.policies.model import Policy, Scope
from magnetar.broker.policies.validation import (
    AUTO_UPDATE_STRATEGIES,
    SUBSCRIPTION_AUTH_MODES,
    SUBSCRIPTION_TYPES,
    any_int,
    non_negative,
    one_of,
    validate_auto_subscription_creation,
    validate_bookie_affinity,
    validate_bool,
    validate_cluster_list,
    validate_entry_filters,
    validate_offload_policies,
    validate_persistence,
    validate_subscription_types,
    validate_text,
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
