"""A fenced ledger's recovery with its waits off the owner's thread (:meth:`ManagedLedger.recover_later`).

A failed write or fdatasync fences a ledger: it takes no appends until it is cut back to what is
durable. The cut waits for the syncs begun before it (a commit thread's fdatasync) and for the disk
(unlinks, a truncate, an fsync), so a ledger owned by the event loop has it run on its read thread;
what the owner's thread reads without a lock (the tail cache, the last entry id, the fence) is reset
on the owner's thread once the files are cut, and the callers are told there.
"""

from __future__ import annotations

from collections.abc import Callable

from magnetar.storage.read_thread import ReadThread
from magnetar.storage.segment import StorageError

__all__ = ["Recovery"]

#: what a recovery gives its callers: the last entry id kept, or why it failed (the ledger stays fenced)
Outcome = int | BaseException


class Recovery:
    """The recovery of one ledger: at most one under way, joined by every caller meanwhile."""

    def __init__(self, cut: Callable[[], int], reopen: Callable[[int], Outcome], reads: ReadThread | None) -> None:
        """``cut`` (any thread) cuts the files back and returns the first entry id cut (StorageError when
        it cannot); ``reopen`` (the owner's thread) reopens the ledger from there; ``reads`` runs ``cut``
        (None: the owner's thread runs it)."""
        self._cut = cut
        self._reopen = reopen
        self._reads = reads
        self._waiting: list[Callable[[Outcome], None]] | None = None

    @property
    def under_way(self) -> bool:
        """Whether a recovery was started and did not end yet."""
        return self._waiting is not None

    def now(self) -> int:
        """(the owner's thread) Recover on this thread: the last entry id kept; raises StorageError."""
        outcome = self._reopen(self._cut())
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def start(self, done: Callable[[Outcome], None]) -> None:
        """(the owner's thread) Recover, or join the recovery under way; ``done`` gets the outcome on
        the owner's thread (at once when there is no read thread)."""
        if self._waiting is not None:
            self._waiting.append(done)
            return
        self._waiting = [done]
        if self._reads is not None and self._reads.submit(self._cut, self._ended):
            return
        try:
            result: Outcome = self._cut()
        except StorageError as exc:
            result = exc
        self._ended(result)

    def _ended(self, result: Outcome) -> None:
        waiting, self._waiting = self._waiting or [], None
        outcome = result if isinstance(result, BaseException) else self._reopen(result)
        for done in waiting:
            done(outcome)
