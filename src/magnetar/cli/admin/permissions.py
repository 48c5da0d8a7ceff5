"""``magnetar admin namespaces|topics grant-permission / revoke-permission / permissions``, and the
subscription permissions of a namespace, with pulsar-admin's verbs and flags."""

from __future__ import annotations

from typing import Annotated

import typer

from magnetar.cli.admin.context import NsArg, TopicArg, call, fail, namespaces_app, show, state, topics_app
from magnetar.cli.admin.parsing import ns_path, q, topic_path

RoleOpt = Annotated[str, typer.Option("--role", help="Role the permission is for")]
ActionsOpt = Annotated[str, typer.Option("--actions", help="Comma-separated actions: produce, consume, functions, ...")]
SubscriptionOpt = Annotated[str, typer.Option("--subscription", "-s", help="Subscription name")]
RolesOpt = Annotated[str, typer.Option("--roles", help="Comma-separated roles")]


def _list(text: str, what: str) -> list[str]:
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        fail(f"--{what} is empty")
    return items


@namespaces_app.command("permissions")
def namespaces_permissions(ctx: typer.Context, namespace: NsArg) -> None:
    """Show the roles granted actions on a namespace."""
    show(ctx, call(state(ctx).client.get, f"/admin/v2/namespaces/{ns_path(namespace)}/permissions"))


@namespaces_app.command("grant-permission")
def namespaces_grant(ctx: typer.Context, namespace: NsArg, role: RoleOpt, actions: ActionsOpt) -> None:
    """Grant a role actions on every topic of a namespace."""
    path = f"/admin/v2/namespaces/{ns_path(namespace)}/permissions/{q(role)}"
    call(state(ctx).client.post, path, _list(actions, "actions"))


@namespaces_app.command("revoke-permission")
def namespaces_revoke(ctx: typer.Context, namespace: NsArg, role: RoleOpt) -> None:
    """Revoke a role's permissions on a namespace."""
    call(state(ctx).client.delete, f"/admin/v2/namespaces/{ns_path(namespace)}/permissions/{q(role)}")


@namespaces_app.command("subscription-permission")
def namespaces_subscription_permissions(ctx: typer.Context, namespace: NsArg) -> None:
    """Show the subscriptions of a namespace that only some roles may consume from."""
    show(ctx, call(state(ctx).client.get, f"/admin/v2/namespaces/{ns_path(namespace)}/permissions/subscription"))


@namespaces_app.command("grant-subscription-permission")
def namespaces_grant_subscription(
    ctx: typer.Context, namespace: NsArg, subscription: SubscriptionOpt, roles: RolesOpt
) -> None:
    """Allow only these roles (and the tenant's admins) to consume from a subscription."""
    path = f"/admin/v2/namespaces/{ns_path(namespace)}/permissions/subscription/{q(subscription)}"
    call(state(ctx).client.post, path, _list(roles, "roles"))


@namespaces_app.command("revoke-subscription-permission")
def namespaces_revoke_subscription(
    ctx: typer.Context, namespace: NsArg, subscription: SubscriptionOpt, role: RoleOpt
) -> None:
    """Remove a role from the roles of a subscription."""
    path = f"/admin/v2/namespaces/{ns_path(namespace)}/permissions/{q(subscription)}/{q(role)}"
    call(state(ctx).client.delete, path)


@topics_app.command("permissions")
def topics_permissions(ctx: typer.Context, topic: TopicArg) -> None:
    """Show the roles granted actions on a topic (its namespace's grants included)."""
    path, _ = topic_path(topic)
    show(ctx, call(state(ctx).client.get, path + "/permissions"))


@topics_app.command("grant-permission")
def topics_grant(ctx: typer.Context, topic: TopicArg, role: RoleOpt, actions: ActionsOpt) -> None:
    """Grant a role actions on a topic."""
    path, _ = topic_path(topic)
    call(state(ctx).client.post, f"{path}/permissions/{q(role)}", _list(actions, "actions"))


@topics_app.command("revoke-permission")
def topics_revoke(ctx: typer.Context, topic: TopicArg, role: RoleOpt) -> None:
    """Revoke a role's permissions on a topic."""
    path, _ = topic_path(topic)
    call(state(ctx).client.delete, f"{path}/permissions/{q(role)}")
