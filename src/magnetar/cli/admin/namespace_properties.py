"""``magnetar admin namespaces``: a namespace's properties (pulsar-admin's set-property, get-property,
remove-property, set-properties, get-properties, clear-properties)."""

from __future__ import annotations

from typing import Annotated

import typer

from magnetar.cli.admin.context import NsArg, call, namespaces_app, show, state
from magnetar.cli.admin.parsing import ns_path, parse_pairs, q

KeyOpt = Annotated[str, typer.Option("--key", "-k", help="Property name")]


def _base(namespace: str) -> str:
    return f"/admin/v2/namespaces/{ns_path(namespace)}"


@namespaces_app.command("set-property")
def namespaces_set_property(
    ctx: typer.Context, namespace: NsArg, key: KeyOpt, value: Annotated[str, typer.Option("--value", "-v", help="Value")],
) -> None:
    """Set one property of a namespace."""
    call(state(ctx).client.put, f"{_base(namespace)}/property/{q(key)}/{q(value)}")


@namespaces_app.command("get-property")
def namespaces_get_property(ctx: typer.Context, namespace: NsArg, key: KeyOpt) -> None:
    """Show one property of a namespace (null when not set)."""
    show(ctx, call(state(ctx).client.get, f"{_base(namespace)}/property/{q(key)}"))


@namespaces_app.command("remove-property")
def namespaces_remove_property(ctx: typer.Context, namespace: NsArg, key: KeyOpt) -> None:
    """Remove one property of a namespace; prints its old value."""
    show(ctx, call(state(ctx).client.delete, f"{_base(namespace)}/property/{q(key)}"))


@namespaces_app.command("set-properties")
def namespaces_set_properties(
    ctx: typer.Context, namespace: NsArg,
    properties: Annotated[list[str], typer.Option("--properties", "-p", help="key=value pairs (comma separated)")],
) -> None:
    """Add or replace properties of a namespace."""
    call(state(ctx).client.put, f"{_base(namespace)}/properties", parse_pairs(properties))


@namespaces_app.command("get-properties")
def namespaces_get_properties(ctx: typer.Context, namespace: NsArg) -> None:
    """Show the properties of a namespace."""
    show(ctx, call(state(ctx).client.get, f"{_base(namespace)}/properties"))


@namespaces_app.command("clear-properties")
def namespaces_clear_properties(ctx: typer.Context, namespace: NsArg) -> None:
    """Remove every property of a namespace."""
    call(state(ctx).client.delete, f"{_base(namespace)}/properties")
