"""A persistent topic's ledger recovery after a failed sync, without the loop waiting on the disk.

A failed write or fdatasync fences the topic's ledger; the topic fails what waited, closes its
producers and has the ledger cut back to what is durable (:meth:`ManagedLedger.recover_later`: the
wait for the syncs begun before and the cut run on the read thread, the ledger is reopened on the
loop). Until then the ledger takes no append, so a producer that registers meanwhile (the clients
re-register at once after the CLOSE_PRODUCER) is registered but answered not ready yet
(PRODUCER_SUCCESS with ``producer_ready`` false, as for a queued WaitForExclusive producer; the
official clients wait for the second answer), and made ready once the ledger takes appends again:
no SEND reaches a ledger being recovered. When the recovery fails the ledger stays fenced and the
producers held are closed: their next registration tries again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from magnetar.broker.topics.producer import Producer
    from magnetar.storage import ManagedLedger

log = logging.getLogger("magnetar.broker.topics.persistent")

__all__ = ["LedgerRecovery"]


class LedgerRecovery:
    """The recovery of one topic's fenced ledger and the producers whose readiness waits for it."""

    def __init__(self, name: str, recovered: Callable[[int], None]) -> None:
        """``recovered(last entry id kept)`` runs on the loop once the ledger takes appends again."""
        self._name = name
        self._recovered = recovered
        self._held: list[Producer] | None = None

    @property
    def under_way(self) -> bool:
        """Whether the ledger is being recovered."""
        return self._held is not None

    def start(self, ledger: ManagedLedger) -> None:
        """Recover the topic's fenced ledger (nothing when it is not fenced or a recovery is under way)."""
        if not ledger.fenced or self._held is not None or ledger.closed:
            return
        self._held = []
        ledger.recover_later(self._ended)

    def hold(self, producer: Producer) -> bool:
        """Whether ``producer``'s readiness waits for the recovery under way (it is told when it ends)."""
        if self._held is None:
            return False
        self._held.append(producer)
        return True

    def _ended(self, outcome: int | BaseException) -> None:
        held, self._held = self._held or [], None
        if isinstance(outcome, BaseException):
            log.error("%s: the ledger stays fenced (retried at the next registration): %s", self._name, outcome)
        else:
            self._recovered(outcome)
        for producer in held:
            if producer.closed:
                continue
            if isinstance(outcome, BaseException):
                producer.close_by_broker()
            else:
                producer.became_ready()
