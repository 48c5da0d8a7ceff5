"""The HTTP routes the console needs beyond Pulsar's admin API.

- ``GET /magnetar/v1/broker``: version, start time and addresses of this broker (read-only);
- ``GET /magnetar/v1/history[/{domain}/{tenant}/{namespace}/{topic}]``: the last ten minutes of the
  series the console charts, for the broker or a topic (:mod:`magnetar.admin.chart_history`);
- ``GET /magnetar/v1/messages/{domain}/{tenant}/{namespace}/{topic}``: messages decoded by the
  topic's schema, peeked from a subscription or browsed by position or time (read-only);
- ``POST /topics/{domain}/{tenant}/{namespace}/{topic}``: Pulsar's REST producer, which publishes
  through the broker's binary port like any client (see :mod:`.publishing`).
"""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query, Request

from magnetar import __version__
from magnetar.admin.access import AccessGuard
from magnetar.admin.chart_history import ChartHistory
from magnetar.admin.console.browsing import MAX_COUNT, browse_messages, peek_messages
from magnetar.admin.console.decoding import SchemaLookup
from magnetar.admin.console.publishing import ProducerMessages, bearer_token, publish
from magnetar.admin.errors import HttpError
from magnetar.broker.resources.admin import BrokerAdmin
from magnetar.broker.security import TopicOperation
from magnetar.protocol.topic_name import TopicName

T = "/{domain}/{tenant}/{namespace}/{topic}"
DOMAINS = ("persistent", "non-persistent")


def _topic_name(admin: BrokerAdmin, domain: str, tenant: str, namespace: str, topic: str) -> TopicName:
    if domain not in DOMAINS:
        raise HttpError(404, f"Unknown topic domain {domain!r}: persistent or non-persistent")
    return admin.ctx.topic_name(domain, tenant, namespace, topic)


def schema_lookup(admin: BrokerAdmin, tn: TopicName) -> SchemaLookup:
    """A function giving the (type, definition) of a schema version of ``tn`` (latest for None)."""
    schemas = admin.service.schemas
    cache: dict[int | None, tuple[str, bytes] | None] = {}

    def lookup(version: int | None) -> tuple[str, bytes] | None:
        if version not in cache:
            stored = schemas.version(tn, version) if version is not None else None
            if stored is None:
                stored = schemas.latest(tn)
            cache[version] = (stored.type, stored.data) if stored is not None and not stored.deleted else None
        return cache[version]

    return lookup


def _add_history_routes(r: APIRouter, admin: BrokerAdmin, access: AccessGuard) -> None:
    """The chart history routes (:mod:`magnetar.admin.chart_history`) on ``r``."""

    def history(request: Request) -> ChartHistory:
        return request.app.state.chart_history

    @r.get(
        "/magnetar/v1/history", tags=["magnetar"], dependencies=[access.open()],
        summary="The last ten minutes of the broker's charted series (rates, throughput, fsync round, connections)",
    )
    async def broker_history(request: Request) -> dict[str, Any]:
        return history(request).broker_history()

    @r.get(
        "/magnetar/v1/history" + T, tags=["magnetar"], dependencies=[access.topic(TopicOperation.GET_STATS)],
        summary="A topic's charted series (rates in and out, backlog), kept from the first time a page asks",
    )
    async def topic_history(
        request: Request, domain: str, tenant: str, namespace: str, topic: str,
        partitions: Annotated[int, Query(ge=0, le=100_000)] = 0,
    ) -> dict[str, Any]:
        tn = _topic_name(admin, domain, tenant, namespace, topic)
        return history(request).topic_history(str(tn), partitions)


def router(admin: BrokerAdmin, access: AccessGuard) -> APIRouter:
    """The console's own read-only routes and the REST producer, over ``admin``, guarded by ``access``."""
    r = APIRouter()
    started_at = getattr(admin.service, "started_at", time.time())

    @r.get(
        "/magnetar/v1/broker", tags=["magnetar"], summary="This broker: version, start time, addresses",
        dependencies=[access.open()],
    )
    async def broker_info() -> dict[str, Any]:
        config = admin.service.config
        return {
            "version": __version__,
            "startedAt": int(started_at * 1000),
            "uptimeSeconds": round(time.time() - started_at, 3),
            "brokerServiceUrl": config.broker_service_url,
            "webServiceUrl": config.web_service_url,
            "cluster": "standalone",
        }

    _add_history_routes(r, admin, access)

    @r.get(
        "/magnetar/v1/messages" + T, tags=["magnetar"], dependencies=[access.topic(TopicOperation.PEEK_MESSAGES)],
        summary="Messages decoded by the topic's schema: a subscription's next ones, or browsed from a position",
        description=(
            "With `subscription`, the next unacknowledged messages of that subscription (as peek). Otherwise "
            "the messages from `start`: earliest, latest (the last `count`), ledgerId:entryId, or a publish "
            "time in ms since the epoch. Batches are split. Each message has messageId, batchIndex, key, "
            "properties, publishTime, eventTime, producerName, sequenceId, schemaVersion, schemaType, "
            "size and its value: `encoding` string, json, avro (decoded to JSON) or null with `value`, or "
            "bytes with `hex` and `text`. Nothing is consumed."
        ),
    )
    async def messages(
        domain: str, tenant: str, namespace: str, topic: str,
        subscription: str | None = None,
        start: str = "earliest",
        count: Annotated[int, Query(ge=1, le=MAX_COUNT)] = 10,
    ) -> list[dict[str, Any]]:
        tn = _topic_name(admin, domain, tenant, namespace, topic)
        lookup = schema_lookup(admin, tn)
        if subscription:
            return await peek_messages(admin, tn, subscription, count, lookup)
        return await browse_messages(admin, tn, start, count, lookup)

    @r.post(
        "/topics" + T, tags=["REST producer"], summary="Publish messages (Pulsar's REST producer)",
        dependencies=[access.topic(TopicOperation.PRODUCE)],
        description="Publishes with the topic's latest schema; an `Authorization: Bearer` token is used as the producer's.",
    )
    async def produce(
        domain: str, tenant: str, namespace: str, topic: str,
        body: Annotated[ProducerMessages, Body()],
        authorization: Annotated[str | None, Header()] = None,
    ) -> dict[str, Any]:
        tn = _topic_name(admin, domain, tenant, namespace, topic)
        stored = admin.service.schemas.latest(tn)
        schema = (stored.type, stored.data) if stored is not None and not stored.deleted else None
        url = admin.service.config.broker_service_url
        results = await publish(url, str(tn), body, schema, bearer_token(authorization))
        return {"messagePublishResults": results, "schemaVersion": stored.version if stored else -1}

    return r
