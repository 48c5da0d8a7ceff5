"""Test brokers never outlive the process that started them.

Two guards. On Linux the child asks the kernel (``prctl(PR_SET_PDEATHSIG, SIGKILL)``, between fork and
exec) to be killed when the thread that started it ends, which for a test run is the main thread of
the pytest process. And every broker started by :class:`magnetar.testing.Broker` is written down in a
registry directory with its parent's process id and start time, so that the next start reaps a
broker whose parent is gone (a platform without ``prctl``, or a parent killed between fork and prctl).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path

PR_SET_PDEATHSIG = 1


@cache
def _libc() -> ctypes.CDLL:
    """The C library of this process, loaded once in the parent (never between fork and exec)."""
    return ctypes.CDLL(None, use_errno=True)


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` for :class:`subprocess.Popen` that makes the child die with this process (Linux).

    None elsewhere: the registry's reaping is the guard there.
    """
    if not sys.platform.startswith("linux"):
        return None
    prctl = _libc().prctl
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: the kernel will not tell
            os._exit(1)

    return preexec


def registry_dir() -> Path:
    """Where started brokers are written down (one directory per user)."""
    return Path(tempfile.gettempdir()) / f"magnetar-testing-{os.getuid()}"


def _start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot), None when it does not run."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces: fields are counted after its closing parenthesis
    return stat.rsplit(")", 1)[1].split()[19]


def register(pid: int, directory: Path | None) -> None:
    """Write down broker ``pid``, started by this process; ``directory`` is removed if it is reaped."""
    if not Path("/proc/self/stat").exists():
        return
    registry = registry_dir()
    registry.mkdir(mode=0o700, exist_ok=True)
    record = {"pid": pid, "start": _start_time(pid), "parent": os.getpid(), "parent_start": _start_time(os.getpid()),
              "directory": str(directory) if directory is not None else None}
    (registry / f"{pid}.json").write_text(json.dumps(record))


def unregister(pid: int) -> None:
    """Forget broker ``pid`` (it was stopped)."""
    with contextlib.suppress(OSError):
        (registry_dir() / f"{pid}.json").unlink()


def reap_stale() -> list[int]:
    """Kill the brokers whose starting process is gone, remove their directories; their process ids."""
    if not Path("/proc/self/stat").exists():  # process start times come from /proc
        return []
    registry = registry_dir()
    if not registry.is_dir():
        return []
    reaped = []
    for path in registry.glob("*.json"):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        broker_alive = record["start"] is not None and _start_time(record["pid"]) == record["start"]
        parent_alive = _start_time(record["parent"]) == record["parent_start"]
        if parent_alive and broker_alive:
            continue
        if broker_alive:
            with contextlib.suppress(OSError):
                os.kill(record["pid"], signal.SIGKILL)
            reaped.append(record["pid"])
        if not parent_alive and record["directory"]:
            shutil.rmtree(record["directory"], ignore_errors=True)
        with contextlib.suppress(OSError):
            path.unlink()
    return reaped
