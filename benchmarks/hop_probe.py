"""Per-hop timestamps of a durable publish inside the broker (loaded by benchmarks/loop_probe.py).

The hops of one SEND, each stamped with ``time.perf_counter`` (CLOCK_MONOTONIC: the same clock in
every process of the machine, so a client's own stamps line up with these):

- ``read``: the connection's ``data_received`` that carried the SEND began (the loop read it);
- ``pub``: the topic's ``publish`` was called (the SEND decoded);
- ``start``: the last append handed to the commit threads (``GroupCommitter.appended``) before the
  round that covered the send began (the pipelined committer takes every append made meanwhile in
  one round): ``pub>start`` is the send's wait for the round before it, ``start>got`` the wake-up;
- ``got``: a commit thread began the round that covered it (``begin_round``: its writes);
- ``kernel``: the round's last fdatasync returned in the kernel, stamped in C before the thread
  asks for the GIL back (a small shim built with the system's C compiler; absent without one);
- ``synced``: the commit thread held the GIL again after the round (``finish_round`` returned);
- ``done``: the loop ran the round's outcome (``_round_done``);
- ``rcpt``: the SEND_RECEIPT was queued (``SendContext.completed``);
- ``flush``: the connection's queued bytes, the receipt among them, were handed to the socket.

Each round is matched to a send by its receipt: the latest ``done`` at or before ``rcpt``, and that
round's earlier stamps. ``HopProbe.dump`` returns each hop's percentiles (ms) and the slowest sends
with every hop, keyed by sequence id, so a client that records its own send and receipt times per
sequence id can add the two hops outside the broker (client to ``read``, ``flush`` to client).
"""

from __future__ import annotations

import bisect
import ctypes
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

_SHIM = r"""
#include <time.h>
#include <unistd.h>
int fdatasync_stamped(int fd, double *out) {
    int rc = fdatasync(fd);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *out = ts.tv_sec + ts.tv_nsec / 1e9;
    return rc;
}
"""

HOPS = ("read>pub", "pub>start", "start>got", "got>kernel", "kernel>synced", "synced>done", "done>rcpt",
        "rcpt>flush")


def build_shim() -> Any:
    """The C function ``fdatasync_stamped`` (ctypes releases the GIL around it), or None."""
    folder = Path(tempfile.mkdtemp(prefix="hop-probe-"))
    source, library = folder / "shim.c", folder / "shim.so"
    source.write_text(_SHIM)
    try:
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(library), str(source)], check=True,
                       capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    function = ctypes.CDLL(str(library)).fdatasync_stamped
    function.argtypes = (ctypes.c_int, ctypes.POINTER(ctypes.c_double))
    function.restype = ctypes.c_int
    return function


def _ms(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round((b - a) * 1000, 3)


def _latest(stamps: list[float], at: float) -> float | None:
    """The latest of ``stamps`` (sorted) at or before ``at``."""
    index = bisect.bisect_right(stamps, at)
    return stamps[index - 1] if index else None


class HopProbe:
    """Stamps of the publish path's hops (see the module's docstring), between two dumps."""

    def __init__(self, topic_suffix: str = "/probe") -> None:
        self.topic_suffix = topic_suffix
        self.shim = build_shim()
        self._kernel = threading.local()
        self._reset()

    def _reset(self) -> None:
        self.reads: dict[int, float] = {}  # session id -> its data_received's start
        self.pubs: dict[int, tuple[float, float]] = {}  # sequence id -> (read, pub)
        self.rounds: list[tuple[float, float | None, float]] = []  # got, kernel, synced
        self.starts: list[float] = []
        self.dones: list[float] = []
        self.rcpts: dict[int, tuple[float, int]] = {}  # sequence id -> (rcpt, session id)
        self.waiting_flush: dict[int, list[int]] = {}  # session id -> sequence ids queued
        self.flushes: dict[int, float] = {}  # sequence id -> flush

    def fdatasync(self, real: Any) -> Any:
        """``os.fdatasync`` through the shim: the kernel's return stamped before the GIL is asked for."""
        shim = self.shim
        if shim is None:
            return real
        local = self._kernel

        def fdatasync(fd: int) -> None:
            out = ctypes.c_double()
            if shim(fd, ctypes.byref(out)) != 0:
                error = ctypes.get_errno() or 5
                raise OSError(error, os.strerror(error))
            local.last = out.value

        return fdatasync

    def install(self) -> None:
        """Wrap the broker's hops (classes and module functions of the tree on sys.path)."""
        from magnetar.broker import commit
        from magnetar.broker.session import producers
        from magnetar.broker.topics import persistent
        from magnetar.net import transport

        probe = self
        suffix = self.topic_suffix
        real_data, real_flush = transport.FramedProtocol.data_received, transport.FramedProtocol.flush
        real_publish = persistent.PersistentTopic.publish
        real_start, real_done = commit.GroupCommitter.appended, commit.GroupCommitter._round_done
        real_begin, real_finish = commit.begin_round, commit.finish_round
        real_completed = producers.SendContext.completed

        def data_received(self: Any, data: bytes) -> None:
            probe.reads[id(self)] = time.perf_counter()
            real_data(self, data)

        def publish(self: Any, producer: Any, entry: bytes, crc: int, context: Any) -> bool:
            if self.name.endswith(suffix):
                session = getattr(context, "session", None)
                probe.pubs[context.sequence_id] = (probe.reads.get(id(session), 0.0), time.perf_counter())
            return real_publish(self, producer, entry, crc, context)

        def appended(self: Any, topic: Any) -> None:
            probe.starts.append(time.perf_counter())
            real_start(self, topic)

        def begin_round(*args: Any, **kwargs: Any) -> Any:
            probe._kernel.got = time.perf_counter()  # per commit thread: its round's finish follows
            probe._kernel.last = None
            return real_begin(*args, **kwargs)

        def finish_round(*args: Any, **kwargs: Any) -> Any:
            outcome = real_finish(*args, **kwargs)
            probe.rounds.append((probe._kernel.got, probe._kernel.last, time.perf_counter()))
            return outcome

        def round_done(self: Any, *args: Any) -> None:
            probe.dones.append(time.perf_counter())
            real_done(self, *args)

        def completed(self: Any, ledger_id: int, entry_id: int) -> None:
            if self.sequence_id in probe.pubs:
                probe.rcpts[self.sequence_id] = (time.perf_counter(), id(self.session))
                probe.waiting_flush.setdefault(id(self.session), []).append(self.sequence_id)
            real_completed(self, ledger_id, entry_id)

        def flush(self: Any) -> None:
            real_flush(self)
            waiting = probe.waiting_flush.pop(id(self), None)
            if waiting:
                now = time.perf_counter()
                for sequence_id in waiting:
                    probe.flushes[sequence_id] = now

        transport.FramedProtocol.data_received = data_received
        transport.FramedProtocol.flush = flush
        persistent.PersistentTopic.publish = publish
        commit.GroupCommitter.appended = appended
        commit.GroupCommitter._round_done = round_done
        commit.begin_round = begin_round
        commit.finish_round = finish_round
        producers.SendContext.completed = completed

    def sends(self) -> list[dict[str, Any]]:
        """Every probed send of the period with its stamps (s) and hops (ms)."""
        starts, dones = sorted(self.starts), sorted(self.dones)
        rounds = sorted(self.rounds, key=lambda r: r[2])
        synced_at = [r[2] for r in rounds]
        out = []
        for sequence_id, (read, pub) in sorted(self.pubs.items()):
            if sequence_id not in self.rcpts:
                continue
            rcpt = self.rcpts[sequence_id][0]
            done = _latest(dones, rcpt)
            index = bisect.bisect_right(synced_at, done) if done is not None else 0
            got, kernel, synced = rounds[index - 1] if index else (None, None, None)
            start = _latest(starts, got) if got is not None else None
            if start is not None and start < pub:
                start = pub  # appended while its round was being handed over: no queueing
            stamps = {"read": read or None, "pub": pub, "start": start, "got": got, "kernel": kernel,
                      "synced": synced, "done": done, "rcpt": rcpt, "flush": self.flushes.get(sequence_id)}
            hops = {}
            for hop in HOPS:
                a, b = hop.split(">")
                hops[hop] = _ms(stamps[a], stamps[b])
            out.append({"seq": sequence_id, "stamps": stamps, "hops": hops,
                        "total": _ms(stamps["read"], stamps["flush"])})
        return out

    def dump(self) -> list[dict[str, Any]]:
        """The period's sends (see :meth:`sends`), and start afresh."""
        sends = self.sends()
        self._reset()
        return sends
