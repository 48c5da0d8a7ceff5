"""How long after a broker answers again does a client's first send get confirmed?

For each client face (the official client, sync and asyncio; magnetar.client, sync and asyncio) and
each way an application meets a restart:

- ``existing``: a client and a producer live across the crash; a send is issued right after the
  broker is killed (kill -9) and waits; the broker is restarted after ``--down`` seconds;
- ``new``: once the broker accepts again, a new client, producer and send (retried from scratch
  until one is confirmed, as a supervisor would).

The clock starts when the restarted broker first answers a CONNECT on its binary port (polled every
5 ms from a thread) and stops when the send returns success. Each case runs ``--rounds`` times on one
broker (same data directory and ports), the faces taking turns round by round; the median, mean,
minimum and maximum are printed. Which round trips land just after the broker is back depends on
where the restart falls in the clients' backoff schedule (100 ms doubling): compare many rounds.

    python benchmarks/reconnect_times.py --rounds 5 --down 1.0

Bounded: every send waits at most 60 s, every restart at most 60 s.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from magnetar.protocol.enums import CommandType
from magnetar.protocol.framing import encode_command
from magnetar.protocol.schema import BaseCommand
from magnetar.testing import BrokerProcess, free_port

TOPIC = "persistent://public/default/reconnect-times"
SEND_TIMEOUT_MS = 60_000


class LoopThread:
    """An asyncio loop in a thread: the asyncio faces are driven from the benchmark's sync code."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Any, timeout: float = 60.0) -> Any:
        """Run ``coro`` on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        """Stop the loop."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


class Face:
    """One client face: open a client + producer, send one message (blocking), close."""

    def __init__(self, name: str, url: str) -> None:
        self.name = name
        self.url = url
        self.loop = LoopThread() if name.endswith("asyncio") else None
        self.client: Any = None
        self.producer: Any = None

    def open(self) -> None:
        """A client and a producer of TOPIC."""
        kind = self.name
        if kind == "official-sync":
            import pulsar

            self.client = pulsar.Client(self.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
            self.producer = self.client.create_producer(TOPIC, send_timeout_millis=SEND_TIMEOUT_MS, batching_enabled=False)
        elif kind == "magnetar-sync":
            from magnetar.client import Client

            self.client = Client(self.url)
            self.producer = self.client.create_producer(TOPIC, send_timeout_millis=SEND_TIMEOUT_MS, batching_enabled=False)
        else:
            self.client, self.producer = self.loop.run(self._open_async())

    async def _open_async(self) -> tuple[Any, Any]:
        if self.name == "official-asyncio":
            import pulsar
            import pulsar.asyncio as face

            client = face.Client(self.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        else:
            from magnetar.client import asyncio as face

            client = face.Client(self.url)
        producer = await client.create_producer(TOPIC, send_timeout_millis=SEND_TIMEOUT_MS, batching_enabled=False)
        return client, producer

    def send(self) -> None:
        """One message, until confirmed (raises on failure)."""
        if self.loop is None:
            self.producer.send(b"x")
        else:
            self.loop.run(self.producer.send(b"x"), 65)

    def close(self) -> None:
        """Close the client, whatever state it is in."""
        try:
            if self.loop is None:
                self.client.close()
            else:
                self.loop.run(self.client.close(), 10)
        except Exception:  # noqa: BLE001, S110 - a client of a dead broker may refuse to close cleanly
            pass
        if self.loop is not None:
            self.loop.stop()


def _connect_frame() -> bytes:
    command = BaseCommand(type=CommandType.CONNECT)
    command.connect.client_version = "reconnect-times"
    command.connect.protocol_version = 21
    return encode_command(command)


def first_answer(port: int, started: threading.Event, out: list[float]) -> None:
    """Record when ``port`` first answers a CONNECT (polled every 5 ms while refused). A bound port
    accepts TCP connections into its backlog while the broker still opens its storage: the broker
    is back when it answers, not when the handshake succeeds."""
    frame = _connect_frame()
    started.wait()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
                sock.settimeout(30)
                sock.sendall(frame)
                if sock.recv(4096):
                    out.append(time.monotonic())
                    return
        except OSError:
            time.sleep(0.005)


class Broker:
    """``magnetar standalone`` on fixed ports, started without waiting for its HTTP app (whose build,
    on the first HTTP request, would compete with the clients for the CPU)."""

    def __init__(self, data_dir: Path) -> None:
        self.spec = BrokerProcess(data_dir, port=free_port(), http_port=free_port(), args=("--fsync", "always"))
        self.port = self.spec.port
        self.service_url = self.spec.service_url
        self.log = open(data_dir.with_name("broker.log"), "ab")  # noqa: SIM115 - closed in close()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        """Start it; when it first answered a CONNECT."""
        started, answered = threading.Event(), []
        self.proc = subprocess.Popen(self.spec.command(), stdout=self.log, stderr=subprocess.STDOUT)
        started.set()
        first_answer(self.port, started, answered)
        return answered[0]

    def kill(self) -> None:
        """kill -9."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def close(self) -> None:
        """Stop it and close its log."""
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(30)
        self.log.close()


def restart(broker: Broker, down: float) -> float:
    """Restart the killed broker after ``down`` seconds; when it first answered a CONNECT."""
    time.sleep(down)
    return broker.start()


def until_confirmed(send: Callable[[], None], out: list[float]) -> None:
    """Call ``send`` until it succeeds (at most 60 s); record when."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            send()
        except Exception:  # noqa: BLE001 - any failure before the broker is back: try again
            time.sleep(0.001)
            continue
        out.append(time.monotonic())
        return


def one_round(broker: Broker, face_name: str, mode: str, down: float) -> float:
    """Seconds from the restarted broker accepting to the first confirmed send."""
    if mode == "existing":
        face = Face(face_name, broker.service_url)
        face.open()
        face.send()
        broker.kill()
        confirmed: list[float] = []
        sender = threading.Thread(target=until_confirmed, args=(face.send, confirmed))
        sender.start()
        accepted = restart(broker, down)
        sender.join(65)
        face.close()
        return confirmed[0] - accepted
    broker.kill()
    accepted = restart(broker, down)
    confirmed = []

    def fresh() -> None:
        face = Face(face_name, broker.service_url)
        try:
            face.open()
            face.send()
        finally:
            face.close()

    until_confirmed(fresh, confirmed)
    return confirmed[0] - accepted


def print_times(mode: str, face_name: str, times: list[float]) -> None:
    """One line: median, mean, minimum, maximum and every round's figure, in milliseconds."""
    print(f"{mode:8} {face_name:17} median {statistics.median(times) * 1000:7.0f} ms   "
          f"mean {statistics.mean(times) * 1000:6.0f}   min {min(times) * 1000:6.0f}   max {max(times) * 1000:6.0f}   "
          f"({', '.join(f'{t * 1000:.0f}' for t in times)})", flush=True)


def main() -> None:
    """Run every case and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--down", type=float, default=1.0, help="seconds the broker stays down")
    parser.add_argument("--down-max", type=float, default=None,
                        help="draw each round's down time from [--down, --down-max] (seeded; the same for every face "
                             "of the round): a fixed down time favours whichever backoff schedule happens to fire "
                             "just after the broker's start")
    parser.add_argument("--faces", default="official-sync,official-asyncio,magnetar-sync,magnetar-asyncio")
    parser.add_argument("--modes", default="existing,new")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        broker = Broker(Path(tmp) / "data")
        broker.start()
        try:
            faces = args.faces.split(",")
            for mode in args.modes.split(","):
                times: dict[str, list[float]] = {face_name: [] for face_name in faces}
                rng = random.Random(1)
                for round_number in range(args.rounds):
                    down = args.down if args.down_max is None else rng.uniform(args.down, args.down_max)
                    # faces alternate round by round (rotated), so a machine whose load changes during
                    # the run slows every face alike
                    shift = round_number % len(faces)
                    for face_name in faces[shift:] + faces[:shift]:
                        times[face_name].append(one_round(broker, face_name, mode, down))
                for face_name in faces:
                    print_times(mode, face_name, times[face_name])
        finally:
            broker.close()


if __name__ == "__main__":
    main()
