"""The sync face's wait for messages: deliveries moved to a waiting application thread at once.

When an application thread finds the sync consumer's buffer and the core's receiver queue empty,
it waits for the next delivery (:meth:`DeliveryWait.wait`). Until its buffer holds a refill's
worth, every delivery to the core (one per run of MESSAGE frames of a read) is then moved into the
buffer on the loop thread and counted as consumed there, so the broker gets its permits back
while the rest of the read is still being decoded, and sends the next messages meanwhile. Taking
the messages only once the whole read was decoded, as a refill does, left the broker idle for
that time and the client idle while the broker answered the FLOW: stop and wait.

A move stops where the core's count reaches its FLOW (half the queue; :meth:`DeliveryWait._move`)
and that FLOW is written at once (:func:`flush_output`), not with the rest of the loop iteration's
output: the iteration still has the rest of the read to decode (about a millisecond for 500
messages), and the broker, out of permits, waited for it.

The waiting thread sleeps on a bare lock that the loop thread releases (one futex wake; nothing
to do on the loop thread when nobody waits), and wakes the loop only when the buffer is not being
filled already.
"""

from __future__ import annotations

import asyncio
from _thread import LockType, allocate_lock
from collections import deque
from collections.abc import Callable
from typing import Any

from magnetar.client.api.message import Message


def flush_output(core: Any, moved: list[Message]) -> None:
    """(loop thread) Write now what the connection of the consumer(s) that delivered ``moved`` has
    queued (the FLOW that counting them as consumed may have queued, and any ACK before it).

    A single-topic core has one connection; a multi-topic core's messages come from its children,
    each with its own connection."""
    if hasattr(core, "conn"):
        owners: Any = (core,)
    else:
        owners = {msg._ctx.consumer for msg in moved}
    for owner in owners:
        conn = owner.conn
        if conn is not None:
            conn.flush()


class DeliveryWait:
    """Moves what a consumer core delivers into a sync consumer's buffer while a thread waits.

    ``core`` is the asyncio consumer (single or multi-topic); ``buffer`` returns the sync
    consumer's current buffer (it is replaced when voided); ``size``: the most messages the
    buffer is filled with (a refill's worth). Everything but :meth:`wait` runs on the loop thread.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, core: Any, buffer: Callable[[], deque[Message]], size: int) -> None:
        self._loop = loop
        self._core = core
        self._buffer = buffer
        self._size = size
        #: the lock a waiting application thread sleeps on (held; the loop thread releases it),
        #: set and cleared by that thread
        self._sleeper: LockType | None = None
        #: deliveries go to the buffer until it holds ``size`` (set when a thread waits)
        self._wanted = False
        core.on_delivered = self.delivered

    def wait(self, timeout_s: float | None) -> bool:
        """(application thread) Wait until messages were moved to the buffer, or the core closed
        (True; the buffer may still be empty if it was voided meanwhile: look again); False when
        ``timeout_s`` passed first."""
        sleeper = allocate_lock()
        sleeper.acquire()
        self._sleeper = sleeper
        # published before looking: a delivery (or close) either comes after, and finds the
        # sleeper, or came before, and is seen here
        if self._buffer() or self._core._closed:
            self._sleeper = None
            return True
        if not self._wanted:
            self._loop.call_soon_threadsafe(self._want)
        woken = sleeper.acquire(True, -1 if timeout_s is None else timeout_s)
        self._sleeper = None
        return woken

    def _want(self) -> None:
        self._wanted = True
        self.delivered()

    def _wake(self) -> None:
        # only the waiting thread writes _sleeper (clearing it here could clear its next wait's);
        # only the loop thread releases, so locked() then release() cannot release twice
        sleeper = self._sleeper
        if sleeper is not None and sleeper.locked():
            sleeper.release()

    def delivered(self) -> None:
        """(loop thread) The core delivered messages, or stopped: move what it holds if wanted."""
        if not self._wanted:
            return
        core = self._core
        if core._closed:
            self._wake()
            return
        if core.queued():
            if self._move() >= self._size:
                self._wanted = False
            self._wake()

    def _move(self) -> int:
        """Move up to a refill's worth of what the core holds to the buffer, counted as consumed,
        a FLOW this causes written at once; how many the buffer holds now.

        A move stops where the core's count reaches its FLOW, then goes on: moved a run at a time,
        the FLOW came with the run that crossed half the queue, and the rest of the read (up to
        half the queue again) stayed counted but not granted, so the broker had one FLOW's worth
        to send at a time and waited for the next one. When what follows the FLOW makes another
        one (a batch of 1,000 does), nothing is left counted but not granted anyway: one move.
        """
        core = self._core
        buffer = self._buffer()
        room = self._size
        # a single-topic core's FLOW threshold and count (a multi-topic core's children each have theirs)
        flow_at = getattr(core, "_flow_at", 0)
        if flow_at:
            first = core.messages_until_flow()
            if 0 < first < min(room, core.queued()) < first + flow_at:
                moved = core.receive_nowait(first)
                buffer.extend(moved)
                flush_output(core, moved)
                room -= len(moved)
        moved = core.receive_nowait(room)
        buffer.extend(moved)
        flush_output(core, moved)
        return len(buffer)

    def reset(self) -> None:
        """(loop thread) The buffer was voided: stop filling it until a thread waits again (a
        thread waiting now is woken, finds nothing and waits again)."""
        self._wanted = False
        self._wake()
