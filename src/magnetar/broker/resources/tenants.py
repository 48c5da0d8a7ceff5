"""Clusters and tenants: the clusters tenants may use, and who administers each tenant."""

from __future__ import annotations

from typing import Any

from magnetar.broker.resources.base import NAME, ResourceContext
from magnetar.broker.resources.errors import ConflictError, NotFoundError, PreconditionFailedError
from magnetar.broker.resources.namespaces import NamespaceResources
from magnetar.storage import MetadataConflictError, MetadataNotFoundError


class ClusterResources:
    """Clusters (this broker is cluster "standalone")."""

    def __init__(self, ctx: ResourceContext) -> None:
        self.ctx = ctx

    def list_clusters(self) -> list[str]:
        """Every cluster's name."""
        return self.ctx.metadata.list_clusters()

    def get_cluster(self, cluster: str) -> dict[str, Any]:
        """A cluster's ClusterData: this broker's URLs, overridden by what was stored."""
        data = self.ctx.metadata.get_cluster(cluster)
        if data is None:
            raise NotFoundError("Cluster does not exist")
        config = self.ctx.config
        out = {
            "serviceUrl": config.web_service_url,
            "serviceUrlTls": config.web_service_url_tls or "",
            "brokerServiceUrl": config.broker_service_url,
            "brokerServiceUrlTls": config.broker_service_url_tls or "",
        }
        out.update(data)
        return out

    def create_cluster(self, cluster: str, data: dict[str, Any] | None) -> None:
        """Create a cluster."""
        if not NAME.match(cluster or ""):
            raise PreconditionFailedError("Cluster name is not valid")
        try:
            self.ctx.metadata.create_cluster(cluster, data or {})
        except MetadataConflictError:
            raise ConflictError("Cluster already exists") from None


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
        if meta.get_tenant(tenant) is None:
            raise NotFoundError("Tenant does not exist")
        namespaces = meta.list_namespaces(tenant)
        if namespaces and not force:
            raise ConflictError("The tenant still has active namespaces")
        for ns in namespaces:
            await self.namespaces.delete_namespace(ns, force=True)
        try:
            meta.delete_tenant(tenant)
        except MetadataConflictError:
            raise ConflictError("The tenant still has active namespaces") from None
        except MetadataNotFoundError:
            raise NotFoundError("Tenant does not exist") from None
