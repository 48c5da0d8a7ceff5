"""What an fdatasync of 100 B costs when it grows the file against when it overwrites bytes already
written (a preallocated, zero-filled segment), alone and beside another file's writes and fsyncs.

An append that grows a file changes its size, so ext4's fdatasync must commit the journal, which
carries every other file's pending metadata change (the broker's metadata database, its cursors,
other processes' files): one journal commit at a time, shared. An overwrite inside the file's
written size changes no metadata, and fdatasync then only writes the data and flushes the disk's
cache. For each mode: ``--seconds`` of 100 B writes each followed by fdatasync, alone, then with a
"noise" thread creating a file, writing 4 KiB, fsyncing it and removing it in a loop (the churn of
namespaces and cursor saves); p50 / p99 / p99.9 / max in ms and the rate, alternated ``--rounds``.

``--noise wal``: the noise is the metadata store's log instead, as the namespace script drives it
(four 4 KiB pages written in place in a 4 MiB file, then an fdatasync, about 110 times a second:
one admin write each).

usage: python benchmarks/fsync_prealloc.py [--seconds 3] [--rounds 2] [--noise files|wal] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from pathlib import Path

RECORD = b"r" * 100
PREALLOCATED = 64 << 20
WAL_BYTES = 4 << 20


def noise(directory: Path, stop: threading.Event) -> None:
    """Create, write, fsync and remove small files until ``stop``."""
    n = 0
    while not stop.is_set():
        path = directory / f"noise-{n}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.write(fd, b"n" * 4096)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.unlink(path)
        n += 1


def wal_noise(directory: Path, stop: threading.Event) -> None:
    """Write four pages in place in a 4 MiB log and fdatasync it, about 110 times a second, until
    ``stop``."""
    path = directory / "noise-wal"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"\0" * WAL_BYTES)
        os.fsync(fd)
        offset = 0
        while not stop.wait(0.007):
            for _ in range(4):
                os.pwrite(fd, b"w" * 4096, offset)
                offset = (offset + 4096) % WAL_BYTES
            os.fdatasync(fd)
    finally:
        os.close(fd)
        os.unlink(path)


NOISES = {"files": noise, "wal": wal_noise}


def run(directory: Path, mode: str, seconds: float, with_noise: bool, noise_kind: str = "files") -> dict:
    """``mode`` "append" (the file grows) or "overwrite" (inside a zero-filled, synced file)."""
    path = directory / f"{mode}-{time.time_ns()}"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    stop = threading.Event()
    thread = threading.Thread(target=NOISES[noise_kind], args=(directory, stop), daemon=True)
    try:
        if mode == "overwrite":
            chunk = b"\0" * (1 << 20)
            for _ in range(PREALLOCATED // len(chunk)):
                os.write(fd, chunk)
            os.fsync(fd)
        if with_noise:
            thread.start()
        times: list[float] = []
        offset = 0
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            started = time.perf_counter()
            os.pwrite(fd, RECORD, offset)
            os.fdatasync(fd)
            times.append((time.perf_counter() - started) * 1000)
            offset = (offset + len(RECORD)) % PREALLOCATED
    finally:
        stop.set()
        if thread.is_alive():
            thread.join()
        os.close(fd)
        os.unlink(path)
    ordered = sorted(times)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)

    return {"mode": mode, "noise": noise_kind if with_noise else None, "per_s": round(len(ordered) / seconds),
            "p50": at(0.5), "p99": at(0.99), "p99.9": at(0.999), "max": round(ordered[-1], 3)}


def main() -> None:
    """Each mode alone and with noise, alternated; one JSON line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--noise", choices=sorted(NOISES), default="files")
    parser.add_argument("--dir", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for n in range(args.rounds):
            modes = ("append", "overwrite") if n % 2 == 0 else ("overwrite", "append")
            for with_noise in (False, True):
                for mode in modes:
                    print(json.dumps(run(Path(tmp), mode, args.seconds, with_noise, args.noise)), flush=True)


if __name__ == "__main__":
    main()
