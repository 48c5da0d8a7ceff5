"""/admin/v2/namespaces: namespaces, their topics and their policies."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Response

from magnetar.admin.access import AccessGuard
from magnetar.admin.routes_permissions import add_namespace_permission_routes
from magnetar.admin.routes_policies import add_namespace_policy_routes
from magnetar.broker.resources.admin import BrokerAdmin
from magnetar.broker.security import NamespaceOperation, TenantOperation


def router(admin: BrokerAdmin, access: AccessGuard) -> APIRouter:
    """Namespace routes over ``admin``."""
    r = APIRouter(prefix="/admin/v2/namespaces", tags=["namespaces"])
    namespaces = admin.namespaces
    name = admin.ctx.namespace_name

    @r.get("/{tenant}", dependencies=[access.tenant(TenantOperation.LIST_NAMESPACES)], summary="List the namespaces of a tenant")
    async def list_namespaces(tenant: str) -> list[str]:
        return namespaces.list_namespaces(tenant)

    @r.put(
        "/{tenant}/{namespace}", status_code=204, dependencies=[access.tenant(TenantOperation.CREATE_NAMESPACE)],
        summary="Create a namespace")
    async def create_namespace(
        tenant: str, namespace: str, policies: Annotated[dict[str, Any] | None, Body()] = None
    ) -> Response:
        if policies is not None and policies.get("replication_clusters") == []:
            # pulsar-admin sends an empty list when no -c is given: Pulsar takes the local cluster
            policies = {**policies, "replication_clusters": [admin.ctx.config.cluster_name]}
        namespaces.create_namespace(name(tenant, namespace), policies)
        return Response(status_code=204)

    @r.get("/{tenant}/{namespace}", dependencies=[access.namespace_policy(write=False)], summary="Get a namespace's policies")
    async def get_policies(tenant: str, namespace: str) -> dict:
        return admin.policies.get_namespace_policies(name(tenant, namespace))

    @r.delete(
        "/{tenant}/{namespace}", status_code=204, dependencies=[access.tenant(TenantOperation.DELETE_NAMESPACE)],
        summary="Delete an empty namespace (or all of it with force)")
    async def delete_namespace(tenant: str, namespace: str, force: bool = False) -> Response:
        await namespaces.delete_namespace(name(tenant, namespace), force)
        return Response(status_code=204)

    @r.get(
        "/{tenant}/{namespace}/topics", dependencies=[access.namespace(NamespaceOperation.GET_TOPICS)], summary="List the topics of a namespace")
    async def namespace_topics(tenant: str, namespace: str, mode: str = "PERSISTENT") -> list[str]:
        return namespaces.namespace_topics(name(tenant, namespace), mode)

    add_namespace_policy_routes(r, admin, access)
    add_namespace_permission_routes(r, admin, access)
    return r
