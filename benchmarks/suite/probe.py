"""The broker's own cost during one measurement: its CPU seconds (user + system of every thread, from
``/proc/PID/stat``) and its resident memory (``VmRSS`` sampled while the measurement runs: the peak
and the value at the end), with the machine's load average at both ends.

CPU seconds hold up on a machine shared with other work far better than wall time: a broker that is
kept off the CPU by other processes spends the same CPU seconds on the same messages, only later.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

#: clock ticks per second of /proc/PID/stat's utime and stime
TICKS = os.sysconf("SC_CLK_TCK")
#: how often VmRSS is read while a measurement runs
SAMPLE_S = 0.05


def cpu_times(pid: int) -> tuple[float, float] | None:
    """User and system CPU seconds of process ``pid`` (all its threads), None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces: the fields after it start past its closing parenthesis
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[11]) / TICKS, int(fields[12]) / TICKS


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (all its threads), None once it is gone."""
    times = cpu_times(pid)
    return None if times is None else times[0] + times[1]


def rss_mb(pid: int) -> float | None:
    """``VmRSS`` of process ``pid`` in MB (2**20 bytes), None once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


class BrokerProbe:
    """Samples one broker process from :meth:`start` to :meth:`stop`; ``pid`` None measures nothing."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        self.peak_mb = 0.0
        self._cpu_start: tuple[float, float] | None = None
        self._load_start = os.getloadavg()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="broker-probe", daemon=True)

    def _sample(self) -> None:
        while self.pid is not None:
            rss = rss_mb(self.pid)
            if rss is not None:
                self.peak_mb = max(self.peak_mb, rss)
            if self._stop.wait(SAMPLE_S):
                return

    def start(self) -> BrokerProbe:
        """Read the CPU time and start sampling memory."""
        self._load_start = os.getloadavg()
        if self.pid is not None:
            self._cpu_start = cpu_times(self.pid)
            self._thread.start()
        return self

    def stop(self, messages: int) -> dict[str, Any]:
        """Stop sampling; the figures of the measurement, the CPU also per million ``messages``."""
        load = {"load_average": [round(x, 2) for x in (*self._load_start[:1], os.getloadavg()[0])]}
        if self.pid is None:
            return load
        self._stop.set()
        self._thread.join()
        cpu_end, rss_end = cpu_times(self.pid), rss_mb(self.pid)
        if cpu_end is None or self._cpu_start is None or rss_end is None:
            return load
        user, system = cpu_end[0] - self._cpu_start[0], cpu_end[1] - self._cpu_start[1]
        cpu = user + system
        per_million = round(cpu * 1e6 / messages, 3) if messages else None
        return {"broker_cpu_s": round(cpu, 3), "broker_cpu_s_per_million": per_million,
                "broker_cpu_user_s": round(user, 3), "broker_cpu_system_s": round(system, 3),
                "broker_cpu_system_share": round(system / cpu, 2) if cpu else None,
                "broker_rss_mb_peak": round(max(self.peak_mb, rss_end), 1), "broker_rss_mb_end": round(rss_end, 1),
                **load}


def entry_figures(result: dict[str, Any]) -> dict[str, Any]:
    """A cost run's entries (batches) per million messages and the broker's CPU microseconds per entry,
    from the ``entries`` its driver counted on receipt: a CPU-per-message ratio that moved because
    the producer packed its batches differently shows here, not as a cheaper or dearer broker."""
    entries, messages, cpu = result.get("entries"), result.get("messages"), result.get("broker_cpu_s")
    if not entries or not messages or cpu is None:
        return {}
    return {"entries_per_million": round(entries * 1e6 / messages, 1),
            "broker_cpu_us_per_entry": round(cpu * 1e6 / entries, 2)}
