"""Policy routes of namespaces and topics: GET / POST / DELETE per registry entry, plus the few
policies whose REST shape differs (schema compatibility strategy, backlog quotas, a topic's TTL).

Which policies exist and their path segments come from :mod:`magnetar.broker.policies.registry`;
only the body models (:mod:`.models`) are HTTP's own.
"""

import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Body, Request, Response
from pydantic import BaseModel, StrictBool, StrictInt

from magnetar.admin.access import AccessGuard
from magnetar.admin.errors import HttpError
from magnetar.admin.models import (
    AutoTopicCreationOverride,
    BacklogQuota,
    DelayedDeliveryPolicies,
    JavaLong,
    RetentionPolicies,
    dump,
)
from magnetar.broker.policies.registry import (
    BACKLOG_QUOTAS,
    MESSAGE_TTL,
    NAMESPACE,
    RESOURCE_GROUP,
    SCHEMA_COMPATIBILITY,
    TOPIC,
    Policy,
    Scope,
    on_scope,
)
from magnetar.broker.resources.admin import BrokerAdmin

T = "/{tenant}/{namespace}/{topic}"

#: the request body model of each policy value shape ("text" and "flag" bodies are read by hand)
BODY_TYPES: dict[str, Any] = {
    "int": StrictInt,
    "seconds": StrictInt,
    "long": JavaLong,
    "bool": StrictBool,
    "name": str,
    "retention": RetentionPolicies,
    "delayed_delivery": DelayedDeliveryPolicies,
    "auto_topic_creation": AutoTopicCreationOverride,
    "persistence": dict[str, Any],
    "auto_subscription_creation": dict[str, Any],
    "offload_policies": dict[str, Any],
    "bookie_affinity": dict[str, Any],
    "entry_filters": dict[str, Any],
    "sub_types": list[str],
    "cluster_list": list[str],
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


async def _text_body(request: Request) -> str | None:
    """A plain-string body as pulsar-admin sends it (raw text; a JSON string is accepted too)."""
    raw = (await request.body()).decode("utf-8", "replace").strip()
    if raw.startswith('"'):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise HttpError(400, "Invalid body: a string was expected") from None
    return raw or None


def _shown(policy: Policy, value: Any) -> Any:
    """A GET's response: a "text" policy comes back as raw text (204 when unset), as Pulsar's String."""
    if policy.shape != "text":
        return value
    if value is None:
        return _no_content()
    return Response(content=str(value), media_type="application/json")


def _set_endpoint(policy: Policy, where: Scope, params: list[inspect.Parameter],
                  apply: Callable[..., Awaitable[None]]) -> Any:
    """The set endpoint of ``policy``: reads its body as the shape says, then awaits ``apply(*path, value)``;
    ``params`` are the path parameters. A null body removes the policy when ``where.null_removes``."""

    async def set_policy(**kwargs: Any) -> Response:
        path = [kwargs[p.name] for p in params]
        if policy.shape == "flag":
            value: Any = True
        elif policy.shape == "text":
            value = await _text_body(kwargs["request"])
        else:
            value = _value(kwargs.get("value"))
        await apply(*path, value)
        return _no_content()

    extra: list[inspect.Parameter] = []
    if policy.shape == "text":
        extra.append(inspect.Parameter("request", inspect.Parameter.KEYWORD_ONLY, annotation=Request))
    elif policy.shape != "flag":
        body_type = BODY_TYPES[policy.shape]
        if where.null_removes:
            extra.append(inspect.Parameter(
                "value", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[body_type | None, Body()], default=None
            ))
        else:
            extra.append(inspect.Parameter("value", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[body_type, Body()]))
    set_policy.__signature__ = inspect.Signature([*params, *extra], return_annotation=Response)  # type: ignore[attr-defined]
    return set_policy


_NS_PARAMS = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=str) for n in ("tenant", "namespace")]
_TOPIC_PARAMS = [
    inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=str) for n in ("tenant", "namespace", "topic")
]


# -- namespaces ---------------------------------------------------------------------------
def _add_namespace_policy(r: APIRouter, admin: BrokerAdmin, access: AccessGuard, policy: Policy) -> None:
    where = policy.namespace
    assert where is not None
    path, key = where.path, policy.name
    route = f"/{{tenant}}/{{namespace}}/{path}"
    name = admin.ctx.namespace_name
    policies = admin.policies
    config = admin.ctx.config
    job = admin.ctx.write

    async def get_policy(tenant: str, namespace: str) -> Any:
        value = await policies.get_namespace_policy(name(tenant, namespace), key)
        if value is None and policy.unset is not None:
            value = policy.unset(config)
        return _shown(policy, value)

    async def apply(tenant: str, namespace: str, value: Any) -> None:
        if value is None and where.null_removes:
            await job(policies.remove_namespace_policy, name(tenant, namespace), key)
        else:
            await job(policies.set_namespace_policy, name(tenant, namespace), key, value)

    async def remove_policy(tenant: str, namespace: str) -> Response:
        await job(policies.remove_namespace_policy, name(tenant, namespace), key)
        return _no_content()

    read, write = [access.namespace_policy(write=False)], [access.namespace_policy(write=True)]
    r.add_api_route(
        route, get_policy, methods=["GET"], dependencies=read, name=f"get_namespace_{path}", summary=f"Get {path}"
    )
    set_policy = _set_endpoint(policy, where, _NS_PARAMS, apply)
    for method in where.set_methods:
        r.add_api_route(
            route, set_policy, methods=[method], status_code=204, dependencies=write,
            name=f"{method.lower()}_namespace_{path}", summary=f"Set {path}",
        )
    if where.remove_path != "":
        remove_route = f"/{{tenant}}/{{namespace}}/{where.remove_path or path}"
        r.add_api_route(
            remove_route, remove_policy, methods=["DELETE"], status_code=204, dependencies=write,
            name=f"remove_namespace_{path}", summary=f"Remove {path}",
        )


def add_namespace_policy_routes(r: APIRouter, admin: BrokerAdmin, access: AccessGuard) -> None:
    """Every namespace policy route on the /admin/v2/namespaces router ``r``."""
    for policy in _generic(NAMESPACE):
        _add_namespace_policy(r, admin, access, policy)
    name = admin.ctx.namespace_name
    policies = admin.policies
    job = admin.ctx.write
    read, write = [access.namespace_policy(write=False)], [access.namespace_policy(write=True)]

    @r.get("/{tenant}/{namespace}/schemaCompatibilityStrategy", dependencies=read, summary="Get the schema compatibility strategy")
    async def get_schema_strategy(tenant: str, namespace: str) -> str:
        return await policies.get_namespace_policy(name(tenant, namespace), SCHEMA_COMPATIBILITY.name) or "UNDEFINED"

    @r.put("/{tenant}/{namespace}/schemaCompatibilityStrategy", status_code=204, dependencies=write,
           summary="Set the schema compatibility strategy")
    async def set_schema_strategy(tenant: str, namespace: str, strategy: Annotated[str, Body()]) -> Response:
        await job(policies.set_namespace_policy, name(tenant, namespace), SCHEMA_COMPATIBILITY.name, strategy)
        return Response(status_code=204)

    @r.post("/{tenant}/{namespace}/resourcegroup/{group}", status_code=204, dependencies=write,
            summary="Set the resource group (none exist here: refused as Pulsar refuses an unknown group)")
    async def set_resource_group(tenant: str, namespace: str, group: str) -> Response:
        await policies.get_namespace_policy(name(tenant, namespace), RESOURCE_GROUP.name)  # 404 first
        raise HttpError(412, "ResourceGroup does not exist")

    @r.get("/{tenant}/{namespace}/backlogQuotaMap", dependencies=read, summary="Get the backlog quotas")
    async def get_backlog_quotas(tenant: str, namespace: str) -> dict:
        return await policies.get_namespace_policy(name(tenant, namespace), BACKLOG_QUOTAS.name) or {}

    @r.post("/{tenant}/{namespace}/backlogQuota", status_code=204, dependencies=write, summary="Set a backlog quota")
    async def set_backlog_quota(
        tenant: str,
        namespace: str,
        quota: Annotated[BacklogQuota, Body()],
        backlogQuotaType: str = "destination_storage",  # noqa: N803 - Pulsar's parameter name
    ) -> Response:
        await job(policies.set_namespace_backlog_quota, name(tenant, namespace), backlogQuotaType, dump(quota) or {})
        return Response(status_code=204)

    @r.delete("/{tenant}/{namespace}/backlogQuota", status_code=204, dependencies=write, summary="Remove a backlog quota")
    async def remove_backlog_quota(
        tenant: str, namespace: str, backlogQuotaType: str = "destination_storage"  # noqa: N803
    ) -> Response:
        await job(policies.remove_namespace_backlog_quota, name(tenant, namespace), backlogQuotaType)
        return Response(status_code=204)


# -- topics -------------------------------------------------------------------------------
def _add_topic_policy(r: APIRouter, admin: BrokerAdmin, access: AccessGuard, domain: str, policy: Policy) -> None:
    where = policy.topic
    assert where is not None
    path, key = where.path, policy.name
    route = f"{T}/{path}"
    ident = f"{domain.replace('-', '_')}_{path}"
    policies = admin.policies
    topic_name = admin.ctx.topic_name
    job = admin.ctx.write

    async def get_policy(tenant: str, namespace: str, topic: str, applied: bool = False) -> Any:
        return _shown(policy, await policies.get_topic_policy(topic_name(domain, tenant, namespace, topic), key, applied))

    async def apply(tenant: str, namespace: str, topic: str, value: Any) -> None:
        tn = topic_name(domain, tenant, namespace, topic)
        if value is None and where.null_removes:
            await job(policies.remove_topic_policy, tn, key)
        else:
            await job(policies.set_topic_policy, tn, key, value)

    async def remove_policy(tenant: str, namespace: str, topic: str) -> Response:
        await job(policies.remove_topic_policy, topic_name(domain, tenant, namespace, topic), key)
        return _no_content()

    read, write = [access.topic_policy(False, domain)], [access.topic_policy(True, domain)]
    r.add_api_route(
        route, get_policy, methods=["GET"], dependencies=read, name=f"get_topic_{ident}",
        summary=f"Get the topic's {path}",
    )
    set_policy = _set_endpoint(policy, where, _TOPIC_PARAMS, apply)
    for method in where.set_methods:
        r.add_api_route(
            route, set_policy, methods=[method], status_code=204, dependencies=write,
            name=f"{method.lower()}_topic_{ident}", summary=f"Set the topic's {path}",
        )
    if where.remove_path != "":
        r.add_api_route(
            f"{T}/{where.remove_path or path}", remove_policy, methods=["DELETE"], status_code=204, dependencies=write,
            name=f"remove_topic_{ident}", summary=f"Remove the topic's {path}",
        )


def add_topic_policy_routes(r: APIRouter, admin: BrokerAdmin, access: AccessGuard, domain: str) -> None:
    """Every topic policy route on the topic router of ``domain``."""
    for policy in _generic(TOPIC):
        _add_topic_policy(r, admin, access, domain, policy)
    read, write = [access.topic_policy(False, domain)], [access.topic_policy(True, domain)]
    _add_topic_ttl_routes(r, admin, domain, read, write)
    _add_topic_strategy_routes(r, admin, domain, read, write)
    _add_topic_quota_routes(r, admin, domain, read, write)
    _add_replicated_status_routes(r, admin, domain, read, write)


def _add_replicated_status_routes(r: APIRouter, admin: BrokerAdmin, domain: str, read: list, write: list) -> None:
    policies = admin.policies
    route = T + "/subscription/{subscription}/replicatedSubscriptionStatus"

    def name(tenant: str, namespace: str, topic: str):  # noqa: ANN202 - TopicName
        return admin.ctx.topic_name(domain, tenant, namespace, topic)

    @r.post(route, status_code=204, dependencies=write, summary="Replicate a subscription's state, or stop")
    async def set_status(
        tenant: str, namespace: str, topic: str, subscription: str, enabled: Annotated[StrictBool, Body()]
    ) -> Response:
        await policies.set_replicated_subscription(name(tenant, namespace, topic), subscription, enabled)
        return _no_content()

    @r.get(route, dependencies=read, summary="Whether a subscription's state is replicated, per partition")
    async def get_status(tenant: str, namespace: str, topic: str, subscription: str) -> dict[str, bool]:
        return await policies.replicated_subscription_status(name(tenant, namespace, topic), subscription)


def _add_topic_ttl_routes(r: APIRouter, admin: BrokerAdmin, domain: str, read: list, write: list) -> None:
    policies = admin.policies

    def name(tenant: str, namespace: str, topic: str):  # noqa: ANN202 - TopicName
        return admin.ctx.topic_name(domain, tenant, namespace, topic)

    @r.get(T + "/messageTTL", dependencies=read, summary="Get the topic's message TTL")
    async def get_ttl(tenant: str, namespace: str, topic: str, applied: bool = False) -> Any:
        return await policies.get_topic_policy(name(tenant, namespace, topic), MESSAGE_TTL.name, applied)

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
        await admin.ctx.write(policies.set_topic_policy, name(tenant, namespace, topic), MESSAGE_TTL.name, value)
        return _no_content()

    @r.delete(T + "/messageTTL", status_code=204, dependencies=write, summary="Remove the topic's message TTL")
    async def remove_ttl(tenant: str, namespace: str, topic: str) -> Response:
        await admin.ctx.write(policies.remove_topic_policy, name(tenant, namespace, topic), MESSAGE_TTL.name)
        return _no_content()


def _add_topic_strategy_routes(r: APIRouter, admin: BrokerAdmin, domain: str, read: list, write: list) -> None:
    policies = admin.policies
    key = SCHEMA_COMPATIBILITY.name

    def name(tenant: str, namespace: str, topic: str):  # noqa: ANN202 - TopicName
        return admin.ctx.topic_name(domain, tenant, namespace, topic)

    @r.get(T + "/schemaCompatibilityStrategy", dependencies=read, summary="Get the topic's schema compatibility strategy")
    async def get_strategy(tenant: str, namespace: str, topic: str, applied: bool = False) -> Any:
        return await policies.get_topic_policy(name(tenant, namespace, topic), key, applied)

    @r.put(T + "/schemaCompatibilityStrategy", status_code=204, dependencies=write,
           summary="Set the topic's schema compatibility strategy")
    async def set_strategy(tenant: str, namespace: str, topic: str, strategy: Annotated[str, Body()]) -> Response:
        await admin.ctx.write(policies.set_topic_policy, name(tenant, namespace, topic), key, strategy)
        return _no_content()

    @r.delete(T + "/schemaCompatibilityStrategy", status_code=204, dependencies=write,
              summary="Remove the topic's schema compatibility strategy")
    async def remove_strategy(tenant: str, namespace: str, topic: str) -> Response:
        await admin.ctx.write(policies.remove_topic_policy, name(tenant, namespace, topic), key)
        return _no_content()


def _add_topic_quota_routes(r: APIRouter, admin: BrokerAdmin, domain: str, read: list, write: list) -> None:
    policies = admin.policies

    def name(tenant: str, namespace: str, topic: str):  # noqa: ANN202 - TopicName
        return admin.ctx.topic_name(domain, tenant, namespace, topic)

    @r.get(T + "/backlogQuotaMap", dependencies=read, summary="Get the topic's backlog quotas")
    async def get_quotas(tenant: str, namespace: str, topic: str, applied: bool = False) -> dict:
        return await policies.get_topic_policy(name(tenant, namespace, topic), BACKLOG_QUOTAS.name, applied) or {}

    @r.post(T + "/backlogQuota", status_code=204, dependencies=write, summary="Set a topic backlog quota")
    async def set_quota(
        tenant: str,
        namespace: str,
        topic: str,
        quota: Annotated[BacklogQuota, Body()],
        backlogQuotaType: str = "destination_storage",  # noqa: N803
    ) -> Response:
        await admin.ctx.write(policies.set_topic_backlog_quota, name(tenant, namespace, topic), backlogQuotaType,
                              dump(quota) or {})
        return _no_content()

    @r.delete(T + "/backlogQuota", status_code=204, dependencies=write, summary="Remove a topic backlog quota")
    async def remove_quota(
        tenant: str, namespace: str, topic: str, backlogQuotaType: str = "destination_storage"  # noqa: N803
    ) -> Response:
        await admin.ctx.write(policies.remove_topic_backlog_quota, name(tenant, namespace, topic), backlogQuotaType)
        return _no_content()
