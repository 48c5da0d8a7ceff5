"""/admin/v2/clusters: the local cluster and the remote ones geo-replication sends to; and the
replication policies of namespaces (``/namespaces/{t}/{ns}/replication``) and topics
(``/persistent/{t}/{ns}/{topic}/replication``), which name them."""

from typing import Annotated

from fastapi import APIRouter, Body, Response
from fastapi.responses import JSONResponse

from magnetar.admin.access import AccessGuard
from magnetar.admin.models import ClusterData, dump
from magnetar.broker.resources.admin import BrokerAdmin


def router(admin: BrokerAdmin, access: AccessGuard) -> APIRouter:
    """Cluster routes over ``admin``: listing for any role, the rest for superusers (as Pulsar)."""
    r = APIRouter(prefix="/admin/v2/clusters", tags=["clusters"])
    super_user = [access.super_user()]
    clusters = admin.clusters

    @r.get("", dependencies=[access.open()], summary="List clusters")
    async def list_clusters() -> list[str]:
        return await admin.ctx.read(clusters.list_clusters)

    @r.get("/{cluster}", dependencies=super_user, summary="Get a cluster's ClusterData")
    async def get_cluster(cluster: str) -> dict:
        return await admin.ctx.read(clusters.get_cluster, cluster)

    @r.put("/{cluster}", status_code=204, dependencies=super_user, summary="Create a cluster")
    async def create_cluster(cluster: str, data: Annotated[ClusterData | None, Body()] = None) -> Response:
        await admin.ctx.write(clusters.create_cluster, cluster, dump(data))
        return Response(status_code=204)

    @r.post("/{cluster}", status_code=204, dependencies=super_user, summary="Update a cluster's ClusterData")
    async def update_cluster(cluster: str, data: Annotated[ClusterData, Body()]) -> Response:
        await admin.ctx.write(clusters.update_cluster, cluster, dump(data))
        return Response(status_code=204)

    _add_topology_routes(r, admin, super_user)

    @r.delete("/{cluster}", status_code=204, dependencies=super_user, summary="Delete a cluster")
    async def delete_cluster(cluster: str) -> Response:
        await admin.ctx.write(clusters.delete_cluster, cluster)
        return Response(status_code=204)

    return r


def _add_topology_routes(r: APIRouter, admin: BrokerAdmin, super_user: list) -> None:
    """Peer clusters, failure domains and the migration policy of a cluster (superusers only)."""
    topology = admin.cluster_topology

    @r.get("/{cluster}/peers", dependencies=super_user, summary="The cluster's peer clusters")
    async def get_peers(cluster: str) -> Response:
        peers = await admin.ctx.read(topology.get_peers, cluster)
        return Response(status_code=204) if peers is None else JSONResponse(peers)

    @r.post("/{cluster}/peers", status_code=204, dependencies=super_user, summary="Replace the cluster's peer clusters")
    async def set_peers(cluster: str, peers: Annotated[list[str] | None, Body()] = None) -> Response:
        await admin.ctx.write(topology.set_peers, cluster, peers)
        return Response(status_code=204)

    @r.get("/{cluster}/failureDomains", dependencies=super_user, summary="The cluster's failure domains")
    async def list_domains(cluster: str) -> dict[str, dict]:
        return await admin.ctx.read(topology.list_domains, cluster)

    @r.get("/{cluster}/failureDomains/{domain}", dependencies=super_user, summary="A failure domain")
    async def get_domain(cluster: str, domain: str) -> dict:
        return await admin.ctx.read(topology.get_domain, cluster, domain)

    @r.post("/{cluster}/failureDomains/{domain}", status_code=204, dependencies=super_user,
            summary="Create or replace a failure domain")
    async def set_domain(cluster: str, domain: str, data: Annotated[dict | None, Body()] = None) -> Response:
        await admin.ctx.write(topology.set_domain, cluster, domain, data)
        return Response(status_code=204)

    @r.delete("/{cluster}/failureDomains/{domain}", status_code=204, dependencies=super_user,
              summary="Delete a failure domain")
    async def delete_domain(cluster: str, domain: str) -> Response:
        await admin.ctx.write(topology.delete_domain, cluster, domain)
        return Response(status_code=204)

    @r.get("/{cluster}/migrate", dependencies=super_user, summary="The cluster's migration policy")
    async def get_migration(cluster: str) -> dict:
        return await admin.ctx.read(topology.get_migration, cluster)

    @r.post("/{cluster}/migrate", status_code=204, dependencies=super_user,
            summary="Mark the cluster migrated (or not) to another cluster's URLs")
    async def set_migration(cluster: str, migrated: bool = False, url: Annotated[dict | None, Body()] = None) -> Response:
        await admin.ctx.write(topology.set_migration, cluster, migrated, url)
        return Response(status_code=204)


def namespace_replication_router(admin: BrokerAdmin, access: AccessGuard) -> APIRouter:
    """GET / POST ``/admin/v2/namespaces/{tenant}/{namespace}/replication`` (pulsar-admin's get-clusters / set-clusters)."""
    r = APIRouter(prefix="/admin/v2/namespaces", tags=["namespaces"])
    clusters = admin.clusters
    name = admin.ctx.namespace_name

    @r.get("/{tenant}/{namespace}/replication", dependencies=[access.namespace_policy(write=False)],
           summary="Get the replication clusters")
    async def get_replication(tenant: str, namespace: str) -> list[str]:
        return await clusters.get_namespace_replication(name(tenant, namespace))

    @r.post("/{tenant}/{namespace}/replication", status_code=204, dependencies=[access.namespace_policy(write=True)],
            summary="Set the replication clusters")
    async def set_replication(tenant: str, namespace: str, value: Annotated[list[str], Body()]) -> Response:
        await admin.ctx.write(clusters.set_namespace_replication, name(tenant, namespace), value)
        return Response(status_code=204)

    return r


def topic_replication_router(admin: BrokerAdmin, access: AccessGuard, domain: str) -> APIRouter:
    """GET / POST / DELETE ``/admin/v2/{domain}/{tenant}/{namespace}/{topic}/replication``."""
    r = APIRouter(prefix=f"/admin/v2/{domain}", tags=[f"{domain} topics"])
    clusters = admin.clusters
    path = "/{tenant}/{namespace}/{topic}/replication"
    read, write = [access.topic_policy(False, domain)], [access.topic_policy(True, domain)]

    def topic_name(tenant: str, namespace: str, topic: str):  # noqa: ANN202 - TopicName
        return admin.ctx.topic_name(domain, tenant, namespace, topic)

    @r.get(path, dependencies=read, summary="Get the topic's replication clusters")
    async def get_replication(tenant: str, namespace: str, topic: str, applied: bool = False) -> list[str] | None:
        return await clusters.get_topic_replication(topic_name(tenant, namespace, topic), applied)

    @r.post(path, status_code=204, dependencies=write, summary="Set the topic's replication clusters")
    async def set_replication(tenant: str, namespace: str, topic: str, value: Annotated[list[str], Body()]) -> Response:
        await admin.ctx.write(clusters.set_topic_replication, topic_name(tenant, namespace, topic), value)
        return Response(status_code=204)

    @r.delete(path, status_code=204, dependencies=write, summary="Remove the topic's replication clusters")
    async def remove_replication(tenant: str, namespace: str, topic: str) -> Response:
        await admin.ctx.write(clusters.remove_topic_replication, topic_name(tenant, namespace, topic))
        return Response(status_code=204)

    return r
