"""Administrative operations on a broker: every pulsar-admin verb is a method of :class:`BrokerAdmin`.

The REST routes (``magnetar.admin``) are thin wrappers around these methods. A refused operation
raises :class:`AdminError` with the HTTP status and the reason Pulsar gives, and changes nothing.
Every method runs on the broker's event loop (the HTTP server shares it), so broker state is
read and changed without locks.

Policies are stored with the field names of Pulsar's ``Policies`` object: in the namespace's
policies dict for namespace policies, and as one JSON object per topic in the metadata key/value
table (key ``topic-policies/<topic>``) for topic policies.
"""

from __future__ import annotations

import json
import re
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from magnetar.broker.admin_stats import StatsTracker, empty_stats, iso_time
from magnetar.broker.errors import BrokerError
from magnetar.broker.policies import TOPIC_POLICIES_PREFIX, stored_topic_policies
from magnetar.protocol.enums import InitialPosition, ServerError, TopicsMode
from magnetar.protocol.topic_name import PARTITION_SUFFIX, InvalidTopicNameError, TopicName
from magnetar.storage import Entry, MetadataConflictError, MetadataNotFoundError

if TYPE_CHECKING:
    from magnetar.broker.service import BrokerService
    from magnetar.broker.subscriptions.subscription import Subscription
    from magnetar.broker.topics.persistent import Topic

_NAME = re.compile(r"^[-=:.\w]+$")
_U64 = (1 << 64) - 1
#: MessageId.latest of the Java client: (Long.MAX_VALUE, Long.MAX_VALUE)
LATEST_LEDGER = (1 << 63) - 1

#: the most partitions a partitioned topic may have (Pulsar's maxNumPartitionsPerPartitionedTopic)
MAX_PARTITIONS = 10_000

COMPACTION_PREFIX = "compaction/"
COMPACTION_STATUS_PREFIX = "compaction-status/"

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

#: namespace policy keys (Pulsar's Policies field names) that can be set one by one
POLICY_KEYS = (
    "retention_policies",
    "message_ttl_in_seconds",
    "deduplicationEnabled",
    "backlog_quota_map",
    "schema_compatibility_strategy",
    "max_producers_per_topic",
    "max_consumers_per_subscription",
    "max_unacked_messages_per_consumer",
    "subscription_expiration_time_minutes",
    "delayed_delivery_policies",
    "autoTopicCreationOverride",
    "compaction_threshold",
)
#: the policies a topic may override
TOPIC_POLICY_KEYS = (
    "retention_policies",
    "message_ttl_in_seconds",
    "deduplicationEnabled",
    "backlog_quota_map",
    "schema_compatibility_strategy",
    "max_producers_per_topic",
    "max_consumers_per_subscription",
    "max_unacked_messages_per_consumer",
    "delayed_delivery_policies",
    "compaction_threshold",
)


class AdminError(Exception):
    """A refused admin operation: the HTTP status and the reason sent as ``{"reason": ...}``."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason

    def __repr__(self) -> str:
        return f"AdminError({self.status}, {self.reason!r})"


_BROKER_ERROR_STATUS = {
    ServerError.TopicNotFound: 404,
    ServerError.SubscriptionNotFound: 404,
    ServerError.NotAllowedError: 405,
    ServerError.InvalidTopicName: 412,
    ServerError.ConsumerBusy: 412,
    ServerError.ProducerBusy: 412,
    ServerError.ServiceNotReady: 503,
    ServerError.PersistenceError: 500,
    ServerError.MetadataError: 500,
}


def from_broker_error(exc: BrokerError) -> AdminError:
    """The admin error for a refusal of the broker core."""
    return AdminError(_BROKER_ERROR_STATUS.get(exc.code, 412), exc.message)


@dataclass
class PeekedEntry:
    """A stored entry returned by peek / examine, with where it lives."""

    ledger_id: int
    entry: Entry
    partition: int = -1


_ADMINS: weakref.WeakKeyDictionary[BrokerService, BrokerAdmin] = weakref.WeakKeyDictionary()


def admin_for(service: BrokerService) -> BrokerAdmin:
    """The one BrokerAdmin of a service (created on first use)."""
    admin = _ADMINS.get(service)
    if admin is None:
        admin = _ADMINS[service] = BrokerAdmin(service)
    return admin


class BrokerAdmin:
    """Every admin operation on one BrokerService."""

    def __init__(self, service: BrokerService) -> None:
        self.service = service
        self.stats = StatsTracker(service)
        #: messages expired by expire-messages, per (topic, subscription)
        self.expired: dict[tuple[str, str], tuple[int, float]] = {}

    @property
    def metadata(self):  # noqa: ANN201 - MetadataStore
        meta = self.service.metadata
        if meta is None:
            raise AdminError(503, "Broker is not ready")
        return meta

    @property
    def config(self):  # noqa: ANN201 - BrokerConfig
        return self.service.config

    def start(self) -> None:
        """Start background sampling of statistics (needs a running loop)."""
        self.stats.start()

    # ====================================================================================
    # clusters
    # ====================================================================================
    def list_clusters(self) -> list[str]:
        return self.metadata.list_clusters()

    def get_cluster(self, cluster: str) -> dict[str, Any]:
        data = self.metadata.get_cluster(cluster)
        if data is None:
            raise AdminError(404, "Cluster does not exist")
        out = {
            "serviceUrl": self.config.web_service_url,
            "serviceUrlTls": "",
            "brokerServiceUrl": self.config.broker_service_url,
            "brokerServiceUrlTls": "",
        }
        out.update(data)
        return out

    def create_cluster(self, cluster: str, data: dict[str, Any] | None) -> None:
        if not _NAME.match(cluster or ""):
            raise AdminError(412, "Cluster name is not valid")
        try:
            self.metadata.create_cluster(cluster, data or {})
        except MetadataConflictError:
            raise AdminError(409, "Cluster already exists") from None

    # ====================================================================================
    # tenants
    # ====================================================================================
    def list_tenants(self) -> list[str]:
        return self.metadata.list_tenants()

    def get_tenant(self, tenant: str) -> dict[str, Any]:
        info = self.metadata.get_tenant(tenant)
        if info is None:
            raise AdminError(404, "Tenant does not exist")
        return {"adminRoles": info.get("adminRoles", []), "allowedClusters": info.get("allowedClusters", [])}

    def _tenant_info(self, info: dict[str, Any] | None) -> dict[str, Any]:
        info = info or {}
        clusters = list(dict.fromkeys(info.get("allowedClusters") or []))
        if not clusters or any(not str(c).strip() for c in clusters):
            raise AdminError(412, "Clusters can not be empty")
        known = set(self.metadata.list_clusters())
        if any(c not in known and c != "global" for c in clusters):
            raise AdminError(412, "Clusters do not exist")
        return {"adminRoles": list(dict.fromkeys(info.get("adminRoles") or [])), "allowedClusters": clusters}

    def create_tenant(self, tenant: str, info: dict[str, Any] | None) -> None:
        if not _NAME.match(tenant or ""):
            raise AdminError(412, "Tenant name is not valid")
        config = self._tenant_info(info)
        try:
            self.metadata.create_tenant(tenant, config)
        except MetadataConflictError:
            raise AdminError(409, "Tenant already exists") from None

    def update_tenant(self, tenant: str, info: dict[str, Any] | None) -> None:
        config = self._tenant_info(info)
        if self.metadata.get_tenant(tenant) is None:
            raise AdminError(404, f"Tenant {tenant} not found")
        self.metadata.update_tenant(tenant, config)

    async def delete_tenant(self, tenant: str, force: bool = False) -> None:
        if self.metadata.get_tenant(tenant) is None:
            raise AdminError(404, "Tenant does not exist")
        namespaces = self.metadata.list_namespaces(tenant)
        if namespaces and not force:
            raise AdminError(409, "The tenant still has active namespaces")
        for ns in namespaces:
            await self.delete_namespace(ns, force=True)
        try:
            self.metadata.delete_tenant(tenant)
        except MetadataConflictError:
            raise AdminError(409, "The tenant still has active namespaces") from None
        except MetadataNotFoundError:
            raise AdminError(404, "Tenant does not exist") from None

    # ====================================================================================
    # namespaces
    # ====================================================================================
    def namespace_name(self, tenant: str, namespace: str) -> str:
        """``tenant/namespace`` after checking both parts are valid names (412 otherwise)."""
        if not _NAME.match(tenant or "") or not _NAME.match(namespace or ""):
            raise AdminError(412, "Namespace name is not valid")
        return f"{tenant}/{namespace}"

    def check_namespace(self, ns: str) -> dict[str, Any]:
        """The stored policies of an existing namespace; 404 when the tenant or namespace is unknown."""
        policies = self.metadata.get_namespace(ns)
        if policies is None:
            tenant = ns.split("/", 1)[0]
            if self.metadata.get_tenant(tenant) is None:
                raise AdminError(404, "Tenant does not exist")
            raise AdminError(404, "Namespace does not exist")
        return policies

    def list_namespaces(self, tenant: str) -> list[str]:
        if self.metadata.get_tenant(tenant) is None:
            raise AdminError(404, "Tenant does not exist")
        return self.metadata.list_namespaces(tenant)

    def create_namespace(self, ns: str, policies: dict[str, Any] | None = None) -> None:
        tenant = ns.split("/", 1)[0]
        if self.metadata.get_tenant(tenant) is None:
            raise AdminError(404, "Tenant does not exist")
        stored: dict[str, Any] = {}
        for key, value in (policies or {}).items():
            if key in POLICY_KEYS and value is not None:
                stored[key] = self.validate_policy(key, value, stored)
        try:
            self.metadata.create_namespace(ns, stored)
        except MetadataConflictError:
            raise AdminError(409, "Namespace already exists") from None

    def namespace_has_topics(self, ns: str) -> bool:
        meta = self.metadata
        return bool(
            meta.list_topics(ns)
            or meta.list_partitioned_topics(ns)
            or any(TopicName.parse(t).namespace == ns for t in self.service.topics)
        )

    async def delete_namespace(self, ns: str, force: bool = False) -> None:
        self.check_namespace(ns)
        if self.namespace_has_topics(ns):
            if not force:
                raise AdminError(409, "Cannot delete non empty namespace")
            meta = self.metadata
            for name in meta.list_partitioned_topics(ns):
                await self.delete_partitioned_topic(TopicName.parse(name), force=True)
            for name in meta.list_topics(ns) + [t for t in self.service.topics if TopicName.parse(t).namespace == ns]:
                await self._delete_topic_now(name)
        try:
            self.metadata.delete_namespace(ns)
        except MetadataConflictError:
            raise AdminError(409, "Cannot delete non empty namespace") from None
        except MetadataNotFoundError:
            raise AdminError(404, "Namespace does not exist") from None

    def namespace_policies(self, ns: str) -> dict[str, Any]:
        """The policies set on a namespace (Pulsar field names), for the broker to apply."""
        return dict(self.metadata.get_namespace(ns) or {})

    def get_namespace_policies(self, ns: str) -> dict[str, Any]:
        """A namespace's Policies object as Pulsar returns it: defaults plus what was set."""
        stored = self.check_namespace(ns)
        tenant = self.metadata.get_tenant(ns.split("/", 1)[0]) or {}
        out: dict[str, Any] = {
            "auth_policies": {"namespace_auth": {}, "destination_auth": {}, "subscription_auth_roles": {}},
            "replication_clusters": list(tenant.get("allowedClusters", [])),
            "bundles": {"boundaries": ["0x00000000", "0xffffffff"], "numBundles": 1},
            "backlog_quota_map": {},
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
            "schema_compatibility_strategy": "UNDEFINED",
            "is_allow_auto_update_schema": True,
            "schema_validation_enforced": False,
            "properties": {},
        }
        out.update(stored)
        return out

    def get_namespace_policy(self, ns: str, key: str) -> Any:
        return self.check_namespace(ns).get(key)

    def set_namespace_policy(self, ns: str, key: str, value: Any) -> None:
        policies = self.check_namespace(ns)
        policies[key] = self.validate_policy(key, value, policies)
        self.metadata.set_namespace_policies(ns, policies)
        self._policies_changed(ns)

    def remove_namespace_policy(self, ns: str, key: str) -> None:
        policies = self.check_namespace(ns)
        if policies.pop(key, None) is not None:
            self.metadata.set_namespace_policies(ns, policies)
            self._policies_changed(ns)

    def _policies_changed(self, ns: str | None) -> None:
        """Let the broker apply changed policies to its loaded topics (when it knows how)."""
        hook = getattr(self.service, "policies_changed", None)
        if hook is not None:
            hook(ns)

    def set_namespace_backlog_quota(self, ns: str, quota_type: str, quota: dict[str, Any]) -> None:
        policies = self.check_namespace(ns)
        quotas = dict(policies.get("backlog_quota_map") or {})
        quotas[_quota_type(quota_type)] = _backlog_quota(quota)
        policies["backlog_quota_map"] = quotas
        _check_retention_vs_quota(policies.get("retention_policies"), quotas)
        self.metadata.set_namespace_policies(ns, policies)
        self._policies_changed(ns)

    def remove_namespace_backlog_quota(self, ns: str, quota_type: str) -> None:
        policies = self.check_namespace(ns)
        quotas = dict(policies.get("backlog_quota_map") or {})
        if quotas.pop(_quota_type(quota_type), None) is not None:
            policies["backlog_quota_map"] = quotas
            self.metadata.set_namespace_policies(ns, policies)
            self._policies_changed(ns)

    def namespace_topics(self, ns: str, mode: str = "PERSISTENT") -> list[str]:
        self.check_namespace(ns)
        try:
            topics_mode = TopicsMode[mode.upper()]
        except KeyError:
            raise AdminError(412, f"Invalid mode {mode!r}: expected PERSISTENT, NON_PERSISTENT or ALL") from None
        return self.service.topics_of_namespace(ns, topics_mode)

    def auto_topic_creation(self, ns: str) -> dict[str, Any]:
        """The effective auto-topic-creation setting of a namespace."""
        override = self.namespace_policies(ns).get("autoTopicCreationOverride")
        if override:
            return dict(override)
        partitions = getattr(self.config, "default_num_partitions", 0)
        if partitions > 0:
            return {
                "allowAutoTopicCreation": self.config.allow_auto_topic_creation,
                "topicType": "partitioned",
                "defaultNumPartitions": partitions,
            }
        return {"allowAutoTopicCreation": self.config.allow_auto_topic_creation, "topicType": "non-partitioned"}

    # -- policy validation ---------------------------------------------------------------
    def validate_policy(self, key: str, value: Any, current: dict[str, Any] | None = None) -> Any:
        """Check one policy value (Pulsar field name) and return it normalized; 412 when invalid."""
        current = current or {}
        if key == "retention_policies":
            value = _retention(value)
            _check_retention_vs_quota(value, current.get("backlog_quota_map"))
            return value
        if key == "message_ttl_in_seconds":
            if _int(value, "message TTL") < 0:
                raise AdminError(412, "Invalid value for message TTL, message TTL must >= 0")
            return value
        if key == "deduplicationEnabled":
            return _bool(value, "deduplication")
        if key == "max_producers_per_topic":
            if _int(value, "maxProducersPerTopic") < 0:
                raise AdminError(412, "maxProducersPerTopic must be 0 or more")
            return value
        if key == "max_consumers_per_subscription":
            if _int(value, "maxConsumersPerSubscription") < 0:
                raise AdminError(412, "maxConsumersPerSubscription must be 0 or more")
            return value
        if key == "max_unacked_messages_per_consumer":
            if _int(value, "maxUnackedMessagesPerConsumer") < 0:
                raise AdminError(412, "maxUnackedMessagesPerConsumer must be 0 or more")
            return value
        if key == "subscription_expiration_time_minutes":
            if _int(value, "subscription expiration time") < 0:
                raise AdminError(412, "Invalid value for subscription expiration time")
            return value
        if key == "schema_compatibility_strategy":
            if not isinstance(value, str) or value.upper() not in SCHEMA_STRATEGIES:
                raise AdminError(412, f"Invalid schema compatibility strategy {value!r}: expected one of {', '.join(SCHEMA_STRATEGIES)}")
            return value.upper()
        if key == "delayed_delivery_policies":
            return _delayed_delivery(value)
        if key == "autoTopicCreationOverride":
            return _auto_topic_creation(value)
        if key == "compaction_threshold":
            if _int(value, "compaction threshold") < 0:
                raise AdminError(412, "compactionThreshold must be 0 or more")
            return value
        if key == "backlog_quota_map":
            if not isinstance(value, dict):
                raise AdminError(412, "backlog_quota_map must be an object")
            return {_quota_type(k): _backlog_quota(v) for k, v in value.items()}
        raise AdminError(412, f"Unknown policy {key}")

    # ====================================================================================
    # topic names and existence
    # ====================================================================================
    def topic_name(self, domain: str, tenant: str, namespace: str, topic: str) -> TopicName:
        """Parse the topic of an admin path; 412 when the name is not valid."""
        if not _NAME.match(tenant or "") or not _NAME.match(namespace or ""):
            raise AdminError(412, "Namespace name is not valid")
        try:
            return TopicName.parse(f"{domain}://{tenant}/{namespace}/{topic}")
        except InvalidTopicNameError as exc:
            raise AdminError(412, f"Topic name is not valid: {exc}") from None

    def parse_topic(self, name: str) -> TopicName:
        """Parse a full or short topic name; 412 when it is not one."""
        try:
            return TopicName.parse(name)
        except InvalidTopicNameError as exc:
            raise AdminError(412, f"Topic name is not valid: {exc}") from None

    def topic_exists(self, tn: TopicName) -> bool:
        """Whether a non-partitioned topic (or a partition) exists."""
        name = str(tn)
        return name in self.service.topics or (tn.persistent and self.metadata.get_topic(name) is not None)

    def partitions_of(self, tn: TopicName) -> int:
        return self.metadata.get_partitioned_topic(str(tn)) or 0

    def _existing(self, tn: TopicName) -> None:
        """404 unless the namespace and the (partitioned or not) topic exist."""
        self.check_namespace(tn.namespace)
        if not self.topic_exists(tn) and self.partitions_of(tn) == 0:
            raise AdminError(404, f"Topic {tn} not found")

    def load_topic(self, tn: TopicName) -> Topic:
        """The loaded non-partitioned topic (or partition); 404 when it does not exist."""
        self.check_namespace(tn.namespace)
        if self.partitions_of(tn) > 0:
            raise AdminError(404, f"Topic {tn} not found: it is a partitioned topic, use its partitions")
        if not self.topic_exists(tn):
            raise AdminError(404, f"Topic {tn} not found")
        try:
            return self.service.get_topic(tn, create=False)
        except BrokerError as exc:
            raise from_broker_error(exc) from None

    @staticmethod
    def _persistent_only(tn: TopicName, what: str) -> None:
        if not tn.persistent:
            raise AdminError(405, f"{what} is not supported on non-persistent topics: nothing is stored")

    def _subscription(self, topic: Topic, sub: str) -> Subscription:
        subscription = topic.subscriptions.get(sub)
        if subscription is None:
            raise AdminError(404, f"Subscription {sub} not found for topic {topic.name}")
        return subscription

    def _partitions(self, tn: TopicName) -> list[TopicName]:
        return [tn.partition(i) for i in range(self.partitions_of(tn))]

    def _targets(self, tn: TopicName) -> list[Topic]:
        """The loaded topics an operation on ``tn`` applies to: itself, or its existing partitions."""
        n = self.partitions_of(tn)
        if n == 0:
            return [self.load_topic(tn)]
        self.check_namespace(tn.namespace)
        return [self.load_topic(p) for p in self._partitions(tn) if self.topic_exists(p)]

    # ====================================================================================
    # topics: create, list, delete, partitions
    # ====================================================================================
    def list_topics(self, domain: str, ns: str) -> list[str]:
        self.check_namespace(ns)
        mode = TopicsMode.PERSISTENT if domain == "persistent" else TopicsMode.NON_PERSISTENT
        return self.service.topics_of_namespace(ns, mode)

    def list_partitioned_topics(self, domain: str, ns: str) -> list[str]:
        self.check_namespace(ns)
        return [t for t in self.metadata.list_partitioned_topics(ns) if t.startswith(domain + "://")]

    def create_topic(self, tn: TopicName, properties: dict[str, str] | None = None) -> None:
        """Create a non-partitioned topic; 409 when it (or a partitioned topic of that name) exists."""
        self.check_namespace(tn.namespace)
        if self.partitions_of(tn) > 0 or self.topic_exists(tn):
            raise AdminError(409, "This topic already exists")
        if tn.persistent:
            max_topics = getattr(self.config, "max_topics_per_namespace", 0)
            if max_topics > 0 and len(self.metadata.list_topics(tn.namespace)) >= max_topics:
                raise AdminError(412, "Exceed maximum number of topics in namespace.")
            self.metadata.get_or_create_topic(str(tn), properties or {})
            return
        try:
            self.service.get_topic(tn, create=True)
        except BrokerError as exc:
            raise from_broker_error(exc) from None

    async def delete_topic(self, tn: TopicName, force: bool = False) -> None:
        """Delete a non-partitioned topic; 412 while it has producers or consumers, unless forced."""
        self.check_namespace(tn.namespace)
        if self.partitions_of(tn) > 0:
            raise AdminError(
                409, f"{tn} is a partitioned topic. Instead of calling delete please call delete-partitioned-topic."
            )
        if not self.topic_exists(tn):
            raise AdminError(404, f"Topic {tn} not found")
        topic = self.service.topics.get(str(tn))
        if topic is not None and not force and _busy(topic):
            raise AdminError(412, "Topic has active producers/subscriptions")
        await self._delete_topic_now(str(tn))

    async def _delete_topic_now(self, name: str) -> None:
        await self.service.delete_topic_storage(name)
        for prefix in (TOPIC_POLICIES_PREFIX, COMPACTION_PREFIX, COMPACTION_STATUS_PREFIX):
            self.metadata.delete_kv(prefix + name)
        for key in [k for k in self.expired if k[0] == name]:
            del self.expired[key]

    def create_partitioned_topic(self, tn: TopicName, partitions: int) -> None:
        self.check_namespace(tn.namespace)
        _check_partition_count(partitions)
        if tn.partition_index >= 0:
            raise AdminError(412, f"Partitioned topic name should not contain '{PARTITION_SUFFIX}': {tn}")
        if self.partitions_of(tn) > 0 or self.topic_exists(tn):
            raise AdminError(409, "This topic already exists")
        self.metadata.set_partitioned_topic(str(tn), partitions)
        self._create_partitions(tn, 0, partitions)

    def _create_partitions(self, tn: TopicName, first: int, count: int) -> None:
        if not tn.persistent:
            return
        for i in range(first, count):
            self.metadata.get_or_create_topic(str(tn.partition(i)))

    def update_partitioned_topic(self, tn: TopicName, partitions: int) -> None:
        """Add partitions (never remove); new partitions get partition 0's durable subscriptions."""
        self.check_namespace(tn.namespace)
        _check_partition_count(partitions)
        current = self.partitions_of(tn)
        if current <= 0:
            raise AdminError(409, f"Topic {tn} is not the partitioned topic.")
        if partitions < current:
            raise AdminError(422, f"Expect partitions {partitions} can't less than current partitions {current}.")
        if partitions == current:
            return
        self.metadata.set_partitioned_topic(str(tn), partitions)
        self._create_partitions(tn, current, partitions)
        first = tn.partition(0)
        if not self.topic_exists(first):
            return
        subs = [s.name for s in self.load_topic(first).subscriptions.values() if s.durable]
        for i in range(current, partitions):
            topic = self.load_topic(tn.partition(i))
            for name in subs:
                if name not in topic.subscriptions:
                    topic.subscribe(name, durable=True, initial_position=InitialPosition.Earliest, start_message_id=None)

    def get_partitioned_metadata(self, tn: TopicName, check_auto_creation: bool = False) -> dict[str, Any]:
        """``{"partitions": N}`` (0 for a non-partitioned topic).

        With ``check_auto_creation`` (what clients ask before producing), a topic that does not
        exist yet is reported as it would be auto-created: a partitioned topic is created now
        when the namespace's auto-topic-creation policy says "partitioned".
        """
        self.check_namespace(tn.namespace)
        n = self.partitions_of(tn)
        if n > 0 or tn.partition_index >= 0:
            return {"partitions": n}
        if self.topic_exists(tn):
            return {"partitions": 0}
        if check_auto_creation:
            auto = self.auto_topic_creation(tn.namespace)
            if auto.get("allowAutoTopicCreation") and auto.get("topicType") == "partitioned":
                n = int(auto.get("defaultNumPartitions") or 1)
                self.metadata.set_partitioned_topic(str(tn), n)
                self._create_partitions(tn, 0, n)
                return {"partitions": n}
            if auto.get("allowAutoTopicCreation"):
                return {"partitions": 0}
        raise AdminError(404, f"Topic {tn} not found")

    async def delete_partitioned_topic(self, tn: TopicName, force: bool = False) -> None:
        self.check_namespace(tn.namespace)
        n = self.partitions_of(tn)
        if n <= 0:
            if self.topic_exists(tn):
                raise AdminError(
                    409, f"{tn} is a non-partitioned topic. Instead of calling delete-partitioned-topic please call delete."
                )
            raise AdminError(404, f"Partitioned Topic {tn} not found")
        partitions = [str(p) for p in self._partitions(tn)]
        if not force:
            for name in partitions:
                topic = self.service.topics.get(name)
                if topic is not None and _busy(topic):
                    raise AdminError(412, "Topic has active producers/subscriptions")
        for name in partitions:
            if name in self.service.topics or self.metadata.get_topic(name) is not None:
                await self._delete_topic_now(name)
        self.metadata.delete_partitioned_topic(str(tn))
        for prefix in (TOPIC_POLICIES_PREFIX, COMPACTION_PREFIX, COMPACTION_STATUS_PREFIX):
            self.metadata.delete_kv(prefix + str(tn))

    # ====================================================================================
    # topics: stats
    # ====================================================================================
    def topic_stats(self, tn: TopicName) -> dict[str, Any]:
        return self._stats_of(self.load_topic(tn))

    def _stats_of(self, topic: Topic) -> dict[str, Any]:
        numbers = self.stats.topic_numbers(topic)
        out = empty_stats()
        out.update(numbers)
        entries = max(0, topic.last_entry_id - topic.first_entry_id + 1)
        storage = topic.stats_storage_size()
        avg_entry = storage / entries if entries else 0.0
        out["storageSize"] = storage
        out["averageMsgSize"] = numbers["msgThroughputIn"] / numbers["msgRateIn"] if numbers["msgRateIn"] else 0.0
        publishers = []
        for producer in topic.producers.values():
            p = self.stats.producer_numbers(topic, producer)
            publishers.append(
                {
                    "accessMode": producer.access_mode.name,
                    "msgRateIn": p["msgRateIn"],
                    "msgThroughputIn": p["msgThroughputIn"],
                    "averageMsgSize": p["msgThroughputIn"] / p["msgRateIn"] if p["msgRateIn"] else 0.0,
                    "chunkedMessageRate": 0.0,
                    "producerId": producer.producer_id,
                    "supportsPartialProducer": False,
                    "producerName": producer.name,
                    "address": producer.connection.peer,
                    "connectedSince": iso_time(producer.connected_since),
                    "clientVersion": producer.connection.client_version,
                    "msgInCounter": p["msgInCounter"],
                    "bytesInCounter": p["bytesInCounter"],
                    "metadata": dict(producer.metadata),
                }
            )
        out["publishers"] = publishers
        subs: dict[str, Any] = {}
        backlog_total = 0
        ranges_total = 0
        for sub in topic.subscriptions.values():
            s = self._subscription_stats(topic, sub, avg_entry)
            subs[sub.name] = s
            backlog_total = max(backlog_total, s["backlogSize"])
            ranges_total += s["nonContiguousDeletedMessagesRanges"]
        out["subscriptions"] = subs
        out["backlogSize"] = backlog_total
        out["nonContiguousDeletedMessagesRanges"] = ranges_total
        dedup = self.effective_policy(topic.topic_name, "deduplicationEnabled")
        out["deduplicationStatus"] = "Enabled" if dedup else "Disabled"
        out["topicEpoch"] = None
        out["ownerBroker"] = f"{self.config.service_host}:{self.config.http_port}"
        out["compaction"] = {
            "lastCompactionRemovedEventCount": 0,
            "lastCompactionSucceedTimestamp": 0,
            "lastCompactionFailedTimestamp": 0,
            "lastCompactionDurationTimeInMills": 0,
            **self.service.compactor.stats.get(topic.name, {}),
        }
        return out

    def _subscription_stats(self, topic: Topic, sub: Subscription, avg_entry: float) -> dict[str, Any]:
        numbers = self.stats.subscription_numbers(topic, sub)
        backlog = sub.backlog()
        consumers = []
        for c in sub.consumers:
            cn = self.stats.consumer_numbers(topic, sub, c)
            consumers.append(
                {
                    "msgRateOut": cn["msgRateOut"],
                    "msgThroughputOut": cn["msgThroughputOut"],
                    "bytesOutCounter": cn["bytesOutCounter"],
                    "msgOutCounter": cn["msgOutCounter"],
                    "msgRateRedeliver": 0.0,
                    "chunkedMessageRate": 0.0,
                    "consumerName": c.name,
                    "availablePermits": max(0, c.permits),
                    "unackedMessages": c.unacked_messages,
                    "avgMessagesPerEntry": 0,
                    "blockedConsumerOnUnackedMsgs": c.blocked,
                    "address": c.connection.peer,
                    "connectedSince": iso_time(c.connected_since),
                    "clientVersion": c.connection.client_version,
                    "lastAckedTimestamp": 0,
                    "lastConsumedTimestamp": 0,
                    "metadata": dict(c.metadata),
                }
            )
        dispatcher = sub.dispatcher
        active = getattr(dispatcher, "active", None)
        if active is None and sub.consumers:
            active = sub.consumers[0]
        expired, last_expire = self.expired.get((topic.name, sub.name), (0, 0.0))
        ranges = sub.cursor.individually_acked.range_count()
        return {
            "msgRateOut": numbers["msgRateOut"],
            "msgThroughputOut": numbers["msgThroughputOut"],
            "bytesOutCounter": numbers["bytesOutCounter"],
            "msgOutCounter": numbers["msgOutCounter"],
            "msgRateRedeliver": 0.0,
            "messageAckRate": 0.0,
            "chunkedMessageRate": 0,
            "msgBacklog": backlog,
            "backlogSize": int(backlog * avg_entry),
            "earliestMsgPublishTimeInBacklog": 0,
            "msgBacklogNoDelayed": backlog,
            "blockedSubscriptionOnUnackedMsgs": sub.blocked_on_unacked(),
            "msgDelayed": 0,
            "unackedMessages": sub.unacked_messages(),
            "type": sub.sub_type.name if sub.sub_type is not None else "Exclusive",
            "activeConsumerName": active.name if active is not None else None,
            "msgRateExpired": 0.0,
            "totalMsgExpired": expired,
            "lastExpireTimestamp": int(last_expire * 1000),
            "lastConsumedFlowTimestamp": 0,
            "lastConsumedTimestamp": 0,
            "lastAckedTimestamp": 0,
            "lastMarkDeleteAdvancedTimestamp": 0,
            "consumers": consumers,
            "isDurable": sub.durable,
            "isReplicated": False,
            "allowOutOfOrderDelivery": False,
            "consumersAfterMarkDeletePosition": {},
            "nonContiguousDeletedMessagesRanges": ranges,
            "nonContiguousDeletedMessagesRangesSerializedSize": 0,
            "subscriptionProperties": {},
        }

    def partitioned_stats(self, tn: TopicName, per_partition: bool = True) -> dict[str, Any]:
        self.check_namespace(tn.namespace)
        n = self.partitions_of(tn)
        if n <= 0:
            raise AdminError(404, f"Partitioned Topic {tn} not found")
        out = empty_stats()
        out["metadata"] = {"partitions": n}
        out["partitions"] = {}
        sums = (
            "msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut", "bytesInCounter", "msgInCounter",
            "bytesOutCounter", "msgOutCounter", "storageSize", "backlogSize", "nonContiguousDeletedMessagesRanges",
        )
        sub_sums = (
            "msgRateOut", "msgThroughputOut", "bytesOutCounter", "msgOutCounter", "msgBacklog", "backlogSize",
            "msgBacklogNoDelayed", "unackedMessages", "totalMsgExpired", "nonContiguousDeletedMessagesRanges",
        )
        for p in self._partitions(tn):
            if not self.topic_exists(p):
                continue
            stats = self._stats_of(self.load_topic(p))
            for key in sums:
                out[key] += stats[key]
            out["publishers"].extend(stats["publishers"])
            for name, s in stats["subscriptions"].items():
                agg = out["subscriptions"].get(name)
                if agg is None:
                    out["subscriptions"][name] = json.loads(json.dumps(s))
                    continue
                for key in sub_sums:
                    agg[key] += s[key]
                agg["consumers"].extend(s["consumers"])
                agg["blockedSubscriptionOnUnackedMsgs"] |= s["blockedSubscriptionOnUnackedMsgs"]
            if per_partition:
                out["partitions"][str(p)] = stats
        out["averageMsgSize"] = out["msgThroughputIn"] / out["msgRateIn"] if out["msgRateIn"] else 0.0
        return out

    def internal_stats(self, tn: TopicName) -> dict[str, Any]:
        self._persistent_only(tn, "internalStats")
        topic = self.load_topic(tn)
        ledger = topic.ledger
        lid = topic.ledger_id
        entries = max(0, topic.last_entry_id - topic.first_entry_id + 1)
        size = topic.stats_storage_size()
        cursors = {}
        for sub in topic.subscriptions.values():
            cursor = sub.cursor
            ranges = cursor.individually_acked.ranges()
            deleted = ",".join(f"({lid}:{lo - 1}..{lid}:{hi}]" for lo, hi in ranges)
            cursors[sub.name] = {
                "markDeletePosition": f"{lid}:{cursor.mark_delete}",
                "readPosition": f"{lid}:{sub.read_position}",
                "waitingReadOp": False,
                "pendingReadOps": 0,
                "messagesConsumedCounter": max(0, cursor.mark_delete - topic.first_entry_id + 1),
                "cursorLedger": -1,
                "cursorLedgerLastEntry": -1,
                "individuallyDeletedMessages": f"[{deleted}]",
                "lastLedgerSwitchTimestamp": "",
                "state": "Open",
                "active": bool(sub.consumers),
                "numberOfEntriesSinceFirstNotAckedMessage": max(0, sub.read_position - cursor.mark_delete - 1),
                "totalNonContiguousDeletedMessagesRange": len(ranges),
                "subscriptionHavePendingRead": False,
                "subscriptionHavePendingReplayRead": False,
                "properties": {},
            }
        return {
            "entriesAddedCounter": ledger.next_entry_id,
            "numberOfEntries": entries,
            "totalSize": size,
            "currentLedgerEntries": entries,
            "currentLedgerSize": size,
            "lastLedgerCreatedTimestamp": "",
            "waitingCursorsCount": 0,
            "pendingAddEntriesCount": max(0, ledger.last_entry_id - topic.last_entry_id),
            "lastConfirmedEntry": f"{lid}:{topic.last_entry_id}",
            "state": "LedgerOpened",
            "ledgers": [{"ledgerId": lid, "entries": entries, "size": size, "offloaded": False, "underReplicated": False}],
            "cursors": cursors,
            "schemaLedgers": [],
            "compactedLedger": _compacted_ledger(topic),
        }

    def last_message_id(self, tn: TopicName) -> dict[str, Any]:
        topic = self.load_topic(tn)
        ledger_id, entry_id, batch_index = topic.last_message_id()
        out: dict[str, Any] = {"ledgerId": ledger_id, "entryId": entry_id, "partitionIndex": tn.partition_index}
        if batch_index >= 0:
            out["batchIndex"] = batch_index
        return out

    # ====================================================================================
    # subscriptions
    # ====================================================================================
    def list_subscriptions(self, tn: TopicName) -> list[str]:
        names: dict[str, None] = {}
        for topic in self._targets(tn):
            names.update((s, None) for s in topic.subscriptions)
        return list(names)

    def create_subscription(self, tn: TopicName, sub: str, position: tuple[int, int] | None) -> None:
        """Create a durable subscription at a message id (latest when None); 409 when it exists.

        ``position`` is (ledger id, entry id) as signed longs: (-1, -1) is earliest and
        (Long.MAX_VALUE, Long.MAX_VALUE) latest, as in Pulsar's MessageId.
        """
        if not sub:
            raise AdminError(412, "Subscription name is not valid")
        self._persistent_only(tn, "Creating a subscription over the admin API")
        self.check_namespace(tn.namespace)
        if self.partitions_of(tn) > 0:
            topics = [self._load_or_create(p) for p in self._partitions(tn)]
        else:
            topics = [self._load_or_create(tn)]
        if any(sub in t.subscriptions for t in topics):
            raise AdminError(409, "Subscription already exists for topic")
        start = None if position is None else (position[0] & _U64, position[1] & _U64)
        if start is None:
            start = (LATEST_LEDGER, LATEST_LEDGER)
        for topic in topics:
            topic.subscribe(sub, durable=True, initial_position=InitialPosition.Latest, start_message_id=start)

    def _load_or_create(self, tn: TopicName) -> Topic:
        if not self.topic_exists(tn) and not self.config.allow_auto_topic_creation:
            raise AdminError(404, f"Topic {tn} not found")
        try:
            return self.service.get_topic(tn, create=True)
        except BrokerError as exc:
            raise from_broker_error(exc) from None

    def delete_subscription(self, tn: TopicName, sub: str, force: bool = False) -> None:
        topics = self._targets(tn)
        found = [t for t in topics if sub in t.subscriptions]
        if not found:
            raise AdminError(404, f"Subscription {sub} not found for topic {tn}")
        if not force and any(t.subscriptions[sub].consumers for t in found):
            raise AdminError(412, "Subscription has active connected consumers")
        for topic in found:
            subscription = topic.subscriptions[sub]
            for consumer in list(subscription.consumers):
                consumer.connection.close_consumer_by_broker(consumer)
            topic.remove_subscription(sub)

    def _subs_of(self, tn: TopicName, sub: str) -> list[tuple[Topic, Subscription]]:
        topics = self._targets(tn)
        found = [(t, t.subscriptions[sub]) for t in topics if sub in t.subscriptions]
        if not found:
            raise AdminError(404, f"Subscription {sub} not found for topic {tn}")
        return found

    def skip_messages(self, tn: TopicName, sub: str, count: int) -> int:
        if self.partitions_of(tn) > 0:
            raise AdminError(405, "Skip messages on a partitioned topic is not allowed")
        if count < 0:
            raise AdminError(412, "Number of messages to skip must not be negative")
        self._persistent_only(tn, "Skipping messages")
        topic = self.load_topic(tn)
        return self._subscription(topic, sub).admin_skip(count)

    def skip_all(self, tn: TopicName, sub: str) -> int:
        self._persistent_only(tn, "Clearing a backlog")
        return sum(s.admin_ack_before(t.last_entry_id + 1) for t, s in self._subs_of(tn, sub))

    def expire_messages(self, tn: TopicName, sub: str, seconds: int) -> int:
        if seconds < 0:
            raise AdminError(412, "Expire time must not be negative")
        return sum(self._expire(t, s, seconds) for t, s in self._subs_of(tn, sub))

    def expire_all_subscriptions(self, tn: TopicName, seconds: int) -> int:
        if seconds < 0:
            raise AdminError(412, "Expire time must not be negative")
        return sum(self._expire(t, s, seconds) for t in self._targets(tn) for s in list(t.subscriptions.values()))

    def _expire(self, topic: Topic, sub: Subscription, seconds: int) -> int:
        threshold = int(time.time() * 1000) - seconds * 1000
        count = sub.admin_ack_before(topic.find_entry_by_time(threshold))
        key = (topic.name, sub.name)
        total, _ = self.expired.get(key, (0, 0.0))
        self.expired[key] = (total + count, time.time())
        return count

    def reset_cursor_to_time(self, tn: TopicName, sub: str, timestamp_ms: int) -> None:
        for topic, subscription in self._subs_of(tn, sub):
            subscription.reset_cursor(topic.find_entry_by_time(timestamp_ms))

    def reset_cursor_to_position(
        self, tn: TopicName, sub: str, ledger_id: int, entry_id: int, excluded: bool = False, partition: int = -1
    ) -> None:
        if self.partitions_of(tn) > 0:
            if partition < 0:
                raise AdminError(405, "Reset-cursor at position is not allowed for partitioned-topic without a partitionIndex")
            tn = tn.partition(partition)
        topic = self.load_topic(tn)
        subscription = self._subscription(topic, sub)
        target = topic._start_position(ledger_id & _U64, entry_id & _U64)
        if excluded and ledger_id == topic.ledger_id:
            target += 1
        subscription.reset_cursor(target)

    # ====================================================================================
    # messages
    # ====================================================================================
    def peek(self, tn: TopicName, sub: str, position: int) -> PeekedEntry:
        """The ``position``-th (from 1) unacknowledged entry of a subscription."""
        if self.partitions_of(tn) > 0:
            raise AdminError(405, "Peek messages on a partitioned topic is not allowed")
        if position < 1:
            raise AdminError(412, "Invalid message position: it must be 1 or more")
        self._persistent_only(tn, "Peeking messages")
        topic = self.load_topic(tn)
        cursor = self._subscription(topic, sub).cursor
        last = topic.last_entry_id
        entry_id = cursor.next_unacked(max(cursor.mark_delete + 1, topic.first_entry_id))
        for _ in range(position - 1):
            if entry_id > last:
                break
            entry_id = cursor.next_unacked(entry_id + 1)
        return self._read(topic, entry_id, tn.partition_index)

    def examine(self, tn: TopicName, initial_position: str, position: int) -> PeekedEntry:
        """The ``position``-th (from 1) entry from the earliest or the latest one."""
        if self.partitions_of(tn) > 0:
            raise AdminError(405, "Examine messages on a partitioned topic is not allowed")
        if position < 1:
            raise AdminError(412, "Invalid message position: it must be 1 or more")
        self._persistent_only(tn, "Examining messages")
        where = (initial_position or "latest").lower()
        if where not in ("earliest", "latest"):
            raise AdminError(412, "initialPosition must be 'earliest' or 'latest'")
        topic = self.load_topic(tn)
        if topic.last_entry_id < topic.first_entry_id:
            raise AdminError(412, "Could not examine messages due to the total message is zero")
        if where == "earliest":
            entry_id = topic.first_entry_id + position - 1
        else:
            entry_id = topic.last_entry_id - position + 1
        return self._read(topic, entry_id, tn.partition_index)

    def _read(self, topic: Topic, entry_id: int, partition: int) -> PeekedEntry:
        if entry_id < topic.first_entry_id or entry_id > topic.last_entry_id:
            raise AdminError(404, "Message not found")
        entries = topic.read_entries(entry_id, entry_id)
        if not entries:
            raise AdminError(404, "Message not found")
        return PeekedEntry(topic.ledger_id, entries[0], partition)

    # ====================================================================================
    # terminate, compaction
    # ====================================================================================
    def terminate(self, tn: TopicName) -> dict[str, Any]:
        """Terminate a topic: no more messages are accepted. Returns the last message id."""
        self._persistent_only(tn, "Termination")
        self._existing(tn)
        if self.partitions_of(tn):
            raise AdminError(405, "Termination of a partitioned topic is not allowed: terminate its partitions")
        try:
            ledger_id, entry_id = self.service.terminate_topic(tn)
        except BrokerError as exc:
            raise from_broker_error(exc) from None
        return {"ledgerId": ledger_id, "entryId": entry_id, "partitionIndex": -1}

    def trigger_compaction(self, tn: TopicName) -> None:
        """Start compacting a topic in the background; its progress shows in compaction_status."""
        self._persistent_only(tn, "Compaction")
        self._existing(tn)
        # a partitioned topic: each existing partition is compacted (and reports its own status)
        targets = [p for p in self._partitions(tn) if self.topic_exists(p)] if self.partitions_of(tn) else [tn]
        if any(str(t) in self.service.compactor.running for t in targets):
            raise AdminError(409, "Compaction already in progress")
        self.metadata.put_kv(COMPACTION_PREFIX + str(tn), json.dumps({"requestedAt": time.time()}).encode())
        try:
            for target in targets:
                self.service.trigger_compaction(target)
        except BrokerError as exc:
            raise from_broker_error(exc) from None

    def compaction_status(self, tn: TopicName) -> dict[str, Any]:
        """What a compactor recorded under ``compaction-status/<topic>``; NOT_RUN until one exists."""
        self._existing(tn)
        raw = self.metadata.get_kv(COMPACTION_STATUS_PREFIX + str(tn))
        if raw:
            try:
                status = json.loads(raw)
                return {"status": status.get("status", "NOT_RUN"), "lastError": status.get("lastError", "")}
            except ValueError:
                pass
        return {"status": "NOT_RUN", "lastError": ""}

    # ====================================================================================
    # topic policies
    # ====================================================================================
    def topic_policies(self, tn: TopicName) -> dict[str, Any]:
        """The policies set on a topic itself (Pulsar field names)."""
        return stored_topic_policies(self.metadata, tn)

    def _save_topic_policies(self, tn: TopicName, policies: dict[str, Any]) -> None:
        key = TOPIC_POLICIES_PREFIX + str(tn)
        if policies:
            self.metadata.put_kv(key, json.dumps(policies, sort_keys=True).encode())
        else:
            self.metadata.delete_kv(key)
        self._policies_changed(tn.namespace)

    def broker_default(self, key: str) -> Any:
        """The value a policy has when neither the topic nor its namespace sets it."""
        config = self.config
        defaults = {
            "retention_policies": {
                "retentionTimeInMinutes": getattr(config, "default_retention_minutes", 0),
                "retentionSizeInMB": getattr(config, "default_retention_mb", 0),
            },
            "message_ttl_in_seconds": getattr(config, "default_message_ttl_seconds", 0),
            "deduplicationEnabled": getattr(config, "deduplication_enabled", False),
            "backlog_quota_map": {},
            "schema_compatibility_strategy": config.schema_compatibility_strategy,
            "max_producers_per_topic": getattr(config, "max_producers_per_topic", 0),
            "max_consumers_per_subscription": getattr(config, "max_consumers_per_subscription", 0),
            "max_unacked_messages_per_consumer": self.config.max_unacked_messages_per_consumer,
            "subscription_expiration_time_minutes": 0,
            "delayed_delivery_policies": {"active": True, "tickTime": 1000, "maxDeliveryDelayInMillis": 0},
            "compaction_threshold": self.config.compaction_threshold_bytes,
            "autoTopicCreationOverride": {
                "allowAutoTopicCreation": self.config.allow_auto_topic_creation,
                "topicType": "non-partitioned",
            },
        }
        return defaults.get(key)

    def effective_policy(self, tn: TopicName, key: str) -> Any:
        """Topic value, else the namespace's, else the broker default."""
        for source in (self.topic_policies(tn.partitioned_parent), self.namespace_policies(tn.namespace)):
            value = source.get(key)
            if value is not None and value != {}:
                return value
        return self.broker_default(key)

    def get_topic_policy(self, tn: TopicName, key: str, applied: bool = False) -> Any:
        self._existing(tn)
        if applied:
            return self.effective_policy(tn, key)
        return self.topic_policies(tn).get(key)

    def set_topic_policy(self, tn: TopicName, key: str, value: Any) -> None:
        self._existing(tn)
        policies = self.topic_policies(tn)
        policies[key] = self.validate_policy(key, value, policies)
        self._save_topic_policies(tn, policies)

    def remove_topic_policy(self, tn: TopicName, key: str) -> None:
        self._existing(tn)
        policies = self.topic_policies(tn)
        if policies.pop(key, None) is not None:
            self._save_topic_policies(tn, policies)

    def set_topic_backlog_quota(self, tn: TopicName, quota_type: str, quota: dict[str, Any]) -> None:
        self._existing(tn)
        policies = self.topic_policies(tn)
        quotas = dict(policies.get("backlog_quota_map") or {})
        quotas[_quota_type(quota_type)] = _backlog_quota(quota)
        policies["backlog_quota_map"] = quotas
        _check_retention_vs_quota(policies.get("retention_policies"), quotas)
        self._save_topic_policies(tn, policies)

    def remove_topic_backlog_quota(self, tn: TopicName, quota_type: str) -> None:
        self._existing(tn)
        policies = self.topic_policies(tn)
        quotas = dict(policies.get("backlog_quota_map") or {})
        if quotas.pop(_quota_type(quota_type), None) is not None:
            policies["backlog_quota_map"] = quotas
            self._save_topic_policies(tn, policies)

    # ====================================================================================
    # lookup
    # ====================================================================================
    def lookup(self, tn: TopicName, http_port: int | None = None) -> dict[str, Any]:
        """Where clients find the topic: always this broker."""
        self.check_namespace(tn.namespace)
        config = self.config
        broker_url = config.broker_service_url
        http_url = f"http://{config.service_host}:{config.http_port or http_port or 0}"
        return {
            "brokerUrl": broker_url,
            "brokerUrlTls": broker_url,
            "httpUrl": http_url,
            "httpUrlTls": http_url,
            "nativeUrl": broker_url,
        }


def _compacted_ledger(topic: Topic) -> dict[str, Any]:
    """internal-stats ``compactedLedger``: the compacted view (its number stands for a ledger id)."""
    view = topic.compacted
    if view is None:
        return {"ledgerId": -1, "entries": -1, "size": -1, "offloaded": False, "underReplicated": False}
    size = view.ledger.size_bytes if not view.ledger.closed else 0
    return {"ledgerId": int(view.name), "entries": len(view), "size": size, "offloaded": False, "underReplicated": False}


# ---------------------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------------------
def _busy(topic: Topic) -> bool:
    return bool(topic.producers) or any(s.consumers for s in topic.subscriptions.values())


def _check_partition_count(partitions: int) -> None:
    if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions <= 0:
        raise AdminError(406, "Number of partitions should be more than 0")
    if partitions > MAX_PARTITIONS:
        raise AdminError(406, f"Number of partitions should be less than or equal to {MAX_PARTITIONS}")


def _int(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise AdminError(412, f"Invalid value for {what}: {value!r} is not an integer")
    return value


def _bool(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise AdminError(412, f"Invalid value for {what}: {value!r} is not true or false")
    return value


def _retention(value: Any) -> dict[str, int]:
    if not isinstance(value, dict):
        raise AdminError(412, "Invalid retention policy: expected retentionTimeInMinutes and retentionSizeInMB")
    minutes = value.get("retentionTimeInMinutes", 0)
    size = value.get("retentionSizeInMB", 0)
    for v in (minutes, size):
        if not isinstance(v, int) or isinstance(v, bool) or v < -1:
            raise AdminError(412, "Invalid retention policy: size and time must be -1 (infinite), 0 or positive")
    return {"retentionTimeInMinutes": minutes, "retentionSizeInMB": size}


def _check_retention_vs_quota(retention: Any, quotas: Any) -> None:
    if not retention or not quotas:
        return
    quota = quotas.get("destination_storage") or {}
    limit = quota.get("limitSize", -1)
    size_mb = retention.get("retentionSizeInMB", 0)
    if limit > 0 and size_mb != -1 and size_mb * 1024 * 1024 <= limit and size_mb != 0:
        raise AdminError(412, "Retention Quota must exceed configured backlog quota for namespace.")


def _quota_type(value: str | None) -> str:
    value = value or "destination_storage"
    if value not in BACKLOG_QUOTA_TYPES:
        raise AdminError(412, f"Invalid backlogQuotaType {value!r}: expected destination_storage or message_age")
    return value


def _backlog_quota(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise AdminError(412, "Invalid backlog quota: expected an object with limitSize, limitTime and policy")
    limit_size = value.get("limitSize", value.get("limit", -1))
    limit_time = value.get("limitTime", -1)
    for v in (limit_size, limit_time):
        if not isinstance(v, int) or isinstance(v, bool) or v < -1:
            raise AdminError(412, "Invalid backlog quota: limitSize and limitTime must be -1 or more")
    policy = value.get("policy") or "producer_request_hold"
    if policy not in BACKLOG_QUOTA_POLICIES:
        raise AdminError(412, f"Invalid backlog quota policy {policy!r}: expected one of {', '.join(BACKLOG_QUOTA_POLICIES)}")
    return {"limitSize": limit_size, "limitTime": limit_time, "policy": policy}


def _delayed_delivery(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise AdminError(412, "Invalid delayed delivery policies: expected active, tickTime, maxDeliveryDelayInMillis")
    active = value.get("active", True)
    tick = value.get("tickTime", 1000)
    max_delay = value.get("maxDeliveryDelayInMillis", 0)
    if not isinstance(active, bool):
        raise AdminError(412, "Invalid delayed delivery policies: active must be true or false")
    for v in (tick, max_delay):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise AdminError(412, "Invalid delayed delivery policies: tickTime and maxDeliveryDelayInMillis must be 0 or more")
    return {"active": active, "tickTime": tick, "maxDeliveryDelayInMillis": max_delay}


def _auto_topic_creation(value: Any) -> dict[str, Any]:
    prefix = "Invalid configuration for autoTopicCreationOverride. the detail is "
    if not isinstance(value, dict):
        raise AdminError(412, prefix + "[body] must be an object.")
    allow = value.get("allowAutoTopicCreation")
    if not isinstance(allow, bool):
        raise AdminError(412, prefix + "[allowAutoTopicCreation] must be true or false.")
    out: dict[str, Any] = {"allowAutoTopicCreation": allow}
    topic_type = value.get("topicType")
    partitions = value.get("defaultNumPartitions")
    if allow:
        if topic_type not in ("partitioned", "non-partitioned"):
            raise AdminError(412, prefix + "[topicType] is invalid.")
        out["topicType"] = topic_type
        if topic_type == "partitioned":
            if partitions is None:
                raise AdminError(412, prefix + "[defaultNumPartitions] cannot be null when the type is partitioned.")
            if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
                raise AdminError(412, prefix + "[defaultNumPartitions] cannot be less than 1 for partition type.")
            if partitions > MAX_PARTITIONS:
                raise AdminError(406, f"Number of partitions should be less than or equal to {MAX_PARTITIONS}")
            out["defaultNumPartitions"] = partitions
        elif partitions is not None:
            raise AdminError(412, prefix + "[defaultNumPartitions] is not allowed to be set when the type is non-partition.")
    elif topic_type is not None:
        out["topicType"] = topic_type
    return out
