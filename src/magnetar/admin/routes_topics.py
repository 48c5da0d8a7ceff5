"""/admin/v2/persistent/... and /admin/v2/non-persistent/...: topics, partitions, subscriptions,
statistics, messages and topic policies. One router per domain, the same routes in each."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Response
from pydantic import BaseModel, StrictBool, StrictInt

from magnetar.admin.messages import entry_response
from magnetar.admin.models import (
    BacklogQuota,
    DelayedDeliveryPolicies,
    MessageIdData,
    RetentionPolicies,
    dump,
)
from magnetar.broker.admin import LATEST_LEDGER, AdminError, BrokerAdmin

T = "/{tenant}/{namespace}/{topic}"
S = T + "/subscription/{subName}"

#: (path segment, Pulsar Policies field, body type) of the topic policies with GET / POST / DELETE
TOPIC_POLICIES: list[tuple[str, str, Any]] = [
    ("retention", "retention_policies", RetentionPolicies),
    ("deduplicationEnabled", "deduplicationEnabled", StrictBool),
    ("maxProducers", "max_producers_per_topic", StrictInt),
    ("maxConsumersPerSubscription", "max_consumers_per_subscription", StrictInt),
    ("maxUnackedMessagesOnConsumer", "max_unacked_messages_per_consumer", StrictInt),
    ("delayedDelivery", "delayed_delivery_policies", DelayedDeliveryPolicies),
    ("compactionThreshold", "compaction_threshold", StrictInt),
]


def _no_content() -> Response:
    return Response(status_code=204)


def _position(text: str) -> tuple[int, int]:
    """A message id given as text: earliest, latest or ledger:entry."""
    value = text.strip().lower()
    if value == "earliest":
        return -1, -1
    if value == "latest":
        return LATEST_LEDGER, LATEST_LEDGER
    try:
        ledger, entry = value.split(":")[:2]
        return int(ledger), int(entry)
    except ValueError:
        raise AdminError(412, f"Invalid message id {text!r}: expected earliest, latest or ledgerId:entryId") from None


def _add_topic_policy(r: APIRouter, admin: BrokerAdmin, domain: str, path: str, key: str, body_type: Any) -> None:
    route = f"{T}/{path}"
    ident = f"{domain.replace('-', '_')}_{path}"

    async def get_policy(tenant: str, namespace: str, topic: str, applied: bool = False) -> Any:
        return admin.get_topic_policy(admin.topic_name(domain, tenant, namespace, topic), key, applied)

    async def set_policy(tenant: str, namespace: str, topic: str, value: Annotated[body_type, Body()]) -> Response:
        body = dump(value) if isinstance(value, BaseModel) else value
        admin.set_topic_policy(admin.topic_name(domain, tenant, namespace, topic), key, body)
        return _no_content()

    async def remove_policy(tenant: str, namespace: str, topic: str) -> Response:
        admin.remove_topic_policy(admin.topic_name(domain, tenant, namespace, topic), key)
        return _no_content()

    r.add_api_route(route, get_policy, methods=["GET"], name=f"get_topic_{ident}", summary=f"Get the topic's {path}")
    r.add_api_route(route, set_policy, methods=["POST"], status_code=204, name=f"set_topic_{ident}", summary=f"Set the topic's {path}")
    r.add_api_route(
        route, remove_policy, methods=["DELETE"], status_code=204, name=f"remove_topic_{ident}", summary=f"Remove the topic's {path}"
    )


def router(admin: BrokerAdmin, domain: str) -> APIRouter:
    """Topic routes of one domain (``persistent`` or ``non-persistent``) over ``admin``."""
    r = APIRouter(prefix=f"/admin/v2/{domain}", tags=[f"{domain} topics"])

    def name(tenant: str, namespace: str, topic: str):  # noqa: ANN202 - TopicName
        return admin.topic_name(domain, tenant, namespace, topic)

    # -- listing, creation, deletion -----------------------------------------------------
    @r.get("/{tenant}/{namespace}", summary="List the topics of a namespace (partitions individually)")
    async def list_topics(tenant: str, namespace: str) -> list[str]:
        return admin.list_topics(domain, admin.namespace_name(tenant, namespace))

    @r.get("/{tenant}/{namespace}/partitioned", summary="List the partitioned topics of a namespace")
    async def list_partitioned(tenant: str, namespace: str) -> list[str]:
        return admin.list_partitioned_topics(domain, admin.namespace_name(tenant, namespace))

    @r.put(T, status_code=204, summary="Create a non-partitioned topic")
    async def create_topic(
        tenant: str, namespace: str, topic: str, properties: Annotated[dict[str, str] | None, Body()] = None
    ) -> Response:
        admin.create_topic(name(tenant, namespace, topic), properties)
        return _no_content()

    @r.delete(T, status_code=204, summary="Delete a topic (force: disconnect its clients first)")
    async def delete_topic(tenant: str, namespace: str, topic: str, force: bool = False) -> Response:
        await admin.delete_topic(name(tenant, namespace, topic), force)
        return _no_content()

    @r.put(T + "/partitions", status_code=204, summary="Create a partitioned topic")
    async def create_partitioned(
        tenant: str, namespace: str, topic: str, partitions: Annotated[StrictInt, Body()]
    ) -> Response:
        admin.create_partitioned_topic(name(tenant, namespace, topic), partitions)
        return _no_content()

    @r.post(T + "/partitions", status_code=204, summary="Increase the partitions of a partitioned topic")
    async def update_partitioned(
        tenant: str, namespace: str, topic: str, partitions: Annotated[StrictInt, Body()], force: bool = False
    ) -> Response:
        admin.update_partitioned_topic(name(tenant, namespace, topic), partitions)
        return _no_content()

    @r.get(T + "/partitions", summary="Partitioned topic metadata ({\"partitions\": N}, 0 when not partitioned)")
    async def get_partitions(
        tenant: str, namespace: str, topic: str, checkAllowAutoCreation: bool = False  # noqa: N803
    ) -> dict:
        return admin.get_partitioned_metadata(name(tenant, namespace, topic), checkAllowAutoCreation)

    @r.delete(T + "/partitions", status_code=204, summary="Delete a partitioned topic and its partitions")
    async def delete_partitioned(tenant: str, namespace: str, topic: str, force: bool = False) -> Response:
        await admin.delete_partitioned_topic(name(tenant, namespace, topic), force)
        return _no_content()

    # -- statistics ------------------------------------------------------------------------
    @r.get(T + "/stats", summary="Topic statistics")
    async def stats(tenant: str, namespace: str, topic: str) -> dict:
        return admin.topic_stats(name(tenant, namespace, topic))

    @r.get(T + "/partitioned-stats", summary="Statistics of a partitioned topic, summed over its partitions")
    async def partitioned_stats(
        tenant: str, namespace: str, topic: str, perPartition: bool = True  # noqa: N803
    ) -> dict:
        return admin.partitioned_stats(name(tenant, namespace, topic), perPartition)

    @r.get(T + "/internalStats", summary="Storage-level statistics: ledger and cursors")
    async def internal_stats(tenant: str, namespace: str, topic: str) -> dict:
        return admin.internal_stats(name(tenant, namespace, topic))

    @r.get(T + "/lastMessageId", summary="Id of the last message")
    async def last_message_id(tenant: str, namespace: str, topic: str) -> dict:
        return admin.last_message_id(name(tenant, namespace, topic))

    # -- subscriptions ---------------------------------------------------------------------
    @r.get(T + "/subscriptions", summary="List subscriptions")
    async def subscriptions(tenant: str, namespace: str, topic: str) -> list[str]:
        return admin.list_subscriptions(name(tenant, namespace, topic))

    @r.put(S, status_code=204, summary="Create a subscription at a message id (latest by default)")
    async def create_subscription(
        tenant: str,
        namespace: str,
        topic: str,
        subName: str,  # noqa: N803
        position: Annotated[MessageIdData | str | None, Body()] = None,
        messageId: str | None = None,  # noqa: N803
        replicated: bool = False,
    ) -> Response:
        if messageId is not None:
            where = _position(messageId)
        elif isinstance(position, str):
            if position.strip().lower() not in ("earliest", "latest"):
                raise AdminError(400, f"Invalid request body: {position!r} is not a message id")
            where = _position(position)
        elif position is not None:
            where = (position.ledgerId, position.entryId)
        else:
            where = None
        admin.create_subscription(name(tenant, namespace, topic), subName, where)
        return _no_content()

    @r.delete(S, status_code=204, summary="Delete a subscription (force: disconnect its consumers first)")
    async def delete_subscription(
        tenant: str, namespace: str, topic: str, subName: str, force: bool = False  # noqa: N803
    ) -> Response:
        admin.delete_subscription(name(tenant, namespace, topic), subName, force)
        return _no_content()

    @r.post(S + "/skip/{numMessages}", status_code=204, summary="Skip messages of a subscription")
    async def skip(tenant: str, namespace: str, topic: str, subName: str, numMessages: int) -> Response:  # noqa: N803
        admin.skip_messages(name(tenant, namespace, topic), subName, numMessages)
        return _no_content()

    @r.post(S + "/skip_all", status_code=204, summary="Clear a subscription's backlog")
    async def skip_all(tenant: str, namespace: str, topic: str, subName: str) -> Response:  # noqa: N803
        admin.skip_all(name(tenant, namespace, topic), subName)
        return _no_content()

    @r.post(S + "/expireMessages/{expireTimeInSeconds}", status_code=204, summary="Expire messages older than N seconds")
    async def expire(
        tenant: str, namespace: str, topic: str, subName: str, expireTimeInSeconds: int  # noqa: N803
    ) -> Response:
        admin.expire_messages(name(tenant, namespace, topic), subName, expireTimeInSeconds)
        return _no_content()

    @r.post(T + "/all_subscription/expireMessages/{expireTimeInSeconds}", status_code=204,
            summary="Expire messages older than N seconds on every subscription")
    async def expire_all(tenant: str, namespace: str, topic: str, expireTimeInSeconds: int) -> Response:  # noqa: N803
        admin.expire_all_subscriptions(name(tenant, namespace, topic), expireTimeInSeconds)
        return _no_content()

    @r.post(S + "/resetcursor/{timestamp}", status_code=204, summary="Reset a subscription to a publish time (ms)")
    async def reset_to_time(
        tenant: str, namespace: str, topic: str, subName: str, timestamp: int  # noqa: N803
    ) -> Response:
        admin.reset_cursor_to_time(name(tenant, namespace, topic), subName, timestamp)
        return _no_content()

    @r.post(S + "/resetcursor", status_code=204, summary="Reset a subscription to a message id")
    async def reset_to_position(
        tenant: str, namespace: str, topic: str, subName: str, messageId: Annotated[MessageIdData, Body()]  # noqa: N803
    ) -> Response:
        admin.reset_cursor_to_position(
            name(tenant, namespace, topic), subName, messageId.ledgerId, messageId.entryId,
            messageId.isExcluded, messageId.partitionIndex,
        )
        return _no_content()

    # -- messages --------------------------------------------------------------------------
    @r.get(S + "/position/{messagePosition}", summary="Peek the n-th unacknowledged message of a subscription",
           response_class=Response)
    async def peek(
        tenant: str, namespace: str, topic: str, subName: str, messagePosition: int  # noqa: N803
    ) -> Response:
        return entry_response(admin.peek(name(tenant, namespace, topic), subName, messagePosition))

    @r.get(T + "/examinemessage", summary="Examine the n-th message from the earliest or the latest",
           response_class=Response)
    async def examine(
        tenant: str,
        namespace: str,
        topic: str,
        initialPosition: str = "latest",  # noqa: N803
        messagePosition: int = 1,  # noqa: N803
    ) -> Response:
        return entry_response(admin.examine(name(tenant, namespace, topic), initialPosition, messagePosition))

    # -- terminate, compaction -------------------------------------------------------------
    @r.post(T + "/terminate", summary="Terminate a topic: no more messages are accepted")
    async def terminate(tenant: str, namespace: str, topic: str) -> dict:
        return admin.terminate(name(tenant, namespace, topic))

    @r.put(T + "/compaction", status_code=204, summary="Start compacting the topic (409 while a compaction runs)")
    async def compact(tenant: str, namespace: str, topic: str) -> Response:
        admin.trigger_compaction(name(tenant, namespace, topic))
        return _no_content()

    @r.get(T + "/compaction", summary="Compaction status")
    async def compaction_status(tenant: str, namespace: str, topic: str) -> dict:
        return admin.compaction_status(name(tenant, namespace, topic))

    # -- topic policies --------------------------------------------------------------------
    for path, key, body_type in TOPIC_POLICIES:
        _add_topic_policy(r, admin, domain, path, key, body_type)

    @r.get(T + "/messageTTL", summary="Get the topic's message TTL")
    async def get_ttl(tenant: str, namespace: str, topic: str, applied: bool = False) -> Any:
        return admin.get_topic_policy(name(tenant, namespace, topic), "message_ttl_in_seconds", applied)

    @r.post(T + "/messageTTL", status_code=204, summary="Set the topic's message TTL (query messageTTL, or body)")
    async def set_ttl(
        tenant: str,
        namespace: str,
        topic: str,
        messageTTL: int | None = None,  # noqa: N803
        body: Annotated[StrictInt | None, Body()] = None,
    ) -> Response:
        value = messageTTL if messageTTL is not None else body
        if value is None:
            raise AdminError(412, "Invalid parameter: messageTTL is required")
        admin.set_topic_policy(name(tenant, namespace, topic), "message_ttl_in_seconds", value)
        return _no_content()

    @r.delete(T + "/messageTTL", status_code=204, summary="Remove the topic's message TTL")
    async def remove_ttl(tenant: str, namespace: str, topic: str) -> Response:
        admin.remove_topic_policy(name(tenant, namespace, topic), "message_ttl_in_seconds")
        return _no_content()

    @r.get(T + "/schemaCompatibilityStrategy", summary="Get the topic's schema compatibility strategy")
    async def get_strategy(tenant: str, namespace: str, topic: str, applied: bool = False) -> Any:
        return admin.get_topic_policy(name(tenant, namespace, topic), "schema_compatibility_strategy", applied)

    @r.put(T + "/schemaCompatibilityStrategy", status_code=204, summary="Set the topic's schema compatibility strategy")
    async def set_strategy(tenant: str, namespace: str, topic: str, strategy: Annotated[str, Body()]) -> Response:
        admin.set_topic_policy(name(tenant, namespace, topic), "schema_compatibility_strategy", strategy)
        return _no_content()

    @r.delete(T + "/schemaCompatibilityStrategy", status_code=204, summary="Remove the topic's schema compatibility strategy")
    async def remove_strategy(tenant: str, namespace: str, topic: str) -> Response:
        admin.remove_topic_policy(name(tenant, namespace, topic), "schema_compatibility_strategy")
        return _no_content()

    @r.get(T + "/backlogQuotaMap", summary="Get the topic's backlog quotas")
    async def get_quotas(tenant: str, namespace: str, topic: str, applied: bool = False) -> dict:
        return admin.get_topic_policy(name(tenant, namespace, topic), "backlog_quota_map", applied) or {}

    @r.post(T + "/backlogQuota", status_code=204, summary="Set a topic backlog quota")
    async def set_quota(
        tenant: str,
        namespace: str,
        topic: str,
        quota: Annotated[BacklogQuota, Body()],
        backlogQuotaType: str = "destination_storage",  # noqa: N803
    ) -> Response:
        admin.set_topic_backlog_quota(name(tenant, namespace, topic), backlogQuotaType, dump(quota) or {})
        return _no_content()

    @r.delete(T + "/backlogQuota", status_code=204, summary="Remove a topic backlog quota")
    async def remove_quota(
        tenant: str, namespace: str, topic: str, backlogQuotaType: str = "destination_storage"  # noqa: N803
    ) -> Response:
        admin.remove_topic_backlog_quota(name(tenant, namespace, topic), backlogQuotaType)
        return _no_content()

    return r
