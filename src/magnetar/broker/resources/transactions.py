"""Pulsar's transaction admin operations (``/admin/v3/transactions/...``) over the broker's
transaction component: coordinator stats, a transaction's metadata, slow transactions, and what a
topic's buffer and a subscription's pending acks hold of a transaction."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from magnetar.broker.errors import BrokerError
from magnetar.broker.resources.errors import NotFoundError, NotReadyError

if TYPE_CHECKING:
    from magnetar.broker.resources.base import ResourceContext
    from magnetar.broker.transactions.service import TransactionService
    from magnetar.protocol.topic_name import TopicName

#: Pulsar's answer when the coordinator is off
DISABLED = "This Broker is not configured with transactionCoordinatorEnabled=true."


class TransactionResources:
    """The transaction operations of pulsar-admin ``transactions``."""

    def __init__(self, ctx: ResourceContext) -> None:
        self.ctx = ctx

    @property
    def _service(self) -> TransactionService:
        service = self.ctx.service.transactions
        if service is None:
            raise NotReadyError(DISABLED)
        return service

    def coordinator_stats(self, coordinator_id: int | None) -> dict[str, Any]:
        """One coordinator's TransactionCoordinatorStats, or all of them by id."""
        service = self._service
        if coordinator_id is not None:
            try:
                return service.coordinator(coordinator_id).stats()
            except BrokerError as exc:
                raise NotFoundError(exc.message) from None
        return {str(tc): c.stats() for tc, c in sorted(service.coordinators.items())}

    def transaction_metadata(self, most: int, least: int) -> dict[str, Any]:
        """TransactionMetadata of a transaction not yet ended (404 otherwise, as Pulsar)."""
        try:
            return self._service.metadata_of((most, least))
        except BrokerError as exc:
            raise NotFoundError(exc.message) from None

    def slow_transactions(self, timeout_ms: int, coordinator_id: int | None) -> dict[str, Any]:
        """Transactions open for longer than ``timeout_ms``, by id."""
        service = self._service
        now = int(time.time() * 1000)
        owner = self.ctx.config.broker_service_url
        out = {}
        for tc, coordinator in sorted(service.coordinators.items()):
            if coordinator_id is not None and tc != coordinator_id:
                continue
            for meta in coordinator.txns.values():
                if now - meta.opened_ms > timeout_ms:
                    admin = meta.to_admin(owner)
                    out[admin["txnId"]] = admin
        return out

    async def in_buffer_stats(self, tn: TopicName, most: int, least: int) -> dict[str, Any]:
        """TransactionInBufferStats: where the transaction's messages start in the topic, and
        whether it was aborted."""
        topic = await self.ctx.load_topic(tn)
        buffer = getattr(topic, "txn_buffer", None)
        txn = (most, least)
        if buffer is None:
            return {"startPosition": None, "aborted": False}
        entries = buffer.ongoing.get(txn)
        start = f"{topic.ledger_id}:{entries[0]}" if entries else None
        return {"startPosition": start, "aborted": buffer.ended.get(txn) is False}

    async def buffer_stats(self, tn: TopicName) -> dict[str, Any]:
        """TransactionBufferStats of a topic."""
        topic = await self.ctx.load_topic(tn)
        buffer = getattr(topic, "txn_buffer", None)
        if buffer is None:
            return {"state": "NoSnapshot", "ongoingTxnSize": 0, "committedTxnCount": 0, "abortedTxnCount": 0}
        stats = buffer.stats()
        stats["maxReadPosition"] = f"{topic.ledger_id}:{topic.last_readable_id}"
        return stats

    async def in_pending_ack_stats(self, tn: TopicName, sub: str, most: int, least: int) -> dict[str, Any]:
        """TransactionInPendingAckStats: the cumulative acknowledgement a transaction holds."""
        topic = await self.ctx.load_topic(tn)
        subscription = self.ctx.subscription(topic, sub)
        pending = getattr(subscription, "pending_acks", None)
        acks = pending.by_txn.get((most, least)) if pending is not None else None
        cumulative = acks.cumulative if acks is not None else None
        return {"cumulativeAckPosition": None if cumulative is None else f"{topic.ledger_id}:{cumulative}"}

    async def pending_ack_stats(self, tn: TopicName, sub: str) -> dict[str, Any]:
        """TransactionPendingAckStats of a subscription."""
        topic = await self.ctx.load_topic(tn)
        subscription = self.ctx.subscription(topic, sub)
        pending = getattr(subscription, "pending_acks", None)
        if pending is None:
            return {"state": "None", "lowWaterMarks": {}, "ongoingTxnSize": 0}
        return pending.stats()
