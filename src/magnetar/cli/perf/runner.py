"""Running a ``magnetar perf`` command: the event loop, Ctrl-C, the progress ticker, the output.

A run's body (send, receive, drain) is one task; :func:`drive` prints a progress line every
second while it runs. The first Ctrl-C (or SIGTERM) asks the body to stop and still gives the
summary of what was done; a second one cancels the body.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import json
import signal
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import typer

from magnetar.cli.perf.report import Snapshot, progress_line, result_document, summary_text

if TYPE_CHECKING:
    from magnetar.cli.messaging import Connection

#: seconds between two progress lines
PROGRESS_INTERVAL_S = 1.0


class Measured(Protocol):
    """What a run reports: its figures for an interval, and for the whole run."""

    def interval(self, elapsed_s: float, seconds: float) -> Snapshot:
        """The figures since the previous interval."""
        ...

    def total(self) -> Snapshot:
        """The figures of the whole run."""
        ...


@dataclass(frozen=True)
class Output:
    """Where things are printed: with ``as_json`` progress goes to stderr and one JSON document to
    stdout; otherwise both progress and summary go to stdout."""

    as_json: bool = False

    def progress(self, snapshot: Snapshot) -> None:
        """Print one progress line."""
        typer.echo(progress_line(snapshot), err=self.as_json)

    def final(self, command: str, settings: dict[str, Any], total: Snapshot, intervals: list[Snapshot],
              target_rate: float = 0) -> None:
        """Print the summary (or the JSON document)."""
        if self.as_json:
            typer.echo(json.dumps(result_document(command, settings, total, intervals, target_rate), indent=2))
        else:
            typer.echo(summary_text(command, total, target_rate))

    def note(self, text: str) -> None:
        """A remark on stderr (errors seen, messages lost)."""
        typer.echo(text, err=True)


async def drive(body: Awaitable[None], measured: Measured, output: Output, stop: asyncio.Event,
                interval_s: float = PROGRESS_INTERVAL_S) -> list[Snapshot]:
    """Run ``body`` to its end, printing progress every ``interval_s``; the intervals' figures."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(body)

    def interrupted() -> None:
        if stop.is_set():
            task.cancel()
        stop.set()

    signals = [sig for sig in (signal.SIGINT, signal.SIGTERM) if _add_signal_handler(loop, sig, interrupted)]
    started = last = time.perf_counter()
    intervals: list[Snapshot] = []
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=max(0.0, last + interval_s - time.perf_counter()))
            if done:
                break
            now = time.perf_counter()
            snapshot = measured.interval(now - started, now - last)
            last = now
            intervals.append(snapshot)
            output.progress(snapshot)
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
        if not task.done():
            task.cancel()
    try:
        task.result()
    except asyncio.CancelledError:
        output.note("interrupted: the figures cover what was done until then")
    return intervals


@contextmanager
def frozen_heap() -> Iterator[None]:
    """The objects alive now (imports, client, consumers) kept out of the cyclic collector's passes
    for the block, and handed back to it after.

    A run allocates hundreds of thousands of short-lived messages; the few that survive a young
    collection (those waiting in a receiver queue) soon make the collector walk the whole heap, some
    34,000 objects of a fresh ``perf`` process: two full passes of 20-30 ms each inside a 0.4-0.9 s
    200,000-message consume (benchmarks/README.md, branch perfconsume)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


#: glibc's mallopt parameters, and the value perf sets them to: the largest mmap threshold glibc's
#: own dynamic threshold goes to (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_KEPT_BYTES = 32 * 1024 * 1024


def keep_freed_heap() -> bool:
    """Have glibc keep up to 32 MiB of freed heap for reuse (``mallopt`` M_TRIM_THRESHOLD, and
    M_MMAP_THRESHOLD so that blocks of up to that size come from the heap), for this process, as
    ``MALLOC_TRIM_THRESHOLD_=33554432 MALLOC_MMAP_THRESHOLD_=33554432`` would; whether it was set
    (False off glibc).

    A consumer keeps each read from its socket (up to 256 KB) while any message of a uniform batch
    in it is alive (client/api/message.py ``UniformMessage``); with glibc's defaults, freeing such
    blocks in another order than they were made trims the heap and the next reads fault its pages
    in again: one minor fault per 4 KiB received, 1.0-1.7 µs of system time per 1 KiB message
    (benchmarks/PROFILES.md §41). Applications set the same with the two environment variables."""
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, _KEPT_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD, _KEPT_BYTES))


def _add_signal_handler(loop: asyncio.AbstractEventLoop, sig: signal.Signals, handler: Callable[[], None]) -> bool:
    try:
        loop.add_signal_handler(sig, handler)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
        return False
    return True


def fail(message: str) -> typer.Exit:
    """Print ``error: message`` on stderr; the exit to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(1)


def run(coro: Coroutine[Any, Any, bool]) -> None:
    """Run a perf command's coroutine on uvloop (asyncio without it); errors end the command, and
    so does a run that reports failures (exit status 1, after its report)."""
    # the client, with a run, not for --help: 200-270 ms CPU (python -X importtime)
    from magnetar.client.exceptions import PulsarError

    try:
        try:
            import uvloop
        except ImportError:  # pragma: no cover
            ok = asyncio.run(coro)
        else:
            ok = uvloop.run(coro)
    except PulsarError as exc:
        raise fail(f"{type(exc).__name__}: {exc}") from None
    except ValueError as exc:  # options the client rejects before any I/O
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    if not ok:
        raise typer.Exit(1)


def open_client(connection: Connection) -> Any:
    """magnetar's asyncio client for a resolved connection (``async with`` it)."""
    # the client, with a run, not for --help: 200-270 ms CPU (python -X importtime)
    from magnetar.client import AsyncClient

    return AsyncClient(connection.service_url, operation_timeout_seconds=30, connection_timeout_ms=5000,
                       **connection.options)
