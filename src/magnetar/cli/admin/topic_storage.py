"""``magnetar admin topics``: the storage and subscription-state verbs (info-internal,
partitioned-stats-internal, get-backlog-size, get-message-id, offload-status, trim-topic, truncate,
analyze-backlog, get- / update-subscription-properties, get- / set-replicated-subscription-status)."""

from __future__ import annotations

import datetime
from typing import Annotated

import typer

from magnetar.cli.admin.context import SubOpt, TopicArg, call, fail, show, state, topics_app
from magnetar.cli.admin.parsing import parse_message_id, parse_pairs, topic_path
from magnetar.cli.admin.subscriptions import sub_path


def _path(topic: str) -> str:
    path, _ = topic_path(topic)
    return path


@topics_app.command("info-internal")
def topics_info_internal(ctx: typer.Context, topic: TopicArg) -> None:
    """Show the topic's managed ledger info."""
    show(ctx, call(state(ctx).client.get, _path(topic) + "/internal-info"))


@topics_app.command("partitioned-stats-internal")
def topics_partitioned_stats_internal(ctx: typer.Context, topic: TopicArg) -> None:
    """Show the internal stats of every partition of a partitioned topic."""
    show(ctx, call(state(ctx).client.get, _path(topic) + "/partitioned-internalStats"))


@topics_app.command("get-backlog-size")
def topics_backlog_size(
    ctx: typer.Context, topic: TopicArg,
    message_id: Annotated[str, typer.Option("--messageId", "-m", help="ledgerId:entryId (-1:-1: everything)")] = "-1:-1",
) -> None:
    """Bytes stored from a message id to the end of the topic."""
    show(ctx, call(state(ctx).client.put, _path(topic) + "/backlogSize", parse_message_id(message_id)))


def parse_datetime_ms(text: str) -> int:
    """An ISO 8601 date and time (UTC when no zone is given) in milliseconds since the epoch."""
    try:
        moment = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        fail(f"invalid date and time {text!r}: expected ISO 8601, e.g. 2024-01-31T12:00:00Z")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


@topics_app.command("get-message-id")
def topics_message_id(
    ctx: typer.Context, topic: TopicArg,
    datetime_: Annotated[str, typer.Option("--datetime", "-d", help="ISO 8601 date and time, e.g. 2024-01-31T12:00:00Z")],
) -> None:
    """The id of the first message published at or after a time."""
    show(ctx, call(state(ctx).client.get, _path(topic) + f"/messageid/{parse_datetime_ms(datetime_)}"))


@topics_app.command("offload-status")
def topics_offload_status(ctx: typer.Context, topic: TopicArg) -> None:
    """Show the topic's offload status."""
    show(ctx, call(state(ctx).client.get, _path(topic) + "/offload"))


@topics_app.command("trim-topic")
def topics_trim(ctx: typer.Context, topic: TopicArg) -> None:
    """Release now what every subscription acknowledged, as retention allows."""
    call(state(ctx).client.post, _path(topic) + "/trim")


@topics_app.command("truncate")
def topics_truncate(ctx: typer.Context, topic: TopicArg) -> None:
    """Move every subscription to the end of the topic and release the stored messages."""
    call(state(ctx).client.delete, _path(topic) + "/truncate")


@topics_app.command("analyze-backlog")
def topics_analyze_backlog(
    ctx: typer.Context, topic: TopicArg, subscription: SubOpt,
    position: Annotated[str | None, typer.Option("--position", "-p", help="Start at ledgerId:entryId")] = None,
) -> None:
    """Count the entries and messages of a subscription's backlog."""
    body = parse_message_id(position) if position is not None else None
    show(ctx, call(state(ctx).client.post, sub_path(topic, subscription) + "/analyzeBacklog", body))


@topics_app.command("get-subscription-properties")
def topics_get_subscription_properties(ctx: typer.Context, topic: TopicArg, subscription: SubOpt) -> None:
    """Show a subscription's properties."""
    show(ctx, call(state(ctx).client.get, sub_path(topic, subscription) + "/properties"))


@topics_app.command("update-subscription-properties")
def topics_update_subscription_properties(
    ctx: typer.Context, topic: TopicArg, subscription: SubOpt,
    prop: Annotated[list[str] | None, typer.Option("--property", "-p", help="key=value (repeatable)")] = None,
    clear: Annotated[bool, typer.Option("--clear", "-c", help="Remove every property")] = False,
) -> None:
    """Replace a subscription's properties (--clear: remove them all)."""
    if clear == bool(prop):
        fail("give --property key=value (one or more) or --clear")
    call(state(ctx).client.put, sub_path(topic, subscription) + "/properties", {} if clear else parse_pairs(prop))


@topics_app.command("get-replicated-subscription-status")
def topics_get_replicated(ctx: typer.Context, topic: TopicArg, subscription: SubOpt) -> None:
    """Whether a subscription's state is replicated, by topic."""
    show(ctx, call(state(ctx).client.get, sub_path(topic, subscription) + "/replicatedSubscriptionStatus"))


@topics_app.command("set-replicated-subscription-status")
def topics_set_replicated(
    ctx: typer.Context, topic: TopicArg, subscription: SubOpt,
    enable: Annotated[bool, typer.Option("--enable", "-e", help="Replicate the subscription's state")] = False,
    disable: Annotated[bool, typer.Option("--disable", "-d", help="Stop replicating it")] = False,
) -> None:
    """Start or stop replicating a subscription's state."""
    if enable == disable:
        fail("give exactly one of --enable or --disable")
    call(state(ctx).client.post, sub_path(topic, subscription) + "/replicatedSubscriptionStatus", enable)
