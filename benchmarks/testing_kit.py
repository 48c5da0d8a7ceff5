"""The testing kit's figures (docs/TESTING.md), measured inside real pytest runs of generated test files.

1. Fixture request to a CONNECTED client: from the set-up of the first test that asks for
   ``pulsar_client`` to the answer of the client's first request (``get_topic_partitions``: a
   connection, CONNECT / CONNECTED, one lookup), for the first test of the session (the broker's
   process was launched when collection ended) and for later tests (the broker runs).
2. The ``pulsar_namespace`` fixture: its set-up (a namespace created over the admin API) per test,
   median and p90 over the tests after the first (the first also waits for the admin app's build).
3. N tests (default 200) that each send one message, with ``pulsar_namespace`` + ``pulsar_topic``
   against N tests that send to a unique topic of ``public/default`` with no namespace fixture: the time
   from the first test's set-up to the last test's teardown (pytest's own start-up left out), and the
   ratio. Each kind runs ``--rounds`` times, alternating; medians are printed.

Every pytest run (and the brokers it starts) runs from cached bytecode (a PYTHONPYCACHEPREFIX compiled
by a warm-up run), as an installed package does: with PYTHONDONTWRITEBYTECODE the broker's process and
the client would be compiled anew in every run, which is not what a user's test session pays.

usage: python benchmarks/testing_kit.py [--tests 200] [--rounds 3] [--connect-only] [--out results/testing_kit.json]

``--connect-only`` measures 1. alone. ``--tree NAME=SRC`` (repeatable) runs each round once per source tree,
alternated, with PYTHONPATH=SRC (the pytest runs use this interpreter and its environment's pytest11 entry
point; the plugin module and the broker come from SRC): old / new comparisons in one run, the figures per tree.
``--broker-start`` (with ``--tree``) measures the broker's start alone, as the session broker launches it: from
the launch of ``magnetar standalone`` (a fresh data directory, fsync never) to its word on the ready pipe, the
wall time and the CPU time (user + system) the process had used by then, per tree, alternated.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

CONFTEST = textwrap.dedent(
    """
    import json, os, time
    import pytest

    TIMES = {"setup": [], "namespace": [], "first_setup": None, "last_teardown": None}

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(item):
        item.setup_started = time.perf_counter()
        if TIMES["first_setup"] is None:
            TIMES["first_setup"] = item.setup_started

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(fixturedef, request):
        started = time.perf_counter()
        try:
            return (yield)
        finally:
            if fixturedef.argname == "pulsar_namespace":
                TIMES["namespace"].append(time.perf_counter() - started)

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_teardown(item):
        TIMES["last_teardown"] = time.perf_counter()

    @pytest.fixture
    def started(request):
        return request.node.setup_started

    def pytest_sessionfinish(session):
        TIMES["last_teardown"] = TIMES["last_teardown"] or time.perf_counter()
        with open(os.environ["KIT_BENCH_OUT"], "w") as f:
            json.dump(TIMES, f)
    """
)

CONNECT_TESTS = textwrap.dedent(
    """
    import time
    import pytest
    from conftest import TIMES

    @pytest.mark.parametrize("n", range(10))
    def test_connect(started, pulsar_client, n):
        pulsar_client.get_topic_partitions("persistent://public/default/connect-probe")
        TIMES["setup"].append(time.perf_counter() - started)
    """
)

NAMESPACE_TESTS = textwrap.dedent(
    """
    import pytest

    @pytest.mark.parametrize("n", range({tests}))
    def test_one_message(pulsar_client, pulsar_topic, n):
        pulsar_client.create_producer(pulsar_topic).send(b"x")
    """
)

PLAIN_TESTS = textwrap.dedent(
    """
    import pytest

    @pytest.mark.parametrize("n", range({tests}))
    def test_one_message(pulsar_client, n, request):
        pulsar_client.create_producer(f"persistent://public/default/{{request.node.name}}-{{id(request)}}").send(b"x")
    """
)


def run(tests: str, workdir: Path, src: str | None = None) -> dict:
    """One pytest run of ``tests`` in a fresh directory (``src``: the PYTHONPATH); the conftest's timings."""
    case = Path(tempfile.mkdtemp(dir=workdir))
    (case / "conftest.py").write_text(CONFTEST)
    (case / "test_bench.py").write_text(tests)
    (case / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    out = case / "times.json"
    env = {**os.environ, "KIT_BENCH_OUT": str(out), "PYTHONPYCACHEPREFIX": str(workdir / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if src is not None:
        env["PYTHONPATH"] = src
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           str(case / "test_bench.py")], cwd=case, env=env, capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"pytest failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(out.read_text())


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    """Run the three measurements and print them as JSON."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--connect-only", action="store_true", help="only the fixture-to-CONNECTED figures")
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=SRC",
                        help="a source tree to compare (repeat; implies --connect-only)")
    parser.add_argument("--broker-start", action="store_true",
                        help="with --tree: the broker's launch to listening alone, wall and CPU time")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="testing-kit-bench-"))
    if args.tree and args.broker_start:
        _emit(_compare_starts(dict(tree.split("=", 1) for tree in args.tree), args.rounds, workdir), args.out)
        return
    if args.tree:
        _emit(_compare_trees(dict(tree.split("=", 1) for tree in args.tree), args.rounds, workdir), args.out)
        return
    first, later, namespace, with_ns, without_ns = [], [], [], [], []
    load_before = os.getloadavg()
    run(CONNECT_TESTS, workdir)  # warm-up: the bytecode cache
    for _ in range(args.rounds):
        times = run(CONNECT_TESTS, workdir)
        first.append(times["setup"][0])
        later.extend(times["setup"][1:])
        if args.connect_only:
            continue
        for kind, source in (("ns", NAMESPACE_TESTS), ("plain", PLAIN_TESTS)):
            times = run(source.format(tests=args.tests), workdir)
            session = times["last_teardown"] - times["first_setup"]
            (with_ns if kind == "ns" else without_ns).append(session)
            if kind == "ns":
                namespace.extend(times["namespace"][1:])
    result: dict[str, object] = {
        "first_test_to_connected_s": statistics.median(first),
        "later_test_to_connected_s": statistics.median(later),
        "rounds": args.rounds,
        "load_average_before": load_before,
        "load_average": os.getloadavg(),
    }
    if args.connect_only:
        result["per_round"] = {"first_test_to_connected_s": first}
    else:
        result |= _session_figures(args.tests, first, namespace, with_ns, without_ns)
    _emit(result, args.out)


def _emit(result: dict[str, object], out: Path | None) -> None:
    """Print ``result`` as JSON, and write it to ``out`` when given."""
    text = json.dumps(result, indent=2)
    print(text)
    if out:
        out.write_text(text + "\n")


def _compare_trees(trees: dict[str, str], rounds: int, workdir: Path) -> dict[str, object]:
    """The first and later tests' fixture-to-CONNECTED per source tree, the trees alternated each round."""
    load_before = os.getloadavg()
    first: dict[str, list[float]] = {name: [] for name in trees}
    later: dict[str, list[float]] = {name: [] for name in trees}
    for src in trees.values():
        run(CONNECT_TESTS, workdir, src)  # warm-up: the bytecode cache
    for index in range(rounds):
        order = list(trees.items()) if index % 2 == 0 else list(reversed(trees.items()))
        for name, src in order:
            times = run(CONNECT_TESTS, workdir, src)
            first[name].append(times["setup"][0])
            later[name].extend(times["setup"][1:])
    return {
        "trees": trees,
        "first_test_to_connected_s": {name: statistics.median(values) for name, values in first.items()},
        "later_test_to_connected_s": {name: statistics.median(values) for name, values in later.items()},
        "rounds": rounds,
        "load_average_before": load_before,
        "load_average": os.getloadavg(),
        "per_round": {"first_test_to_connected_s": first},
    }


def _session_figures(tests: int, first: list[float], namespace: list[float], with_ns: list[float],
                     without_ns: list[float]) -> dict[str, object]:
    """The namespace fixture's and the N tests' figures."""
    return {
        "namespace_fixture_median_ms": statistics.median(namespace) * 1000,
        "namespace_fixture_p90_ms": percentile(namespace, 0.9) * 1000,
        f"{tests}_tests_with_namespace_s": statistics.median(with_ns),
        f"{tests}_tests_without_namespace_s": statistics.median(without_ns),
        "ratio": statistics.median(with_ns) / statistics.median(without_ns),
        "per_round": {"first_test_to_connected_s": first, "with_namespace_s": with_ns, "without_namespace_s": without_ns},
    }


def broker_start(src: str, workdir: Path) -> tuple[float, float]:
    """Launch ``magnetar standalone`` from ``src`` as the session broker is launched; the wall and CPU seconds
    from the launch to its word on the ready pipe."""
    data = Path(tempfile.mkdtemp(dir=workdir))
    env = {**os.environ, "PYTHONPATH": src, "PYTHONPYCACHEPREFIX": str(workdir / "pycache"), "MAGNETAR_FSYNC": "never"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    ready, ready_write = os.pipe()
    env["MAGNETAR_READY_FD"] = str(ready_write)
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "magnetar.cli.main", "standalone", "--data-dir", str(data / "d"),
                             "--port", "0", "--http-port", "0"], env=env, pass_fds=(ready_write,),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(ready_write)
    try:
        if not select.select([ready], [], [], 60)[0] or not os.read(ready, 1):
            raise SystemExit(f"the broker from {src} did not say it listens")
        wall = time.perf_counter() - started
        with open(f"/proc/{proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    finally:
        os.close(ready)
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    return wall, cpu


def _compare_starts(trees: dict[str, str], rounds: int, workdir: Path) -> dict[str, object]:
    """The broker's launch to listening, wall and CPU seconds, per source tree, the trees alternated."""
    load_before = os.getloadavg()
    walls: dict[str, list[float]] = {name: [] for name in trees}
    cpus: dict[str, list[float]] = {name: [] for name in trees}
    for src in trees.values():
        broker_start(src, workdir)  # warm-up: the bytecode cache
    for index in range(rounds):
        for name, src in (list(trees.items()) if index % 2 == 0 else list(reversed(trees.items()))):
            wall, cpu = broker_start(src, workdir)
            walls[name].append(wall)
            cpus[name].append(cpu)
    return {
        "trees": trees,
        "launch_to_listening_s": {name: statistics.median(values) for name, values in walls.items()},
        "cpu_to_listening_s": {name: statistics.median(values) for name, values in cpus.items()},
        "rounds": rounds,
        "load_average_before": load_before,
        "load_average": os.getloadavg(),
        "per_round": {"launch_to_listening_s": walls, "cpu_to_listening_s": cpus},
    }


if __name__ == "__main__":
    main()
