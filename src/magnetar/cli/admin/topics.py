"""``magnetar admin topics``: create, list, delete, partitions, statistics, lookup."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from magnetar.cli.admin.context import ForceOpt, NsArg, TopicArg, call, cell, show, state, topics_app
from magnetar.cli.admin.output import new_table
from magnetar.cli.admin.parsing import ns_path, q, topic_path


@topics_app.command("list")
def topics_list(ctx: typer.Context, namespace: NsArg) -> None:
    """List the persistent topics of a namespace (partitions individually)."""
    show(ctx, call(state(ctx).client.get, f"/admin/v2/persistent/{ns_path(namespace)}"))


@topics_app.command("list-partitioned-topics")
def topics_list_partitioned(ctx: typer.Context, namespace: NsArg) -> None:
    """List the partitioned topics of a namespace."""
    show(ctx, call(state(ctx).client.get, f"/admin/v2/persistent/{ns_path(namespace)}/partitioned"))


@topics_app.command("create")
def topics_create(ctx: typer.Context, topic: TopicArg) -> None:
    """Create a non-partitioned topic."""
    path, _ = topic_path(topic)
    call(state(ctx).client.put, path)


PartitionsOpt = Annotated[int, typer.Option("--partitions", "-p", help="Number of partitions")]


@topics_app.command("create-partitioned-topic")
def topics_create_partitioned(ctx: typer.Context, topic: TopicArg, partitions: PartitionsOpt) -> None:
    """Create a partitioned topic."""
    path, _ = topic_path(topic)
    call(state(ctx).client.put, path + "/partitions", partitions)


@topics_app.command("update-partitioned-topic")
def topics_update_partitioned(ctx: typer.Context, topic: TopicArg, partitions: PartitionsOpt) -> None:
    """Increase the partitions of a partitioned topic."""
    path, _ = topic_path(topic)
    call(state(ctx).client.post, path + "/partitions", partitions)


@topics_app.command("get-partitioned-topic-metadata")
def topics_partitioned_metadata(ctx: typer.Context, topic: TopicArg) -> None:
    """Show the number of partitions (0 for a non-partitioned topic)."""
    path, _ = topic_path(topic)
    show(ctx, call(state(ctx).client.get, path + "/partitions"))


@topics_app.command("delete")
def topics_delete(ctx: typer.Context, topic: TopicArg, force: ForceOpt = False) -> None:
    """Delete a topic (--force: disconnect its producers and consumers first)."""
    path, _ = topic_path(topic)
    call(state(ctx).client.delete, path + ("?force=true" if force else ""))


@topics_app.command("delete-partitioned-topic")
def topics_delete_partitioned(ctx: typer.Context, topic: TopicArg, force: ForceOpt = False) -> None:
    """Delete a partitioned topic and its partitions."""
    path, _ = topic_path(topic)
    call(state(ctx).client.delete, path + "/partitions" + ("?force=true" if force else ""))


def _show_stats(ctx: typer.Context, stats: dict[str, Any]) -> None:
    st = state(ctx)
    if st.json:
        show(ctx, stats)
        return
    summary = new_table(title="topic")
    summary.add_column("metric", style="bold")
    summary.add_column("value", justify="right")
    for key in (
        "msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut", "msgInCounter", "bytesInCounter",
        "msgOutCounter", "bytesOutCounter", "storageSize", "backlogSize",
    ):
        summary.add_row(key, cell(stats.get(key)))
    st.console.print(summary)
    if stats.get("publishers"):
        pubs = new_table(title="publishers")
        for col in ("producerName", "msgRateIn", "msgThroughputIn", "address"):
            pubs.add_column(col)
        for p in stats["publishers"]:
            pubs.add_row(*(cell(p.get(c)) for c in ("producerName", "msgRateIn", "msgThroughputIn", "address")))
        st.console.print(pubs)
    if stats.get("subscriptions"):
        subs = new_table(title="subscriptions")
        cols = ("type", "msgBacklog", "msgRateOut", "unackedMessages", "consumers")
        subs.add_column("name", style="bold")
        for col in cols:
            subs.add_column(col)
        for name, s in stats["subscriptions"].items():
            subs.add_row(name, *(cell(len(s["consumers"]) if c == "consumers" else s.get(c)) for c in cols))
        st.console.print(subs)


@topics_app.command("stats")
def topics_stats(ctx: typer.Context, topic: TopicArg) -> None:
    """Show a topic's statistics."""
    path, _ = topic_path(topic)
    _show_stats(ctx, call(state(ctx).client.get, path + "/stats"))


@topics_app.command("partitioned-stats")
def topics_partitioned_stats(
    ctx: typer.Context,
    topic: TopicArg,
    per_partition: Annotated[bool, typer.Option("--per-partition", help="Include each partition's statistics")] = False,
) -> None:
    """Show a partitioned topic's statistics, summed over its partitions."""
    path, _ = topic_path(topic)
    stats = call(state(ctx).client.get, path + f"/partitioned-stats?perPartition={'true' if per_partition else 'false'}")
    _show_stats(ctx, stats)
    if per_partition and not state(ctx).json:
        for name, part in stats.get("partitions", {}).items():
            state(ctx).console.print(f"[bold]{name}[/bold]")
            _show_stats(ctx, part)


@topics_app.command("stats-internal")
def topics_stats_internal(ctx: typer.Context, topic: TopicArg) -> None:
    """Show storage-level statistics: ledger and cursors."""
    path, _ = topic_path(topic)
    show(ctx, call(state(ctx).client.get, path + "/internalStats"))


@topics_app.command("last-message-id")
def topics_lastmessage_id(ctx: typer.Context, topic: TopicArg) -> None:
    """Show the id of the last message."""
    path, _ = topic_path(topic)
    show(ctx, call(state(ctx).client.get, path + "/lastMessageId"))


@topics_app.command("lookup")
def topics_lookup(ctx: typer.Context, topic: TopicArg) -> None:
    """Show which broker serves a topic."""
    _, tn = topic_path(topic)
    path = f"/lookup/v2/topic/{tn.domain}/{q(tn.tenant)}/{q(tn.namespace_part)}/{q(tn.local_name)}"
    show(ctx, call(state(ctx).client.get, path))
