"""/admin/v2/namespaces: namespaces, their topics and their policies."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Response
from pydantic import BaseModel, StrictBool, StrictInt

from magnetar.admin.models import (
    AutoTopicCreationOverride,
    BacklogQuota,
    DelayedDeliveryPolicies,
    RetentionPolicies,
    dump,
)
from magnetar.broker.admin import BrokerAdmin

#: (path segment, Pulsar Policies field, body type) of the policies with GET / POST / DELETE
NAMESPACE_POLICIES: list[tuple[str, str, Any]] = [
    ("retention", "retention_policies", RetentionPolicies),
    ("messageTTL", "message_ttl_in_seconds", StrictInt),
    ("deduplication", "deduplicationEnabled", StrictBool),
    ("maxProducersPerTopic", "max_producers_per_topic", StrictInt),
    ("maxConsumersPerSubscription", "max_consumers_per_subscription", StrictInt),
    ("maxUnackedMessagesPerConsumer", "max_unacked_messages_per_consumer", StrictInt),
    ("subscriptionExpirationTime", "subscription_expiration_time_minutes", StrictInt),
    ("delayedDelivery", "delayed_delivery_policies", DelayedDeliveryPolicies),
    ("autoTopicCreation", "autoTopicCreationOverride", AutoTopicCreationOverride),
    ("compactionThreshold", "compaction_threshold", StrictInt),
]


def _value(body: Any) -> Any:
    return dump(body) if isinstance(body, BaseModel) else body


def _add_policy(r: APIRouter, admin: BrokerAdmin, path: str, key: str, body_type: Any) -> None:
    route = f"/{{tenant}}/{{namespace}}/{path}"

    async def get_policy(tenant: str, namespace: str) -> Any:
        return admin.get_namespace_policy(admin.namespace_name(tenant, namespace), key)

    async def set_policy(tenant: str, namespace: str, value: Annotated[body_type, Body()]) -> Response:
        admin.set_namespace_policy(admin.namespace_name(tenant, namespace), key, _value(value))
        return Response(status_code=204)

    async def remove_policy(tenant: str, namespace: str) -> Response:
        admin.remove_namespace_policy(admin.namespace_name(tenant, namespace), key)
        return Response(status_code=204)

    r.add_api_route(route, get_policy, methods=["GET"], name=f"get_namespace_{path}", summary=f"Get {path}")
    r.add_api_route(
        route, set_policy, methods=["POST"], status_code=204, name=f"set_namespace_{path}", summary=f"Set {path}"
    )
    r.add_api_route(
        route, remove_policy, methods=["DELETE"], status_code=204, name=f"remove_namespace_{path}", summary=f"Remove {path}"
    )


def router(admin: BrokerAdmin) -> APIRouter:
    """Namespace routes over ``admin``."""
    r = APIRouter(prefix="/admin/v2/namespaces", tags=["namespaces"])

    @r.get("/{tenant}", summary="List the namespaces of a tenant")
    async def list_namespaces(tenant: str) -> list[str]:
        return admin.list_namespaces(tenant)

    @r.put("/{tenant}/{namespace}", status_code=204, summary="Create a namespace")
    async def create_namespace(
        tenant: str, namespace: str, policies: Annotated[dict[str, Any] | None, Body()] = None
    ) -> Response:
        admin.create_namespace(admin.namespace_name(tenant, namespace), policies)
        return Response(status_code=204)

    @r.get("/{tenant}/{namespace}", summary="Get a namespace's policies")
    async def get_policies(tenant: str, namespace: str) -> dict:
        return admin.get_namespace_policies(admin.namespace_name(tenant, namespace))

    @r.delete("/{tenant}/{namespace}", status_code=204, summary="Delete an empty namespace (or all of it with force)")
    async def delete_namespace(tenant: str, namespace: str, force: bool = False) -> Response:
        await admin.delete_namespace(admin.namespace_name(tenant, namespace), force)
        return Response(status_code=204)

    @r.get("/{tenant}/{namespace}/topics", summary="List the topics of a namespace")
    async def namespace_topics(tenant: str, namespace: str, mode: str = "PERSISTENT") -> list[str]:
        return admin.namespace_topics(admin.namespace_name(tenant, namespace), mode)

    for path, key, body_type in NAMESPACE_POLICIES:
        _add_policy(r, admin, path, key, body_type)

    @r.get("/{tenant}/{namespace}/schemaCompatibilityStrategy", summary="Get the schema compatibility strategy")
    async def get_schema_strategy(tenant: str, namespace: str) -> str:
        value = admin.get_namespace_policy(admin.namespace_name(tenant, namespace), "schema_compatibility_strategy")
        return value or "UNDEFINED"

    @r.put("/{tenant}/{namespace}/schemaCompatibilityStrategy", status_code=204, summary="Set the schema compatibility strategy")
    async def set_schema_strategy(tenant: str, namespace: str, strategy: Annotated[str, Body()]) -> Response:
        admin.set_namespace_policy(admin.namespace_name(tenant, namespace), "schema_compatibility_strategy", strategy)
        return Response(status_code=204)

    @r.get("/{tenant}/{namespace}/backlogQuotaMap", summary="Get the backlog quotas")
    async def get_backlog_quotas(tenant: str, namespace: str) -> dict:
        value = admin.get_namespace_policy(admin.namespace_name(tenant, namespace), "backlog_quota_map")
        return value or {}

    @r.post("/{tenant}/{namespace}/backlogQuota", status_code=204, summary="Set a backlog quota")
    async def set_backlog_quota(
        tenant: str,
        namespace: str,
        quota: Annotated[BacklogQuota, Body()],
        backlogQuotaType: str = "destination_storage",  # noqa: N803 - Pulsar's parameter name
    ) -> Response:
        admin.set_namespace_backlog_quota(admin.namespace_name(tenant, namespace), backlogQuotaType, dump(quota) or {})
        return Response(status_code=204)

    @r.delete("/{tenant}/{namespace}/backlogQuota", status_code=204, summary="Remove a backlog quota")
    async def remove_backlog_quota(
        tenant: str, namespace: str, backlogQuotaType: str = "destination_storage"  # noqa: N803
    ) -> Response:
        admin.remove_namespace_backlog_quota(admin.namespace_name(tenant, namespace), backlogQuotaType)
        return Response(status_code=204)

    return r
