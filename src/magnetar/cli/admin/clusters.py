"""``magnetar admin clusters``: list, get, create."""

from __future__ import annotations

from typing import Annotated

import typer

from magnetar.cli.admin.context import Name, call, clusters_app, show, state
from magnetar.cli.admin.parsing import q


@clusters_app.command("list")
def clusters_list(ctx: typer.Context) -> None:
    """List clusters."""
    show(ctx, call(state(ctx).client.get, "/admin/v2/clusters"))


@clusters_app.command("get")
def clusters_get(ctx: typer.Context, cluster: Name) -> None:
    """Show a cluster's URLs."""
    show(ctx, call(state(ctx).client.get, f"/admin/v2/clusters/{q(cluster)}"))


@clusters_app.command("create")
def clusters_create(
    ctx: typer.Context,
    cluster: Name,
    url: Annotated[str | None, typer.Option("--url", help="HTTP service URL")] = None,
    broker_url: Annotated[str | None, typer.Option("--broker-url", help="pulsar:// service URL")] = None,
) -> None:
    """Create a cluster."""
    body = {k: v for k, v in (("serviceUrl", url), ("brokerServiceUrl", broker_url)) if v}
    call(state(ctx).client.put, f"/admin/v2/clusters/{q(cluster)}", body)
