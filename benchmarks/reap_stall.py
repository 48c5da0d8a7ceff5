"""The longest event-loop stall while a ledger trims two sealed 64 MiB segments, then is deleted.

A 1 ms asyncio ticker runs while the ledger trims and deletes; the longest gap between its ticks
is the stall the trim and the delete cause. With ``--inline`` the segment files are closed and
unlinked on the loop (the ledger without a reaper, as before); by default a worker thread does it,
as the broker's ``magnetar-reap`` executor does. Prints one JSON line.

    python benchmarks/reap_stall.py [--inline] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from magnetar.storage import ManagedLedger

SEGMENT_ENTRIES = 1024  # 64 KiB entries: a 64 MiB segment holds about this many


async def longest_gap(action: object, gaps: list[float]) -> tuple[float, float]:
    """Run ``action`` on the loop; (its own duration, the longest ticker gap around it) in ms."""
    await asyncio.sleep(0.1)
    gaps.clear()
    start = time.perf_counter()
    action()  # type: ignore[operator]
    call_ms = (time.perf_counter() - start) * 1000
    await asyncio.sleep(0.3)
    return call_ms, max(gaps) * 1000


async def measure(base: Path, inline: bool) -> dict[str, object]:
    """Fill a ledger with three segments and time the trim of two and the delete."""
    directory = Path(tempfile.mkdtemp(dir=base)) / "ledger"
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reap")
    reaper = None if inline else executor.submit
    ledger = ManagedLedger.open(directory, 1, cache_max_bytes=0, reaper=reaper)
    payload = os.urandom(64 * 1024)
    for _ in range(3 * SEGMENT_ENTRIES + 10):
        ledger.append(payload)
    ledger.sync()
    gaps: list[float] = []
    running = True

    async def ticker() -> None:
        last = time.perf_counter()
        while running:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    trim_ms, trim_gap = await longest_gap(lambda: ledger.trim_before(2 * SEGMENT_ENTRIES), gaps)
    delete_ms, delete_gap = await longest_gap(ledger.delete, gaps)
    running = False
    await task
    await asyncio.get_running_loop().run_in_executor(None, executor.shutdown)
    return {
        "reaper": not inline,
        "trim_call_ms": round(trim_ms, 2),
        "trim_max_loop_gap_ms": round(trim_gap, 2),
        "delete_call_ms": round(delete_ms, 2),
        "delete_max_loop_gap_ms": round(delete_gap, 2),
        "files_gone": not directory.exists(),
    }


def main() -> None:
    """Parse the options, measure once, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inline", action="store_true", help="close and unlink on the loop (no reaper)")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()), help="where the ledger goes")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.dir, args.inline))))


if __name__ == "__main__":
    main()
