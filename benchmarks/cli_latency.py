"""Latency of one ``magnetar admin`` call, side by side with the floors under it.

Scripts call the admin CLI hundreds of times, so what counts is one whole call: interpreter start,
imports, parsing, the HTTP request, printing. Against one broker (started here on free ports), each
round runs, alternating so that all share the machine's load equally:

- ``python-floor``: ``python -c pass``, the interpreter alone;
- ``http-floor``: ``python -c`` with ``http.client`` GET /admin/v2/tenants, the least a Python
  tool can do for the same answer;
- ``admin-tenants-list``: ``magnetar admin tenants list`` of this checkout, by the installed console
  script (its module path first on PYTHONPATH), as a user types it; ``admin-tenants-list-m``: the
  same as ``python -m magnetar.cli.main`` (runpy's imports on top);
- ``version``: ``magnetar --version`` (no Typer);
- ``help``: ``magnetar --help`` (the root's help: every sub-command listed, none imported);
- every ``--compare NAME=PYTHONPATH``: ``magnetar admin tenants list`` (and, as ``NAME-help``,
  ``magnetar --help``) with another source tree or library set first on the path (e.g.
  ``before=/work/main/src`` or ``typer-0.28=/tmp/typer28:src``);
- ``pulsarctl`` / ``pulsar-admin`` ``tenants list`` when they are on the PATH.

Each call's wall time and CPU time (user + system of the child) are recorded; on a machine shared
with other work the CPU time varies far less than the wall time. Modules run from cached bytecode
(a PYTHONPYCACHEPREFIX compiled by a warm-up call), as an installed package does. Medians go to
benchmarks/results/cli_latency.json.

usage: python benchmarks/cli_latency.py [--runs 15] [--compare before=/work/main/src ...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from magnetar.testing import BrokerProcess  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "cli_latency.json"
HTTP_FLOOR = (
    "import http.client, sys; c = http.client.HTTPConnection('127.0.0.1', {port}); "
    "c.request('GET', '/admin/v2/tenants'); sys.stdout.write(c.getresponse().read().decode())"
)


def run_once(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one call, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, timeout=60)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{cmd} failed: {done.stderr.decode()[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def console_script() -> list[str]:
    """How ``magnetar`` runs: the installed console script (``from magnetar.cli.main import main``)
    next to this interpreter, or ``python -m magnetar.cli.main`` (which adds runpy) without one."""
    script = Path(sys.executable).with_name("magnetar")
    return [sys.executable, str(script)] if script.exists() else [sys.executable, "-m", "magnetar.cli.main"]


def commands(broker: BrokerProcess, compare: list[str]) -> dict[str, tuple[list[str], dict[str, str]]]:
    """name -> (command line, environment)."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    base["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="cli-latency-pyc-")
    base["MAGNETAR_ADMIN_URL"] = broker.http_url
    here = {**base, "PYTHONPATH": str(ROOT / "src")}
    magnetar = console_script()
    admin = [*magnetar, "admin", "tenants", "list"]
    root_help = [*magnetar, "--help"]
    chosen = {
        "python-floor": ([sys.executable, "-c", "pass"], base),
        "http-floor": ([sys.executable, "-c", HTTP_FLOOR.format(port=broker.http_port)], base),
        "admin-tenants-list": (admin, here),
        "admin-tenants-list-m": ([sys.executable, "-m", "magnetar.cli.main", "admin", "tenants", "list"], here),
        "version": ([*magnetar, "--version"], here),
        "help": (root_help, here),
    }
    for item in compare:
        name, _, path = item.partition("=")
        chosen[name] = (admin, {**base, "PYTHONPATH": path})
        chosen[f"{name}-help"] = (root_help, {**base, "PYTHONPATH": path})
    for tool in ("pulsarctl", "pulsar-admin"):
        found = shutil.which(tool)
        if found:
            chosen[tool] = ([found, "--admin-url", broker.http_url, "tenants", "list"], base)
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--compare", action="append", default=[], metavar="NAME=PYTHONPATH")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, BrokerProcess(Path(tmp) / "data") as broker:
        chosen = commands(broker, args.compare)
        for cmd, env in chosen.values():  # warm-up: bytecode compiled into the cache prefix
            run_once(cmd, env)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in chosen}
        for _ in range(args.runs):
            for name, (cmd, env) in chosen.items():
                samples[name].append(run_once(cmd, env))
    load = os.getloadavg()
    report = {
        "runs": args.runs,
        "load_average": [round(x, 2) for x in load],
        "cpus": os.cpu_count(),
        "results": {
            name: {
                "wall_median_s": round(statistics.median(w for w, _ in runs), 4),
                "wall_min_s": round(min(w for w, _ in runs), 4),
                "cpu_median_s": round(statistics.median(c for _, c in runs), 4),
            }
            for name, runs in samples.items()
        },
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{args.runs} runs each, load average {load[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'command':24} {'wall median':>12} {'wall min':>10} {'CPU median':>11}")
    for name, figures in report["results"].items():
        print(f"{name:24} {figures['wall_median_s']:>11.3f}s {figures['wall_min_s']:>9.3f}s {figures['cpu_median_s']:>10.3f}s")


if __name__ == "__main__":
    main()
