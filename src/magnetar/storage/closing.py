"""A ledger's close off the caller's thread, and the wait of a reopen for it.

:meth:`~magnetar.storage.ledger.ManagedLedger.close` makes every entry appended durable and then
closes the files. An fdatasync on the event loop stalls every connection for as long as the disk
takes (milliseconds, tens in the tail), so the ledger hands that work to its reaper thread and
returns at once. Until the job is done, the directory counts as closing: a
:meth:`~magnetar.storage.ledger.ManagedLedger.open` of it waits for the job, because a ledger counts
every entry it finds at open as durable, which is true only once the closing sync has run.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("magnetar.storage.ledger")

#: runs a clean-up job (closing and unlinking files a ledger let go) later in another thread, in order
Reaper = Callable[[Callable[[], None]], object]

_closing: dict[str, threading.Event] = {}
_closing_lock = threading.Lock()


def close_off_thread(directory: Path, job: Callable[[], None], reaper: Reaper) -> None:
    """Have ``reaper`` run ``job`` (the final sync and close of the ledger in ``directory``); until it
    has run, :func:`wait_for_pending_close` of that directory blocks. A reaper that refuses the job
    (RuntimeError: its executor is shut down) has it run here. A failure of ``job`` is logged and
    raised (to the caller when the job runs at once)."""
    key = os.path.abspath(directory)
    done = threading.Event()
    with _closing_lock:
        _closing[key] = done

    def closing() -> None:
        try:
            job()
        except BaseException:
            log.exception("closing the ledger in %s failed", directory)
            raise
        finally:
            with _closing_lock:
                if _closing.get(key) is done:
                    del _closing[key]
            done.set()

    try:
        reaper(closing)
    except RuntimeError:  # the reaper's executor is shut down: nothing else will run it
        closing()


def wait_for_pending_close(directory: Path) -> None:
    """Block until a close of the ledger in ``directory`` handed to a reaper has run (if one has)."""
    with _closing_lock:
        done = _closing.get(os.path.abspath(directory))
    if done is not None:
        done.wait()
