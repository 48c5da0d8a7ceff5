"""Checks of policy values (Pulsar's ``Policies`` field shapes): each returns the value normalized
or raises a broker error with the reason Pulsar gives."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from magnetar.broker.errors import BadRequestError, OutOfRangeError, PreconditionFailedError

#: the largest value of a Java ``Integer`` / ``Long`` policy field
INT32_MAX = (1 << 31) - 1
INT64_MAX = (1 << 63) - 1
#: the most partitions a partitioned topic may have (Pulsar's maxNumPartitionsPerPartitionedTopic)
MAX_PARTITIONS = 10_000

SCHEMA_STRATEGIES = (
    "UNDEFINED",
    "ALWAYS_INCOMPATIBLE",
    "ALWAYS_COMPATIBLE",
    "BACKWARD",
    "FORWARD",
    "FULL",
    "BACKWARD_TRANSITIVE",
    "FORWARD_TRANSITIVE",
    "FULL_TRANSITIVE",
)
BACKLOG_QUOTA_TYPES = ("destination_storage", "message_age")
BACKLOG_QUOTA_POLICIES = ("producer_request_hold", "producer_exception", "consumer_backlog_eviction")

Current = Mapping[str, Any]


def check_int(value: Any, what: str) -> int:
    """``value`` when it is an integer (not a bool); 412 otherwise."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise PreconditionFailedError(f"Invalid value for {what}: {value!r} is not an integer")
    return value


def non_negative(what: str, message: str, maximum: int = INT32_MAX) -> Any:
    """A validator of integers that must be 0 or more: ``message`` is the reason for a negative one.

    Pulsar's policy fields are Java ``Integer`` (``maximum`` 2^31 - 1) unless said otherwise (``Long``):
    a larger value is refused with 400, as Pulsar's JSON mapping refuses it.
    """

    def validate(value: Any, current: Current) -> int:
        if check_int(value, what) < 0:
            raise PreconditionFailedError(message)
        if value > maximum:
            raise BadRequestError(f"Invalid value for {what}: {value} is out of range (at most {maximum})")
        return value

    return validate


def validate_bool(what: str) -> Any:
    """A validator of true / false values."""

    def validate(value: Any, current: Current) -> bool:
        if not isinstance(value, bool):
            raise PreconditionFailedError(f"Invalid value for {what}: {value!r} is not true or false")
        return value

    return validate


def validate_retention(value: Any, quotas: Any) -> dict[str, int]:
    """A RetentionPolicies object; it must exceed the backlog size quota in ``quotas`` (if any)."""
    if not isinstance(value, dict):
        raise PreconditionFailedError("Invalid retention policy: expected retentionTimeInMinutes and retentionSizeInMB")
    minutes = value.get("retentionTimeInMinutes", 0)
    size = value.get("retentionSizeInMB", 0)
    for v in (minutes, size):
        if not isinstance(v, int) or isinstance(v, bool) or v < -1:
            raise PreconditionFailedError("Invalid retention policy: size and time must be -1 (infinite), 0 or positive")
    out = {"retentionTimeInMinutes": minutes, "retentionSizeInMB": size}
    check_retention_vs_quota(out, quotas)
    return out


def check_retention_vs_quota(retention: Any, quotas: Any) -> None:
    """412 when a retention size is not above the backlog size quota."""
    if not retention or not quotas:
        return
    quota = quotas.get("destination_storage") or {}
    limit = quota.get("limitSize", -1)
    size_mb = retention.get("retentionSizeInMB", 0)
    if limit > 0 and size_mb != -1 and size_mb * 1024 * 1024 <= limit and size_mb != 0:
        raise PreconditionFailedError("Retention Quota must exceed configured backlog quota for namespace.")


def quota_type(value: str | None) -> str:
    """A backlog quota type (destination_storage when not given)."""
    value = value or "destination_storage"
    if value not in BACKLOG_QUOTA_TYPES:
        raise PreconditionFailedError(f"Invalid backlogQuotaType {value!r}: expected destination_storage or message_age")
    return value


def backlog_quota(value: Any) -> dict[str, Any]:
    """One BacklogQuota object: limitSize, limitTime and policy."""
    if not isinstance(value, dict):
        raise PreconditionFailedError("Invalid backlog quota: expected an object with limitSize, limitTime and policy")
    limit_size = value.get("limitSize", value.get("limit", -1))
    limit_time = value.get("limitTime", -1)
    for v in (limit_size, limit_time):
        if not isinstance(v, int) or isinstance(v, bool) or v < -1:
            raise PreconditionFailedError("Invalid backlog quota: limitSize and limitTime must be -1 or more")
    policy = value.get("policy") or "producer_request_hold"
    if policy not in BACKLOG_QUOTA_POLICIES:
        raise PreconditionFailedError(
            f"Invalid backlog quota policy {policy!r}: expected one of {', '.join(BACKLOG_QUOTA_POLICIES)}"
        )
    return {"limitSize": limit_size, "limitTime": limit_time, "policy": policy}


def validate_backlog_quotas(value: Any, current: Current) -> dict[str, Any]:
    """A whole backlog_quota_map."""
    if not isinstance(value, dict):
        raise PreconditionFailedError("backlog_quota_map must be an object")
    return {quota_type(k): backlog_quota(v) for k, v in value.items()}


def validate_strategy(value: Any, current: Current) -> str:
    """A schema compatibility strategy name, upper case."""
    if not isinstance(value, str) or value.upper() not in SCHEMA_STRATEGIES:
        raise PreconditionFailedError(
            f"Invalid schema compatibility strategy {value!r}: expected one of {', '.join(SCHEMA_STRATEGIES)}"
        )
    return value.upper()


def validate_delayed_delivery(value: Any, current: Current) -> dict[str, Any]:
    """A DelayedDeliveryPolicies object."""
    if not isinstance(value, dict):
        raise PreconditionFailedError("Invalid delayed delivery policies: expected active, tickTime, maxDeliveryDelayInMillis")
    active = value.get("active", True)
    tick = value.get("tickTime", 1000)
    max_delay = value.get("maxDeliveryDelayInMillis", 0)
    if not isinstance(active, bool):
        raise PreconditionFailedError("Invalid delayed delivery policies: active must be true or false")
    for v in (tick, max_delay):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise PreconditionFailedError(
                "Invalid delayed delivery policies: tickTime and maxDeliveryDelayInMillis must be 0 or more"
            )
    return {"active": active, "tickTime": tick, "maxDeliveryDelayInMillis": max_delay}


_AUTO_PREFIX = "Invalid configuration for autoTopicCreationOverride. the detail is "


def check_partition_limit(partitions: int) -> None:
    """406 past :data:`MAX_PARTITIONS`."""
    if partitions > MAX_PARTITIONS:
        raise OutOfRangeError(f"Number of partitions should be less than or equal to {MAX_PARTITIONS}")


def validate_auto_topic_creation(value: Any, current: Current) -> dict[str, Any]:
    """An AutoTopicCreationOverride object."""
    if not isinstance(value, dict):
        raise PreconditionFailedError(_AUTO_PREFIX + "[body] must be an object.")
    allow = value.get("allowAutoTopicCreation")
    if not isinstance(allow, bool):
        raise PreconditionFailedError(_AUTO_PREFIX + "[allowAutoTopicCreation] must be true or false.")
    out: dict[str, Any] = {"allowAutoTopicCreation": allow}
    topic_type = value.get("topicType")
    partitions = value.get("defaultNumPartitions")
    if allow:
        if topic_type not in ("partitioned", "non-partitioned"):
            raise PreconditionFailedError(_AUTO_PREFIX + "[topicType] is invalid.")
        out["topicType"] = topic_type
        if topic_type == "partitioned":
            if partitions is None:
                raise PreconditionFailedError(_AUTO_PREFIX + "[defaultNumPartitions] cannot be null when the type is partitioned.")
            if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
                raise PreconditionFailedError(_AUTO_PREFIX + "[defaultNumPartitions] cannot be less than 1 for partition type.")
            check_partition_limit(partitions)
            out["defaultNumPartitions"] = partitions
        elif partitions is not None:
            raise PreconditionFailedError(
                _AUTO_PREFIX + "[defaultNumPartitions] is not allowed to be set when the type is non-partition."
            )
    elif topic_type is not None:
        out["topicType"] = topic_type
    return out


def validate_clusters(value: Any, current: Current) -> list[str]:
    """A replication policy: a non-empty list of cluster names, each once, in the order given
    (whether each is registered and allowed for the tenant is checked where the tenant is known)."""
    if not isinstance(value, list) or any(not isinstance(c, str) for c in value):
        raise PreconditionFailedError("Invalid replication clusters: expected a list of cluster names")
    clusters = list(dict.fromkeys(c.strip() for c in value))
    if not clusters or any(not c for c in clusters):
        raise PreconditionFailedError("ClusterIds should not be null or empty")
    return clusters



# -- stored policies of issue #28 (persistence, limits, schema flags, offload, ...) ----------
#: Pulsar's SubscriptionType names, in its declaration order
SUBSCRIPTION_TYPES = ("Exclusive", "Shared", "Failover", "Key_Shared")
#: Pulsar's SubscriptionAuthMode
SUBSCRIPTION_AUTH_MODES = ("None", "Prefix")
#: Pulsar's SchemaAutoUpdateCompatibilityStrategy
AUTO_UPDATE_STRATEGIES = (
    "AutoUpdateDisabled",
    "Backward",
    "Forward",
    "Full",
    "AlwaysCompatible",
    "BackwardTransitive",
    "ForwardTransitive",
    "FullTransitive",
)
#: the offload drivers Pulsar's broker accepts (OffloadPoliciesImpl.DRIVER_NAMES)
OFFLOAD_DRIVERS = ("S3", "aws-s3", "google-cloud-storage", "filesystem", "azureblob", "aliyun-oss")


def any_int(what: str, maximum: int = INT64_MAX) -> Any:
    """A validator of integers of any sign (Java ``long`` fields where negative means "off")."""

    def validate(value: Any, current: Current) -> int:
        check_int(value, what)
        if not -maximum - 1 <= value <= maximum:
            raise BadRequestError(f"Invalid value for {what}: {value} is out of range")
        return value

    return validate


def one_of(what: str, names: tuple[str, ...]) -> Any:
    """A validator of one of ``names`` (Java enum values: exact case, 400 otherwise as Jackson does)."""

    def validate(value: Any, current: Current) -> str:
        if value not in names:
            raise BadRequestError(f"Invalid value for {what}: {value!r} is not one of {', '.join(names)}")
        return value

    return validate


def validate_text(what: str) -> Any:
    """A validator of a non-empty string."""

    def validate(value: Any, current: Current) -> str:
        if not isinstance(value, str) or not value.strip():
            raise PreconditionFailedError(f"{what} can not be empty")
        return value.strip()

    return validate


def validate_subscription_types(value: Any, current: Current) -> list[str]:
    """A set of subscription types, returned in Pulsar's declaration order."""
    if not isinstance(value, list) or any(v not in SUBSCRIPTION_TYPES for v in value):
        raise BadRequestError(
            f"Invalid subscription types {value!r}: expected a list of {', '.join(SUBSCRIPTION_TYPES)}"
        )
    return [t for t in SUBSCRIPTION_TYPES if t in value]


def validate_persistence(value: Any, current: Current) -> dict[str, Any]:
    """A PersistencePolicies object: ensemble >= write quorum >= ack quorum (Pulsar's check)."""
    if not isinstance(value, dict):
        raise BadRequestError("Invalid persistence policies: expected an object")
    ints = {}
    for key in ("bookkeeperEnsemble", "bookkeeperWriteQuorum", "bookkeeperAckQuorum"):
        v = value.get(key, 2)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise BadRequestError(f"Invalid persistence policies: {key} must be 0 or more")
        ints[key] = v
    rate = value.get("managedLedgerMaxMarkDeleteRate", 0.0)
    if isinstance(rate, bool) or not isinstance(rate, int | float) or rate < 0:
        raise BadRequestError("Invalid persistence policies: managedLedgerMaxMarkDeleteRate must be 0 or more")
    ensemble, write, ack = ints["bookkeeperEnsemble"], ints["bookkeeperWriteQuorum"], ints["bookkeeperAckQuorum"]
    if not ensemble >= write >= ack:
        raise BadRequestError(f"Bookkeeper Ensemble ({ensemble}) >= WriteQuorum ({write}) >= AckQuoru ({ack})")
    return {**ints, "managedLedgerMaxMarkDeleteRate": float(rate)}


def validate_auto_subscription_creation(value: Any, current: Current) -> dict[str, bool]:
    """An AutoSubscriptionCreationOverride object."""
    allow = value.get("allowAutoSubscriptionCreation") if isinstance(value, dict) else None
    if not isinstance(allow, bool):
        raise BadRequestError("Invalid autoSubscriptionCreation override: allowAutoSubscriptionCreation must be true or false")
    return {"allowAutoSubscriptionCreation": allow}


def validate_offload_policies(value: Any, current: Current) -> dict[str, Any]:
    """An OffloadPolicies object: a known driver, and a bucket for the object stores (Pulsar's checks);
    the other fields are kept as given (nothing is offloaded here)."""
    if not isinstance(value, dict) or not value:
        raise PreconditionFailedError("Invalid offload policies: OffloadPolicies is empty")
    driver = value.get("managedLedgerOffloadDriver")
    if driver not in OFFLOAD_DRIVERS:
        raise PreconditionFailedError(f"The driver {driver} is not supported, support value: {', '.join(OFFLOAD_DRIVERS)}")
    if driver != "filesystem":
        bucket = value.get("managedLedgerOffloadBucket") or value.get("s3ManagedLedgerOffloadBucket") or value.get(
            "gcsManagedLedgerOffloadBucket"
        )
        if not bucket:
            raise PreconditionFailedError("The bucket must be specified for namespace offload.")
    return dict(value)


def validate_bookie_affinity(value: Any, current: Current) -> dict[str, str]:
    """A BookieAffinityGroupData object: a primary group (and an optional secondary)."""
    if not isinstance(value, dict) or not isinstance(value.get("bookkeeperAffinityGroupPrimary"), str):
        raise PreconditionFailedError("bookkeeperAffinityGroupPrimary is required")
    out = {"bookkeeperAffinityGroupPrimary": value["bookkeeperAffinityGroupPrimary"]}
    secondary = value.get("bookkeeperAffinityGroupSecondary")
    if isinstance(secondary, str):
        out["bookkeeperAffinityGroupSecondary"] = secondary
    return out


def validate_entry_filters(value: Any, current: Current) -> dict[str, str]:
    """An EntryFilters object: refused, as a Pulsar broker without entry filter plugins refuses
    every name (magnetar loads no plugins)."""
    names = value.get("entryFilterNames") if isinstance(value, dict) else None
    if not isinstance(names, str) or not names.strip():
        raise PreconditionFailedError("entryFilterNames can't be empty")
    raise BadRequestError(f"Entry filter '{names}' not found")


def validate_cluster_list(value: Any, current: Current) -> list[str]:
    """A list of cluster names, each once (whether they exist is checked where clusters are known)."""
    if not isinstance(value, list) or any(not isinstance(c, str) or not c.strip() for c in value):
        raise PreconditionFailedError("Invalid clusters: expected a list of cluster names")
    return list(dict.fromkeys(c.strip() for c in value))
