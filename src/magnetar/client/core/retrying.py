"""Retrying a lookup while its broker cannot be reached, within the operation timeout.

The official clients (the C++ client's ``RetryableOperation``, the Java client's lookup retries)
retry a lookup that failed because no connection could be made, with a backoff starting at
100 ms, until the operation timeout runs out; only then does creating a producer or consumer
fail. :func:`retrying` does the same for :class:`~.lookup.LookupService`: a broker that is
restarting is found again by the first attempt after it accepts connections, instead of the
application having to try again itself (a new client each time, as it often does).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from magnetar.client.core.connection import BrokerUnreachable
from magnetar.client.core.trackers import Backoff
from magnetar.client.exceptions import ConnectError

T = TypeVar("T")

#: first and longest delay between two attempts, in seconds (the official clients' 100 ms .. 60 s)
RETRY_BACKOFF = (0.1, 60.0)


async def retrying(operation: Callable[[], Awaitable[T]], timeout: float, backoff: Backoff | None = None) -> T:
    """``await operation()``, again after a backoff delay each time it raises
    :class:`BrokerUnreachable`, as long as the delay ends within ``timeout`` seconds from now;
    then the last error is raised as the official clients' ConnectError (BrokerUnreachable only
    tells this loop to try again). Any other error is raised at once."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    backoff = backoff or Backoff(*RETRY_BACKOFF)
    while True:
        try:
            return await operation()
        except BrokerUnreachable as exc:
            delay = backoff.next()
            if loop.time() + delay >= deadline:
                raise ConnectError(str(exc)) from exc
        await asyncio.sleep(delay)
