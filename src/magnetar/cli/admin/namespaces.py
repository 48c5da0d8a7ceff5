"""``magnetar admin namespaces``: list, create, delete, policies, topics (the policy commands are in
:mod:`magnetar.cli.admin.policies`)."""

from __future__ import annotations

from typing import Annotated

import typer

from magnetar.cli.admin.context import ForceOpt, Name, NsArg, call, namespaces_app, show, state
from magnetar.cli.admin.parsing import ns_path, q


@namespaces_app.command("list")
def namespaces_list(ctx: typer.Context, tenant: Name) -> None:
    """List the namespaces of a tenant."""
    show(ctx, call(state(ctx).client.get, f"/admin/v2/namespaces/{q(tenant)}"))


@namespaces_app.command("create")
def namespaces_create(ctx: typer.Context, namespace: NsArg) -> None:
    """Create a namespace."""
    call(state(ctx).client.put, f"/admin/v2/namespaces/{ns_path(namespace)}")


@namespaces_app.command("delete")
def namespaces_delete(ctx: typer.Context, namespace: NsArg, force: ForceOpt = False) -> None:
    """Delete a namespace (with --force, also its topics)."""
    suffix = "?force=true" if force else ""
    call(state(ctx).client.delete, f"/admin/v2/namespaces/{ns_path(namespace)}{suffix}")


@namespaces_app.command("policies")
def namespaces_policies(ctx: typer.Context, namespace: NsArg) -> None:
    """Show every policy of a namespace."""
    show(ctx, call(state(ctx).client.get, f"/admin/v2/namespaces/{ns_path(namespace)}"))


@namespaces_app.command("topics")
def namespaces_topics(
    ctx: typer.Context,
    namespace: NsArg,
    mode: Annotated[str, typer.Option("--mode", help="PERSISTENT, NON_PERSISTENT or ALL")] = "ALL",
) -> None:
    """List the topics of a namespace (partitions individually)."""
    show(ctx, call(state(ctx).client.get, f"/admin/v2/namespaces/{ns_path(namespace)}/topics?mode={q(mode.upper())}"))
