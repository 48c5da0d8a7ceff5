"""Where the broker's CPU goes in one bounded run: a magnetar broker (this tree, fsync always) under
``py-spy record``, one suite driver's scenario against it (default: the cost scenario, produce +
consume + ack, with the official client), then the functions with the most samples, by their own
time and with what they call.

usage: python benchmarks/broker_profile.py [--driver official|magnetar-client] [--size 100] [--count 200000]
       [--unbatched | --batch 50] [--rate 200] [--top 30] [--out FILE.txt]
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

from benchmarks.suite.probe import cpu_seconds  # noqa: E402

from magnetar.testing import BrokerProcess  # noqa: E402


def summarise(raw: Path, top: int) -> str:
    """py-spy's collapsed stacks: the top functions by own samples and by inclusive samples."""
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        frames = [f.split(" (")[0] + " (" + f.split(" (")[1].split(":")[0].rsplit("/", 1)[-1] + ")"
                  if " (" in f else f for f in stack.split(";")]
        total += n
        own[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame] += n
    lines = [f"{total} samples", "", "own time:"]
    lines += [f"  {100 * n / total:5.1f}%  {name}" for name, n in own.most_common(top)]
    lines += ["", "with callees:"]
    lines += [f"  {100 * n / total:5.1f}%  {name}" for name, n in inclusive.most_common(top)]
    return "\n".join(lines)


def main() -> int:
    """Start, record, drive, report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--driver", default="official")
    parser.add_argument("--scenario", default="cost")
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--unbatched", action="store_true")
    parser.add_argument("--batch", type=int, default=1000,
                        help="messages per batch at most (a loaded machine's official producer fills ~50)")
    parser.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--all-threads", action="store_true",
                        help="sample every thread on the CPU (py-spy without --gil): the commit and "
                             "metadata threads' work too; --gil samples the holder of the GIL, which on a "
                             "loaded machine counts the time it spends descheduled")
    parser.add_argument("--raw", type=Path, help="keep py-spy's collapsed stacks here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp) / "data", args=("--log-level", "WARNING")).start(timeout=60)
        try:
            pid = broker.proc.pid
            # a small run first: what the broker imports and builds on its first topic is not in the profile
            warm = {"address": broker.service_url, "topic": f"warm-{time.time_ns()}", "count": 2000, "size": args.size}
            subprocess.run([sys.executable, "-m", "benchmarks.suite.worker", args.driver, args.scenario,
                            json.dumps(warm)], cwd=ROOT, capture_output=True, timeout=300, check=False)
            raw = Path(tmp) / "profile.txt"
            spy = subprocess.Popen([shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(pid), "--rate", str(args.rate), "--format", "raw",
                                    "--nonblocking", *(() if args.all_threads else ("--gil",)), "-o", str(raw)], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
            time.sleep(1.0)
            params = {"address": broker.service_url, "topic": f"profile-{time.time_ns()}", "count": args.count,
                      "size": args.size, "batch": 1 if args.unbatched else args.batch, "batch_delay_ms": 0 if args.unbatched else 10}
            cpu0 = cpu_seconds(pid) or 0.0
            proc = subprocess.run([sys.executable, "-m", "benchmarks.suite.worker", args.driver, args.scenario,
                                   json.dumps(params)], cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
            cpu = (cpu_seconds(pid) or 0.0) - cpu0
            spy.send_signal(2)
            spy.wait(60)
        finally:
            broker.stop()
        result = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-800:]
        text = (f"{args.driver} {args.scenario} {args.size} B {'unbatched' if args.unbatched else 'batched'} x "
                f"{args.count}: broker CPU {cpu:.2f} s = {cpu * 1e6 / args.count:.2f} s per million\n{result}\n\n"
                + summarise(raw, args.top))
        if args.raw:
            shutil.copy(raw, args.raw)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
