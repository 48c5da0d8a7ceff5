"""/admin/v2/tenants: tenants, their admin roles and allowed clusters."""

from typing import Annotated

from fastapi import APIRouter, Body, Response

from magnetar.admin.access import AccessGuard
from magnetar.admin.models import TenantInfo, dump
from magnetar.broker.resources.admin import BrokerAdmin


def router(admin: BrokerAdmin, access: AccessGuard) -> APIRouter:
    """Tenant routes over ``admin``: superusers only (as Pulsar)."""
    r = APIRouter(prefix="/admin/v2/tenants", tags=["tenants"], dependencies=[access.super_user()])

    @r.get("", summary="List tenants")
    async def list_tenants() -> list[str]:
        return await admin.ctx.read(admin.tenants.list_tenants)

    @r.get("/{tenant}", summary="Get a tenant's admin roles and allowed clusters")
    async def get_tenant(tenant: str) -> dict:
        return await admin.ctx.read(admin.tenants.get_tenant, tenant)

    @r.put("/{tenant}", status_code=204, summary="Create a tenant")
    async def create_tenant(tenant: str, info: Annotated[TenantInfo | None, Body()] = None) -> Response:
        await admin.ctx.off_loop(admin.tenants.create_tenant, tenant, dump(info))
        return Response(status_code=204)

    @r.post("/{tenant}", status_code=204, summary="Update a tenant")
    async def update_tenant(tenant: str, info: Annotated[TenantInfo | None, Body()] = None) -> Response:
        await admin.ctx.off_loop(admin.tenants.update_tenant, tenant, dump(info))
        return Response(status_code=204)

    @r.delete("/{tenant}", status_code=204, summary="Delete a tenant without namespaces (or all of it with force)")
    async def delete_tenant(tenant: str, force: bool = False) -> Response:
        await admin.tenants.delete_tenant(tenant, force)
        return Response(status_code=204)

    return r
