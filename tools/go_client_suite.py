"""Run apache/pulsar-client-go's own `pulsar/...` test suite against magnetar, the way upstream runs it
against Pulsar (scripts/run-ci.sh + scripts/pulsar-test-service-start.sh), and print the results.

The suite is never copied into this repository: give the git dir of a clone (the project's mirror is
/work/.mirror/apache+pulsar-client-go/repo). Steps:

1. extract HEAD of that clone into WORK/src, compile one test binary per package of ./pulsar/...;
2. start `magnetar standalone` with upstream's integration-tests/conf/standalone.conf (its certificate,
   token-key paths pointed at WORK/src/integration-tests, the htpasswd file that upstream passes as
   -Dpulsar.auth.basic.conf given as basicAuthConf), then upstream's set-up calls through
   `magnetar admin --client-conf` (upstream's client.conf: TLS client certificate of role `admin`);
3. run every top-level test in its own process (`-test.run ^Name$`, a per-test timeout, one at a
   time), within a total time budget, restarting the broker if it died;
4. print passed / failed per file and in total, and the failures grouped by cause.

The suite hard-codes localhost:6650/6651/8080/8443. By default steps 2-3 run in a private network
namespace (`unshare --user --map-root-user --net`), so those ports never collide with anything on
the machine; `--host-network` uses the machine's ports instead (only when they are free).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from fake_docker import serve_in_thread
from go_suite_report import TestResult, parse_go_output, render_report

REPO_ROOT = Path(__file__).resolve().parent.parent
PYTHON = REPO_ROOT / ".venv" / "bin" / "python"
SUITE_PORTS = (6650, 6651, 8080, 8443)
#: upstream's pulsar-test-service-start.sh, after the broker answers on :8080
SETUP_CALLS = [
    ["tenants", "update", "public", "-r", "anonymous"],
    [
        "namespaces",
        "grant-permission",
        "public/default",
        "--actions",
        "produce,consume",
        "--role",
        "anonymous",
    ],
    ["tenants", "create", "private"],
    ["namespaces", "create", "private/auth"],
    [
        "namespaces",
        "grant-permission",
        "private/auth",
        "--actions",
        "produce,consume",
        "--role",
        "token-principal",
    ],
]
#: what testcontainers-go needs to use the fake Docker: no Ryuk (the reaper container), containers on localhost
FAKE_DOCKER_ENV = {"TESTCONTAINERS_RYUK_DISABLED": "true", "TESTCONTAINERS_HOST_OVERRIDE": "localhost"}
_GO_TEST_FUNC = re.compile(r"^func (Test\w+)\(\w+ \*testing\.T\)", re.M)
_BUILD_TAG = re.compile(r"^//go:build (.+)$", re.M)


def log(message: str) -> None:
    """A progress line on stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- preparing the suite (outside the network namespace: the module proxy is needed) -------------
def extract(git_dir: Path, src: Path) -> str:
    """Extract HEAD of the clone into ``src`` (once per commit); returns the commit id."""
    commit = subprocess.run(
        ["git", "--git-dir", str(git_dir), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    marker = src / ".extracted-commit"
    if marker.exists() and marker.read_text() == commit:
        return commit
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    archive = subprocess.Popen(["git", "--git-dir", str(git_dir), "archive", commit], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(src)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise RuntimeError(f"git archive of {git_dir} failed")
    marker.write_text(commit)
    return commit


def go_env() -> dict[str, str]:
    """The environment of go commands: one package at a time (the machine is shared)."""
    flags = os.environ.get("GOFLAGS", "")
    return {**os.environ, "GOFLAGS": f"{flags} -p=1".strip()}


def build(src: Path, bin_dir: Path, race: bool) -> list[dict]:
    """One test binary per package of ./pulsar/... that has tests: [{package, dir, binary}]."""
    listing = subprocess.run(
        [
            "go",
            "list",
            "-f",
            "{{.ImportPath}}\t{{.Dir}}\t{{len .TestGoFiles}}\t{{len .XTestGoFiles}}",
            "./pulsar/...",
        ],
        cwd=src,
        env=go_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    bin_dir.mkdir(parents=True, exist_ok=True)
    packages = []
    for line in listing.splitlines():
        import_path, pkg_dir, tests, xtests = line.split("\t")
        if int(tests) + int(xtests) == 0:
            continue
        rel = os.path.relpath(pkg_dir, src)
        binary = bin_dir / (rel.replace("/", "_") + ".test")
        cmd = ["go", "test", "-c", "-o", str(binary), *(["-race"] if race else []), import_path]
        log(f"building {rel}")
        proc = subprocess.run(cmd, cwd=src, env=go_env(), capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"go test -c {import_path} failed:\n{proc.stdout}{proc.stderr}")
        packages.append({"package": rel, "dir": pkg_dir, "binary": str(binary)})
    return packages


def discover(packages: list[dict]) -> tuple[list[TestResult], dict[str, str]]:
    """Every top-level test the binaries contain (with its file), and the test functions of files a
    build tag left out ({package/file:Name: tag})."""
    tests: list[TestResult] = []
    excluded: dict[str, str] = {}
    for pkg in packages:
        listed = subprocess.run(
            [pkg["binary"], "-test.list", ".*"], cwd=pkg["dir"], capture_output=True, text=True, check=True
        ).stdout.split()
        file_of: dict[str, str] = {}
        tag_of: dict[str, str] = {}
        for path in sorted(Path(pkg["dir"]).glob("*_test.go")):
            text = path.read_text(errors="replace")
            tag = _BUILD_TAG.search(text)
            for name in _GO_TEST_FUNC.findall(text):
                file_of[name] = path.name
                if tag:
                    tag_of[name] = tag.group(1)
        for name in listed:
            if name.startswith("Test"):
                tests.append(TestResult(pkg["package"], name, file_of.get(name, "?")))
        for name, tag in tag_of.items():
            if name not in listed:
                excluded[f"{pkg['package']}/{file_of[name]}:{name}"] = f"build tag '{tag}'"
    # the unit-test packages first (fast, broker-free), then the pulsar package in file order
    tests.sort(key=lambda t: (t.package == "pulsar", t.package, t.file))
    return tests, excluded


# -- the broker (inside the network namespace) -----------------------------------------------------
def write_confs(src: Path, work: Path) -> tuple[Path, Path]:
    """Upstream's standalone.conf and client.conf with their /pulsar/... paths pointed at ``src``."""
    it = src / "integration-tests"

    def localise(text: str) -> str:
        return text.replace("/pulsar/certs", str(it / "certs")).replace("/pulsar/tokens", str(it / "tokens"))

    broker_conf = work / "standalone.conf"
    # upstream's Dockerfile passes the htpasswd file as -Dpulsar.auth.basic.conf; the same as this key
    broker_conf.write_text(
        localise((it / "conf" / "standalone.conf").read_text())
        + f"\nbasicAuthConf=file://{it / 'conf' / '.htpasswd'}\n"
    )
    client_conf = work / "client.conf"
    client_conf.write_text(localise((it / "conf" / "client.conf").read_text()))
    return broker_conf, client_conf


def wait_for_ports(ports: tuple[int, ...], proc: subprocess.Popen, timeout: float = 60.0) -> None:
    """Block until the broker accepts connections on every port (RuntimeError if it exits first)."""
    deadline = time.monotonic() + timeout
    for port in ports:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the broker exited with {proc.returncode} before listening on :{port}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"nothing listens on :{port} after {timeout} s") from None
                time.sleep(0.2)


class Broker:
    """`magnetar standalone` (or, with ``pulsar_lib``, Apache Pulsar standalone from the classpath that
    tools/pulsar-reference.sh assembles) with upstream's configuration, restartable on the same data."""

    def __init__(self, work: Path, broker_conf: Path, pulsar_lib: Path | None = None) -> None:
        self.work = work
        self.conf = broker_conf
        self.pulsar_lib = pulsar_lib
        self.proc: subprocess.Popen | None = None
        self.log_path = work / "broker.log"
        self.starts = 0

    def command(self) -> list[str]:
        """The command line of the broker."""
        data = self.work / "data"
        if self.pulsar_lib is None:
            cmd = [str(PYTHON), "-m", "magnetar.cli.main", "standalone", "--config", str(self.conf)]
            return [*cmd, "--data-dir", str(data), "--fsync", "never"]
        htpasswd = self.work / "src" / "integration-tests" / "conf" / ".htpasswd"
        cmd = ["java", "-Xms256m", "-Xmx1g", "-XX:MaxDirectMemorySize=1g", *jvm_opens()]
        cmd += ["-Dio.netty.tryReflectionSetAccessible=true", f"-Dpulsar.auth.basic.conf={htpasswd}"]
        cmd += [
            "-cp",
            f"{self.pulsar_lib}/*",
            "org.apache.pulsar.PulsarStandaloneStarter",
            "--config",
            str(self.conf),
        ]
        cmd += ["--no-functions-worker", "--no-stream-storage", "--metadata-dir", str(data / "metadata")]
        return [*cmd, "--bookkeeper-dir", str(data / "bookkeeper")]

    def start(self) -> None:
        """Start it and wait for its four ports."""
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(self.command(), cwd=self.work, stdout=out, stderr=subprocess.STDOUT)
        self.starts += 1
        wait_for_ports(SUITE_PORTS, self.proc, timeout=60 if self.pulsar_lib is None else 300)

    def alive(self) -> bool:
        """Whether the broker process still runs."""
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 20 s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def jvm_opens() -> list[str]:
    """The --add-opens flags bin/pulsar gives the JVM (shared with pulsar_reference.py)."""
    from pulsar_reference import JVM_OPENS

    return [arg for opens in JVM_OPENS for arg in ("--add-opens", f"{opens}=ALL-UNNAMED")]


def admin(client_conf: Path, args: list[str]) -> subprocess.CompletedProcess:
    """One `magnetar admin --client-conf` call (upstream's pulsar-admin with its client.conf)."""
    cmd = [str(PYTHON), "-m", "magnetar.cli.main", "admin", "--client-conf", str(client_conf), *args]
    return subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False)


def set_up(client_conf: Path, retry_first: float = 0.0) -> list[str]:
    """Upstream's set-up calls; returns notes on what did not go as it does on Pulsar. The first is
    retried for ``retry_first`` seconds (Pulsar's standalone creates ``public`` after it listens)."""
    notes = []
    for index, args in enumerate(SETUP_CALLS):
        proc = admin(client_conf, args)
        deadline = time.monotonic() + (retry_first if index == 0 else 0)
        while proc.returncode != 0 and time.monotonic() < deadline:
            time.sleep(3)
            proc = admin(client_conf, args)
        if proc.returncode == 0:
            continue
        error = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"]
        notes.append(f"NOTE set-up `magnetar admin {' '.join(args)}` failed: {error[0]}")
        if args[:3] == ["tenants", "update", "public"] and "not found" in error[0].lower():
            # Pulsar's standalone always creates public/default; do it so the rest of the suite can run
            for fallback in (["tenants", "create", "public", "-r", "anonymous"], ["namespaces", "create", "public/default"]):
                made = admin(client_conf, fallback)
                if made.returncode != 0:
                    reason = (made.stderr or made.stdout).strip().splitlines()[-1:] or ["?"]
                    raise RuntimeError(f"set-up `magnetar admin {' '.join(fallback)}` failed: {reason[0]}")
            notes.append("NOTE created public (-r anonymous) and public/default, as Pulsar's standalone does")
    return notes


# -- running the tests ---------------------------------------------------------------------------------
def run_one(test: TestResult, pkg: dict, timeout: int, log_dir: Path, env: dict[str, str] | None = None) -> TestResult:
    """Run one top-level test in its own process (``env``: its environment) and record its outcome and output."""
    cmd = [
        pkg["binary"],
        "-test.run",
        f"^{test.name}$",
        "-test.v",
        "-test.count=1",
        f"-test.timeout={timeout}s",
    ]
    try:
        proc = subprocess.run(
            cmd,
            cwd=pkg["dir"],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout + 30,
            check=False,
            env=env,
        )
        output, code = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        output = (
            (exc.stdout or "")
            if isinstance(exc.stdout, str)
            else (exc.stdout or b"").decode(errors="replace")
        )
        code = None
    out_path = log_dir / test.package.replace("/", "_") / f"{test.name}.log"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(output)
    return parse_go_output(test, output, code)


def run_all(args: argparse.Namespace, work: Path) -> None:
    """Inside the namespace: broker, set-up, every test; results go to WORK/results.json."""
    if args.netns:
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    src = work / "src"
    packages = json.loads((work / "packages.json").read_text())
    tests = [TestResult(**t) for t in json.loads((work / "tests.json").read_text())]
    if args.run:
        tests = [t for t in tests if re.search(args.run, t.name)]
    broker_conf, client_conf = write_confs(src, work)
    shutil.rmtree(work / "data", ignore_errors=True)
    broker = Broker(work, broker_conf, args.pulsar_lib)
    broker.start()
    notes = set_up(client_conf, retry_first=0 if args.pulsar_lib is None else 180)
    if args.pulsar_lib is not None:
        notes.insert(0, f"NOTE broker: Apache Pulsar standalone from {args.pulsar_lib}, not magnetar")
    by_package = {p["package"]: p for p in packages}
    deadline = time.monotonic() + args.budget
    env, docker = None, None
    if args.fake_docker and args.pulsar_lib is None:
        # the tests that start Pulsar with testcontainers-go get a magnetar "container" (tools/fake_docker.py)
        socket_path = work / "docker.sock"
        docker = serve_in_thread(socket_path, str(PYTHON), work / "containers")
        env = {**os.environ, **FAKE_DOCKER_ENV, "DOCKER_HOST": f"unix://{socket_path}"}
        notes.append(f"NOTE Docker: the fake Docker Engine of tools/fake_docker.py at {socket_path} (its "
                     "containers are magnetar brokers on the mapped ports)")
    try:
        for index, test in enumerate(tests, 1):
            if time.monotonic() > deadline:
                log(f"total budget of {args.budget} s spent: {len(tests) - index + 1} tests not run")
                break
            if not broker.alive():
                notes.append(
                    f"NOTE the broker had exited (code {broker.proc.returncode}) before {test.name}: restarted"
                )
                broker.start()
            run_one(test, by_package[test.package], args.per_test_timeout, work / "logs", env)
            log(
                f"[{index}/{len(tests)}] {test.status:7} {test.package}/{test.file}:{test.name} ({test.seconds:.1f}s)"
            )
            _save(work, tests, notes)
    finally:
        broker.stop()
        if docker is not None:
            docker.shutdown()
            docker.engine.close()
    _save(work, tests, notes)


def reclassify(result: TestResult, log_dir: Path) -> TestResult:
    """A failed result's reason and cause read again from its log (the rules may have changed)."""
    log_path = log_dir / result.package.replace("/", "_") / f"{result.name}.log"
    if result.status != "failed" or not log_path.exists():
        return result
    timed_out = result.reason.startswith("test timed out")
    return parse_go_output(result, log_path.read_text(errors="replace"), None if timed_out else 1)


def _save(work: Path, tests: list[TestResult], notes: list[str]) -> None:
    data = {"tests": [t.to_json() for t in tests], "notes": notes}
    tmp = work / "results.json.tmp"
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(work / "results.json")


def ports_in_use() -> list[int]:
    """Which of the suite's fixed ports something on this machine listens on."""
    busy = []
    for port in SUITE_PORTS:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                busy.append(port)
    return busy


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("git_dir", type=Path, help="git dir of an apache/pulsar-client-go clone")
    parser.add_argument(
        "--work", type=Path, default=Path("/tmp/magnetar-go-client-suite"), help="scratch dir"
    )
    parser.add_argument("--run", help="only the tests whose name matches this regex")
    parser.add_argument("--per-test-timeout", type=int, default=120, help="seconds per top-level test")
    parser.add_argument("--budget", type=int, default=3600, help="total seconds for running the tests")
    parser.add_argument("--race", action="store_true", help="build with -race, as upstream's CI does")
    parser.add_argument("--host-network", dest="netns", action="store_false", help="use the machine's ports")
    parser.add_argument(
        "--pulsar-lib",
        type=Path,
        help="run against Apache Pulsar instead: the lib dir tools/pulsar-reference.sh assembled (WORK/lib)",
    )
    parser.add_argument(
        "--compare-with",
        type=Path,
        help="WORK dir of a --pulsar-lib run: show each failure's outcome on Pulsar",
    )
    parser.add_argument(
        "--no-fake-docker",
        dest="fake_docker",
        action="store_false",
        help="run the testcontainers tests without tools/fake_docker.py (they fail: no Docker)",
    )
    parser.add_argument("--report-only", action="store_true", help="print the report of the last run")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    """Prepare, run (in a private network namespace unless --host-network), report."""
    args = parse_args(argv)
    work = args.work.resolve()
    if args.inner:
        run_all(args, work)
        return 0
    if not args.report_only:
        work.mkdir(parents=True, exist_ok=True)
        commit = extract(args.git_dir.resolve(), work / "src")
        log(f"pulsar-client-go {commit[:12]} extracted to {work / 'src'}")
        packages = build(work / "src", work / "bin", args.race)
        tests, excluded = discover(packages)
        (work / "packages.json").write_text(json.dumps(packages, indent=1))
        (work / "tests.json").write_text(json.dumps([t.to_json() for t in tests], indent=1))
        (work / "excluded.json").write_text(json.dumps(excluded, indent=1))
        log(
            f"{len(tests)} top-level tests in {len(packages)} packages ({len(excluded)} left out by build tags)"
        )
        inner = [str(PYTHON), str(Path(__file__).resolve()), *argv, "--inner", "--work", str(work)]
        if args.netns:
            inner = ["unshare", "--user", "--map-root-user", "--net", *inner]
        elif busy := ports_in_use():
            log(f"ports {busy} are in use on this machine: wait until they are free, or drop --host-network")
            return 2
        subprocess.run(inner, check=False)
    data = json.loads((work / "results.json").read_text())
    results = [reclassify(TestResult(**t), work / "logs") for t in data["tests"]]
    _save(work, results, data["notes"])
    excluded = json.loads((work / "excluded.json").read_text())
    on_pulsar = None
    if args.compare_with is not None:
        there = json.loads((args.compare_with / "results.json").read_text())["tests"]
        on_pulsar = {t["name"]: t["status"] for t in there if t["status"] != "not run"}
    notes = [f"logs: {work / 'logs'}, broker log: {work / 'broker.log'}", *data["notes"]]
    report = render_report(results, excluded, notes, on_pulsar)
    (work / "report.txt").write_text(report + "\n")
    print(report)
    failed = sum(1 for r in results if r.status == "failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
