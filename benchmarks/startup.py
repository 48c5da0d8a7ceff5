"""Start-up time and resident memory of `magnetar standalone`, side by side with its peers.

Each run starts a fresh broker (new data dir, free ports on 127.0.0.1) and measures, from the
moment before exec:

- ``connected_s``: the first CONNECTED answer to a raw CONNECT frame on the binary port (polled
  every 2 ms: connect, send CONNECT, read the answer);
- ``http_ready_s``: the first 200 of GET /admin/v2/clusters (polled every 5 ms), for systems with
  an HTTP port;
- ``cpu_connected_s`` / ``cpu_http_ready_s``: the CPU time (user + system) the broker had used at
  those moments: on a machine shared with other work this varies far less than the wall time;
- ``rss_3s_mb``: the broker process's resident memory 3 s after it is ready (both ports);
- ``rss_idle_mb``: its resident memory after ``--idle`` seconds (default 30) without clients; for systems
  with an HTTP port this comes from a second start of the broker, in the same round, that nobody calls
  over HTTP (a broker that loads its HTTP stack with the first HTTP connection has not loaded it then);
- ``first_request_s`` / ``cpu_first_request_s`` / ``rss_first_request_mb`` (that second start, after the
  idle time): the latency of its first GET /admin/v2/clusters, the broker's CPU time for it, and its
  memory afterwards;
- ``all_routes_s`` / ``cpu_all_routes_s`` / ``rss_all_routes_mb`` (that second start, after the first
  request): how long GET /openapi.json takes (it needs every admin route, so a broker that builds its
  route groups on first use builds all of them), the CPU time that cost, and the memory afterwards.

Brokers run with their bytecode cached (PYTHONPYCACHEPREFIX, compiled before the first run), as an
installed package runs: a shell with PYTHONDONTWRITEBYTECODE would otherwise compile every module
on every start and double the figures.

Systems, alternated round by round so that they share the machine's load equally:
``magnetar`` (default configuration, HTTP on), ``magnetar-no-http`` (``--http-port 0``),
``pulsar-lite`` (the Rust peer from PyPI, when installed; it has no HTTP port), ``pulsar``
(Apache Pulsar standalone assembled by tools/pulsar-reference, when its lib dir is ready; fewer
runs, it is a JVM) and any ``--compare NAME=SRC`` (another magnetar source tree, e.g. the previous
commit extracted with ``git archive``, run with PYTHONPATH=SRC; HTTP off when NAME ends in
``-no-http``). Medians and ratios go to benchmarks/results/startup.json.

usage: python benchmarks/startup.py [--runs 5] [--idle 30] [--pulsar-runs 2] [--compare before=/tmp/x/src]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
VENV = ROOT / ".venv" / "bin"
PYCACHE = Path(tempfile.gettempdir()) / "magnetar-startup-pycache"
PULSAR_LIB_CANDIDATES = [
    Path("/tmp/magnetar-startup/pulsar-reference/lib"),
    Path("/tmp/magnetar-bench/pulsar-reference/lib"),
    Path("/tmp/magnetar-pulsar-reference/lib"),
]
# BaseCommand{type: CONNECT, connect: {client_version: "startup-bench", protocol_version: 21}}
_CONNECT_BODY = b"\x0a\x0dstartup-bench" + b"\x20\x15"
_COMMAND = b"\x08\x02" + b"\x12" + bytes([len(_CONNECT_BODY)]) + _CONNECT_BODY
CONNECT_FRAME = (len(_COMMAND) + 4).to_bytes(4, "big") + len(_COMMAND).to_bytes(4, "big") + _COMMAND
CONNECTED_PREFIX = b"\x08\x03"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> float | None:
    """Resident memory of a process in MiB (VmRSS), None once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def try_connect(port: int) -> bool:
    """True when the broker on ``port`` answers a CONNECT frame with CONNECTED."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.sendall(CONNECT_FRAME)
            data = b""
            while len(data) < 10:
                chunk = sock.recv(4096)
                if not chunk:
                    return False
                data += chunk
            return data[8:10] == CONNECTED_PREFIX
    except OSError:
        return False


def openapi_seconds(port: int, pid: int) -> tuple[float | None, float | None]:
    """Wall and CPU seconds (of the broker ``pid``) of one GET /openapi.json, None when it fails."""
    cpu_before = cpu_seconds(pid)
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/openapi.json", timeout=30) as resp:
            resp.read()
    except OSError:
        return None, None
    elapsed = time.perf_counter() - started
    cpu_after = cpu_seconds(pid)
    return elapsed, (cpu_after - cpu_before if cpu_after is not None and cpu_before is not None else None)


def try_http(port: int, timeout: float = 2) -> bool:
    """True when GET /admin/v2/clusters answers 200."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/admin/v2/clusters", timeout=timeout) as resp:
            return resp.status == 200
    except OSError:
        return False


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time a process has used so far (children excluded), None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def poll(check: object, port: int, interval: float, started: float, deadline: float, out: dict, key: str,
         pid: int) -> None:
    """Call ``check(port)`` every ``interval`` s until it holds; store the elapsed time in out[key] and the
    CPU time the broker used by then in out["cpu_" + key] (less sensitive to a loaded machine)."""
    while time.perf_counter() < deadline:
        if check(port):  # type: ignore[operator]
            out[key] = time.perf_counter() - started
            out["cpu_" + key] = cpu_seconds(pid)
            return
        time.sleep(interval)


@dataclass
class System:
    """How to start one broker kind on given ports and data dir."""

    name: str
    has_http: bool
    runs: int
    command: object  # (port, http_port, data_dir) -> (argv, env)
    timeout: float = 30.0
    results: list[dict] = field(default_factory=list)


def python_env(src: str | None = None) -> dict:
    """The environment of a magnetar process as users run it: with cached bytecode (kept under
    PYCACHE, out of the source tree), even when this shell sets PYTHONDONTWRITEBYTECODE."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    if src is not None:
        env["PYTHONPATH"] = src
    return env


def warm_bytecode(src: str | None) -> None:
    """Compile (once) every module a standalone broker imports, so that no run pays for compiling."""
    modules = "magnetar.cli.main, magnetar.cli.standalone, magnetar.admin.standalone, magnetar.admin.app"
    subprocess.run([str(VENV / "python"), "-c", f"import {modules}"], env=python_env(src), check=True)


def magnetar_system(name: str, src: str | None, http: bool, runs: int) -> System:
    """The magnetar standalone command (of this tree, or of the source tree ``src``)."""
    warm_bytecode(src)

    def command(port: int, http_port: int, data: Path) -> tuple[list[str], dict]:
        env = python_env(src)
        if src is None:
            argv = [str(VENV / "magnetar")]
        else:
            argv = [str(VENV / "python"), "-c", "from magnetar.cli.main import main; main()"]
        argv += ["standalone", "--data-dir", str(data), "--port", str(port), "--bind", "127.0.0.1"]
        argv += ["--http-port", str(http_port if http else 0), "--log-level", "WARNING"]
        return argv, env

    return System(name, http, runs, command)


def pulsar_lite_system(runs: int) -> System | None:
    """pulsar-lite's Rust broker binary, when the package is installed."""
    binary = next(iter(sorted((VENV.parent / "lib").glob("python3*/site-packages/pulsar_lite/bin/pulsar-lite"))), None)
    if binary is None:
        return None

    def command(port: int, _http_port: int, data: Path) -> tuple[list[str], dict]:
        argv = [str(binary), "--addr", f"127.0.0.1:{port}", "--db-path", str(data / "db"), "--log-level", "warn"]
        return argv, dict(os.environ)

    return System("pulsar-lite", False, runs, command)


def pulsar_system(runs: int) -> System | None:
    """Apache Pulsar standalone from the lib dir tools/pulsar-reference assembled, when one is ready."""
    lib = next((p for p in PULSAR_LIB_CANDIDATES if (p / ".complete").exists()), None)
    if lib is None or runs <= 0 or shutil.which("java") is None:
        return None
    sys.path.insert(0, str(ROOT / "tools"))
    from pulsar_reference import JVM_OPENS, PULSAR_MAIN, PulsarStandalone

    def command(port: int, http_port: int, data: Path) -> tuple[list[str], dict]:
        ref = PulsarStandalone(lib, data)
        ref.port, ref.http_port = port, http_port
        conf, log4j = ref._write_config()
        argv = ["java", "-Xms256m", "-Xmx1g", "-XX:MaxDirectMemorySize=1g"]
        argv += [arg for opens in JVM_OPENS for arg in ("--add-opens", f"{opens}=ALL-UNNAMED")]
        argv += ["-Dio.netty.tryReflectionSetAccessible=true", f"-Dlog4j.configurationFile={log4j}"]
        argv += ["-cp", f"{lib}/*", PULSAR_MAIN, "--config", str(conf), "--no-functions-worker"]
        argv += ["--no-stream-storage", "--metadata-dir", str(data / "data" / "metadata")]
        argv += ["--bookkeeper-dir", str(data / "data" / "bookkeeper"), "--bookkeeper-port", str(free_port())]
        return argv, dict(os.environ)

    return System("pulsar", True, runs, command, timeout=240.0)


def run_once(system: System, idle: float, mode: str = "ready") -> dict:
    """Start one broker, measure it, stop it.

    ``ready`` polls both ports from the start (CONNECTED, HTTP ready, RSS 3 s after both answered);
    ``idle`` (systems with HTTP) calls nothing over HTTP until the idle time is over (RSS then), then
    makes the first HTTP request and GET /openapi.json (every route)."""
    port, http_port = free_port(), free_port()
    data = Path(tempfile.mkdtemp(prefix=f"startup-{system.name}-"))
    argv, env = system.command(port, http_port, data)  # type: ignore[operator]
    out: dict = {}
    poll_http = system.has_http and mode == "ready"
    with open(data / "broker.log", "wb") as log:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=data, stdout=log, stderr=subprocess.STDOUT)
        deadline = started + system.timeout
        pollers = [threading.Thread(target=poll, args=(try_connect, port, 0.002, started, deadline, out, "connected_s", proc.pid))]
        if poll_http:
            pollers.append(threading.Thread(target=poll, args=(try_http, http_port, 0.005, started, deadline, out, "http_ready_s", proc.pid)))
        for thread in pollers:
            thread.start()
        for thread in pollers:
            thread.join()
        try:
            if proc.poll() is None and "connected_s" in out and (not poll_http or "http_ready_s" in out):
                ready = max(out.get("connected_s", 0), out.get("http_ready_s", 0))
                if mode == "ready":
                    time.sleep(max(0.0, started + ready + 3 - time.perf_counter()))
                    out["rss_3s_mb"] = rss_mb(proc.pid)
                if mode == "idle" or not system.has_http:
                    time.sleep(max(0.0, started + ready + idle - time.perf_counter()))
                    out["rss_idle_mb"] = rss_mb(proc.pid)
                if mode == "idle" and system.has_http and system.name != "pulsar":
                    out.update(first_request(http_port, proc.pid))
                    out["all_routes_s"], out["cpu_all_routes_s"] = openapi_seconds(http_port, proc.pid)
                    out["rss_all_routes_mb"] = rss_mb(proc.pid)
            else:
                out["error"] = f"not ready in {system.timeout} s (exit {proc.poll()}); see {data / 'broker.log'}"
        finally:
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    if "error" not in out:
        shutil.rmtree(data, ignore_errors=True)
    if mode == "idle":
        out["idle_run_connected_s"] = out.pop("connected_s", None)
        out.pop("cpu_connected_s", None)
    return out


def first_request(port: int, pid: int) -> dict:
    """The first HTTP request to an idle broker (GET /admin/v2/clusters): its latency, the broker's CPU
    seconds for it, its RSS afterwards."""
    cpu_before = cpu_seconds(pid)
    started = time.perf_counter()
    if not try_http(port, timeout=30):
        return {"first_request_error": True}
    elapsed = time.perf_counter() - started
    cpu_after = cpu_seconds(pid)
    cpu = cpu_after - cpu_before if cpu_after is not None and cpu_before is not None else None
    return {"first_request_s": elapsed, "cpu_first_request_s": cpu, "rss_first_request_mb": rss_mb(pid)}


def summary(results: list[dict]) -> dict:
    """Median, min and max of each measured value."""
    keys = ("connected_s", "http_ready_s", "cpu_connected_s", "cpu_http_ready_s", "rss_3s_mb", "rss_idle_mb",
            "first_request_s", "cpu_first_request_s", "rss_first_request_mb",
            "all_routes_s", "cpu_all_routes_s", "rss_all_routes_mb")
    out: dict = {}
    for key in keys:
        values = [r[key] for r in results if r.get(key) is not None]
        if values:
            out[key] = {"median": round(statistics.median(values), 4), "min": round(min(values), 4),
                        "max": round(max(values), 4)}
    return out


def ratios(summaries: dict, base: str) -> dict:
    """Each system's medians divided by the base system's (below 1: base is slower / bigger)."""
    out: dict = {}
    for name, values in summaries.items():
        if name == base:
            continue
        out[f"{base}/{name}"] = {
            key: round(summaries[base][key]["median"] / values[key]["median"], 3)
            for key in values
            if key in summaries[base] and values[key]["median"]
        }
    return out


def main() -> None:
    """Run the rounds and write the results JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--idle", type=float, default=30.0, help="seconds after ready for the idle RSS")
    parser.add_argument("--pulsar-runs", type=int, default=2, help="Apache Pulsar runs (0: skip)")
    parser.add_argument("--compare", action="append", default=[], help="NAME=SRC: another magnetar tree")
    parser.add_argument("--only", default="", help="comma-separated system names to run")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "startup.json")
    args = parser.parse_args()
    systems = [magnetar_system("magnetar", None, True, args.runs),
               magnetar_system("magnetar-no-http", None, False, args.runs)]
    for spec in args.compare:
        name, src = spec.split("=", 1)
        systems.append(magnetar_system(name, src, not name.endswith("-no-http"), args.runs))
    systems += [s for s in (pulsar_lite_system(args.runs), pulsar_system(args.pulsar_runs)) if s is not None]
    if args.only:
        systems = [s for s in systems if s.name in args.only.split(",")]
    for round_no in range(max(s.runs for s in systems)):
        for system in systems:
            if round_no < system.runs:
                result = run_once(system, args.idle)
                if system.has_http and system.name != "pulsar":
                    result.update(run_once(system, args.idle, "idle"))
                system.results.append(result)
                print(f"round {round_no + 1} {system.name}: {result}", file=sys.stderr, flush=True)
    summaries = {s.name: summary(s.results) for s in systems}
    report = {
        "what": "exec to first CONNECTED / HTTP 200, RSS 3 s after ready and after the idle time",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "load_avg_at_end": os.getloadavg()},
        "note": "systems alternated round by round in one run on a machine shared with other work",
        "runs": args.runs, "idle_s": args.idle,
        "summary": summaries,
        "ratios": {key: value for base in ("magnetar", "magnetar-no-http", "before") if base in summaries
                   for key, value in ratios(summaries, base).items()},
        "results": {s.name: s.results for s in systems},
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({"summary": summaries, "ratios": report["ratios"]}, indent=2))


if __name__ == "__main__":
    main()
