"""The issue-#28 block of the registry: validators with Pulsar's refusals, and resolution of the
admission policies into TopicPolicies (topic over namespace over broker)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.broker.policies.registry import (
    ANTI_AFFINITY_GROUP,
    AUTO_SUBSCRIPTION_CREATION,
    MAX_TOPICS_PER_NAMESPACE,
    OFFLOAD_POLICIES,
    PERSISTENCE,
    SCHEMA_AUTO_UPDATE_STRATEGY,
    SUBSCRIPTION_TYPES_ENABLED,
)
from magnetar.broker.policies.resolution import TOPIC_POLICIES_PREFIX, namespace_value, resolve
from magnetar.broker.resources.errors import BadRequestError, PreconditionFailedError
from magnetar.protocol.topic_name import TopicName
from magnetar.storage import MetadataStore


def test_validators() -> None:
    assert SUBSCRIPTION_TYPES_ENABLED.validate(["Shared", "Exclusive", "Shared"], {}) == ["Exclusive", "Shared"]
    with pytest.raises(BadRequestError):
        SUBSCRIPTION_TYPES_ENABLED.validate(["shared"], {})
    assert PERSISTENCE.validate({"bookkeeperEnsemble": 3, "bookkeeperWriteQuorum": 3, "bookkeeperAckQuorum": 2}, {}) == {
        "bookkeeperEnsemble": 3, "bookkeeperWriteQuorum": 3, "bookkeeperAckQuorum": 2,
        "managedLedgerMaxMarkDeleteRate": 0.0,
    }
    with pytest.raises(BadRequestError, match=r"Bookkeeper Ensemble \(2\) >= WriteQuorum \(2\) >= AckQuoru \(3\)"):
        PERSISTENCE.validate({"bookkeeperEnsemble": 2, "bookkeeperWriteQuorum": 2, "bookkeeperAckQuorum": 3}, {})
    with pytest.raises(BadRequestError):
        SCHEMA_AUTO_UPDATE_STRATEGY.validate("BACKWARD", {})  # Java enum names are exact
    assert SCHEMA_AUTO_UPDATE_STRATEGY.validate("AutoUpdateDisabled", {}) == "AutoUpdateDisabled"
    with pytest.raises(BadRequestError):
        AUTO_SUBSCRIPTION_CREATION.validate({"allowAutoSubscriptionCreation": "yes"}, {})
    with pytest.raises(PreconditionFailedError, match="can not be empty"):
        ANTI_AFFINITY_GROUP.validate("  ", {})
    with pytest.raises(PreconditionFailedError, match="bucket must be specified"):
        OFFLOAD_POLICIES.validate({"managedLedgerOffloadDriver": "google-cloud-storage"}, {})
    fs = {"managedLedgerOffloadDriver": "filesystem", "fileSystemURI": "file:///x", "offloadersDirectory": None}
    assert OFFLOAD_POLICIES.validate(fs, {}) == fs


def test_admission_policies_resolve_topic_then_namespace_then_broker(tmp_path: Path) -> None:
    meta = MetadataStore(tmp_path)
    try:
        meta.ensure_defaults()
        config = BrokerConfig(max_subscriptions_per_topic=8, allow_auto_subscription_creation=False)
        tn = TopicName.parse("persistent://public/default/t")
        bare = resolve(meta, config, tn)
        assert (bare.max_consumers_per_topic, bare.max_subscriptions_per_topic, bare.max_unacked_per_subscription) == (
            None, None, None,
        )  # None: the broker settings apply where the limits are checked
        assert bare.auto_subscription_creation is False
        assert bare.subscription_types_enabled == frozenset() and bare.encryption_required is False
        meta.set_namespace_policies("public/default", {
            "max_consumers_per_topic": 5,
            "max_subscriptions_per_topic": 2,
            "max_unacked_messages_per_subscription": 10,
            "subscription_types_enabled": ["Shared"],
            "encryption_required": True,
            "autoSubscriptionCreationOverride": {"allowAutoSubscriptionCreation": True},
            "max_topics_per_namespace": 7,
        })
        meta.put_kv(TOPIC_POLICIES_PREFIX + str(tn), json.dumps({"max_consumers_per_topic": 1}).encode())
        policies = resolve(meta, config, tn.partition(1))
        assert policies.max_consumers_per_topic == 1
        assert policies.max_subscriptions_per_topic == 2
        assert policies.max_unacked_per_subscription == 10
        assert policies.subscription_types_enabled == frozenset({"Shared"})
        assert policies.encryption_required is True
        assert policies.auto_subscription_creation is True
        assert namespace_value(meta, config, "public/default", MAX_TOPICS_PER_NAMESPACE) == 7
        assert namespace_value(meta, BrokerConfig(max_topics_per_namespace=3), "public/nope", MAX_TOPICS_PER_NAMESPACE) == 3
    finally:
        meta.close()
