"""The thread that reads segment files for dispatch, off the event loop (Pulsar's asyncReadEntries).

A managed ledger serves its recent entries from memory (its tail cache and write queue) on the
caller's thread. A read of older entries (a subscription catching up on a backlog) goes to the
segment files: a ``pread`` that may wait on the disk, so the ledger hands it to this thread and the
result comes back on the owner's thread through ``post`` (the event loop's
``call_soon_threadsafe``), the way a ledger's closes go to the reaper (:mod:`magnetar.storage.closing`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

log = logging.getLogger("magnetar.storage.ledger")

T = TypeVar("T")


class ReadThread:
    """Runs read jobs in its own thread(s) and hands each result (or the exception it raised) to a
    callback on the owner's thread."""

    def __init__(self, post: Callable[..., Any], workers: int = 1) -> None:
        """``post(callback, arg)`` runs ``callback(arg)`` on the owner's thread (the loop's
        ``call_soon_threadsafe``); ``workers`` threads read at once."""
        self._post = post
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="magnetar-read")

    def submit(self, job: Callable[[], T], done: Callable[[T | BaseException], None]) -> bool:
        """Run ``job`` on a read thread, then ``done(its result or exception)`` on the owner's thread;
        False (nothing runs) when the thread is shut down."""

        def run() -> None:
            try:
                result: T | BaseException = job()
            except BaseException as exc:  # handed to done, on the owner's thread
                result = exc
            try:
                self._post(done, result)
            except RuntimeError:  # the owner's loop is closed: nobody waits for the read any more
                log.debug("a read finished after its loop closed")

        try:
            self._executor.submit(run)
        except RuntimeError:  # shut down
            return False
        return True

    def shutdown(self) -> None:
        """Stop taking reads; wait for the ones under way."""
        self._executor.shutdown(wait=True)
