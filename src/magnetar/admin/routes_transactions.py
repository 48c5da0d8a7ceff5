"""Pulsar's transaction REST API (``/admin/v3/transactions/...``), the routes pulsar-admin
``transactions`` and the Go and Java admin clients call."""

from __future__ import annotations

from fastapi import APIRouter

from magnetar.admin.access import AccessGuard
from magnetar.broker.resources.admin import BrokerAdmin
from magnetar.broker.resources.transactions import TransactionResources

_BASE = "/admin/v3/transactions"


def router(admin: BrokerAdmin, access: AccessGuard) -> APIRouter:
    """Coordinator stats, transaction metadata, slow transactions, buffer and pending-ack stats."""
    r = APIRouter(tags=["transactions"])
    txns = TransactionResources(admin.ctx)
    guard = [access.open()]

    def _tn(tenant: str, namespace: str, topic: str):  # noqa: ANN202 - TopicName
        return admin.ctx.topic_name("persistent", tenant, namespace, topic)

    @r.get(_BASE + "/coordinatorStats", dependencies=guard, summary="Transaction coordinators' stats")
    async def coordinator_stats(coordinatorId: int | None = None, authoritative: bool = False) -> dict:  # noqa: N803
        return txns.coordinator_stats(coordinatorId)

    @r.get(_BASE + "/transactionMetadata/{most}/{least}", dependencies=guard, summary="A transaction's metadata")
    async def transaction_metadata(most: int, least: int, authoritative: bool = False) -> dict:
        return txns.transaction_metadata(most, least)

    @r.get(_BASE + "/slowTransactions/{timeout}", dependencies=guard, summary="Transactions open past a time")
    async def slow_transactions(timeout: int, coordinatorId: int | None = None, authoritative: bool = False) -> dict:  # noqa: N803
        return txns.slow_transactions(timeout, coordinatorId)

    @r.get(
        _BASE + "/transactionInBufferStats/{tenant}/{namespace}/{topic}/{most}/{least}",
        dependencies=guard,
        summary="A transaction in a topic's buffer",
    )
    async def in_buffer(tenant: str, namespace: str, topic: str, most: int, least: int) -> dict:
        return await txns.in_buffer_stats(_tn(tenant, namespace, topic), most, least)

    @r.get(_BASE + "/transactionBufferStats/{tenant}/{namespace}/{topic}", dependencies=guard, summary="A topic's transaction buffer")
    async def buffer_stats(tenant: str, namespace: str, topic: str) -> dict:
        return await txns.buffer_stats(_tn(tenant, namespace, topic))

    @r.get(
        _BASE + "/transactionInPendingAckStats/{tenant}/{namespace}/{topic}/{sub}/{most}/{least}",
        dependencies=guard,
        summary="A transaction in a subscription's pending acks",
    )
    async def in_pending_ack(tenant: str, namespace: str, topic: str, sub: str, most: int, least: int) -> dict:
        return await txns.in_pending_ack_stats(_tn(tenant, namespace, topic), sub, most, least)

    @r.get(_BASE + "/pendingAckStats/{tenant}/{namespace}/{topic}/{sub}", dependencies=guard, summary="A subscription's pending acks")
    async def pending_ack_stats(tenant: str, namespace: str, topic: str, sub: str) -> dict:
        return await txns.pending_ack_stats(_tn(tenant, namespace, topic), sub)

    return r
