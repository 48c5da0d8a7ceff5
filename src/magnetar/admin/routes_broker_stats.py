"""/admin/v2/broker-stats: pulsar-admin's broker-stats verbs (superusers only, as Pulsar)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from magnetar.admin.access import AccessGuard
from magnetar.broker.resources.admin import BrokerAdmin


def router(admin: BrokerAdmin, access: AccessGuard) -> APIRouter:
    """The broker-stats routes over ``admin.broker_stats``."""
    r = APIRouter(prefix="/admin/v2/broker-stats", tags=["broker-stats"])
    super_user = [access.super_user()]
    stats = admin.broker_stats

    @r.get("/topics", dependencies=super_user, summary="Every loaded topic's stats by namespace, bundle and domain")
    async def topics() -> dict[str, Any]:
        return await stats.topics()

    @r.get("/metrics", dependencies=super_user, summary="Monitoring metrics by namespace, and the process's")
    async def metrics() -> list[dict[str, Any]]:
        return stats.metrics()

    @r.get("/mbeans", dependencies=super_user, summary="JMX MBeans (none: a Python process)")
    async def mbeans() -> list[dict[str, Any]]:
        return stats.mbeans()

    @r.get("/allocator-stats/{allocator}", dependencies=super_user, summary="Netty allocator stats (no arenas)")
    async def allocator_stats(allocator: str) -> dict[str, Any]:
        return stats.allocator_stats(allocator)

    @r.get("/load-report", dependencies=super_user, summary="The broker's load report (LocalBrokerData)")
    async def load_report() -> dict[str, Any]:
        return stats.load_report()

    return r
