"""The sync face's wait for messages: deliveries moved to a waiting application thread at once.

When an application thread finds the sync consumer's buffer and the core's receiver queue empty,
it waits for the next delivery (:meth:`DeliveryWait.wait`). Until its buffer holds a refill's
worth, every delivery to the core (one per run of MESSAGE frames of a read) is then moved into the
buffer on the loop thread and counted as consumed there, so the broker gets its permits back
while the rest of the read is still being decoded, and sends the next messages meanwhile. Taking
the messages only once the whole read was decoded, as a refill does, left the broker idle for
that time and the client idle while the broker answered the FLOW: stop and wait.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from magnetar.client.message import Message


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
        self._arrived = threading.Event()
        #: an application thread waits: deliveries go to the buffer until it holds ``size``
        self._wanted = False
        core.on_delivered = self.delivered

    def wait(self, timeout_s: float | None) -> bool:
        """(application thread) Wait until messages were moved to the buffer, or the core closed;
        False when ``timeout_s`` passed first."""
        self._arrived.clear()
        self._loop.call_soon_threadsafe(self._want)
        return self._arrived.wait(timeout_s)

    def _want(self) -> None:
        self._wanted = True
        self.delivered()

    def delivered(self) -> None:
        """(loop thread) The core delivered messages, or stopped: move what it holds if wanted."""
        if not self._wanted:
            return
        core = self._core
        if core._closed:
            self._arrived.set()
            return
        if core.queued():
            buffer = self._buffer()
            buffer.extend(core.receive_nowait(self._size))
            if len(buffer) >= self._size:
                self._wanted = False
            self._arrived.set()

    def reset(self) -> None:
        """(loop thread) The buffer was voided: stop filling it until a thread waits again (a
        thread waiting now is woken, finds nothing and waits again)."""
        self._wanted = False
        self._arrived.set()
