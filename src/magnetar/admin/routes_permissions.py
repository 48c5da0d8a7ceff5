"""Permission routes as pulsar-admin calls them: namespace, subscription and topic grants.

``/admin/v2/namespaces/{tenant}/{namespace}/permissions[/{role}]``,
``/admin/v2/namespaces/{tenant}/{namespace}/permissions/subscription[/{subscription}]``,
``/admin/v2/namespaces/{tenant}/{namespace}/permissions/{subscription}/{role}`` (revoke a subscription
role) and ``/admin/v2/{domain}/{tenant}/{namespace}/{topic}/permissions[/{role}]``. A grant's body is
the list of actions (``["produce", "consume"]``), a subscription grant's body the list of roles.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Response

from magnetar.admin.access import AccessGuard
from magnetar.broker.resources.admin import BrokerAdmin
from magnetar.broker.security import NamespaceOperation, TopicOperation

NS = "/{tenant}/{namespace}/permissions"
T = "/{tenant}/{namespace}/{topic}/permissions"


def _no_content() -> Response:
    return Response(status_code=204)


def add_namespace_permission_routes(r: APIRouter, admin: BrokerAdmin, access: AccessGuard) -> None:
    """Namespace and subscription permission routes on the /admin/v2/namespaces router ``r``."""
    permissions = admin.permissions
    name = admin.ctx.namespace_name
    read = [access.namespace(NamespaceOperation.GET_PERMISSION)]
    grant = [access.namespace(NamespaceOperation.GRANT_PERMISSION)]
    revoke = [access.namespace(NamespaceOperation.REVOKE_PERMISSION)]

    @r.get(NS, dependencies=read, summary="Roles and the actions granted to them on the namespace")
    async def get_permissions(tenant: str, namespace: str) -> dict[str, list[str]]:
        return await permissions.namespace_permissions(name(tenant, namespace))

    @r.get(NS + "/subscription", dependencies=read, summary="Subscriptions and the roles allowed to consume from them")
    async def get_subscription_permissions(tenant: str, namespace: str) -> dict[str, list[str]]:
        return await permissions.subscription_permissions(name(tenant, namespace))

    @r.post(NS + "/subscription/{subscription}", status_code=204, dependencies=grant,
            summary="Allow only these roles to consume from a subscription (body: the roles)")
    async def grant_on_subscription(
        tenant: str, namespace: str, subscription: str, roles: Annotated[list[str], Body()]
    ) -> Response:
        await admin.ctx.write(permissions.grant_on_subscription, name(tenant, namespace), subscription, roles)
        return _no_content()

    @r.delete(NS + "/{subscription}/{role}", status_code=204, dependencies=revoke,
              summary="Remove a role from a subscription's roles")
    async def revoke_on_subscription(tenant: str, namespace: str, subscription: str, role: str) -> Response:
        await admin.ctx.write(permissions.revoke_on_subscription, name(tenant, namespace), subscription, role)
        return _no_content()

    @r.post(NS + "/{role}", status_code=204, dependencies=grant,
            summary="Grant a role actions on the namespace (body: the actions, e.g. [\"produce\", \"consume\"])")
    async def grant_on_namespace(
        tenant: str, namespace: str, role: str, actions: Annotated[list[str], Body()]
    ) -> Response:
        await admin.ctx.write(permissions.grant_on_namespace, name(tenant, namespace), role, actions)
        return _no_content()

    @r.delete(NS + "/{role}", status_code=204, dependencies=revoke, summary="Revoke a role's grant on the namespace")
    async def revoke_on_namespace(tenant: str, namespace: str, role: str) -> Response:
        await admin.ctx.write(permissions.revoke_on_namespace, name(tenant, namespace), role)
        return _no_content()


def add_topic_permission_routes(r: APIRouter, admin: BrokerAdmin, access: AccessGuard, domain: str) -> None:
    """Topic permission routes on the topic router of ``domain``."""
    permissions = admin.permissions
    topic_name = admin.ctx.topic_name

    @r.get(T, dependencies=[access.topic(TopicOperation.GET_PERMISSION, domain)],
           summary="Roles and their actions on the topic (the namespace's grants included)")
    async def get_topic_permissions(tenant: str, namespace: str, topic: str) -> dict[str, list[str]]:
        return await permissions.topic_permissions(topic_name(domain, tenant, namespace, topic))

    @r.post(T + "/{role}", status_code=204, dependencies=[access.topic(TopicOperation.GRANT_PERMISSION, domain)],
            summary="Grant a role actions on the topic (body: the actions)")
    async def grant_on_topic(
        tenant: str, namespace: str, topic: str, role: str, actions: Annotated[list[str], Body()]
    ) -> Response:
        await admin.ctx.write(permissions.grant_on_topic, topic_name(domain, tenant, namespace, topic), role, actions)
        return _no_content()

    @r.delete(T + "/{role}", status_code=204, dependencies=[access.topic(TopicOperation.REVOKE_PERMISSION, domain)],
              summary="Revoke a role's grant on the topic")
    async def revoke_on_topic(tenant: str, namespace: str, topic: str, role: str) -> Response:
        await admin.ctx.write(permissions.revoke_on_topic, topic_name(domain, tenant, namespace, topic), role)
        return _no_content()
