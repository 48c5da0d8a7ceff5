"""How long a metadata write made as the broker's loop makes it (within ``deferring_sync``: no fsync of
its own) waits while another thread writes with its fsync (the cursor writer's ``save_cursors``).

With the fsync under the store's write lock (``synchronous=FULL``), the loop's write waited for the
other thread's fsync; with the fsync made after the lock is released, it waits only for the other
thread's SQL. Run it against two trees (``--src``) side by side; prints and returns p50 / p99 / max in ms.

usage: python benchmarks/metadata_lock_wait.py [--writes 400] [--src DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(data_dir: Path, writes: int) -> dict[str, float]:
    """(in the tree under test) ``writes`` namespace creations and deletions, as the loop makes them,
    beside a thread saving cursors with their fsync back to back; each write's time in ms."""
    from magnetar.storage.metadata import MetadataStore, deferring_sync

    store = MetadataStore(data_dir)
    store.ensure_defaults()
    store.on_deferred_commit = lambda: None  # nobody syncs: the time measured is the write's own
    stop = threading.Event()

    def cursor_writer() -> None:
        n = 0
        while not stop.is_set():
            store.save_cursors([("persistent://public/default/t", "sub", n.to_bytes(8, "big") * 64)])
            n += 1

    writer = threading.Thread(target=cursor_writer)
    writer.start()
    times: list[float] = []
    try:
        for n in range(writes):
            name = f"public/ns-{n}"
            with deferring_sync():
                for write in (store.create_namespace, store.delete_namespace):
                    started = time.perf_counter()
                    write(name)
                    times.append((time.perf_counter() - started) * 1000)
            time.sleep(0.002)
    finally:
        stop.set()
        writer.join()
        store.close()
    times.sort()
    return {"writes": len(times), "p50_ms": round(times[len(times) // 2], 3),
            "p99_ms": round(times[int(len(times) * 0.99)], 3), "max_ms": round(times[-1], 3)}


def main() -> None:
    """Run :func:`measure` in a child process importing ``--src``'s magnetar; print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=400)
    parser.add_argument("--src", type=Path, default=ROOT / "src")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(measure(args.child, args.writes)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([sys.executable, __file__, "--writes", str(args.writes), "--child", tmp],
                             env={"PYTHONPATH": str(args.src.resolve())}, check=True, capture_output=True,
                             text=True).stdout
    print(json.dumps({"src": str(args.src), **json.loads(out)}))


if __name__ == "__main__":
    main()
