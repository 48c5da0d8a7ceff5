"""HTTP lookup for clients given an http:// service URL, and the (not yet existing) schema registry."""

from fastapi import APIRouter, Request

from magnetar.broker.admin import AdminError, BrokerAdmin

DOMAINS = ("persistent", "non-persistent")


def router(admin: BrokerAdmin) -> APIRouter:
    """Lookup and schema routes over ``admin``."""
    r = APIRouter(tags=["lookup"])

    @r.get("/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}", summary="Which broker serves a topic")
    async def lookup(domain: str, tenant: str, namespace: str, topic: str, request: Request) -> dict:
        if domain not in DOMAINS:
            raise AdminError(412, f"Invalid topic domain {domain!r}")
        tn = admin.topic_name(domain, tenant, namespace, topic)
        return admin.lookup(tn, request.url.port)

    @r.get("/admin/v2/schemas/{tenant}/{namespace}/{topic}/schema", tags=["schemas"], summary="Latest schema of a topic")
    async def get_schema(tenant: str, namespace: str, topic: str) -> dict:
        admin.topic_name("persistent", tenant, namespace, topic)
        raise AdminError(404, "Schema not found")

    @r.get(
        "/admin/v2/schemas/{tenant}/{namespace}/{topic}/schema/{version}",
        tags=["schemas"],
        summary="One version of a topic's schema",
    )
    async def get_schema_version(tenant: str, namespace: str, topic: str, version: str) -> dict:
        admin.topic_name("persistent", tenant, namespace, topic)
        raise AdminError(404, "Schema not found")

    return r
