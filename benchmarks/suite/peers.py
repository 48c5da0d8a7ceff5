"""The systems of the suite: how each is installed, started on 127.0.0.1 (free ports, its data in the
run's work directory) and stopped, its version and its durability setting.

Installation goes through the ordinary clients only: ``apt-get install`` for the Debian servers,
``pip`` (the ``bench`` extra) for the Python clients and pulsar-lite, Maven Central for Apache
Pulsar (tools/pulsar_reference.py assembles and starts it for the interop tests: reused here).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.suite import probe
from magnetar.testing import BrokerProcess, free_port, wait_for_port

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOLS = REPO_ROOT / "tools"
#: Debian packages of the peers, and the binary that tells each is there
DEBIAN_PACKAGES = {"redis-server": "redis-server", "nats-server": "nats-server", "rabbitmq-server": "rabbitmq-server",
                   "default-jdk-headless": "java", "maven": "mvn"}
RABBIT_BIN = Path("/usr/lib/rabbitmq/bin")


def log(message: str) -> None:
    """A progress line on stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def install_debian(packages: list[str]) -> dict[str, str]:
    """``apt-get update`` then ``apt-get install`` of the missing packages; a note per package that
    could not be installed (the suite goes on without it)."""
    missing = [p for p in packages if shutil.which(DEBIAN_PACKAGES[p]) is None]
    if not missing:
        return {}
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    log(f"apt-get install {' '.join(missing)}")
    subprocess.run([*sudo, "apt-get", "update", "-qq"], env=env, check=False)
    notes = {}
    for package in missing:
        proc = subprocess.run([*sudo, "apt-get", "install", "-y", "-qq", package], env=env,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0 or shutil.which(DEBIAN_PACKAGES[package]) is None:
            notes[package] = f"not installed: {proc.stderr.strip()[-300:]}"
    return notes


def _output(cmd: list[str]) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return (proc.stdout or proc.stderr).strip()


def _python_version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


@dataclass
class Peer:
    """One server of the suite. ``address`` is what the drivers connect to (a URL or host:port)."""

    name: str
    work: Path
    durability: str = ""
    address: str = ""
    proc: subprocess.Popen | None = None
    info: dict[str, Any] = field(default_factory=dict)
    startup_s: float = 0.0

    @property
    def home(self) -> Path:
        """Its data and logs."""
        return self.work / self.name

    def start(self) -> None:
        """Start the server and wait until it answers."""
        raise NotImplementedError

    def version(self) -> str:
        """The server's version."""
        raise NotImplementedError

    def command(self) -> list[str]:
        """The command line it was started with (for the results file)."""
        return list(self.proc.args) if self.proc is not None else []  # type: ignore[arg-type]

    def pid(self) -> int | None:
        """The server process's id (the one whose CPU and memory are the server's), None when not running."""
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def rss_mb(self) -> float:
        """Resident memory of the server process, MB (0 when unknown)."""
        pid = self.pid()
        return (probe.rss_mb(pid) or 0.0) if pid is not None else 0.0

    def _spawn(self, cmd: list[str], env: dict[str, str] | None = None) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        with open(self.home / "server.log", "ab") as out:
            self.proc = subprocess.Popen(cmd, cwd=self.home, stdout=out, stderr=subprocess.STDOUT,
                                         env={**os.environ, **(env or {})})

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 30 s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _timed_start(peer: Peer, port: int, timeout: float = 60.0) -> None:
    started = time.perf_counter()
    wait_for_port(port, timeout)
    peer.startup_s = time.perf_counter() - started


class RedisPeer(Peer):
    """redis-server with an append-only file; ``appendfsync`` everysec or always."""

    def __init__(self, work: Path, appendfsync: str = "everysec") -> None:
        super().__init__(f"redis-{appendfsync}", work, f"AOF, appendfsync {appendfsync}")
        self.appendfsync = appendfsync

    def start(self) -> None:
        """redis-server on a free port, its AOF in its home."""
        port = free_port()
        self._spawn(["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", str(self.home),
                     "--appendonly", "yes", "--appendfsync", self.appendfsync, "--save", "", "--protected-mode", "no"])
        _timed_start(self, port)
        self.address = f"127.0.0.1:{port}"

    def version(self) -> str:
        """redis-server -v."""
        return _output(["redis-server", "--version"]).split(" sha=")[0]


class NatsPeer(Peer):
    """nats-server with JetStream on file storage."""

    def __init__(self, work: Path) -> None:
        super().__init__("nats", work, "JetStream file storage, no fsync before the ack (2.9 writes to the page "
                         "cache and syncs on its own timer, sync_interval, default 2 min)")

    def start(self) -> None:
        """nats-server -js on a free port."""
        port = free_port()
        self._spawn(["nats-server", "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", str(self.home / "js")])
        _timed_start(self, port)
        self.address = f"nats://127.0.0.1:{port}"

    def version(self) -> str:
        """nats-server --version."""
        return _output(["nats-server", "--version"])


class RabbitPeer(Peer):
    """rabbitmq-server (run directly, not as a service) with the stream plugin."""

    def __init__(self, work: Path) -> None:
        super().__init__("rabbitmq-stream", work, "stream, no fsync (the confirm follows the write to the "
                         "page cache; streams never fsync)")
        self.env: dict[str, str] = {}

    def start(self) -> None:
        """Config, ``rabbitmq-plugins --offline enable rabbitmq_stream``, then rabbitmq-server."""
        amqp, stream, dist = free_port(), free_port(), free_port()
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "rabbitmq.conf").write_text(
            f"listeners.tcp.default = 127.0.0.1:{amqp}\nstream.listeners.tcp.1 = 127.0.0.1:{stream}\n"
            "loopback_users = none\nmanagement_agent.disable_metrics_collector = true\n")
        self.env = {
            "HOME": str(self.home), "RABBITMQ_CONFIG_FILE": str(self.home / "rabbitmq"),
            "RABBITMQ_MNESIA_BASE": str(self.home / "mnesia"), "RABBITMQ_LOG_BASE": str(self.home / "log"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.home / "enabled_plugins"),
            "RABBITMQ_NODENAME": f"bench{stream}@localhost", "RABBITMQ_DIST_PORT": str(dist),
            "RABBITMQ_PID_FILE": str(self.home / "rabbit.pid"),
        }
        subprocess.run([str(RABBIT_BIN / "rabbitmq-plugins"), "--offline", "enable", "rabbitmq_stream"],
                       env={**os.environ, **self.env}, capture_output=True, check=True)
        self._spawn([str(RABBIT_BIN / "rabbitmq-server")], self.env)
        _timed_start(self, stream, timeout=120)
        self.address = f"127.0.0.1:{stream}"

    def stop(self) -> None:
        """rabbitmqctl stop (the Erlang VM is a grandchild of the script), then the script."""
        if self.proc is not None and self.proc.poll() is None:
            subprocess.run([str(RABBIT_BIN / "rabbitmqctl"), "stop"], env={**os.environ, **self.env},
                           capture_output=True, timeout=60, check=False)
        super().stop()
        # the Erlang port mapper the server started: stopped when no other node is registered with it
        names = _output(["epmd", "-names"])
        if "name " not in names and "epmd: up" in names:
            subprocess.run(["epmd", "-kill"], capture_output=True, check=False)

    def version(self) -> str:
        """The Debian package's version."""
        return _output(["dpkg-query", "-W", "-f", "${Version}", "rabbitmq-server"])

    def pid(self) -> int | None:
        """The Erlang VM's (the server script's child, which writes its id to the pid file)."""
        try:
            return int((self.home / "rabbit.pid").read_text().strip())
        except (OSError, ValueError):
            return None


class PulsarLitePeer(Peer):
    """pulsar-lite (a Rust Pulsar-protocol broker shipped as a binary in its PyPI wheel)."""

    def __init__(self, work: Path) -> None:
        super().__init__("pulsar-lite", work, "embedded storage, no fsync")

    @staticmethod
    def binary() -> Path:
        """The broker binary inside the pulsar_lite package."""
        from pulsar_lite.binary_finder import find_pulsar_lite_binary

        return Path(find_pulsar_lite_binary())

    def start(self) -> None:
        """pulsar-lite --addr 127.0.0.1:PORT --db-path HOME/db."""
        port = free_port()
        self.home.mkdir(parents=True, exist_ok=True)
        self._spawn([str(self.binary()), "--addr", f"127.0.0.1:{port}", "--db-path", str(self.home / "db"),
                     "--log-level", "warn"])
        _timed_start(self, port)
        self.address = f"pulsar://127.0.0.1:{port}"

    def version(self) -> str:
        """The pulsar-lite package's version."""
        return _python_version("pulsar-lite")


class MagnetarPeer(Peer):
    """magnetar standalone, default configuration (fsync always)."""

    def __init__(self, work: Path) -> None:
        super().__init__("magnetar", work, "fsync always (a receipt after its group commit's fsync), default config")
        self.broker: BrokerProcess | None = None

    def start(self) -> None:
        """``magnetar standalone`` on free ports."""
        self.home.mkdir(parents=True, exist_ok=True)
        self.broker = BrokerProcess(self.home / "data", args=("--log-level", "WARNING"),
                                    log_path=self.home / "server.log")
        started = time.perf_counter()
        self.broker.start(timeout=60)
        self.startup_s = time.perf_counter() - started
        self.proc = self.broker.proc
        self.address = self.broker.service_url

    def stop(self) -> None:
        """SIGTERM and wait."""
        if self.broker is not None:
            self.broker.stop()

    def version(self) -> str:
        """The magnetar commit."""
        head = _output(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"])
        dirty = _output(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"])
        return f"magnetar {head}{'+dirty' if dirty else ''}"


class ApachePulsarPeer(Peer):
    """Apache Pulsar standalone from Maven Central, through tools/pulsar_reference.py."""

    def __init__(self, work: Path) -> None:
        super().__init__("apache-pulsar", work, "BookKeeper journal, journalSyncData=true (fsync before the ack), "
                         "standalone defaults")
        self.standalone: Any = None

    def start(self) -> None:
        """Assemble (once) and start the JVM; wait until public/default exists."""
        sys.path.insert(0, str(TOOLS))
        import pulsar_reference

        # the jars outlive a run: assembled once under the suite's work directory
        lib = pulsar_reference.assemble(self.work.parent / "pulsar-reference")
        self.standalone = pulsar_reference.PulsarStandalone(lib, self.home)
        started = time.perf_counter()
        self.standalone.start()
        self.startup_s = time.perf_counter() - started
        self.proc = self.standalone.proc
        self.address = self.standalone.service_url

    def stop(self) -> None:
        """SIGTERM (SIGKILL after 60 s)."""
        if self.standalone is not None:
            self.standalone.stop()

    def version(self) -> str:
        """The pulsar-broker jar's version."""
        return f"Apache Pulsar {self.standalone.version()}" if self.standalone else "?"


def client_versions() -> dict[str, str]:
    """Versions of the Python clients the drivers use."""
    names = ("pulsar-client", "redis", "hiredis", "nats-py", "rstream", "pulsar-lite", "hdrhistogram")
    return {name: _python_version(name) for name in names}


def make_peers(names: list[str], work: Path, with_redis_always: bool) -> list[Peer]:
    """The peers named (``redis``, ``nats``, ``rabbitmq``, ``pulsar-lite``, ``pulsar``, ``magnetar``)."""
    factories = {
        "magnetar": lambda: [MagnetarPeer(work)],
        "pulsar-lite": lambda: [PulsarLitePeer(work)],
        "pulsar": lambda: [ApachePulsarPeer(work)],
        "redis": lambda: [RedisPeer(work, "everysec")] + ([RedisPeer(work, "always")] if with_redis_always else []),
        "nats": lambda: [NatsPeer(work)],
        "rabbitmq": lambda: [RabbitPeer(work)],
    }
    return [peer for name in names for peer in factories[name]()]
