"""The sync face's transaction: :class:`~magnetar.client.core.transactions.AsyncTransaction` on the
client's loop thread."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from magnetar.client.core.transactions import AsyncTransaction, TransactionState


class Transaction:
    """A transaction (``client.new_transaction()``): pass it as ``txn=`` to ``Producer.send`` /
    ``send_async`` and ``Consumer.acknowledge`` / ``acknowledge_cumulative``, then ``commit()`` or
    ``abort()``."""

    def __init__(self, core: AsyncTransaction, run: Callable[[Coroutine[Any, Any, Any]], Any]) -> None:
        self._core = core
        self._run = run

    def __repr__(self) -> str:
        return repr(self._core)

    @property
    def core(self) -> AsyncTransaction:
        """The asyncio transaction."""
        return self._core

    def id(self) -> tuple[int, int]:
        """The transaction id: (most significant bits, least significant bits)."""
        return self._core.id()

    def state(self) -> TransactionState:
        """The transaction's state (TransactionState)."""
        return self._core.state()

    def commit(self) -> None:
        """Wait for the transaction's sends and acknowledgements, then commit it: its messages become
        visible, its acknowledgements take effect. Raises InvalidTxnStatus when it is not open
        (ended, timed out, or an operation of it failed), the coordinator's error otherwise."""
        self._run(self._core.commit())

    def abort(self) -> None:
        """Abort the transaction: its messages are never delivered, what it acknowledged is
        delivered again."""
        self._run(self._core.abort())


def core_of(txn: Any) -> AsyncTransaction | None:
    """The asyncio transaction of a ``txn=`` argument (a Transaction, an AsyncTransaction or None)."""
    return txn.core if isinstance(txn, Transaction) else txn


__all__ = ["Transaction", "TransactionState", "core_of"]
