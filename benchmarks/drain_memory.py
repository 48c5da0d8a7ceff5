"""The broker's resident memory while a backlog is filled and drained (issue 27, memory under load).

Starts ``magnetar standalone`` (default configuration, this tree's sources unless PYTHONPATH says
otherwise), samples its VmRSS every 50 ms, and runs the phases given:

- ``fill``: ``magnetar perf produce`` of ``--count`` messages of ``--size`` bytes (batches of up to
  1,000 messages / 1 MiB, 10 ms), to a topic whose subscription exists, so they stay as a backlog;
- ``drain``: the official client (pulsar-client) receives + acknowledges that backlog from the start
  (receiver queue 1,000), as the suite's ``consume`` scenarios do;
- ``live``: a fill of another topic while an official consumer drains it at the same time.

Prints one JSON line: the idle RSS, each phase's seconds, peak and end RSS (MB; the end 1.5 s after
the phase), and RssAnon / RssFile at its end. Alternate trees with PYTHONPATH to compare:

    PYTHONPATH=src .venv/bin/python benchmarks/drain_memory.py --count 200000 --size 1024
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pulsar

from magnetar.testing.process import BrokerProcess


class RssSampler:
    """VmRSS of one process every 50 ms, tagged with the phase under way."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.phase = "idle"
        self.samples: list[tuple[str, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def status(self, key: str = "VmRSS") -> float:
        """A /proc/PID/status figure in MB."""
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((self.phase, self.status()))
            time.sleep(0.05)

    def peak(self, phase: str) -> float:
        """The highest sample of ``phase``."""
        return max(value for name, value in self.samples if name == phase)

    def stop(self) -> None:
        """Stop sampling."""
        self._stop.set()
        self._thread.join()


def _client(url: str) -> pulsar.Client:
    return pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


def _fill(url: str, topic: str, count: int, size: int) -> None:
    subprocess.run([sys.executable, "-m", "magnetar.cli.main", "perf", "produce", "-u", url, "-r", "0", "-s", str(size),
                    "-m", str(count), "-b", "10", "-bb", str(1 << 20), topic], check=True, capture_output=True)


def _drain(consumer: pulsar.Consumer, count: int) -> int:
    received = 0
    while received < count:
        try:
            msg = consumer.receive(10_000)
        except pulsar.Timeout:
            break
        consumer.acknowledge(msg)
        received += 1
    return received


def run_phase(phase: str, url: str, count: int, size: int) -> dict[str, float]:
    """One phase; its seconds (and messages received)."""
    topic = f"persistent://public/default/{'live' if phase == 'live' else 'backlog'}"
    client = _client(url)
    started = time.perf_counter()
    try:
        if phase == "fill":
            client.subscribe(topic, "bench", initial_position=pulsar.InitialPosition.Earliest).close()
            _fill(url, topic, count, size)
            return {"fill_s": time.perf_counter() - started}
        consumer = client.subscribe(topic, "bench", consumer_type=pulsar.ConsumerType.Exclusive,
                                    initial_position=pulsar.InitialPosition.Earliest, receiver_queue_size=1000)
        if phase == "drain":
            received = _drain(consumer, count)
            return {"drain_s": time.perf_counter() - started, "drained": received}
        got: list[int] = []
        reader = threading.Thread(target=lambda: got.append(_drain(consumer, count)))
        reader.start()
        _fill(url, topic, count, size)
        reader.join()
        return {"live_s": time.perf_counter() - started, "live_received": got[0]}
    finally:
        client.close()


def main() -> None:
    """Parse the flags, run the phases against a fresh broker, print the JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--phases", default="fill,drain", help="comma-separated: fill, drain, live")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="drain-memory-"))
    broker = BrokerProcess(work / "data", args=("--log-level", "WARNING"))
    broker.start(timeout=60)
    assert broker.proc is not None
    rss = RssSampler(broker.proc.pid)
    time.sleep(1)
    out: dict[str, object] = {"idle_mb": rss.status()}
    try:
        for phase in args.phases.split(","):
            rss.phase = phase
            out.update(run_phase(phase, broker.service_url, args.count, args.size))
            time.sleep(1.5)
            out[f"{phase}_peak_mb"] = rss.peak(phase)
            out[f"{phase}_end_mb"] = rss.status()
            out[f"{phase}_anon_file_mb"] = [round(rss.status("RssAnon"), 1), round(rss.status("RssFile"), 1)]
    finally:
        rss.stop()
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in out.items()}))


if __name__ == "__main__":
    main()
