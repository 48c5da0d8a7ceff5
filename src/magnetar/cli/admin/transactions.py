"""``magnetar admin transactions``: pulsar-admin's transaction verbs over ``/admin/v3/transactions``."""

from __future__ import annotations

from typing import Annotated

import typer

from magnetar.cli.admin.context import SubOpt, admin_app, call, show, state
from magnetar.cli.admin.parsing import q, topic_path

transactions_app = typer.Typer(help="Transactions: coordinators, metadata, buffers and pending acks.", no_args_is_help=True)
admin_app.add_typer(transactions_app, name="transactions")

_BASE = "/admin/v3/transactions"
CoordinatorOpt = Annotated[int | None, typer.Option("--coordinator-id", "-c", help="Coordinator id (default: all)")]
MostOpt = Annotated[int, typer.Option("--most-sig-bits", "-m", help="The transaction id's most significant bits")]
LeastOpt = Annotated[int, typer.Option("--least-sig-bits", "-l", help="The transaction id's least significant bits")]
TopicOpt = Annotated[str, typer.Option("--topic", "-t", help="Topic: persistent://tenant/namespace/topic or a short name")]


def _topic(topic: str) -> str:
    """tenant/namespace/topic of a topic, URL-quoted (the v3 paths take no domain)."""
    _, tn = topic_path(topic)
    return f"{q(tn.tenant)}/{q(tn.namespace_part)}/{q(tn.local_name)}"


@transactions_app.command("coordinator-stats")
def coordinator_stats(ctx: typer.Context, coordinator_id: CoordinatorOpt = None) -> None:
    """Stats of one transaction coordinator, or of all."""
    suffix = f"?coordinatorId={coordinator_id}" if coordinator_id is not None else ""
    show(ctx, call(state(ctx).client.get, f"{_BASE}/coordinatorStats{suffix}"))


@transactions_app.command("transaction-metadata")
def transaction_metadata(ctx: typer.Context, most: MostOpt, least: LeastOpt) -> None:
    """A transaction's metadata (status, partitions produced to, subscriptions acknowledged on)."""
    show(ctx, call(state(ctx).client.get, f"{_BASE}/transactionMetadata/{most}/{least}"))


@transactions_app.command("slow-transactions")
def slow_transactions(
    ctx: typer.Context,
    time_ms: Annotated[int, typer.Option("--time", "-t", help="Open for longer than this many milliseconds")],
    coordinator_id: CoordinatorOpt = None,
) -> None:
    """Transactions open for longer than a time."""
    suffix = f"?coordinatorId={coordinator_id}" if coordinator_id is not None else ""
    show(ctx, call(state(ctx).client.get, f"{_BASE}/slowTransactions/{time_ms}{suffix}"))


@transactions_app.command("transaction-buffer-stats")
def buffer_stats(ctx: typer.Context, topic: TopicOpt) -> None:
    """A topic's transaction buffer."""
    show(ctx, call(state(ctx).client.get, f"{_BASE}/transactionBufferStats/{_topic(topic)}"))


@transactions_app.command("transaction-in-buffer-stats")
def in_buffer_stats(ctx: typer.Context, topic: TopicOpt, most: MostOpt, least: LeastOpt) -> None:
    """A transaction in a topic's buffer."""
    show(ctx, call(state(ctx).client.get, f"{_BASE}/transactionInBufferStats/{_topic(topic)}/{most}/{least}"))


@transactions_app.command("pending-ack-stats")
def pending_ack_stats(ctx: typer.Context, topic: TopicOpt, subscription: SubOpt) -> None:
    """A subscription's pending acknowledgements."""
    show(ctx, call(state(ctx).client.get, f"{_BASE}/pendingAckStats/{_topic(topic)}/{q(subscription)}"))


@transactions_app.command("transaction-in-pending-ack-stats")
def in_pending_ack_stats(ctx: typer.Context, topic: TopicOpt, subscription: SubOpt, most: MostOpt, least: LeastOpt) -> None:
    """A transaction in a subscription's pending acknowledgements."""
    path = f"{_BASE}/transactionInPendingAckStats/{_topic(topic)}/{q(subscription)}/{most}/{least}"
    show(ctx, call(state(ctx).client.get, path))
