"""``magnetar admin topics``: terminate, unload and compaction."""

from __future__ import annotations

import typer

from magnetar.cli.admin.context import TopicArg, call, show, state, topics_app
from magnetar.cli.admin.parsing import topic_path


@topics_app.command("terminate")
def topics_terminate(ctx: typer.Context, topic: TopicArg) -> None:
    """Terminate a topic: no more messages may be published; prints the id of its last message."""
    path, _ = topic_path(topic)
    show(ctx, call(state(ctx).client.post, path + "/terminate"))


@topics_app.command("unload")
def topics_unload(ctx: typer.Context, topic: TopicArg) -> None:
    """Unload a topic (every partition of a partitioned one): its producers and consumers reconnect."""
    path, _ = topic_path(topic)
    call(state(ctx).client.put, path + "/unload")


@topics_app.command("compact")
def topics_compact(ctx: typer.Context, topic: TopicArg) -> None:
    """Request compaction of a topic."""
    path, _ = topic_path(topic)
    call(state(ctx).client.put, path + "/compaction")


@topics_app.command("compaction-status")
def topics_compaction_status(ctx: typer.Context, topic: TopicArg) -> None:
    """Show the compaction status of a topic."""
    path, _ = topic_path(topic)
    show(ctx, call(state(ctx).client.get, path + "/compaction"))
