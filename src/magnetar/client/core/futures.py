"""Completing a future with an operation's outcome, from any thread, once.

:func:`set_future` is what the official ``pulsar.asyncio`` calls ``_set_future``: an outcome given
callback-style (a result code, or magnetar's ``None`` / exception in its place, and a value)
settles an asyncio future; a future already resolved or cancelled (its waiter timed out or went
away) is left as it is. On the future's own loop thread it settles at once; from any other thread
(the sync face's loop thread, an application thread) it is handed to the future's loop.
"""

from __future__ import annotations

import asyncio
from typing import Any

from magnetar.client.exceptions import PulsarError, Result, error_for_result


def _outcome_error(result: Result | PulsarError | BaseException | int | None) -> BaseException | None:
    """The exception an outcome stands for (None for success)."""
    if result is None:
        return None
    if isinstance(result, BaseException):
        return result
    code = Result(result)
    if code == Result.Ok:
        return None
    return error_for_result(code)


def settle(future: asyncio.Future, error: BaseException | None, value: Any = None) -> None:
    """(the future's loop thread) Give ``future`` its value, or ``error``, unless it is done already."""
    if future.done():
        return
    if error is None:
        future.set_result(value)
    else:
        future.set_exception(error)


def set_future(future: asyncio.Future, result: Result | PulsarError | BaseException | int | None, value: Any = None) -> None:
    """Settle ``future`` with an outcome given callback-style: ``result`` is ``Result.Ok`` (or
    None) for success with ``value``, else a result code or the exception itself; a no-op when
    the future is already resolved or cancelled. Safe from any thread."""
    error = _outcome_error(result)
    loop = future.get_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        settle(future, error, value)
    elif not loop.is_closed():
        loop.call_soon_threadsafe(settle, future, error, value)


__all__ = ["set_future", "settle"]
