"""``magnetar admin tenants``: list, get, create, update, delete."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from magnetar.cli.admin.context import ForceOpt, Name, State, call, show, state, tenants_app
from magnetar.cli.admin.parsing import q, split_csv


@tenants_app.command("list")
def tenants_list(ctx: typer.Context) -> None:
    """List tenants."""
    show(ctx, call(state(ctx).client.get, "/admin/v2/tenants"))


@tenants_app.command("get")
def tenants_get(ctx: typer.Context, tenant: Name) -> None:
    """Show a tenant's admin roles and allowed clusters."""
    show(ctx, call(state(ctx).client.get, f"/admin/v2/tenants/{q(tenant)}"))


RolesOpt = Annotated[list[str] | None, typer.Option("--admin-roles", "-r", help="Admin roles (comma separated)")]
ClustersOpt = Annotated[
    list[str] | None, typer.Option("--allowed-clusters", "-c", help="Allowed clusters (comma separated; default: all)")
]


def _tenant_body(st: State, roles: list[str] | None, clusters: list[str] | None) -> dict[str, Any]:
    allowed = split_csv(clusters) or call(st.client.get, "/admin/v2/clusters")
    return {"adminRoles": split_csv(roles), "allowedClusters": allowed}


@tenants_app.command("create")
def tenants_create(ctx: typer.Context, tenant: Name, admin_roles: RolesOpt = None, allowed_clusters: ClustersOpt = None) -> None:
    """Create a tenant."""
    st = state(ctx)
    call(st.client.put, f"/admin/v2/tenants/{q(tenant)}", _tenant_body(st, admin_roles, allowed_clusters))


@tenants_app.command("update")
def tenants_update(ctx: typer.Context, tenant: Name, admin_roles: RolesOpt = None, allowed_clusters: ClustersOpt = None) -> None:
    """Replace a tenant's admin roles and allowed clusters."""
    st = state(ctx)
    call(st.client.post, f"/admin/v2/tenants/{q(tenant)}", _tenant_body(st, admin_roles, allowed_clusters))


@tenants_app.command("delete")
def tenants_delete(ctx: typer.Context, tenant: Name, force: ForceOpt = False) -> None:
    """Delete a tenant (with --force, also its namespaces and topics)."""
    suffix = "?force=true" if force else ""
    call(state(ctx).client.delete, f"/admin/v2/tenants/{q(tenant)}{suffix}")
