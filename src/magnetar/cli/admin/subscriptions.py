"""``magnetar admin topics``: subscription commands (create, unsubscribe, skip, expire, reset-cursor)."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from magnetar.cli.admin.context import ForceOpt, SubOpt, TopicArg, call, fail, show, state, topics_app
from magnetar.cli.admin.parsing import parse_message_id, parse_seconds, q, topic_path


@topics_app.command("subscriptions")
def topics_subscriptions(ctx: typer.Context, topic: TopicArg) -> None:
    """List a topic's subscriptions."""
    path, _ = topic_path(topic)
    show(ctx, call(state(ctx).client.get, path + "/subscriptions"))


def sub_path(topic: str, sub: str) -> str:
    """The REST path of a subscription of a topic."""
    path, _ = topic_path(topic)
    return f"{path}/subscription/{q(sub)}"


@topics_app.command("create-subscription")
def topics_create_subscription(
    ctx: typer.Context,
    topic: TopicArg,
    subscription: SubOpt,
    message_id: Annotated[str, typer.Option("--messageId", "-m", help="latest, earliest or ledgerId:entryId")] = "latest",
) -> None:
    """Create a subscription at a message id."""
    call(state(ctx).client.put, sub_path(topic, subscription), parse_message_id(message_id))


@topics_app.command("unsubscribe")
def topics_unsubscribe(ctx: typer.Context, topic: TopicArg, subscription: SubOpt, force: ForceOpt = False) -> None:
    """Delete a subscription (--force: disconnect its consumers first)."""
    call(state(ctx).client.delete, sub_path(topic, subscription) + ("?force=true" if force else ""))


@topics_app.command("skip")
def topics_skip(
    ctx: typer.Context,
    topic: TopicArg,
    subscription: SubOpt,
    count: Annotated[int, typer.Option("--count", "-n", help="Messages to skip")],
) -> None:
    """Skip the next messages of a subscription."""
    call(state(ctx).client.post, sub_path(topic, subscription) + f"/skip/{count}")


@topics_app.command("clear-backlog")
def topics_clear_backlog(ctx: typer.Context, topic: TopicArg, subscription: SubOpt) -> None:
    """Skip every message of a subscription's backlog."""
    call(state(ctx).client.post, sub_path(topic, subscription) + "/skip_all")


ExpireOpt = Annotated[str, typer.Option("--expireTime", "-t", help="Age: seconds, or 10m, 3h")]


@topics_app.command("expire-messages")
def topics_expire(ctx: typer.Context, topic: TopicArg, subscription: SubOpt, expire_time: ExpireOpt) -> None:
    """Acknowledge the messages of a subscription older than the given age."""
    call(state(ctx).client.post, sub_path(topic, subscription) + f"/expireMessages/{parse_seconds(expire_time)}")


@topics_app.command("expire-messages-all-subscriptions")
def topics_expire_all(ctx: typer.Context, topic: TopicArg, expire_time: ExpireOpt) -> None:
    """Acknowledge the messages older than the given age on every subscription."""
    path, _ = topic_path(topic)
    call(state(ctx).client.post, path + f"/all_subscription/expireMessages/{parse_seconds(expire_time)}")


@topics_app.command("reset-cursor")
def topics_reset_cursor(
    ctx: typer.Context,
    topic: TopicArg,
    subscription: SubOpt,
    time_: Annotated[str | None, typer.Option("--time", "-t", help="Go back this long: 10m, 3h, 2d")] = None,
    message_id: Annotated[str | None, typer.Option("--messageId", "-m", help="ledgerId:entryId, earliest, latest")] = None,
) -> None:
    """Move a subscription back (or forward) to a time or a message id."""
    if (time_ is None) == (message_id is None):
        fail("give exactly one of --time or --messageId")
    if time_ is not None:
        timestamp = int(time.time() * 1000) - parse_seconds(time_, "m") * 1000
        call(state(ctx).client.post, sub_path(topic, subscription) + f"/resetcursor/{timestamp}")
    else:
        call(state(ctx).client.post, sub_path(topic, subscription) + "/resetcursor", parse_message_id(message_id or ""))
