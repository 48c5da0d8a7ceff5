"""The topic routes over a topic's storage and a subscription's state that pulsar-admin's daily verbs
use beyond stats: info-internal, partitioned-stats-internal, get-backlog-size, get-message-id,
offload-status, trim-topic, truncate; analyze-backlog and subscription properties. Added to each domain's topic router by :mod:`magnetar.admin.routes_topics`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Body, Response

from magnetar.admin.access import AccessGuard
from magnetar.admin.models import MessageIdData
from magnetar.broker.resources.admin import BrokerAdmin
from magnetar.broker.security import TopicOperation
from magnetar.protocol.topic_name import TopicName

T = "/{tenant}/{namespace}/{topic}"
S = T + "/subscription/{subName}"

TopicNamer = Callable[[str, str, str], TopicName]


def add_topic_storage_routes(r: APIRouter, admin: BrokerAdmin, access: AccessGuard, domain: str, name: TopicNamer) -> None:
    """The storage routes of one domain's topics."""
    storage = admin.topic_storage

    def need(operation: TopicOperation) -> list:
        return [access.topic(operation, domain)]

    tenant_admin = [access.topic_policy(True, domain)]

    @r.get(T + "/internal-info", dependencies=need(TopicOperation.GET_STATS), summary="The managed ledger's info (info-internal)")
    async def internal_info(tenant: str, namespace: str, topic: str) -> dict:
        return await storage.ledger_info(name(tenant, namespace, topic))

    @r.get(T + "/partitioned-internalStats", dependencies=need(TopicOperation.GET_STATS),
           summary="Internal stats of every partition of a partitioned topic")
    async def partitioned_internal_stats(tenant: str, namespace: str, topic: str) -> dict:
        return await storage.partitioned_internal_stats(name(tenant, namespace, topic))

    @r.put(T + "/backlogSize", dependencies=need(TopicOperation.GET_BACKLOG_SIZE),
           summary="Bytes stored from a message id to the end (-1:-1: all)")
    async def backlog_size(
        tenant: str, namespace: str, topic: str, messageId: Annotated[MessageIdData | None, Body()] = None  # noqa: N803
    ) -> int:
        where = (-1, -1) if messageId is None else (messageId.ledgerId, messageId.entryId)
        return await storage.backlog_size(name(tenant, namespace, topic), *where)

    @r.get(T + "/messageid/{timestamp}", dependencies=need(TopicOperation.PEEK_MESSAGES),
           summary="Id of the first message published at or after a time (ms)")
    async def message_id_by_time(tenant: str, namespace: str, topic: str, timestamp: int) -> dict:
        return await storage.message_id_by_time(name(tenant, namespace, topic), timestamp)

    @r.get(T + "/offload", dependencies=need(TopicOperation.OFFLOAD), summary="Offload status (never run: no offloader)")
    async def offload_status(tenant: str, namespace: str, topic: str) -> dict:
        return await storage.offload_status(name(tenant, namespace, topic))

    @r.post(T + "/trim", status_code=204, dependencies=tenant_admin,
            summary="Release now the segments every subscription acknowledged, as retention allows")
    async def trim(tenant: str, namespace: str, topic: str) -> Response:
        await storage.trim(name(tenant, namespace, topic))
        return Response(status_code=204)

    @r.delete(T + "/truncate", status_code=204, dependencies=tenant_admin,
              summary="Move every cursor to the end and release every sealed segment")
    async def truncate(tenant: str, namespace: str, topic: str) -> Response:
        await storage.truncate(name(tenant, namespace, topic))
        return Response(status_code=204)

    _add_subscription_state_routes(r, admin, access, domain, name)


def _add_subscription_state_routes(r: APIRouter, admin: BrokerAdmin, access: AccessGuard, domain: str,
                                   name: TopicNamer) -> None:
    state = admin.subscription_state

    @r.post(S + "/analyzeBacklog", dependencies=[access.topic(TopicOperation.CONSUME, domain)],
            summary="Count the entries and messages of a subscription's backlog")
    async def analyze_backlog(
        tenant: str, namespace: str, topic: str, subName: str,  # noqa: N803
        position: Annotated[MessageIdData | None, Body()] = None,
    ) -> dict:
        start = None if position is None else (position.ledgerId, position.entryId)
        return await state.analyze_backlog(name(tenant, namespace, topic), subName, start)

    @r.get(S + "/properties", dependencies=[access.topic(TopicOperation.CONSUME, domain)],
           summary="A subscription's properties")
    async def get_properties(tenant: str, namespace: str, topic: str, subName: str) -> dict[str, str]:  # noqa: N803
        return await state.get_properties(name(tenant, namespace, topic), subName)

    @r.put(S + "/properties", status_code=204, dependencies=[access.topic(TopicOperation.SUBSCRIBE, domain)],
           summary="Replace a subscription's properties")
    async def set_properties(
        tenant: str, namespace: str, topic: str, subName: str,  # noqa: N803
        properties: Annotated[dict[str, str] | None, Body()] = None,
    ) -> Response:
        await state.set_properties(name(tenant, namespace, topic), subName, properties or {})
        return Response(status_code=204)
