"""A probe of "the event loop never waits on the disk": every file operation Python makes on one
thread (the broker's loop), with the stack that made it.

Two sources: the interpreter's audit events (``open``, ``os.listdir``, ``os.scandir``, ``os.remove``,
``os.rename``, ``os.mkdir``, ``os.rmdir``, ``os.truncate``, ``shutil.rmtree``... which cover
``open()``, ``os.open`` and pathlib) and wrappers of the ``os`` functions that raise no audit event
(reads, writes, syncs, seeks, stats) for as long as the probe is installed. A read or write counts
only on a regular file (not on a socket or a pipe). SQLite's own file I/O (C code) is not seen here
(strace shows it: docs/PROFILES.md and the FEATURES row say what it found); the statements that cause
it are: every SQL statement run on the probed thread is recorded too (``sqlite`` and its text), through
``sqlite3.Connection.set_trace_callback``, which SQLite calls on the thread executing the statement, on
every connection opened while the probe is installed (``sqlite3.connect`` is wrapped; the audit event
``sqlite3.connect/handle`` comes before the connection can take a callback) and on the ones it is given (:meth:`LoopFileProbe.trace_sqlite`: a metadata store's, opened before).
"""

from __future__ import annotations

import os
import sqlite3
import stat
import sys
import threading
from collections.abc import Callable
from typing import Any

#: audit events of file-system operations (socket and subprocess events are not)
FILE_EVENTS = frozenset({
    "open", "os.listdir", "os.scandir", "os.remove", "os.rename", "os.mkdir", "os.rmdir", "os.truncate",
    "os.chmod", "os.chown", "os.link", "os.symlink", "os.utime", "os.chdir", "shutil.rmtree", "shutil.copyfile",
    "shutil.move", "os.walk", "glob.glob", "sqlite3.connect", "os.fwalk",
})
#: os functions on a descriptor: recorded when it is a regular file
FD_FUNCTIONS = ("pread", "preadv", "read", "readv", "write", "writev", "pwrite", "pwritev", "fsync", "fdatasync",
                "ftruncate", "lseek", "fstatvfs", "posix_fallocate", "sendfile")
#: os functions on a path: always recorded
PATH_FUNCTIONS = ("stat", "lstat", "statvfs", "access")

_active: list[LoopFileProbe] = []
_hooked = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _active and event in FILE_EVENTS:
        for probe in _active:
            probe.saw(event, args)


class LoopFileProbe:
    """Records the file operations made on the thread ``ident`` while installed (a context manager)."""

    def __init__(self, ident: int) -> None:
        self.ident = ident
        #: (operation, argument, stack) in the order they were made
        self.findings: list[tuple[str, str, list[str]]] = []
        self._originals: dict[str, Callable[..., Any]] = {}
        self._fstat = os.fstat
        #: the SQLite connections whose statements are traced (untraced when the probe is removed)
        self._traced: list[sqlite3.Connection] = []

    def trace_sqlite(self, connections: list[sqlite3.Connection]) -> None:
        """Record every statement these connections run on the probed thread (``sqlite``, its SQL)."""
        for conn in connections:
            if conn not in self._traced:
                self._traced.append(conn)
                conn.set_trace_callback(self._statement)

    def _statement(self, sql: str) -> None:
        if threading.get_ident() == self.ident:
            self.saw("sqlite", (sql,))

    def saw(self, what: str, args: tuple[Any, ...]) -> None:
        """Record ``what`` if it runs on the probed thread (the stack's frames, without reading sources)."""
        if threading.get_ident() != self.ident:
            return
        frame = sys._getframe(1)
        stack = []
        while frame is not None:
            code = frame.f_code
            stack.append(f"{code.co_filename}:{frame.f_lineno} {code.co_name}")
            frame = frame.f_back
        self.findings.append((what, repr(args[0]) if args else "", stack[::-1]))

    def _is_file(self, fd: object) -> bool:
        try:
            return isinstance(fd, int) and stat.S_ISREG(self._fstat(fd).st_mode)
        except OSError:
            return False

    def _wrap_fd(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(fd: Any, *args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() == self.ident and self._is_file(fd):
                self.saw(f"os.{name}", (fd,))
            return original(fd, *args, **kwargs)

        return wrapper

    def _wrap_path(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(path: Any, *args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() == self.ident and not (isinstance(path, int) and not self._is_file(path)):
                self.saw(f"os.{name}", (path,))
            return original(path, *args, **kwargs)

        return wrapper

    def __enter__(self) -> LoopFileProbe:
        global _hooked
        if not _hooked:  # an audit hook cannot be removed: one per process, idle while no probe is
            sys.addaudithook(_audit)
            _hooked = True
        for name in FD_FUNCTIONS + PATH_FUNCTIONS:
            original = getattr(os, name, None)
            if original is None:
                continue
            self._originals[name] = original
            wrap = self._wrap_fd if name in FD_FUNCTIONS else self._wrap_path
            setattr(os, name, wrap(name, original))
        connect = self._originals["sqlite3.connect"] = sqlite3.connect

        def traced_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn = connect(*args, **kwargs)
            self.trace_sqlite([conn])
            return conn

        sqlite3.connect = traced_connect  # type: ignore[assignment]
        _active.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _active.remove(self)
        for conn in self._traced:
            try:
                conn.set_trace_callback(None)
            except sqlite3.ProgrammingError:  # closed meanwhile
                pass
        for name, original in self._originals.items():
            setattr(sqlite3 if name.startswith("sqlite3.") else os, name.removeprefix("sqlite3."), original)

    def report(self) -> str:
        """The findings, one block each: the operation, its argument, the stack within magnetar."""
        return self.report_of(self.findings)

    @staticmethod
    def report_of(findings: list[tuple[str, str, list[str]]]) -> str:
        """``findings`` as :meth:`report` shows them."""
        blocks = []
        for what, arg, stack in findings:
            ours = [line.split("/src/", 1)[-1] for line in stack if "/magnetar/" in line]
            blocks.append(f"{what} {arg}\n  " + "\n  ".join(ours[-10:]))
        return "\n\n".join(blocks)
