"""The client's background event loop thread, and the hand-over of calls to it in bulk.

The sync face (:mod:`magnetar.client.sync`) runs the asyncio core on a :class:`LoopThread`; calls made from
application threads that need no answer (acknowledgements, negative acknowledgements ...) cross
to the loop through a :class:`CallBatcher`, one wake-up of the loop per burst.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from magnetar.client.exceptions import AlreadyClosed, Timeout

T = TypeVar("T")
log = logging.getLogger("magnetar.client")


class LoopThread:
    """An event loop running in a daemon thread. Once stopped, calls handed to it raise
    AlreadyClosed (the client was closed or shut down)."""

    def __init__(self) -> None:
        try:
            import uvloop

            self.loop = uvloop.new_event_loop()
        except ImportError:  # pragma: no cover - uvloop is absent on some platforms
            self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="magnetar-client", daemon=True)
        self.thread.start()
        #: set by stop(): nothing handed over after it would ever run
        self.stopped = False

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop thread and wait for its result (Timeout after ``timeout`` s)."""
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("blocking client call made from the client's own loop thread (inside a callback?)")
        if self.stopped:
            coro.close()
            raise AlreadyClosed("the client is closed")
        try:
            fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        except RuntimeError:  # the loop closed since the check above
            coro.close()
            raise AlreadyClosed("the client is closed") from None
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise Timeout(f"operation did not complete within {timeout:g} s") from None

    def stop(self) -> None:
        """Stop the loop and, from another thread, wait for the thread and close the loop."""
        if self.loop.is_closed():
            return
        self.stopped = True
        self.loop.call_soon_threadsafe(self.loop.stop)
        if threading.current_thread() is not self.thread:
            self.thread.join(5)
            if not self.thread.is_alive():
                self.loop.close()


class CallBatcher:
    """Calls made from application threads, handed to the loop thread in bulk.

    Lock-free: items go to a deque (atomic appends) and a drain is scheduled unless one is
    pending. The drain clears the flag *before* emptying the deque, so an item appended while
    it runs is either taken by it or finds the flag clear and schedules another drain.
    Acknowledgements, the hot case, are queued as bare messages; other calls as (fn, args).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, ack_many: Callable[[list[Any]], None] | None = None) -> None:
        self._loop = loop
        self._ack_many = ack_many
        self._items: collections.deque = collections.deque()
        self._scheduled = False

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        """Have ``fn(*args)`` run on the loop thread soon, without waiting for it."""
        self._items.append((fn, args))
        if not self._scheduled:
            self._wake()

    def ack(self, message: Any) -> None:
        """Have ``message`` acknowledged on the loop thread soon, without waiting for it."""
        self._items.append(message)
        if not self._scheduled:
            self._wake()

    def _wake(self) -> None:
        self._scheduled = True
        try:
            self._loop.call_soon_threadsafe(self.drain)
        except RuntimeError:  # the loop is closed: the client was closed or shut down
            self._scheduled = False
            self._items.clear()
            raise AlreadyClosed("the client is closed") from None

    def drain(self) -> None:
        """(loop thread) Run every call queued so far, in order; the acknowledgements queued
        between two calls go to ``ack_many`` together (one call per run, not one per message)."""
        self._scheduled = False
        items = self._items
        popleft = items.popleft
        while items:
            # only this thread takes items: the ones counted are there (a burst of bare
            # acknowledgements, the usual, then goes to ack_many without a look at each)
            taken = [popleft() for _ in range(len(items))]
            if tuple in map(type, taken):
                self._run(taken)
            else:
                self._acknowledge(taken)

    def _run(self, taken: list[Any]) -> None:
        acks: list[Any] = []
        for item in taken:
            if item.__class__ is not tuple:
                acks.append(item)
                continue
            if acks:
                self._acknowledge(acks)
                acks = []
            try:
                item[0](*item[1])
            except Exception:  # the caller is gone: the error can only be logged
                log.exception("deferred call on the client loop failed")
        if acks:
            self._acknowledge(acks)

    def _acknowledge(self, messages: list[Any]) -> None:
        try:
            self._ack_many(messages)  # type: ignore[misc]
        except Exception:  # the caller is gone: the error can only be logged
            log.exception("deferred acknowledgement on the client loop failed")


__all__ = ["CallBatcher", "LoopThread"]
