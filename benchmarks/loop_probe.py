"""Run ``magnetar`` (the CLI, e.g. ``standalone``) with probes of what makes a publish's latency tail.

``python benchmarks/loop_probe.py standalone --data-dir ...`` starts the broker as the CLI would, and
also records, in the broker process:

- loop lag: a task sleeps 1 ms at a time; how late each wake-up is shows the callbacks that hold
  the loop (long callbacks, garbage collections, blocking calls);
- garbage collections (``gc.callbacks``): per generation, how many and how long;
- every ``os.fdatasync`` the broker makes (the commit thread's fsyncs), timed;
- every ``os.writev`` (the appends to segment files), timed, those made on the loop (main) thread
  apart: a write to the page cache can wait for the file system's journal while an fsync commits
  it, and on the loop that wait holds every connection.

``MAGNETAR_PROBE_FREEZE=1`` calls ``gc.freeze()`` at each dump (an experiment: what the next
period's full collections cost when what was alive at its start is left out of them); each dump
records how many objects the full collection would walk (``gc_objects``: generation 2, and frozen).

``MAGNETAR_PROBE_FROZEN_GARBAGE=1`` unfreezes, collects and freezes again at each dump, and records how
many objects that collection freed (``frozen_garbage``: what the broker's freezes kept that became
cyclic garbage since; a check for the end of a run).

``MAGNETAR_PROBE_GC_THRESHOLD=a,b,c`` sets the collector's thresholds (``gc.set_threshold``) before the
broker starts (an experiment; a threshold the broker sets itself wins).

``MAGNETAR_PROBE_SWITCH_INTERVAL_MS`` sets the interpreter's switch interval (how long a thread that
wants the GIL waits before it forces the holder to drop it; Python's default is 5 ms).

- loop stalls: a watchdog thread looks at the ticker every millisecond; while the loop is more than
  ``MAGNETAR_PROBE_STALL_MS`` (default 10) late it samples the loop thread's stack, so each stall
  is reported with where the loop was (a blocking call shows as the frame that made it), and with
  how late the watchdog itself woke (a late watchdog: the process was not running at all).

- the loop's turns of a few kinds, each timed (``turns_ms``): a dispatcher's run (``dispatch``: a
  catch-up's turn), a connection's ``data_received`` (``read``: the frames one read carried), a
  commit round's outcome (``round_done``): the callbacks a probe send can queue behind; each also
  as the loop thread's CPU time it took (``<kind> cpu``: the wall time less the waits for a CPU,
  for the GIL and on the disk, so a figure that does not move with the machine's load);

- the hops of each publish to topics named ``*/probe`` (benchmarks/hop_probe.py): when the loop read
  the SEND, decoded it, handed its commit round to the commit thread, the thread began it, the
  kernel returned its fdatasync, the thread held the GIL again, the loop ran the round's outcome,
  queued the receipt and wrote it; per send (``hop_sends``: sequence id -> stamps) and as percentiles.

On SIGUSR1 it appends one JSON line (what it saw since the previous one) to the file named by
``MAGNETAR_PROBE_OUT``, and starts afresh. benchmarks/publish_tail.py uses it.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import runpy
import signal
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Coroutine
from typing import Any

from hop_probe import HOPS, HopProbe


def percentiles(values: list[float]) -> dict[str, float]:
    """p50 / p99 / p99.9 / max of ``values`` (milliseconds), and how many."""
    if not values:
        return {"count": 0}
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)

    return {"count": len(ordered), "p50": at(0.5), "p99": at(0.99), "p99.9": at(0.999), "max": round(ordered[-1], 3)}


class Probe:
    """What the broker process records between two dumps."""

    def __init__(self, out: str) -> None:
        self.out = out
        self.hops = HopProbe()
        self.lags: list[float] = []
        self.gc: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self.fsyncs: list[float] = []
        self.writes: list[float] = []
        self.loop_writes: list[float] = []
        self._gc_started = 0.0
        self._gc_cpu_started = 0.0
        #: per generation, the CPU time (of the thread that ran it) of each collection, ms
        self.gc_cpu: dict[int, list[float]] = {0: [], 1: [], 2: []}
        #: per generation, the objects each collection found unreachable (and freed)
        self.gc_collected: dict[int, list[int]] = {0: [], 1: [], 2: []}
        #: with MAGNETAR_PROBE_GC_CENSUS=1: at each full collection's start, the objects it will walk
        #: (not frozen) by type, the most numerous first (the census itself holds the loop for a while)
        self.gc_census: list[dict[str, Any]] = []
        #: with MAGNETAR_PROBE_GC_CENSUS=1: the three gen-1 collections that took the most CPU, with what
        #: each walked (generations 0 and 1)
        self.gc_young_census: list[dict[str, Any]] = []
        self._young_census: dict[str, Any] | None = None
        self._cpu_started = time.process_time()
        self._lock = threading.Lock()
        #: when the ticker last woke (perf_counter), read by the stall watchdog
        self.last_tick = time.perf_counter()
        #: when the last dump ended: the loop stall and lag it caused (its hop records are computed
        #: and written on the loop, up to ~100 ms) are left out of the next period
        self.dump_ended = 0.0
        #: while the probe writes its dump: the collections its records cause (10,000 lists of hop
        #: stamps: gen-1 collections of 4-11 ms) are not the broker's and are not counted
        self.dumping = False
        self.stall_ms = float(os.environ.get("MAGNETAR_PROBE_STALL_MS", "10"))
        #: loop-thread stack (innermost frames) -> samples taken during stalls (one a millisecond)
        self.stall_stacks: Counter[str] = Counter()
        #: (stall length ms, the watchdog's own worst lateness ms, the stack seen most, CPU ms each
        #: thread used during the stall) per stall
        self.stalls: list[tuple[float, float, str, dict[str, float]]] = []
        #: (loop) kind of callback -> how long each one ran, ms
        self.turns: dict[str, list[float]] = {}
        #: the admin route groups built since the last dump, by name
        self.route_builds: list[str] = []

    def watch_stalls(self, loop_thread_id: int) -> None:
        """(watchdog thread) Sample the loop thread's stack while the loop is stalled, and note which
        threads used the CPU meanwhile (one that did held the GIL; none: the process was not run)."""
        threshold = self.stall_ms / 1000
        in_stall: Counter[str] = Counter()
        worst_late = 0.0
        stall_start = 0.0
        cpu_before = thread_cpu()
        while True:
            before = time.perf_counter()
            time.sleep(0.001)
            now = time.perf_counter()
            late = now - before - 0.001
            behind = now - self.last_tick
            if behind > threshold:
                if not in_stall:
                    stall_start, worst_late = self.last_tick, 0.0
                worst_late = max(worst_late, late)
                frame = sys._current_frames().get(loop_thread_id)
                if frame is not None:
                    in_stall[" < ".join(f"{short_path(f.filename)}:{f.lineno} {f.name}"
                                        for f in reversed(traceback.extract_stack(frame)[-6:]))] += 1
                continue
            if in_stall and stall_start < self.dump_ended:
                in_stall = Counter()  # the probe's own dump held the loop: not the broker's stall
            if in_stall:
                cpu_after = thread_cpu()
                used = {name: round((cpu_after[name] - cpu_before.get(name, 0.0)) * 1000, 1) for name in cpu_after}
                with self._lock:
                    self.stall_stacks.update(in_stall)
                    self.stalls.append((round((now - stall_start) * 1000, 1), round(worst_late * 1000, 1),
                                        in_stall.most_common(1)[0][0], {k: v for k, v in used.items() if v >= 0.5}))
                in_stall = Counter()
            cpu_before = thread_cpu()

    def on_gc(self, phase: str, info: dict[str, int]) -> None:
        """gc.callbacks hook: time each collection (not those the probe's own dump causes)."""
        if self.dumping:
            return
        if phase == "start":
            census = os.environ.get("MAGNETAR_PROBE_GC_CENSUS") == "1"
            if info["generation"] == 2 and census:
                self.gc_census.append(census_of(gc.get_objects()))
            elif info["generation"] == 1 and census:
                self._young_census = census_of(gc.get_objects(generation=0) + gc.get_objects(generation=1))
            self._gc_started, self._gc_cpu_started = time.perf_counter(), time.thread_time()
        else:
            self.gc[info["generation"]].append((time.perf_counter() - self._gc_started) * 1000)
            self.gc_cpu[info["generation"]].append((time.thread_time() - self._gc_cpu_started) * 1000)
            self.gc_collected[info["generation"]].append(info["collected"])
            if info["generation"] == 1 and self._young_census is not None:
                self._young_census["cpu_ms"] = round(self.gc_cpu[1][-1], 2)
                self.gc_young_census = sorted([*self.gc_young_census, self._young_census],
                                              key=lambda c: c["cpu_ms"], reverse=True)[:3]
                self._young_census = None

    def timed_turn(self, kind: str, real: Any) -> Any:
        """A loop callback (a method) that records how long each call ran under ``kind``."""
        turns = self.turns.setdefault(kind, [])
        cpu = self.turns.setdefault(f"{kind} cpu", [])

        def timed(*args: Any, **kwargs: Any) -> Any:
            started, cpu_started = time.perf_counter(), time.thread_time()
            try:
                return real(*args, **kwargs)
            finally:
                turns.append((time.perf_counter() - started) * 1000)
                cpu.append((time.thread_time() - cpu_started) * 1000)

        return timed

    def install_turns(self) -> None:
        """Time the loop callbacks of :attr:`turns` (classes of the tree on sys.path)."""
        from magnetar.broker.commit import GroupCommitter
        from magnetar.broker.subscriptions.dispatchers.base import Dispatcher
        from magnetar.net.transport import FramedProtocol

        Dispatcher._run = self.timed_turn("dispatch", Dispatcher._run)
        FramedProtocol.data_received = self.timed_turn("read", FramedProtocol.data_received)
        GroupCommitter._round_done = self.timed_turn("round_done", GroupCommitter._round_done)
        if os.environ.get("MAGNETAR_PROBE_GC_CENSUS") == "1":
            self.install_route_builds()

    def install_route_builds(self) -> None:
        """Record which admin route groups are built in each period, hooked once the HTTP app is built
        (importing the admin app at start would change what the start-up freeze keeps)."""
        from magnetar.admin import standalone

        real_build = standalone.build_http_app

        def build_http_app(service: Any) -> Any:
            app = real_build(service)
            from magnetar.admin.route_groups import RouteGroups

            real_routers = RouteGroups._routers

            def routers(groups: Any, name: str) -> Any:
                self.route_builds.append(name)
                return real_routers(groups, name)

            RouteGroups._routers = routers
            return app

        standalone.build_http_app = build_http_app

    def timed_fdatasync(self, real: Any) -> Any:
        """``os.fdatasync`` that records its duration."""

        def fdatasync(fd: int) -> None:
            started = time.perf_counter()
            real(fd)
            elapsed = (time.perf_counter() - started) * 1000
            with self._lock:
                self.fsyncs.append(elapsed)

        return fdatasync

    def timed_writev(self, real: Any) -> Any:
        """``os.writev`` that records its duration."""

        def writev(fd: int, buffers: Any) -> int:
            started = time.perf_counter()
            written = real(fd, buffers)
            elapsed = (time.perf_counter() - started) * 1000
            if threading.current_thread() is threading.main_thread():
                self.loop_writes.append(elapsed)
            else:
                with self._lock:
                    self.writes.append(elapsed)
            return written

        return writev

    async def ticker(self) -> None:
        """Sleep 1 ms at a time and record how late each wake-up was."""
        while True:
            started = time.perf_counter()
            await asyncio.sleep(0.001)
            self.last_tick = time.perf_counter()
            if started >= self.dump_ended:  # a wake-up late for the probe's own dump is not counted
                self.lags.append((time.perf_counter() - started) * 1000 - 1.0)

    def dump(self) -> None:
        """Append what was seen since the last dump to the output file, and start afresh."""
        self.dumping = True
        try:
            self._dump()
        finally:
            self.dumping = False

    def _dump(self) -> None:
        lags, self.lags = self.lags, []
        loop_writes, self.loop_writes = self.loop_writes, []
        with self._lock:
            fsyncs, self.fsyncs = self.fsyncs, []
            writes, self.writes = self.writes, []
            stalls, self.stalls = self.stalls, []
            stacks, self.stall_stacks = self.stall_stacks, Counter()
        gcs, self.gc = self.gc, {0: [], 1: [], 2: []}
        gc_cpu, self.gc_cpu = self.gc_cpu, {0: [], 1: [], 2: []}
        collected, self.gc_collected = self.gc_collected, {0: [], 1: [], 2: []}
        census, self.gc_census = self.gc_census, []
        young_census, self.gc_young_census = self.gc_young_census, []
        builds, self.route_builds = self.route_builds, []
        turns = {kind: percentiles(values) for kind, values in self.turns.items()}
        for values in self.turns.values():
            values.clear()
        cpu, self._cpu_started = time.process_time() - self._cpu_started, time.process_time()
        record = {
            "cpu_s": round(cpu, 3),
            "loop_lag_ms": {**percentiles(lags), "over_2ms": sum(1 for x in lags if x > 2),
                            "over_5ms": sum(1 for x in lags if x > 5)},
            "gc_ms": {str(gen): {"count": len(v), "total": round(sum(v), 2), "max": round(max(v, default=0), 2),
                                 "over_2ms": sum(1 for x in v if x > 2),
                                 "cpu_max": round(max(gc_cpu[gen], default=0), 2),
                                 "collected_max": max(collected[gen], default=0)} for gen, v in gcs.items()},
            "broker_fdatasync_ms": percentiles(fsyncs),
            "broker_writev_ms": {**percentiles(writes), "over_2ms": sum(1 for x in writes if x > 2)},
            "loop_writev_ms": {**percentiles(loop_writes),
                               "over_2ms": sum(1 for x in loop_writes if x > 2)},
            "stalls": sorted(stalls, key=lambda stall: stall[0], reverse=True)[:200],  # the longest
            "stall_stacks": stacks.most_common(15),
            "turns_ms": turns,
            "gc_census": census,
            "gc_young_census": young_census,
            "route_builds": builds,
        }
        record.update(hop_record(self.hops.dump()))
        record["gc_objects"] = {"gen2": len(gc.get_objects(generation=2)), "frozen": gc.get_freeze_count()}
        if os.environ.get("MAGNETAR_PROBE_GC_CENSUS") == "1":
            record["gc_objects"]["census"] = census_of(gc.get_objects())
        if os.environ.get("MAGNETAR_PROBE_FROZEN_GARBAGE") == "1":
            # what the freezes so far kept from the collector that is garbage now: unfrozen, collected,
            # what is left frozen again (an end-of-run check: it changes what later periods walk)
            gc.unfreeze()
            record["frozen_garbage"] = gc.collect()
            gc.freeze()
        if os.environ.get("MAGNETAR_PROBE_FREEZE") == "1":
            gc.freeze()
        with open(self.out, "a") as f:
            f.write(json.dumps(record) + "\n")
        self.dump_ended = time.perf_counter()


def census_of(objects: list[Any]) -> dict[str, Any]:
    """What a full collection would walk (the objects not frozen): how many, the most numerous types, and
    the FastAPI ``ModelField`` objects among them by name (an admin route's parameters and models)."""
    fields = Counter(getattr(o, "name", "?") for o in objects if type(o).__qualname__ == "ModelField")
    return {"objects": len(objects), "types": Counter(type(o).__qualname__ for o in objects).most_common(12),
            "model_fields": fields.most_common(15)}


def hop_record(sends: list[dict[str, Any]]) -> dict[str, Any]:
    """The probed sends' hops: percentiles per hop (ms), the stamps per sequence id (s)."""
    order = ("read", "pub", "start", "got", "kernel", "synced", "done", "rcpt", "flush")
    return {
        "hops_ms": {hop: percentiles([s["hops"][hop] for s in sends if s["hops"][hop] is not None]) for hop in HOPS},
        "hop_total_ms": percentiles([s["total"] for s in sends if s["total"] is not None]),
        "hop_sends": {str(s["seq"]): [s["stamps"][name] for name in order] for s in sends},
    }


def thread_cpu() -> dict[str, float]:
    """Per live thread of the process (by name): CPU seconds used so far, and (``name wait``) seconds
    spent runnable but waiting for a CPU (Linux schedstat): a stall with wait, not CPU, is the
    machine's scheduler; with neither, the thread was blocked."""
    out: dict[str, float] = {}
    for thread in threading.enumerate():
        try:
            out[thread.name] = time.clock_gettime(time.pthread_getcpuclockid(thread.ident or 0))
            if thread.native_id is not None:
                with open(f"/proc/self/task/{thread.native_id}/schedstat") as f:
                    out[f"{thread.name} wait"] = int(f.read().split()[1]) / 1e9
        except (OSError, ProcessLookupError):
            continue
    return out


def short_path(filename: str) -> str:
    """The last two parts of a source file's path (enough to tell magnetar's modules apart)."""
    return "/".join(filename.rsplit("/", 2)[-2:])


def install(probe: Probe) -> None:
    """Hook the probe into the broker: gc callbacks, fdatasync, and the loop (through ``uvloop.run``)."""
    gc.callbacks.append(probe.on_gc)
    os.fdatasync = probe.timed_fdatasync(probe.hops.fdatasync(os.fdatasync))
    probe.hops.install()
    probe.install_turns()
    os.writev = probe.timed_writev(os.writev)
    import uvloop

    real_run = uvloop.run

    def run(main: Coroutine[Any, Any, Any], **kwargs: Any) -> Any:
        async def probed() -> Any:
            loop = asyncio.get_running_loop()
            ticker = loop.create_task(probe.ticker())
            loop.add_signal_handler(signal.SIGUSR1, probe.dump)
            threading.Thread(target=probe.watch_stalls, args=(threading.get_ident(),), daemon=True,
                             name="probe-stall-watch").start()
            try:
                return await main
            finally:
                ticker.cancel()

        return real_run(probed(), **kwargs)

    uvloop.run = run


if __name__ == "__main__":
    if os.environ.get("MAGNETAR_PROBE_GC_THRESHOLD"):
        gc.set_threshold(*(int(n) for n in os.environ["MAGNETAR_PROBE_GC_THRESHOLD"].split(",")))
    if os.environ.get("MAGNETAR_PROBE_SWITCH_INTERVAL_MS"):
        sys.setswitchinterval(float(os.environ["MAGNETAR_PROBE_SWITCH_INTERVAL_MS"]) / 1000)
    install(Probe(os.environ["MAGNETAR_PROBE_OUT"]))
    sys.argv = ["magnetar", *sys.argv[1:]]
    runpy.run_module("magnetar.cli.main", run_name="__main__")
