"""/admin/v2/namespaces: namespaces, their topics and their policies."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Response
from fastapi.responses import PlainTextResponse

from magnetar.admin.access import AccessGuard
from magnetar.admin.errors import HttpError
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
        return await admin.ctx.read(namespaces.list_namespaces, tenant)

    @r.put(
        "/{tenant}/{namespace}", status_code=204, dependencies=[access.tenant(TenantOperation.CREATE_NAMESPACE)],
        summary="Create a namespace")
    async def create_namespace(
        tenant: str, namespace: str, policies: Annotated[dict[str, Any] | None, Body()] = None
    ) -> Response:
        if policies is not None and policies.get("replication_clusters") == []:
            # pulsar-admin sends an empty list when no -c is given: Pulsar takes the local cluster
            policies = {**policies, "replication_clusters": [admin.ctx.config.cluster_name]}
        await admin.ctx.off_loop(namespaces.create_namespace, name(tenant, namespace), policies)
        return Response(status_code=204)

    @r.get("/{tenant}/{namespace}", dependencies=[access.namespace_policy(write=False)], summary="Get a namespace's policies")
    async def get_policies(tenant: str, namespace: str) -> dict:
        return await admin.policies.get_namespace_policies(name(tenant, namespace))

    @r.delete(
        "/{tenant}/{namespace}", status_code=204, dependencies=[access.tenant(TenantOperation.DELETE_NAMESPACE)],
        summary="Delete an empty namespace (or all of it with force)")
    async def delete_namespace(tenant: str, namespace: str, force: bool = False) -> Response:
        await namespaces.delete_namespace(name(tenant, namespace), force)
        return Response(status_code=204)

    @r.get(
        "/{tenant}/{namespace}/topics", dependencies=[access.namespace(NamespaceOperation.GET_TOPICS)], summary="List the topics of a namespace")
    async def namespace_topics(tenant: str, namespace: str, mode: str = "PERSISTENT") -> list[str]:
        return await namespaces.namespace_topics(name(tenant, namespace), mode)

    _add_namespace_operations(r, admin, access)
    _add_property_routes(r, admin, access)
    add_namespace_policy_routes(r, admin, access)
    add_namespace_permission_routes(r, admin, access)
    return r


#: a namespace's one bundle: magnetar never splits namespaces (Pulsar's full hash range)
FULL_BUNDLE = "0x00000000_0xffffffff"


def _add_namespace_operations(r: APIRouter, admin: BrokerAdmin, access: AccessGuard) -> None:
    """Namespace-wide operations: bundles, unload, clear backlog, unsubscribe (over every topic)."""
    name = admin.ctx.namespace_name
    topics, subscriptions = admin.topics, admin.subscriptions

    async def topics_of(ns: str) -> list:
        return [admin.ctx.parse_topic(t) for t in await admin.namespaces.namespace_topics(ns, "ALL")]

    @r.get("/{tenant}/{namespace}/bundles", dependencies=[access.namespace(NamespaceOperation.GET_BUNDLE)],
           summary="The namespace's bundles (one: the full hash range)")
    async def bundles(tenant: str, namespace: str) -> dict:
        await admin.ctx.namespace_read(name(tenant, namespace))
        return {"boundaries": FULL_BUNDLE.split("_"), "numBundles": 1}

    async def unload_namespace(tenant: str, namespace: str, bundle: str = FULL_BUNDLE) -> Response:
        if bundle != FULL_BUNDLE:
            raise HttpError(404, f"Bundle {bundle} not found: the namespace has one bundle, {FULL_BUNDLE}")
        for tn in await topics_of(name(tenant, namespace)):
            await topics.unload(tn)
        return Response(status_code=204)

    for path in ("/{tenant}/{namespace}/unload", "/{tenant}/{namespace}/{bundle}/unload"):
        r.add_api_route(path, unload_namespace, methods=["PUT"], status_code=204, dependencies=[access.super_user()],
                        summary="Unload the namespace's topics (their clients reconnect)")

    async def clear_backlog(tenant: str, namespace: str, sub: str | None = None) -> Response:
        for tn in await topics_of(name(tenant, namespace)):
            if tn.persistent:
                names = [sub] if sub is not None else await subscriptions.list_subscriptions(tn)
                for each in names:
                    if each in await subscriptions.list_subscriptions(tn):
                        await subscriptions.skip_all(tn, each)
        return Response(status_code=204)

    for path in ("/{tenant}/{namespace}/clearBacklog", "/{tenant}/{namespace}/clearBacklog/{sub}"):
        r.add_api_route(path, clear_backlog, methods=["POST"], status_code=204,
                        dependencies=[access.namespace(NamespaceOperation.CLEAR_BACKLOG)],
                        summary="Clear the backlog of every (or one) subscription on the namespace's topics")

    @r.post("/{tenant}/{namespace}/unsubscribe/{sub}", status_code=204,
            dependencies=[access.namespace(NamespaceOperation.UNSUBSCRIBE)],
            summary="Delete a subscription from every topic of the namespace")
    async def unsubscribe(tenant: str, namespace: str, sub: str) -> Response:
        for tn in await topics_of(name(tenant, namespace)):
            if sub in await subscriptions.list_subscriptions(tn):
                await subscriptions.delete_subscription(tn, sub)
        return Response(status_code=204)


def _text(value: str | None) -> Response:
    """A property's value as Pulsar answers it: the text itself, or 204 when there is none."""
    return Response(status_code=204) if value is None else PlainTextResponse(value)


def _add_property_routes(r: APIRouter, admin: BrokerAdmin, access: AccessGuard) -> None:
    """A namespace's properties: set-property, get-property, remove-property, set-properties,
    get-properties, clear-properties."""
    name = admin.ctx.namespace_name
    props = admin.namespace_properties
    job = admin.ctx.write
    read, write = [access.namespace_policy(write=False)], [access.namespace_policy(write=True)]
    one = "/{tenant}/{namespace}/property/{key}"
    every = "/{tenant}/{namespace}/properties"

    @r.put(one + "/{value}", status_code=204, dependencies=write, summary="Set one property of the namespace")
    async def set_property(tenant: str, namespace: str, key: str, value: str) -> Response:
        await job(props.put_all, name(tenant, namespace), {key: value})
        return Response(status_code=204)

    @r.get(one, dependencies=read, summary="One property of the namespace (204 when not set)")
    async def get_property(tenant: str, namespace: str, key: str) -> Response:
        return _text(await props.get(name(tenant, namespace), key))

    @r.delete(one, dependencies=write, summary="Remove one property of the namespace: its old value")
    async def remove_property(tenant: str, namespace: str, key: str) -> Response:
        return _text(await job(props.remove, name(tenant, namespace), key))

    @r.put(every, status_code=204, dependencies=write, summary="Add or replace properties of the namespace")
    async def set_properties(tenant: str, namespace: str, properties: Annotated[dict[str, str], Body()]) -> Response:
        await job(props.put_all, name(tenant, namespace), properties)
        return Response(status_code=204)

    @r.get(every, dependencies=read, summary="The namespace's properties")
    async def get_properties(tenant: str, namespace: str) -> dict[str, str]:
        return await props.get_all(name(tenant, namespace))

    @r.delete(every, status_code=204, dependencies=write, summary="Remove every property of the namespace")
    async def clear_properties(tenant: str, namespace: str) -> Response:
        await job(props.clear, name(tenant, namespace))
        return Response(status_code=204)
