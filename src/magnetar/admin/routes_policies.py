"""Policy routes of namespaces and topics: GET / POST / DELETE per registry entry, plus the few
policies whose REST shape differs (schema compatibility strategy, backlog quotas, a topic's TTL).

Which policies exist and their path segments come from :mod:`magnetar.broker.policies.registry`;
only the body models (:mod:`.models`) are HTTP's own.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Response
from pydantic import BaseModel, StrictBool, StrictInt

from magnetar.admin.access import AccessGuard
from magnetar.admin.errors import HttpError
from magnetar.admin.models import (
    AutoTopicCreationOverride,
    BacklogQuota,
    DelayedDeliveryPolicies,
    RetentionPolicies,
    dump,
)
from magnetar.broker.policies.registry import (
    BACKLOG_QUOTAS,
    MESSAGE_TTL,
    NAMESPACE,
    SCHEMA_COMPATIBILITY,
    TOPIC,
    Policy,
    on_scope,
)
from magnetar.broker.resources.admin import BrokerAdmin

T = "/{tenant}/{namespace}/{topic}"

#: the request body model of each policy value shape
BODY_TYPES: dict[str, Any] = {
    "int": StrictInt,
    "seconds": StrictInt,
    "bool": StrictBool,
    "retention": RetentionPolicies,
    "delayed_delivery": DelayedDeliveryPolicies,
    "auto_topic_creation": AutoTopicCreationOverride,
    # rate limits and inactive topics: Pulsar's objects, checked field by field by the registry's validators
    "publish_rate": dict[str, Any],
    "dispatch_rate": dict[str, Any],
    "subscribe_rate": dict[str, Any],
    "inactive_topic_policies": dict[str, Any],
}


def _value(body: Any) -> Any:
    return dump(body) if isinstance(body, BaseModel) else body


def _no_content() -> Response:
    return Response(status_code=204)


def _generic(scope: str) -> list[Policy]:
    return [p for p in on_scope(scope) if p.scope(scope).generic_routes]  # type: ignore[union-attr]


# -- namespaces ---------------------------------------------------------------------------
def _add_namespace_policy(
    r: APIRouter, admin: BrokerAdmin, access: AccessGuard, path: str, key: str, body_type: Any
) -> None:
    route = f"/{{tenant}}/{{namespace}}/{path}"
    name = admin.ctx.namespace_name
    policies = admin.policies

    async def get_policy(tenant: str, namespace: str) -> Any:
        return policies.get_namespace_policy(name(tenant, namespace), key)

    async def set_policy(tenant: str, namespace: str, value: Annotated[body_type, Body()]) -> Response:
        policies.set_namespace_policy(name(tenant, namespace), key, _value(value))
        return Response(status_code=204)

    async def remove_policy(tenant: str, namespace: str) -> Response:
        policies.remove_namespace_policy(name(tenant, namespace), key)
        return Response(status_code=204)

    read, write = [access.namespace_policy(write=False)], [access.namespace_policy(write=True)]
    r.add_api_route(
        route, get_policy, methods=["GET"], dependencies=read, name=f"get_namespace_{path}", summary=f"Get {path}"
    )
    if path == "compactionThreshold":  # pulsar-admin sets this one with PUT (Pulsar's route), the others with POST
        r.add_api_route(route, set_policy, methods=["PUT"], status_code=204, dependencies=write,
                        name=f"put_namespace_{path}", summary=f"Set {path} (PUT, as Pulsar)")
    r.add_api_route(
        route, set_policy, methods=["POST"], status_code=204, dependencies=write, name=f"set_namespace_{path}",
        summary=f"Set {path}",
    )
    r.add_api_route(
        route, remove_policy, methods=["DELETE"], status_code=204, dependencies=write,
        name=f"remove_namespace_{path}", summary=f"Remove {path}",
    )


def add_namespace_policy_routes(r: APIRouter, admin: BrokerAdmin, access: AccessGuard) -> None:
    """Every namespace policy route on the /admin/v2/namespaces router ``r``."""
    for policy in _generic(NAMESPACE):
        _add_namespace_policy(r, admin, access, policy.namespace.path, policy.name, BODY_TYPES[policy.shape])  # type: ignore[union-attr]
    name = admin.ctx.namespace_name
    policies = admin.policies
    read, write = [access.namespace_policy(write=False)], [access.namespace_policy(write=True)]

    @r.get("/{tenant}/{namespace}/schemaCompatibilityStrategy", dependencies=read, summary="Get the schema compatibility strategy")
    async def get_schema_strategy(tenant: str, namespace: str) -> str:
        return policies.get_namespace_policy(name(tenant, namespace), SCHEMA_COMPATIBILITY.name) or "UNDEFINED"

    @r.put("/{tenant}/{namespace}/schemaCompatibilityStrategy", status_code=204, dependencies=write,
           summary="Set the schema compatibility strategy")
    async def set_schema_strategy(tenant: str, namespace: str, strategy: Annotated[str, Body()]) -> Response:
        policies.set_namespace_policy(name(tenant, namespace), SCHEMA_COMPATIBILITY.name, strategy)
        return Response(status_code=204)

    @r.get("/{tenant}/{namespace}/backlogQuotaMap", dependencies=read, summary="Get the backlog quotas")
    async def get_backlog_quotas(tenant: str, namespace: str) -> dict:
        return policies.get_namespace_policy(name(tenant, namespace), BACKLOG_QUOTAS.name) or {}

    @r.post("/{tenant}/{namespace}/backlogQuota", status_code=204, dependencies=write, summary="Set a backlog quota")
    async def set_backlog_quota(
        tenant: str,
        namespace: str,
        quota: Annotated[BacklogQuota, Body()],
        backlogQuotaType: str = "destination_storage",  # noqa: N803 - Pulsar's parameter name
    ) -> Response:
        policies.set_namespace_backlog_quota(name(tenant, namespace), backlogQuotaType, dump(quota) or {})
        return Response(status_code=204)

    @r.delete("/{tenant}/{namespace}/backlogQuota", status_code=204, dependencies=write, summary="Remove a backlog quota")
    async def remove_backlog_quota(
        tenant: str, namespace: str, backlogQuotaType: str = "destination_storage"  # noqa: N803
    ) -> Response:
        policies.remove_namespace_backlog_quota(name(tenant, namespace), backlogQuotaType)
        return Response(status_code=204)


# -- topics -------------------------------------------------------------------------------
def _add_topic_policy(
    r: APIRouter, admin: BrokerAdmin, access: AccessGuard, domain: str, path: str, key: str, body_type: Any
) -> None:
    route = f"{T}/{path}"
    ident = f"{domain.replace('-', '_')}_{path}"
    policies = admin.policies
    topic_name = admin.ctx.topic_name

    async def get_policy(tenant: str, namespace: str, topic: str, applied: bool = False) -> Any:
        return policies.get_topic_policy(topic_name(domain, tenant, namespace, topic), key, applied)

    async def set_policy(tenant: str, namespace: str, topic: str, value: Annotated[body_type, Body()]) -> Response:
        policies.set_topic_policy(topic_name(domain, tenant, namespace, topic), key, _value(value))
        return _no_content()

    async def remove_policy(tenant: str, namespace: str, topic: str) -> Response:
        policies.remove_topic_policy(topic_name(domain, tenant, namespace, topic), key)
        return _no_content()

    read, write = [access.topic_policy(False, domain)], [access.topic_policy(True, domain)]
    r.add_api_route(
        route, get_policy, methods=["GET"], dependencies=read, name=f"get_topic_{ident}",
        summary=f"Get the topic's {path}",
    )
    r.add_api_route(
        route, set_policy, methods=["POST"], status_code=204, dependencies=write, name=f"set_topic_{ident}",
        summary=f"Set the topic's {path}",
    )
    r.add_api_route(
        route, remove_policy, methods=["DELETE"], status_code=204, dependencies=write, name=f"remove_topic_{ident}",
        summary=f"Remove the topic's {path}",
    )


def add_topic_policy_routes(r: APIRouter, admin: BrokerAdmin, access: AccessGuard, domain: str) -> None:
    """Every topic policy route on the topic router of ``domain``."""
    for policy in _generic(TOPIC):
        _add_topic_policy(r, admin, access, domain, policy.topic.path, policy.name, BODY_TYPES[policy.shape])  # type: ignore[union-attr]
    read, write = [access.topic_policy(False, domain)], [access.topic_policy(True, domain)]
    _add_topic_ttl_routes(r, admin, domain, read, write)
    _add_topic_strategy_routes(r, admin, domain, read, write)
    _add_topic_quota_routes(r, admin, domain, read, write)


def _add_topic_ttl_routes(r: APIRouter, admin: BrokerAdmin, domain: str, read: list, write: list) -> None:
    policies = admin.policies

    def name(tenant: str, namespace: str, topic: str):  # noqa: ANN202 - TopicName
        return admin.ctx.topic_name(domain, tenant, namespace, topic)

    @r.get(T + "/messageTTL", dependencies=read, summary="Get the topic's message TTL")
    async def get_ttl(tenant: str, namespace: str, topic: str, applied: bool = False) -> Any:
        return policies.get_topic_policy(name(tenant, namespace, topic), MESSAGE_TTL.name, applied)

    @r.post(T + "/messageTTL", status_code=204, dependencies=write, summary="Set the topic's message TTL (query messageTTL, or body)")
    async def set_ttl(
        tenant: str,
        namespace: str,
        topic: str,
        messageTTL: int | None = None,  # noqa: N803
        body: Annotated[StrictInt | None, Body()] = None,
    ) -> Response:
        value = messageTTL if messageTTL is not None else body
        if value is None:
            raise HttpError(412, "Invalid parameter: messageTTL is required")
        policies.set_topic_policy(name(tenant, namespace, topic), MESSAGE_TTL.name, value)
        return _no_content()

    @r.delete(T + "/messageTTL", status_code=204, dependencies=write, summary="Remove the topic's message TTL")
    async def remove_ttl(tenant: str, namespace: str, topic: str) -> Response:
        policies.remove_topic_policy(name(tenant, namespace, topic), MESSAGE_TTL.name)
        return _no_content()


def _add_topic_strategy_routes(r: APIRouter, admin: BrokerAdmin, domain: str, read: list, write: list) -> None:
    policies = admin.policies
    key = SCHEMA_COMPATIBILITY.name

    def name(tenant: str, namespace: str, topic: str):  # noqa: ANN202 - TopicName
        return admin.ctx.topic_name(domain, tenant, namespace, topic)

    @r.get(T + "/schemaCompatibilityStrategy", dependencies=read, summary="Get the topic's schema compatibility strategy")
    async def get_strategy(tenant: str, namespace: str, topic: str, applied: bool = False) -> Any:
        return policies.get_topic_policy(name(tenant, namespace, topic), key, applied)

    @r.put(T + "/schemaCompatibilityStrategy", status_code=204, dependencies=write,
           summary="Set the topic's schema compatibility strategy")
    async def set_strategy(tenant: str, namespace: str, topic: str, strategy: Annotated[str, Body()]) -> Response:
        policies.set_topic_policy(name(tenant, namespace, topic), key, strategy)
        return _no_content()

    @r.delete(T + "/schemaCompatibilityStrategy", status_code=204, dependencies=write,
              summary="Remove the topic's schema compatibility strategy")
    async def remove_strategy(tenant: str, namespace: str, topic: str) -> Response:
        policies.remove_topic_policy(name(tenant, namespace, topic), key)
        return _no_content()


def _add_topic_quota_routes(r: APIRouter, admin: BrokerAdmin, domain: str, read: list, write: list) -> None:
    policies = admin.policies

    def name(tenant: str, namespace: str, topic: str):  # noqa: ANN202 - TopicName
        return admin.ctx.topic_name(domain, tenant, namespace, topic)

    @r.get(T + "/backlogQuotaMap", dependencies=read, summary="Get the topic's backlog quotas")
    async def get_quotas(tenant: str, namespace: str, topic: str, applied: bool = False) -> dict:
        return policies.get_topic_policy(name(tenant, namespace, topic), BACKLOG_QUOTAS.name, applied) or {}

    @r.post(T + "/backlogQuota", status_code=204, dependencies=write, summary="Set a topic backlog quota")
    async def set_quota(
        tenant: str,
        namespace: str,
        topic: str,
        quota: Annotated[BacklogQuota, Body()],
        backlogQuotaType: str = "destination_storage",  # noqa: N803
    ) -> Response:
        policies.set_topic_backlog_quota(name(tenant, namespace, topic), backlogQuotaType, dump(quota) or {})
        return _no_content()

    @r.delete(T + "/backlogQuota", status_code=204, dependencies=write, summary="Remove a topic backlog quota")
    async def remove_quota(
        tenant: str, namespace: str, topic: str, backlogQuotaType: str = "destination_storage"  # noqa: N803
    ) -> Response:
        policies.remove_topic_backlog_quota(name(tenant, namespace, topic), backlogQuotaType)
        return _no_content()
