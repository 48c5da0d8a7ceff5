"""Pulsar's ``broker.conf`` / ``standalone.conf``, read as magnetar settings.

The file format is Java properties as Pulsar reads it: ``key=value`` (or ``key: value`` /
``key value``), ``#`` and ``!`` comment lines, blank lines, a trailing ``\\`` continuing a line,
the escapes ``\\t \\n \\r \\f \\uXXXX`` and ``\\<char>``; the last occurrence of a key wins. An empty
value means unset: the setting keeps its default, and an empty ``brokerServicePort`` /
``webServicePort`` switches that plain listener off.

:func:`load_pulsar_conf` maps every key magnetar implements to its :class:`BrokerConfig` field
(converted and checked here, so a bad value raises one :class:`PulsarConfError` naming the Pulsar
key), builds the :class:`SecuritySettings`, and lists the keys it ignores.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from magnetar.broker.security.errors import SecurityConfigError
from magnetar.broker.security.settings import PULSAR_SECURITY_KEYS, SecuritySettings

MiB = 1024 * 1024
_INTEGER = re.compile(r"^[-+]?\d+$")
_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")
_KEY_LINE = re.compile(r"^\s*[A-Za-z_][\w.-]*\s*[=:]")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
#: the cluster name of a broker whose file sets none (Pulsar's standalone's)
CLUSTER_NAME = "standalone"


class PulsarConfError(ValueError):
    """A Pulsar configuration value magnetar cannot use; the message names the key."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


class PulsarConf(NamedTuple):
    """What a Pulsar configuration file says, in magnetar's terms."""

    #: BrokerConfig field -> value (already converted); ``port`` None means no plain binary listener
    settings: dict[str, Any]
    security: SecuritySettings
    #: keys present in the file that magnetar does not implement, in file order
    ignored: list[str]


def parse_properties(text: str) -> dict[str, str]:
    """The raw key/values of a Java properties text (last occurrence wins)."""
    values: dict[str, str] = {}
    lines = text.removeprefix("\ufeff").splitlines()
    index = 0
    while index < len(lines):
        line = lines[index].lstrip(" \t\f")
        index += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and index < len(lines):
            line = line[:-1] + lines[index].lstrip(" \t\f")
            index += 1
        if _continues(line):
            line = line[:-1]
        key, value = _split_entry(line)
        values[key] = value
    return values


def _continues(line: str) -> bool:
    """Whether a line ends with an odd number of backslashes (a continuation)."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split_entry(line: str) -> tuple[str, str]:
    """Split ``key<sep>value`` at the first unescaped ``=``, ``:`` or whitespace, and unescape both."""
    position = 0
    while position < len(line):
        char = line[position]
        if char == "\\":
            position += 2
            continue
        if char in "=: \t\f":
            break
        position += 1
    key, rest = line[:position], line[position:]
    rest = rest.lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return _unescape(key), _unescape(rest).strip()


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    position = 0
    while position < len(text):
        char = text[position]
        if char != "\\" or position + 1 >= len(text):
            out.append(char)
            position += 1
            continue
        nxt = text[position + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[position + 2:position + 6]):
            out.append(chr(int(text[position + 2:position + 6], 16)))
            position += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        position += 2
    return "".join(out)


# -- conversions ----------------------------------------------------------------------------------


def _int(key: str, text: str) -> int:
    if not _INTEGER.match(text):
        raise PulsarConfError(key, f"{text!r} is not an integer")
    return int(text)


def _non_negative(key: str, text: str) -> int:
    value = _int(key, text)
    if value < 0:
        raise PulsarConfError(key, f"{value} must not be negative")
    return value


def _positive(key: str, text: str) -> int:
    value = _int(key, text)
    if value <= 0:
        raise PulsarConfError(key, f"{value} must be positive")
    return value


def _port(key: str, text: str) -> int:
    value = _int(key, text)
    if not 0 <= value <= 65535:
        raise PulsarConfError(key, f"{value} is not a port number (0-65535)")
    return value


def _bool(key: str, text: str) -> bool:
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise PulsarConfError(key, f"{text!r} is not true or false")
    return lowered == "true"


def _number(key: str, text: str) -> float:
    if not _NUMBER.match(text):
        raise PulsarConfError(key, f"{text!r} is not a number")
    return float(text)


def _non_negative_number(key: str, text: str) -> float:
    value = _number(key, text)
    if value < 0:
        raise PulsarConfError(key, f"{value} must not be negative")
    return value


def _text(key: str, text: str) -> str:
    return text


def _millis(key: str, text: str) -> float:
    value = _non_negative(key, text)
    if value == 0:
        raise PulsarConfError(key, "must be at least 1 millisecond")
    return value / 1000.0


def _mebibytes(key: str, text: str) -> int:
    return _positive(key, text) * MiB


def _retention_minutes(key: str, text: str) -> int:
    value = _int(key, text)
    if value < -1:
        raise PulsarConfError(key, f"{value} must be -1 (no limit), 0 or positive")
    return value


def _schema_strategy(key: str, text: str) -> str:
    strategies = ("ALWAYS_COMPATIBLE", "ALWAYS_INCOMPATIBLE", "BACKWARD", "FORWARD", "FULL",
                  "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE")
    if text.upper() not in strategies:
        raise PulsarConfError(key, f"{text!r} is not one of {', '.join(strategies)}")
    return text.upper()


def _replication_start(key: str, text: str) -> str:
    if text.lower() not in ("latest", "earliest"):
        raise PulsarConfError(key, f"{text!r} is not latest or earliest")
    return text.lower()


def _inactive_mode(key: str, text: str) -> str:
    if text not in ("delete_when_no_subscriptions", "delete_when_subscriptions_caught_up"):
        raise PulsarConfError(key, f"{text!r} is not delete_when_no_subscriptions or delete_when_subscriptions_caught_up")
    return text


Converter = Callable[[str, str], Any]

#: Pulsar key -> (BrokerConfig field, converter), for the keys that map one to one
PULSAR_BROKER_KEYS: dict[str, tuple[str, Converter]] = {
    "brokerServicePort": ("port", _port),
    "webServicePort": ("http_port", _port),
    "bindAddress": ("bind", _text),
    "advertisedAddress": ("advertised_address", _text),
    "maxMessageSize": ("max_message_size", _positive),
    "backlogQuotaCheckIntervalInSeconds": ("lifecycle_check_interval_seconds", _positive),
    "keepAliveIntervalSeconds": ("keepalive_seconds", _positive),
    "brokerDeduplicationEnabled": ("deduplication_enabled", _bool),
    "defaultRetentionTimeInMinutes": ("default_retention_minutes", _retention_minutes),
    "defaultRetentionSizeInMB": ("default_retention_mb", _retention_minutes),
    "ttlDurationDefaultInSeconds": ("default_message_ttl_seconds", _non_negative),
    "delayedDeliveryTickTimeMillis": ("delayed_delivery_tick_seconds", _millis),
    "isDelayedDeliveryDeliverAtTimeStrict": ("delayed_delivery_strict", _bool),
    "maxUnackedMessagesPerConsumer": ("max_unacked_messages_per_consumer", _non_negative),
    "maxUnackedMessagesPerSubscription": ("max_unacked_messages_per_subscription", _non_negative),
    "acknowledgmentAtBatchIndexLevelEnabled": ("batch_index_ack_enabled", _bool),
    "allowAutoTopicCreation": ("allow_auto_topic_creation", _bool),
    "subscriptionExpirationTimeMinutes": ("subscription_expiration_minutes", _non_negative),
    "maxProducersPerTopic": ("max_producers_per_topic", _non_negative),
    "maxConsumersPerTopic": ("max_consumers_per_topic", _non_negative),
    "maxConsumersPerSubscription": ("max_consumers_per_subscription", _non_negative),
    "maxTopicsPerNamespace": ("max_topics_per_namespace", _non_negative),
    "maxSubscriptionsPerTopic": ("max_subscriptions_per_topic", _non_negative),
    "allowAutoSubscriptionCreation": ("allow_auto_subscription_creation", _bool),
    "brokerMaxConnections": ("max_connections", _non_negative),
    "brokerMaxConnectionsPerIp": ("max_connections_per_ip", _non_negative),
    "schemaCompatibilityStrategy": ("schema_compatibility_strategy", _schema_strategy),
    "isAllowAutoUpdateSchemaEnabled": ("allow_auto_update_schema", _bool),
    "isSchemaValidationEnforced": ("schema_validation_enforced", _bool),
    "managedLedgerCacheSizeMB": ("entry_cache_total_bytes", _mebibytes),
    "managedLedgerCacheEvictionTimeThresholdMillis": ("entry_cache_eviction_seconds", _millis),
    "managedLedgerMaxSizePerLedgerMbytes": ("segment_max_bytes", _mebibytes),
    "managedLedgerMinLedgerRolloverTimeMinutes": ("segment_min_rollover_minutes", _non_negative),
    "managedLedgerMaxLedgerRolloverTimeMinutes": ("segment_max_rollover_minutes", _non_negative),
    "managedLedgerDefaultMarkDeleteRateLimit": ("mark_delete_rate_limit", _non_negative_number),
    "dispatcherMaxReadBatchSize": ("dispatch_batch_entries", _positive),
    "dispatcherMaxReadSizeBytes": ("dispatch_max_read_bytes", _positive),
    "brokerServiceCompactionThresholdInBytes": ("compaction_threshold_bytes", _non_negative),
    "transactionCoordinatorEnabled": ("transaction_coordinator_enabled", _bool),
    "transactionCoordinatorCount": ("transaction_coordinator_count", _positive),
    "clusterName": ("cluster_name", _text),
    "brokerClientAuthenticationPlugin": ("broker_client_authentication_plugin", _text),
    "brokerClientAuthenticationParameters": ("broker_client_authentication_parameters", _text),
    "replicationStartAt": ("replication_start_at", _replication_start),
    "replicationProducerQueueSize": ("replication_producer_queue_size", _positive),
    "brokerDeleteInactiveTopicsMode": ("inactive_topic_delete_mode", _inactive_mode),
    "maxPublishRatePerTopicInMessages": ("max_publish_rate_per_topic_messages", _non_negative),
    "maxPublishRatePerTopicInBytes": ("max_publish_rate_per_topic_bytes", _non_negative),
    "dispatchThrottlingRatePerTopicInMsg": ("dispatch_throttling_rate_per_topic_messages", _non_negative),
    "dispatchThrottlingRatePerTopicInByte": ("dispatch_throttling_rate_per_topic_bytes", _non_negative),
    "dispatchThrottlingRatePerSubscriptionInMsg": ("dispatch_throttling_rate_per_subscription_messages", _non_negative),
    "dispatchThrottlingRatePerSubscriptionInByte": ("dispatch_throttling_rate_per_subscription_bytes", _non_negative),
    "dispatchThrottlingRatePerReplicatorInMsg": ("dispatch_throttling_rate_per_replicator_messages", _non_negative),
    "dispatchThrottlingRatePerReplicatorInByte": ("dispatch_throttling_rate_per_replicator_bytes", _non_negative),
    "dispatchThrottlingRateRelativeToPublishRate": ("dispatch_throttling_rate_relative_to_publish_rate", _bool),
    "subscribeThrottlingRatePerConsumer": ("subscribe_throttling_rate_per_consumer", _non_negative),
    "subscribeRatePeriodPerConsumerInSecond": ("subscribe_rate_period_per_consumer_seconds", _positive),
}
#: keys read together with others (see _combined_settings)
_COMBINED_KEYS = (
    "allowAutoTopicCreationType", "defaultNumPartitions", "brokerDeleteInactiveTopicsEnabled",
    "brokerDeleteInactiveTopicsFrequencySeconds", "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds",
    "subscriptionKeySharedUseConsistentHashing",
)
#: keys whose value magnetar always has: honoured when the file agrees, listed as ignored otherwise
_FIXED_KEYS: dict[str, str] = {"delayedDeliveryEnabled": "true"}
#: every Pulsar key this module understands
KNOWN_PULSAR_KEYS = frozenset(PULSAR_BROKER_KEYS) | frozenset(_COMBINED_KEYS) | frozenset(_FIXED_KEYS) | frozenset(
    PULSAR_SECURITY_KEYS
)


def load_pulsar_conf(text: str, magnetar_settings: Collection[str] = ()) -> PulsarConf:
    """Magnetar settings, security settings and ignored keys of a Pulsar configuration text.

    ``magnetar_settings`` are BrokerConfig field names also accepted as keys (``fsync=never``);
    their raw text values are passed through for BrokerConfig to convert.
    """
    raw = parse_properties(text)
    settings: dict[str, Any] = {}
    ignored: list[str] = []
    for key, value in raw.items():
        if key in PULSAR_BROKER_KEYS:
            field, convert = PULSAR_BROKER_KEYS[key]
            if value:
                settings[field] = convert(key, value)
            elif key == "brokerServicePort":
                settings["port"] = None
            elif key == "webServicePort":
                settings["http_port"] = 0
        elif key in _FIXED_KEYS:
            if value and value.lower() != _FIXED_KEYS[key]:
                ignored.append(key)
        elif key in magnetar_settings and value:
            settings[key] = value
        elif key not in PULSAR_SECURITY_KEYS and key not in _COMBINED_KEYS:
            ignored.append(key)
    settings.update(_combined_settings(raw))
    try:
        security = SecuritySettings.from_pulsar(raw)
    except SecurityConfigError as exc:
        raise PulsarConfError(exc.key, exc.reason) from None
    return PulsarConf(settings, security, ignored)


def _combined_settings(raw: Mapping[str, str]) -> dict[str, Any]:
    """Settings that several Pulsar keys decide together."""
    out: dict[str, Any] = {}
    kind = raw.get("allowAutoTopicCreationType", "")
    partitions = raw.get("defaultNumPartitions", "")
    if kind and kind not in ("partitioned", "non-partitioned"):
        raise PulsarConfError("allowAutoTopicCreationType", f"{kind!r} is not partitioned or non-partitioned")
    count = _positive("defaultNumPartitions", partitions) if partitions else 1
    if kind == "partitioned":
        out["default_num_partitions"] = count
    elif kind == "non-partitioned":
        out["default_num_partitions"] = 0
    enabled = raw.get("brokerDeleteInactiveTopicsEnabled", "")
    if enabled:
        frequency = raw.get("brokerDeleteInactiveTopicsFrequencySeconds", "") or "60"
        duration = raw.get("brokerDeleteInactiveTopicsMaxInactiveDurationSeconds", "")
        seconds = (_positive("brokerDeleteInactiveTopicsMaxInactiveDurationSeconds", duration) if duration
                   else _positive("brokerDeleteInactiveTopicsFrequencySeconds", frequency))
        out["inactive_topic_expiry_seconds"] = float(seconds) if _bool("brokerDeleteInactiveTopicsEnabled",
                                                                       enabled) else 0.0
    hashing = raw.get("subscriptionKeySharedUseConsistentHashing", "")
    if hashing:
        consistent = _bool("subscriptionKeySharedUseConsistentHashing", hashing)
        out["key_shared_selector"] = "consistent_hashing" if consistent else "auto_split_hash_range"
    return out


def looks_like_pulsar_conf(path: str | Path, text: str) -> bool:
    """Whether a configuration file is in Pulsar's properties format rather than TOML.

    By extension (``.conf``, ``.properties``: yes; ``.toml``: no), else by content: a known Pulsar
    key, or text that is not TOML but has ``key=value`` lines.
    """
    suffix = Path(path).suffix.lower()
    if suffix in (".conf", ".properties"):
        return True
    if suffix == ".toml":
        return False
    keys = {line.split("=", 1)[0].split(":", 1)[0].strip() for line in text.splitlines() if _KEY_LINE.match(line)}
    if keys & KNOWN_PULSAR_KEYS:
        return True
    # tomllib only to tell an unknown file's format: 4-6 ms of every broker start (python -X importtime)
    import tomllib

    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return bool(keys)
    return False
