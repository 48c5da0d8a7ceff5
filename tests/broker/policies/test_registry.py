"""The policy registry: one entry per policy, defaults from broker settings, Pulsar's refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.broker.policies.registry import (
    AUTO_TOPIC_CREATION,
    BY_NAME,
    MESSAGE_TTL,
    NAMESPACE,
    POLICIES,
    RETENTION,
    TOPIC,
    broker_default,
    on_scope,
)
from magnetar.broker.policies.resolution import TOPIC_POLICIES_PREFIX, resolve
from magnetar.broker.resources.errors import OutOfRangeError, PreconditionFailedError
from magnetar.protocol.topic_name import TopicName
from magnetar.storage import MetadataStore


def test_each_policy_is_one_entry_with_distinct_wire_names() -> None:
    assert len(BY_NAME) == len(POLICIES)
    for scope in (NAMESPACE, TOPIC):
        paths = [p.scope(scope).path for p in on_scope(scope)]
        assert len(paths) == len(set(paths)), scope
        clis = [p.scope(scope).cli for p in on_scope(scope) if p.scope(scope).cli]
        assert len(clis) == len(set(clis)), scope


def test_scopes_match_pulsar() -> None:
    assert [p.name for p in on_scope(NAMESPACE)] == [p.name for p in POLICIES]
    topic_only_missing = {p.name for p in POLICIES} - {p.name for p in on_scope(TOPIC)}
    assert topic_only_missing == {
        "subscription_expiration_time_minutes",
        "autoTopicCreationOverride",
        # namespace-only in Pulsar too (Policies fields without a TopicPolicies twin)
        "max_topics_per_namespace",
        "encryption_required",
        "is_allow_auto_update_schema",
        "schema_auto_update_compatibility_strategy",
        "subscription_auth_mode",
        "offload_threshold",
        "offload_threshold_in_seconds",
        "offload_deletion_lag_ms",
        "namespaceAntiAffinityGroup",
        "bookieAffinityGroup",
        "resource_group_name",
        "allowed_clusters",
    }


def test_defaults_come_from_broker_settings() -> None:
    config = BrokerConfig(
        default_message_ttl_seconds=42,
        default_retention_minutes=5,
        default_retention_mb=7,
        allow_auto_topic_creation=False,
        deduplication_enabled=True,
        compaction_threshold_bytes=1024,
    )
    assert MESSAGE_TTL.default(config) == 42
    assert RETENTION.default(config) == {"retentionTimeInMinutes": 5, "retentionSizeInMB": 7}
    assert broker_default("deduplicationEnabled", config) is True
    assert broker_default("compaction_threshold", config) == 1024
    assert AUTO_TOPIC_CREATION.default(config) == {"allowAutoTopicCreation": False, "topicType": "non-partitioned"}
    assert broker_default("no-such-policy", config) is None


def test_validators_refuse_with_pulsars_reasons() -> None:
    with pytest.raises(PreconditionFailedError, match="message TTL must >= 0"):
        MESSAGE_TTL.validate(-1, {})
    with pytest.raises(PreconditionFailedError, match="is not an integer"):
        MESSAGE_TTL.validate(True, {})
    quota = {"destination_storage": {"limitSize": 10 * 1024 * 1024, "limitTime": -1, "policy": "producer_request_hold"}}
    with pytest.raises(PreconditionFailedError, match="Retention Quota must exceed"):
        RETENTION.validate({"retentionTimeInMinutes": 1, "retentionSizeInMB": 5}, {"backlog_quota_map": quota})
    with pytest.raises(OutOfRangeError, match="less than or equal to 10000"):
        AUTO_TOPIC_CREATION.validate(
            {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 10_001}, {}
        )
    assert BY_NAME["schema_compatibility_strategy"].validate("backward", {}) == "BACKWARD"


def test_resolve_prefers_topic_then_namespace_then_broker(tmp_path: Path) -> None:
    meta = MetadataStore(tmp_path)
    try:
        meta.ensure_defaults()
        meta.set_namespace_policies("public/default", {"message_ttl_in_seconds": 60, "max_producers_per_topic": 3})
        tn = TopicName.parse("persistent://public/default/t")
        meta.put_kv(TOPIC_POLICIES_PREFIX + str(tn), b'{"message_ttl_in_seconds": 5}')
        config = BrokerConfig(default_retention_minutes=9, max_consumers_per_subscription=4)
        policies = resolve(meta, config, tn.partition(2))
        assert policies.message_ttl_seconds == 5
        assert policies.max_producers == 3
        assert policies.retention_minutes == 9
        assert policies.max_consumers_per_subscription == 4
        assert policies.max_unacked_per_consumer is None
    finally:
        meta.close()
