"""Before each measurement, the disk is given back clean: every dirty page of the machine written.

A broker that does not fsync (pulsar-lite, Apache Pulsar's entry logs, RabbitMQ streams, NATS) leaves
up to gigabytes of dirty pages after a heavy scenario. The kernel writes them back ``dirty_expire``
(30 s by default) later, in the middle of whatever runs then, and every fdatasync made meanwhile waits
behind that writeback: the first rate-1k / e2e run after consume-1024 and fan-out had 0.4-0.8 s publish
stalls that a fresh broker never shows (benchmarks/README.md, "Each measurement starts on a clean
disk"). ``sync(2)`` before each measurement charges each system's writes to no one else's figures.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

#: longest wait for the machine's dirty pages to be written (a shared machine's other work keeps writing)
SETTLE_TIMEOUT_S = 60.0


def dirty_mb(meminfo: Path = Path("/proc/meminfo")) -> float:
    """Dirty + Writeback pages of the machine, MB (0 when /proc/meminfo cannot be read)."""
    total_kb = 0
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith(("Dirty:", "Writeback:")):
                total_kb += int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    return total_kb / 1024


def settle_disk(timeout: float = SETTLE_TIMEOUT_S) -> dict[str, Any]:
    """``sync(2)`` on a helper thread, waiting at most ``timeout`` s for it: the figures of the wait
    (``dirty_mb_before``, ``settle_s``, and ``settle_timed_out`` when the sync had not returned)."""
    before = dirty_mb()
    started = time.perf_counter()
    done = threading.Event()

    def run_sync() -> None:
        os.sync()
        done.set()

    threading.Thread(target=run_sync, name="settle-sync", daemon=True).start()
    finished = done.wait(timeout)
    figures: dict[str, Any] = {"dirty_mb_before": round(before, 1), "settle_s": round(time.perf_counter() - started, 3)}
    if not finished:
        figures["settle_timed_out"] = True
    return figures
