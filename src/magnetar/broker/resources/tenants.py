"""Clusters and tenants: the clusters (ClusterData) tenants may use and replicate to, and who administers each tenant."""

from __future__ import annotations

from typing import Any

from magnetar.broker.policies.registry import REPLICATION_CLUSTERS
from magnetar.broker.policies.validation import validate_clusters
from magnetar.broker.resources.base import NAME, ResourceContext
from magnetar.broker.resources.cluster_topology import DOMAINS_PREFIX, POLICIES_PREFIX
from magnetar.broker.resources.errors import (
    ConflictError,
    ForbiddenError,
    NotFoundError,
    PreconditionFailedError,
)
from magnetar.broker.resources.namespaces import NamespaceResources
from magnetar.broker.resources.policies import PolicyResources
from magnetar.protocol.topic_name import TopicName
from magnetar.storage import MetadataConflictError, MetadataNotFoundError

#: ClusterData's fields that have a value even when not set (Pulsar's ClusterDataImpl defaults)
_CLUSTER_DEFAULTS: dict[str, Any] = {
    "brokerClientTlsEnabled": False,
    "tlsAllowInsecureConnection": False,
    "brokerClientTlsEnabledWithKeyStore": False,
    "brokerClientTlsTrustStoreType": "JKS",
    "brokerClientTlsKeyStoreType": "JKS",
}
#: ClusterData fields holding text, and those holding true / false
_CLUSTER_TEXT = (
    "serviceUrl", "serviceUrlTls", "brokerServiceUrl", "brokerServiceUrlTls", "proxyServiceUrl", "proxyProtocol",
    "authenticationPlugin", "authenticationParameters", "brokerClientTrustCertsFilePath",
    "brokerClientKeyFilePath", "brokerClientCertificateFilePath", "listenerName",
    "brokerClientTlsTrustStoreType", "brokerClientTlsTrustStore", "brokerClientTlsTrustStorePassword",
    "brokerClientTlsKeyStoreType", "brokerClientTlsKeyStore", "brokerClientTlsKeyStorePassword",
    "brokerClientSslProvider", "brokerClientTlsCiphers", "brokerClientTlsProtocols",
)
_CLUSTER_FLAGS = ("brokerClientTlsEnabled", "tlsAllowInsecureConnection", "brokerClientTlsEnabledWithKeyStore")
_URL_SCHEMES = {
    "serviceUrl": ("http://", "https://"), "serviceUrlTls": ("https://",),
    "brokerServiceUrl": ("pulsar://", "pulsar+ssl://"), "brokerServiceUrlTls": ("pulsar+ssl://",),
}


def cluster_data(data: dict[str, Any] | None) -> dict[str, Any]:
    """A ClusterData body checked (412 with Pulsar's reasons for what cannot be used) and normalized."""
    out: dict[str, Any] = {}
    for key, value in (data or {}).items():
        if value is None:
            continue
        if key in _CLUSTER_FLAGS:
            if not isinstance(value, bool):
                raise PreconditionFailedError(f"Invalid cluster data: {key} must be true or false")
        elif key in _CLUSTER_TEXT:
            if not isinstance(value, str):
                raise PreconditionFailedError(f"Invalid cluster data: {key} must be a string")
            schemes = _URL_SCHEMES.get(key)
            if value and schemes and not any(u.startswith(s) for u in value.split(",") for s in schemes):
                raise PreconditionFailedError(f"Invalid cluster data: {key} {value!r} is not a {' or '.join(schemes)} URL")
        out[key] = value
    if not any(out.get(k) for k in _URL_SCHEMES):
        raise PreconditionFailedError("At least one of the serviceUrl, serviceUrlTls, brokerServiceUrl or brokerServiceUrlTls must be set")
    return out


class ClusterResources:
    """Clusters: this broker's own (``clusterName``) and the remote ones geo-replication sends to,
    and the replication policies that name them."""

    def __init__(self, ctx: ResourceContext, policies: PolicyResources) -> None:
        self.ctx = ctx
        self.policies = policies

    def list_clusters(self) -> list[str]:
        """Every cluster's name."""
        return self.ctx.metadata.list_clusters()

    def get_cluster(self, cluster: str) -> dict[str, Any]:
        """A cluster's ClusterData: what was stored; for the local cluster, this broker's URLs where unset."""
        data = self.ctx.metadata.get_cluster(cluster)
        if data is None:
            raise NotFoundError("Cluster does not exist")
        out = dict(_CLUSTER_DEFAULTS)
        if cluster == self.ctx.config.cluster_name:
            config = self.ctx.config
            out.update({
                "serviceUrl": config.web_service_url,
                "brokerServiceUrl": config.broker_service_url,
            })
            if config.web_service_url_tls:
                out["serviceUrlTls"] = config.web_service_url_tls
            if config.broker_service_url_tls:
                out["brokerServiceUrlTls"] = config.broker_service_url_tls
        out.update(data)
        return out

    def create_cluster(self, cluster: str, data: dict[str, Any] | None) -> None:
        """Register a cluster (the local one may be registered with no URLs: they are this broker's)."""
        if not NAME.match(cluster or ""):
            raise PreconditionFailedError("Cluster name is not valid")
        if cluster == "global":
            raise PreconditionFailedError("Cannot create global cluster")
        local = cluster == self.ctx.config.cluster_name
        config = cluster_data(data) if data or not local else {}
        try:
            self.ctx.metadata.create_cluster(cluster, config)
        except MetadataConflictError:
            raise ConflictError("Cluster already exists") from None

    def update_cluster(self, cluster: str, data: dict[str, Any] | None) -> None:
        """Replace a cluster's ClusterData."""
        if self.ctx.metadata.get_cluster(cluster) is None:
            raise NotFoundError("Cluster does not exist")
        config = cluster_data(data)
        peers = (self.ctx.metadata.get_cluster(cluster) or {}).get("peerClusterNames")
        if peers and "peerClusterNames" not in config:
            config["peerClusterNames"] = peers  # set by update-peer-clusters, not by an update of the URLs
        try:
            self.ctx.metadata.update_cluster(cluster, config)
        except MetadataNotFoundError:
            raise NotFoundError("Cluster does not exist") from None
        self.ctx.policies_changed(None)

    def delete_cluster(self, cluster: str) -> None:
        """Forget a cluster no namespace replicates to (412 "Cluster not empty" otherwise)."""
        meta = self.ctx.metadata
        if meta.get_cluster(cluster) is None:
            raise NotFoundError("Cluster does not exist")
        for tenant in meta.list_tenants():
            for ns in meta.list_namespaces(tenant):
                if cluster in ((meta.get_namespace(ns) or {}).get(REPLICATION_CLUSTERS.name) or []):
                    raise PreconditionFailedError("Cluster not empty")
        try:
            meta.delete_cluster(cluster)
        except MetadataNotFoundError:
            raise NotFoundError("Cluster does not exist") from None
        meta.delete_kv(DOMAINS_PREFIX + cluster)
        meta.delete_kv(POLICIES_PREFIX + cluster)

    def check_replication_clusters(self, ns: str, clusters: list[str]) -> None:
        """Pulsar's checks of a replication policy: known clusters the namespace's tenant may use."""
        meta = self.ctx.metadata
        tenant = ns.split("/", 1)[0]
        info = meta.get_tenant(tenant)
        if info is None:
            raise NotFoundError("Tenant does not exist")
        allowed = info.get("allowedClusters") or []
        known = set(meta.list_clusters())
        for cluster in clusters:
            if cluster == "global":
                raise PreconditionFailedError("Cannot specify global in the list of replication clusters")
            if cluster not in known:
                raise PreconditionFailedError(f"Invalid cluster id: {cluster}")
            if cluster not in allowed:
                raise ForbiddenError(
                    f"Cluster [{cluster}] is not in the list of allowed clusters list for tenant [{tenant}]")

    # -- replication policies ------------------------------------------------------------
    async def get_namespace_replication(self, ns: str) -> list[str]:
        """A namespace's replication clusters (the local cluster alone when none were set, as Pulsar)."""
        value = await self.policies.get_namespace_policy(ns, REPLICATION_CLUSTERS.name)
        return list(value) if value else REPLICATION_CLUSTERS.default(self.ctx.config)

    def set_namespace_replication(self, ns: str, value: Any) -> None:
        """Set a namespace's replication clusters: registered clusters its tenant may use."""
        self.ctx.check_namespace(ns)
        clusters = validate_clusters(value, {})
        self.check_replication_clusters(ns, clusters)
        self.policies.set_namespace_policy(ns, REPLICATION_CLUSTERS.name, clusters)

    async def get_topic_replication(self, tn: TopicName, applied: bool = False) -> list[str] | None:
        """A topic's own replication clusters (None when not set), or (``applied``) those in force."""
        value = await self.policies.get_topic_policy(tn, REPLICATION_CLUSTERS.name, applied)
        return list(value) if value else None

    def set_topic_replication(self, tn: TopicName, value: Any) -> None:
        """Set a topic's replication clusters (they replace its namespace's for this topic)."""
        self.ctx.existing(tn)
        clusters = validate_clusters(value, {})
        self.check_replication_clusters(tn.namespace, clusters)
        self.policies.set_topic_policy(tn, REPLICATION_CLUSTERS.name, clusters)

    def remove_topic_replication(self, tn: TopicName) -> None:
        """Remove a topic's replication clusters (its namespace's apply again)."""
        self.policies.remove_topic_policy(tn, REPLICATION_CLUSTERS.name)


class TenantResources:
    """Tenants: their admin roles and allowed clusters."""

    def __init__(self, ctx: ResourceContext, namespaces: NamespaceResources) -> None:
        self.ctx = ctx
        self.namespaces = namespaces

    def list_tenants(self) -> list[str]:
        """Every tenant's name."""
        return self.ctx.metadata.list_tenants()

    def get_tenant(self, tenant: str) -> dict[str, Any]:
        """A tenant's TenantInfo."""
        info = self.ctx.metadata.get_tenant(tenant)
        if info is None:
            raise NotFoundError("Tenant does not exist")
        return {"adminRoles": info.get("adminRoles", []), "allowedClusters": info.get("allowedClusters", [])}

    def _tenant_info(self, info: dict[str, Any] | None) -> dict[str, Any]:
        info = info or {}
        clusters = list(dict.fromkeys(info.get("allowedClusters") or []))
        if not clusters or any(not str(c).strip() for c in clusters):
            raise PreconditionFailedError("Clusters can not be empty")
        known = set(self.ctx.metadata.list_clusters())
        if any(c not in known and c != "global" for c in clusters):
            raise PreconditionFailedError("Clusters do not exist")
        return {"adminRoles": list(dict.fromkeys(info.get("adminRoles") or [])), "allowedClusters": clusters}

    def create_tenant(self, tenant: str, info: dict[str, Any] | None) -> None:
        """Create a tenant."""
        if not NAME.match(tenant or ""):
            raise PreconditionFailedError("Tenant name is not valid")
        config = self._tenant_info(info)
        try:
            self.ctx.metadata.create_tenant(tenant, config)
        except MetadataConflictError:
            raise ConflictError("Tenant already exists") from None

    def update_tenant(self, tenant: str, info: dict[str, Any] | None) -> None:
        """Replace a tenant's admin roles and allowed clusters."""
        config = self._tenant_info(info)
        if self.ctx.metadata.get_tenant(tenant) is None:
            raise NotFoundError(f"Tenant {tenant} not found")
        self.ctx.metadata.update_tenant(tenant, config)

    async def delete_tenant(self, tenant: str, force: bool = False) -> None:
        """Delete a tenant without namespaces (with ``force``: its namespaces and topics too)."""
        meta = self.ctx.metadata
        if await self.ctx.read(meta.get_tenant, tenant) is None:
            raise NotFoundError("Tenant does not exist")
        namespaces = await self.ctx.read(meta.list_namespaces, tenant)
        if namespaces and not force:
            raise ConflictError("The tenant still has active namespaces")
        for ns in namespaces:
            await self.namespaces.delete_namespace(ns, force=True)
        try:
            await self.ctx.off_loop(meta.delete_tenant, tenant)
        except MetadataConflictError:
            raise ConflictError("The tenant still has active namespaces") from None
        except MetadataNotFoundError:
            raise NotFoundError("Tenant does not exist") from None
