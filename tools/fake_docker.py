"""A fake Docker Engine API on a unix socket whose "containers" are magnetar brokers, for the Go client's
tests that start Apache Pulsar with testcontainers-go (tools/go_client_suite.py).

Those tests ask Docker for a Pulsar container with ports 6650 and 8080 exposed, wait for the port
(`wait.ForExposedPort()`: a TCP dial to the mapped port, then `/bin/sh -c <check>` run in the container
through the exec API), then stop or remove the container while a producer or consumer keeps
reconnecting. Here a container is a `magnetar standalone` on the host ports Docker would have mapped
(the ones the request binds, else free ones); `start` / `stop` / `kill` / `restart` / `remove` start
and stop that broker, on the same ports and the same data directory (a container keeps its filesystem
across a stop). An exec answers the one question the wait strategy asks, whether the exposed port
listens: exit status 0 when the broker accepts on its mapped port, else 1. Images are never pulled:
every image "exists". Run testcontainers-go with DOCKER_HOST=unix://SOCKET,
TESTCONTAINERS_RYUK_DISABLED=true and TESTCONTAINERS_HOST_OVERRIDE=localhost.

usage: python tools/fake_docker.py SOCKET [--python PYTHON] [--work DIR]   (serves until SIGTERM)
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

API_VERSION = "1.44"
_IDS = itertools.count(1)


def free_port() -> int:
    """A port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def listening(port: int) -> bool:
    """Whether something accepts on 127.0.0.1:port."""
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Container:
    """A "container": a magnetar broker on fixed host ports, stopped and started on the same data."""

    def __init__(self, cid: str, name: str, request: dict, python: str, work: Path) -> None:
        self.id, self.name, self.request = cid, name, request
        self.python = python
        self.directory = work / cid
        self.directory.mkdir(parents=True)
        self.proc: subprocess.Popen[bytes] | None = None
        self.created = self.started_at = self.finished_at = _now()
        self.created_epoch = time.time()
        self.exit_code = 0
        self.lock = threading.Lock()
        exposed = list(request.get("ExposedPorts") or {})
        bindings = (request.get("HostConfig") or {}).get("PortBindings") or {}
        self.ports: dict[str, int] = {}
        for port in exposed + [p for p in bindings if p not in exposed]:
            wanted = [b["HostPort"] for b in bindings.get(port) or [] if b.get("HostPort") not in (None, "", "0")]
            self.ports[port] = int(wanted[0]) if wanted else free_port()

    def host_port(self, internal: int) -> int | None:
        """The host port of the container's ``internal``/tcp port."""
        return self.ports.get(f"{internal}/tcp")

    @property
    def running(self) -> bool:
        """Whether the broker process runs."""
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        """Start the broker (6650 -> its binary port, 8080 -> its HTTP port); returns at once, as Docker."""
        with self.lock:
            if self.running:
                return
            binary, http = self.host_port(6650) or free_port(), self.host_port(8080) or free_port()
            command = [self.python, "-m", "magnetar.cli.main", "standalone", "--data-dir",
                       str(self.directory / "data"), "--port", str(binary), "--http-port", str(http),
                       "--fsync", "never"]
            with open(self.directory / "broker.log", "ab") as log:
                self.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                             start_new_session=True)
            self.started_at = _now()

    def stop(self, timeout: float, sig: int = signal.SIGTERM) -> bool:
        """Signal the broker, SIGKILL after ``timeout`` s; whether it was running."""
        with self.lock:
            if not self.running:
                return False
            assert self.proc is not None
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.exit_code = self.proc.returncode if self.proc.returncode >= 0 else 128 - self.proc.returncode
            self.finished_at = _now()
            return True

    def remove(self) -> None:
        """Stop at once and delete its data."""
        self.stop(0, signal.SIGKILL)
        shutil.rmtree(self.directory, ignore_errors=True)

    def inspect(self) -> dict:
        """The container as ``GET /containers/{id}/json`` shows it."""
        running = self.running
        ports = {port: [{"HostIp": "0.0.0.0", "HostPort": str(host)}] if running else None
                 for port, host in self.ports.items()}
        return {
            "Id": self.id, "Name": "/" + self.name, "Created": self.created, "Image": "sha256:" + "0" * 64,
            "Path": (self.request.get("Cmd") or ["magnetar"])[0], "Args": (self.request.get("Cmd") or [])[1:],
            "State": {"Status": "running" if running else "exited", "Running": running, "Paused": False,
                      "Restarting": False, "OOMKilled": False, "Dead": False,
                      "Pid": self.proc.pid if running and self.proc else 0, "ExitCode": 0 if running else self.exit_code,
                      "Error": "", "StartedAt": self.started_at, "FinishedAt": self.finished_at},
            "Config": {"Image": self.request.get("Image", ""), "Cmd": self.request.get("Cmd"),
                       "Env": self.request.get("Env") or [], "Labels": self.request.get("Labels") or {},
                       "ExposedPorts": {port: {} for port in self.ports}, "Hostname": self.id[:12]},
            "HostConfig": self.request.get("HostConfig") or {},
            "Mounts": [],
            "NetworkSettings": {"Ports": ports, "Networks": {"bridge": {
                "IPAddress": "127.0.0.1", "Gateway": "127.0.0.1", "NetworkID": "bridge", "Aliases": None}}},
        }

    def summary(self) -> dict:
        """The container as ``GET /containers/json`` lists it."""
        state = self.inspect()["State"]["Status"]
        return {"Id": self.id, "Names": ["/" + self.name], "Image": self.request.get("Image", ""),
                "Created": int(self.created_epoch),
                "Labels": self.request.get("Labels") or {}, "State": state, "Status": state,
                "Ports": [{"PrivatePort": int(p.split("/")[0]), "PublicPort": h, "Type": "tcp", "IP": "0.0.0.0"}
                          for p, h in self.ports.items()]}


class Engine:
    """The fake daemon's state: containers by id, execs by id."""

    def __init__(self, python: str, work: Path) -> None:
        self.python, self.work = python, work
        self.containers: dict[str, Container] = {}
        self.execs: dict[str, dict] = {}
        self.lock = threading.Lock()

    def find(self, ref: str) -> Container | None:
        """A container by id, id prefix or name."""
        with self.lock:
            for container in self.containers.values():
                if container.id.startswith(ref) or container.name == ref.lstrip("/"):
                    return container
        return None

    def create(self, name: str | None, request: dict) -> Container:
        """A new container (not started)."""
        cid = f"{next(_IDS):08x}" + os.urandom(28).hex()
        container = Container(cid, name or f"magnetar_{cid[:8]}", request, self.python, self.work)
        with self.lock:
            self.containers[cid] = container
        return container

    def close(self) -> None:
        """Remove every container (their brokers stop)."""
        for container in list(self.containers.values()):
            container.remove()


def _matches(container: Container, filters: dict[str, list[str]]) -> bool:
    for name in filters.get("name", []):
        if not re.search(name.lstrip("/"), container.name):
            return False
    for label in filters.get("label", []):
        key, _, value = label.partition("=")
        labels = container.request.get("Labels") or {}
        if key not in labels or (value and labels[key] != value):
            return False
    for status in filters.get("status", []):
        if container.inspect()["State"]["Status"] != status:
            return False
    return all(container.id.startswith(i) for i in filters.get("id", []))


class Handler(BaseHTTPRequestHandler):
    """One Docker Engine API connection."""

    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        """One line per request on stderr when the server is verbose."""
        if self.server.verbose:
            print("fake-docker: " + format % args, file=sys.stderr, flush=True)

    def handle(self) -> None:
        """Serve the connection; a client that hangs up mid-answer (its context expired) ends it quietly."""
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def address_string(self) -> str:
        """A unix socket's peer has no address."""
        return "unix"

    def _reply(self, status: int, body: object = None, content_type: str = "application/json") -> None:
        data = b"" if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Api-Version", API_VERSION)
        self.send_header("Docker-Experimental", "false")
        self.send_header("Ostype", "linux")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        self._reply(status, {"message": message})

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw) if raw.strip() else {}

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        """GET routes."""
        self._route()

    do_HEAD = do_POST = do_DELETE = do_GET  # noqa: N815

    def _route(self) -> None:
        url = urlsplit(self.path)
        path = re.sub(r"^/v[0-9.]+", "", url.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        engine = self.server.engine
        body = self._body() if self.command == "POST" else {}
        if path == "/_ping":
            return self._reply(200, b"OK", "text/plain")
        if path == "/version":
            return self._reply(200, {"Version": "27.0.0-magnetar", "ApiVersion": API_VERSION, "MinAPIVersion": "1.24",
                                     "Os": "linux", "Arch": "amd64", "KernelVersion": os.uname().release})
        if path == "/info":
            return self._reply(200, {"ID": "magnetar-fake-docker", "Name": socket.gethostname(),
                                     "ServerVersion": "27.0.0-magnetar", "OperatingSystem": "magnetar fake Docker",
                                     "OSType": "linux", "Architecture": "x86_64", "NCPU": os.cpu_count(),
                                     "MemTotal": 1 << 32, "Labels": [], "Containers": len(engine.containers)})
        if m := re.fullmatch(r"/images/(.+)/json", path):
            return self._reply(200, {"Id": "sha256:" + "0" * 64, "RepoTags": [m.group(1)], "Os": "linux",
                                     "Architecture": "amd64", "Config": {}})
        if path == "/images/create":
            return self._reply(200, json.dumps({"status": f"Image {query.get('fromImage')} is up to date"}).encode())
        if path == "/containers/json":
            filters = json.loads(query.get("filters") or "{}")
            filters = {k: list(v) if isinstance(v, list) else [n for n, on in v.items() if on] for k, v in filters.items()}
            shown = [c.summary() for c in list(engine.containers.values())
                     if (query.get("all") in ("1", "true") or c.running) and _matches(c, filters)]
            return self._reply(200, shown)
        if path == "/containers/create":
            if query.get("name") and engine.find(query["name"]):
                return self._error(409, f'Conflict. The container name "/{query["name"]}" is already in use')
            return self._reply(201, {"Id": engine.create(query.get("name"), body).id, "Warnings": []})
        if path in ("/networks", "/networks/create") or path.startswith("/networks/"):
            return self._networks(path)
        if m := re.fullmatch(r"/exec/([0-9a-f]+)/(start|json)", path):
            return self._exec(m.group(1), m.group(2))
        if m := re.fullmatch(r"/containers/([^/]+)(?:/([a-z]+))?", path):
            return self._container(m.group(1), m.group(2) or "", query, body)
        return self._error(404, f"page not found: {self.command} {path} (the fake Docker of magnetar)")

    def _networks(self, path: str) -> None:
        bridge = {"Name": "bridge", "Id": "bridge", "Driver": "bridge", "Scope": "local",
                  "IPAM": {"Config": [{"Subnet": "127.0.0.0/8", "Gateway": "127.0.0.1"}]}, "Containers": {}}
        if path == "/networks":
            return self._reply(200, [bridge])
        if path == "/networks/create":
            return self._reply(201, {"Id": "bridge", "Warning": ""})
        return self._reply(200, bridge)

    def _container(self, ref: str, action: str, query: dict[str, str], body: dict) -> None:
        container = self.server.engine.find(ref)
        if container is None:
            return self._error(404, f"No such container: {ref}")
        if action == "json":
            return self._reply(200, container.inspect())
        if action == "start":
            if container.running:
                return self._reply(304)
            container.start()
            return self._reply(204)
        if action in ("stop", "kill", "restart"):
            timeout = float(query.get("t") or query.get("timeout") or 10)
            sig = signal.SIGKILL if action == "kill" else signal.SIGTERM
            was_running = container.stop(0 if action == "kill" else timeout, sig)
            if action == "restart":
                container.start()
            return self._reply(204 if was_running or action == "restart" else 304)
        if action == "wait":
            while container.running:
                time.sleep(0.1)
            return self._reply(200, {"StatusCode": container.exit_code})
        if action == "logs":
            text = (container.directory / "broker.log").read_bytes() if container.directory.exists() else b""
            return self._reply(200, b"\x01\0\0\0" + len(text).to_bytes(4, "big") + text if text else b"",
                               "application/vnd.docker.multiplexed-stream")
        if action == "exec":
            eid = os.urandom(32).hex()
            self.server.engine.execs[eid] = {"container": container, "cmd": body.get("Cmd") or [], "code": None}
            return self._reply(201, {"Id": eid})
        if action == "" and self.command == "DELETE":
            container.remove()
            with self.server.engine.lock:
                self.server.engine.containers.pop(container.id, None)
            return self._reply(204)
        return self._error(404, f"not implemented by the fake Docker of magnetar: {self.command} {self.path}")

    def _exec(self, eid: str, action: str) -> None:
        job = self.server.engine.execs.get(eid)
        if job is None:
            return self._error(404, f"No such exec instance: {eid}")
        if action == "json":
            return self._reply(200, {"ID": eid, "Running": False, "ExitCode": job["code"] or 0,
                                     "ContainerID": job["container"].id})
        job["code"] = self._run_check(job["container"], job["cmd"])
        self.send_response(101, "UPGRADED")
        self.send_header("Content-Type", "application/vnd.docker.multiplexed-stream")
        self.send_header("Connection", "Upgrade")
        self.send_header("Upgrade", "tcp")
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True

    @staticmethod
    def _run_check(container: Container, cmd: list[str]) -> int:
        """The exit status of a command "in the container": testcontainers' port check (a shell script
        naming the port as ``localhost <port>``) succeeds when the broker accepts on that port's host
        port; any other command is not found (127)."""
        found = re.search(r"localhost (\d+)", " ".join(cmd))
        if found is None:
            return 127
        host = container.host_port(int(found.group(1)))
        return 0 if container.running and host is not None and listening(host) else 1


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """The fake daemon on a unix socket, one thread per connection."""

    daemon_threads = True

    def __init__(self, path: Path, engine: Engine, verbose: bool = False) -> None:
        path.unlink(missing_ok=True)
        super().__init__(str(path), Handler)
        self.engine, self.verbose = engine, verbose


def serve_in_thread(path: Path, python: str, work: Path, verbose: bool = False) -> Server:
    """Start the fake daemon on ``path`` in a daemon thread; ``shutdown()`` then ``engine.close()`` end it."""
    server = Server(path, Engine(python, work), verbose)
    threading.Thread(target=server.serve_forever, name="fake-docker", daemon=True).start()
    return server


def main(argv: list[str]) -> int:
    """Serve until SIGTERM or Ctrl-C, then remove every container."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("socket", type=Path)
    parser.add_argument("--python", default=sys.executable, help="the Python that runs `-m magnetar.cli.main`")
    parser.add_argument("--work", type=Path, default=None, help="where containers keep data and logs")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    work = args.work or Path(f"/tmp/magnetar-fake-docker-{os.getpid()}")
    work.mkdir(parents=True, exist_ok=True)
    server = Server(args.socket, Engine(args.python, work), args.verbose)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.engine.close()
        args.socket.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
