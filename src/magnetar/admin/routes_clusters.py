"""/admin/v2/clusters: the clusters tenants may use (this broker is cluster "standalone")."""

from typing import Annotated

from fastapi import APIRouter, Body, Response

from magnetar.admin.access import AccessGuard
from magnetar.admin.models import ClusterData, dump
from magnetar.broker.resources.admin import BrokerAdmin


def router(admin: BrokerAdmin, access: AccessGuard) -> APIRouter:
    """Cluster routes over ``admin``: listing for any role, the rest for superusers (as Pulsar)."""
    r = APIRouter(prefix="/admin/v2/clusters", tags=["clusters"])
    super_user = [access.super_user()]

    @r.get("", dependencies=[access.open()], summary="List clusters")
    async def list_clusters() -> list[str]:
        return admin.clusters.list_clusters()

    @r.get("/{cluster}", dependencies=super_user, summary="Get a cluster's URLs")
    async def get_cluster(cluster: str) -> dict:
        return admin.clusters.get_cluster(cluster)

    @r.put("/{cluster}", status_code=204, dependencies=super_user, summary="Create a cluster")
    async def create_cluster(cluster: str, data: Annotated[ClusterData | None, Body()] = None) -> Response:
        admin.clusters.create_cluster(cluster, dump(data))
        return Response(status_code=204)

    return r
