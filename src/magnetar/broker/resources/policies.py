"""Namespace and topic policies: read, set, remove, and the value in force.

Policies are stored with the field names of Pulsar's ``Policies`` object: in the namespace's
policies dict for namespace policies, and as one JSON object per topic in the metadata key/value
table (key ``topic-policies/<topic>``) for topic policies. Which policies exist, how each is
checked and what its default is comes from :mod:`magnetar.broker.policies.registry`.
"""

from __future__ import annotations

import json
from typing import Any

from magnetar.broker.policies.registry import (
    AUTO_TOPIC_CREATION,
    BACKLOG_QUOTAS,
    BY_NAME,
    DISPATCH_RATE,
    PER_CLUSTER_FIELDS,
    RETENTION,
    SCHEMA_COMPATIBILITY,
    broker_default,
)
from magnetar.broker.policies.resolution import TOPIC_POLICIES_PREFIX, stored_topic_policies
from magnetar.broker.policies.validation import backlog_quota, check_retention_vs_quota, quota_type
from magnetar.broker.resources.base import ResourceContext
from magnetar.broker.resources.errors import PreconditionFailedError
from magnetar.protocol.topic_name import TopicName

#: a namespace's Policies object as Pulsar returns it when nothing was set
_NAMESPACE_POLICIES_SHAPE: dict[str, Any] = {
    "auth_policies": {"namespace_auth": {}, "destination_auth": {}, "subscription_auth_roles": {}},
    "replication_clusters": [],
    "bundles": {"boundaries": ["0x00000000", "0xffffffff"], "numBundles": 1},
    BACKLOG_QUOTAS.name: {},
    "clusterDispatchRate": {},
    "topicDispatchRate": {},
    "subscriptionDispatchRate": {},
    "replicatorDispatchRate": {},
    "clusterSubscribeRate": {},
    "publishMaxMessageRate": {},
    "latency_stats_sample_rate": {},
    "deleted": False,
    "encryption_required": False,
    "subscription_auth_mode": "None",
    SCHEMA_COMPATIBILITY.name: "UNDEFINED",
    "is_allow_auto_update_schema": True,
    "schema_validation_enforced": False,
    "properties": {},
}


def validate_policy(key: str, value: Any, current: dict[str, Any] | None = None) -> Any:
    """Check one policy value (Pulsar field name) against its registry entry; the value normalized."""
    policy = BY_NAME.get(key)
    if policy is None:
        raise PreconditionFailedError(f"Unknown policy {key}")
    return policy.validate(value, current or {})


class PolicyResources:
    """Policies of namespaces and topics."""

    def __init__(self, ctx: ResourceContext) -> None:
        self.ctx = ctx

    # -- namespaces ------------------------------------------------------------------------
    def namespace_policies(self, ns: str) -> dict[str, Any]:
        """The policies set on a namespace (Pulsar field names), for the broker to apply."""
        return dict(self.ctx.metadata.get_namespace(ns) or {})

    async def get_namespace_policies(self, ns: str) -> dict[str, Any]:
        """A namespace's Policies object as Pulsar returns it: defaults plus what was set."""
        stored = await self.ctx.namespace_read(ns)
        out = json.loads(json.dumps(_NAMESPACE_POLICIES_SHAPE))
        out["replication_clusters"] = [self.ctx.config.cluster_name]
        out.update(stored)
        cluster = self.ctx.config.cluster_name
        for key in PER_CLUSTER_FIELDS & stored.keys():
            out[key] = {cluster: stored[key]}
        if DISPATCH_RATE.name in stored:  # Pulsar sets both of its fields
            out["clusterDispatchRate"] = {cluster: stored[DISPATCH_RATE.name]}
        return out

    async def get_namespace_policy(self, ns: str, key: str) -> Any:
        """One policy as set on the namespace (None when not set)."""
        return (await self.ctx.namespace_read(ns)).get(key)

    def set_namespace_policy(self, ns: str, key: str, value: Any) -> None:
        """Set one namespace policy."""
        policies = self.ctx.check_namespace(ns)
        policies[key] = validate_policy(key, value, policies)
        self._save_namespace(ns, policies)

    def remove_namespace_policy(self, ns: str, key: str) -> None:
        """Remove one namespace policy (back to the broker default)."""
        policies = self.ctx.check_namespace(ns)
        if policies.pop(key, None) is not None:
            self._save_namespace(ns, policies)

    def set_namespace_backlog_quota(self, ns: str, kind: str, quota: dict[str, Any]) -> None:
        """Set the namespace's backlog quota of one type."""
        policies = self.ctx.check_namespace(ns)
        quotas = dict(policies.get(BACKLOG_QUOTAS.name) or {})
        quotas[quota_type(kind)] = backlog_quota(quota)
        policies[BACKLOG_QUOTAS.name] = quotas
        check_retention_vs_quota(policies.get(RETENTION.name), quotas)
        self._save_namespace(ns, policies)

    def remove_namespace_backlog_quota(self, ns: str, kind: str) -> None:
        """Remove the namespace's backlog quota of one type."""
        policies = self.ctx.check_namespace(ns)
        quotas = dict(policies.get(BACKLOG_QUOTAS.name) or {})
        if quotas.pop(quota_type(kind), None) is not None:
            policies[BACKLOG_QUOTAS.name] = quotas
            self._save_namespace(ns, policies)

    def _save_namespace(self, ns: str, policies: dict[str, Any]) -> None:
        self.ctx.metadata.set_namespace_policies(ns, policies)
        self.ctx.policies_changed(ns)

    def auto_topic_creation(self, ns: str) -> dict[str, Any]:
        """The effective auto-topic-creation setting of a namespace."""
        override = self.namespace_policies(ns).get(AUTO_TOPIC_CREATION.name)
        if override:
            return dict(override)
        config = self.ctx.config
        if config.default_num_partitions > 0:
            return {
                "allowAutoTopicCreation": config.allow_auto_topic_creation,
                "topicType": "partitioned",
                "defaultNumPartitions": config.default_num_partitions,
            }
        return AUTO_TOPIC_CREATION.default(config)

    # -- topics ----------------------------------------------------------------------------
    def topic_policies(self, tn: TopicName) -> dict[str, Any]:
        """The policies set on a topic itself (Pulsar field names)."""
        return stored_topic_policies(self.ctx.metadata, tn)

    def _save_topic(self, tn: TopicName, policies: dict[str, Any]) -> None:
        key = TOPIC_POLICIES_PREFIX + str(tn)
        if policies:
            self.ctx.metadata.put_kv(key, json.dumps(policies, sort_keys=True).encode())
        else:
            self.ctx.metadata.delete_kv(key)
        self.ctx.policies_changed(tn.namespace)

    def effective_policy(self, tn: TopicName, key: str) -> Any:
        """Topic value, else the namespace's, else the broker default."""
        for source in (self.topic_policies(tn.partitioned_parent), self.namespace_policies(tn.namespace)):
            value = source.get(key)
            if value is not None and value != {}:
                return value
        return broker_default(key, self.ctx.config)

    async def get_topic_policy(self, tn: TopicName, key: str, applied: bool = False) -> Any:
        """One policy as set on the topic, or (``applied``) the value in force."""
        await self.ctx.existing_read(tn)
        if applied:
            return self.effective_policy(tn, key)
        return self.topic_policies(tn).get(key)

    def set_topic_policy(self, tn: TopicName, key: str, value: Any) -> None:
        """Set one topic policy."""
        self.ctx.existing(tn)
        policies = self.topic_policies(tn)
        policies[key] = validate_policy(key, value, policies)
        self._save_topic(tn, policies)

    def remove_topic_policy(self, tn: TopicName, key: str) -> None:
        """Remove one topic policy (back to the namespace's or the broker's)."""
        self.ctx.existing(tn)
        policies = self.topic_policies(tn)
        if policies.pop(key, None) is not None:
            self._save_topic(tn, policies)

    def set_topic_backlog_quota(self, tn: TopicName, kind: str, quota: dict[str, Any]) -> None:
        """Set the topic's backlog quota of one type."""
        self.ctx.existing(tn)
        policies = self.topic_policies(tn)
        quotas = dict(policies.get(BACKLOG_QUOTAS.name) or {})
        quotas[quota_type(kind)] = backlog_quota(quota)
        policies[BACKLOG_QUOTAS.name] = quotas
        check_retention_vs_quota(policies.get(RETENTION.name), quotas)
        self._save_topic(tn, policies)

    def remove_topic_backlog_quota(self, tn: TopicName, kind: str) -> None:
        """Remove the topic's backlog quota of one type."""
        self.ctx.existing(tn)
        policies = self.topic_policies(tn)
        quotas = dict(policies.get(BACKLOG_QUOTAS.name) or {})
        if quotas.pop(quota_type(kind), None) is not None:
            policies[BACKLOG_QUOTAS.name] = quotas
            self._save_topic(tn, policies)

    # -- subscriptions ---------------------------------------------------------------------
    async def set_replicated_subscription(self, tn: TopicName, sub: str, enabled: bool) -> None:
        """Start or stop replicating a subscription's state (on every partition that has it)."""
        self.ctx.persistent_only(tn, "Replicated subscriptions")
        for topic, _ in await self.ctx.subscriptions_named(tn, sub):
            self.ctx.service.replication.set_subscription_replicated(topic, sub, enabled)

    async def replicated_subscription_status(self, tn: TopicName, sub: str) -> dict[str, bool]:
        """{topic or partition name: whether the subscription's state is replicated}, as Pulsar answers."""
        self.ctx.persistent_only(tn, "Replicated subscriptions")
        replication = self.ctx.service.replication
        return {
            topic.name: replication.is_subscription_replicated(topic, sub)
            for topic, _ in await self.ctx.subscriptions_named(tn, sub)
        }
