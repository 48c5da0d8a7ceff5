"""Transactions (Pulsar's PIP-31): the coordinators and their logs, the transaction buffer of each
persistent topic and the pending acknowledgements of each subscription.

:mod:`.coordinator` keeps each transaction's metadata and state (OPEN, COMMITTING, COMMITTED,
ABORTING, ABORTED) in a durable log (:mod:`.log`, a ledger of :mod:`magnetar.storage` committed
by the broker's group committer); :mod:`.service` owns the coordinators and ends a transaction on
every partition (:mod:`.buffer`: markers, the max-read position, aborted messages) and subscription
(:mod:`.pending_ack`) it touched, in process. The session only decodes the commands
(:mod:`magnetar.broker.session.transactions`).
"""

from __future__ import annotations

#: a transaction id: (most significant bits = coordinator id, least significant bits = its sequence)
TxnId = tuple[int, int]

__all__ = ["TxnId"]
