"""HTTP lookup for clients given an http:// service URL."""

from fastapi import APIRouter, Request

from magnetar.admin.access import AccessGuard
from magnetar.admin.errors import HttpError
from magnetar.broker.resources.admin import BrokerAdmin
from magnetar.broker.security import TopicOperation

DOMAINS = ("persistent", "non-persistent")


def router(admin: BrokerAdmin, access: AccessGuard) -> APIRouter:
    """Lookup routes over ``admin``."""
    r = APIRouter(tags=["lookup"])

    @r.get(
        "/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}", dependencies=[access.topic(TopicOperation.LOOKUP)],
        summary="Which broker serves a topic")
    async def lookup(domain: str, tenant: str, namespace: str, topic: str, request: Request) -> dict:
        if domain not in DOMAINS:
            raise HttpError(412, f"Invalid topic domain {domain!r}")
        tn = admin.ctx.topic_name(domain, tenant, namespace, topic)
        return await admin.topics.lookup(tn, request.url.port)

    @r.get(
        "/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}/bundle",
        dependencies=[access.topic(TopicOperation.LOOKUP)], summary="The namespace bundle a topic belongs to")
    async def bundle(domain: str, tenant: str, namespace: str, topic: str) -> str:
        if domain not in DOMAINS:
            raise HttpError(412, f"Invalid topic domain {domain!r}")
        await admin.ctx.namespace_read(admin.ctx.namespace_name(tenant, namespace))
        return "0x00000000_0xffffffff"  # magnetar never splits a namespace into bundles

    return r
