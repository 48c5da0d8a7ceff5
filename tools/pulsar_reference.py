"""Apache Pulsar as the reference: run tests/interop against Pulsar standalone and against magnetar,
side by side, and write the result table to docs/REFERENCE.md.

1. `mvn dependency:copy-dependencies` on tools/pulsar-reference/pom.xml puts pulsar-broker (4.x, with
   the dependency versions of Pulsar's own build) and its runtime dependencies in WORK/lib;
2. org.apache.pulsar.PulsarStandaloneStarter starts on that classpath with a minimal config, free
   ports, RocksDB metadata and one bookie, its data in WORK/pulsar (no functions worker, no stream
   storage);
3. pytest runs tests/interop against it (MAGNETAR_INTEROP_SERVICE_URL / _HTTP_URL), then Pulsar stops
   and pytest runs tests/interop again with its own magnetar broker;
4. every item gets a verdict: a test that fails on Pulsar is a wrong test; one that passes on Pulsar
   and fails on magnetar is a magnetar bug.

Heavy (two full interop runs and a JVM broker): not part of CI; `make reference`.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from reference_table import junit_outcomes, render_go_suite_section, render_reference

REPO_ROOT = Path(__file__).resolve().parent.parent
PYTHON = REPO_ROOT / ".venv" / "bin" / "python"
POM = Path(__file__).resolve().parent / "pulsar-reference" / "pom.xml"
PULSAR_MAIN = "org.apache.pulsar.PulsarStandaloneStarter"
#: what bin/pulsar passes to the JVM on Java 17
JVM_OPENS = [
    "java.base/java.io",
    "java.base/java.util.zip",
    "java.base/sun.net",
    "java.management/sun.management",
    "jdk.management/com.sun.management.internal",
    "java.base/jdk.internal.platform",
    "java.base/java.lang",
]
#: the broker settings tests/interop relies on (conftest.BROKER_ENV), in Pulsar's terms
PULSAR_SETTINGS = {
    "clusterName": "standalone",
    "bindAddress": "127.0.0.1",
    "advertisedAddress": "127.0.0.1",
    "managedLedgerDefaultEnsembleSize": "1",
    "managedLedgerDefaultWriteQuorum": "1",
    "managedLedgerDefaultAckQuorum": "1",
    "maxMessageSize": str(1024 * 1024),
    "delayedDeliveryTickTimeMillis": "200",
    "brokerDeleteInactiveTopicsEnabled": "false",
    "functionsWorkerEnabled": "false",
    "transactionCoordinatorEnabled": "false",
    # magnetar's defaults for what Pulsar leaves off: batch-index acknowledgements on the broker
    # side and deliverAt honoured to the millisecond (not up to one tick early)
    "acknowledgmentAtBatchIndexLevelEnabled": "true",
    "isDelayedDeliveryDeliverAtTimeStrict": "true",
}


def log(message: str) -> None:
    """A progress line on stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def assemble(work: Path) -> Path:
    """pulsar-broker and its runtime dependencies from Maven Central into WORK/lib (once)."""
    lib = work / "lib"
    done = lib / ".complete"
    if done.exists():
        return lib
    cmd = [
        "mvn", "-B", "-q", "-T", "1", "-f", str(POM),
        f"-Dreference.buildDir={work / 'target'}",
        "dependency:copy-dependencies", f"-DoutputDirectory={lib}", "-DincludeScope=runtime",
    ]  # fmt: skip
    log("assembling Apache Pulsar from Maven Central (first run downloads ~250 MB)")
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not any(lib.glob("pulsar-broker-*.jar")):
        raise RuntimeError(
            f"mvn copy-dependencies failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr}"
        )
    done.write_text("ok\n")
    return lib


class PulsarStandalone:
    """Apache Pulsar standalone in a child JVM, on free ports, with its data under ``home``."""

    def __init__(self, lib: Path, home: Path) -> None:
        self.lib = lib
        self.home = home
        self.port = free_port()
        self.http_port = free_port()
        self.bookie_port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def service_url(self) -> str:
        """pulsar:// URL of the broker."""
        return f"pulsar://127.0.0.1:{self.port}"

    @property
    def http_url(self) -> str:
        """http:// URL of its admin API."""
        return f"http://127.0.0.1:{self.http_port}"

    def version(self) -> str:
        """The pulsar-broker version on the classpath."""
        jar = next(self.lib.glob("pulsar-broker-[0-9]*.jar"))
        return jar.stem.removeprefix("pulsar-broker-")

    def _write_config(self) -> tuple[Path, Path]:
        self.home.mkdir(parents=True, exist_ok=True)
        settings = {
            **PULSAR_SETTINGS,
            "brokerServicePort": str(self.port),
            "webServicePort": str(self.http_port),
        }
        conf = self.home / "standalone.conf"
        conf.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
        log4j = self.home / "log4j2.xml"
        log4j.write_text(
            '<Configuration status="warn"><Appenders>'
            f'<File name="file" fileName="{self.home / "pulsar.log"}"><PatternLayout pattern="%d %p %c{{1}} %m%n"/></File>'
            '</Appenders><Loggers><Root level="info"><AppenderRef ref="file"/></Root></Loggers></Configuration>\n'
        )
        return conf, log4j

    def start(self, timeout: float = 300.0) -> None:
        """Start the JVM and wait until public/default exists (standalone creates it last)."""
        conf, log4j = self._write_config()
        data = self.home / "data"
        cmd = ["java", "-Xms256m", "-Xmx1g", "-XX:MaxDirectMemorySize=1g"]
        cmd += [arg for opens in JVM_OPENS for arg in ("--add-opens", f"{opens}=ALL-UNNAMED")]
        cmd += ["-Dio.netty.tryReflectionSetAccessible=true", f"-Dlog4j.configurationFile={log4j}"]
        cmd += ["-cp", f"{self.lib}/*", PULSAR_MAIN, "--config", str(conf), "--no-functions-worker"]
        cmd += ["--no-stream-storage", "--metadata-dir", str(data / "metadata")]
        cmd += ["--bookkeeper-dir", str(data / "bookkeeper"), "--bookkeeper-port", str(self.bookie_port)]
        with open(self.home / "jvm.out", "ab") as out:
            self.proc = subprocess.Popen(cmd, cwd=self.home, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"Pulsar exited with {self.proc.returncode}; see {self.home / 'pulsar.log'}"
                )
            try:
                with urllib.request.urlopen(f"{self.http_url}/admin/v2/namespaces/public", timeout=5) as resp:
                    if b"public/default" in resp.read():
                        return
            except OSError:
                pass
            time.sleep(2)
        self.stop()
        raise RuntimeError(
            f"Pulsar did not create public/default in {timeout} s; see {self.home / 'pulsar.log'}"
        )

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 60 s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run_interop(label: str, work: Path, extra_env: dict[str, str], pytest_args: list[str]) -> Path:
    """pytest tests/interop with a JUnit XML report; returns the report's path."""
    report = work / f"interop-{label}.xml"
    report.unlink(missing_ok=True)
    # --runxfail: the items of known_bugs.py run as plain tests, so both sides report real failures
    cmd = [str(PYTHON), "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rN", "--runxfail", "tests/interop"]
    cmd += [f"--junitxml={report}", f"--basetemp={work / ('pytest-' + label)}", *pytest_args]
    env = {**os.environ, **extra_env}
    for key in ("MAGNETAR_INTEROP_SERVICE_URL", "MAGNETAR_INTEROP_HTTP_URL"):
        if key not in extra_env:
            env.pop(key, None)
    log(f"running tests/interop against {label}")
    with open(work / f"interop-{label}.log", "wb") as out:
        subprocess.run(cmd, cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    return report


def git_head() -> str:
    """The magnetar commit (with '+dirty' when the tree has changes)."""
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=REPO_ROOT, capture_output=True, text=True)
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def run_go_suite(git_dir: Path, work: Path, lib: Path, skip: str | None) -> None:
    """apache/pulsar-client-go's own suite (tools/go_client_suite.py) against Pulsar, then magnetar."""
    script = Path(__file__).resolve().parent / "go_client_suite.py"
    for side in ("pulsar", "magnetar"):
        if skip == side:
            continue
        cmd = [str(PYTHON), str(script), str(git_dir), "--work", str(work / f"go-suite-{side}")]
        cmd += ["--pulsar-lib", str(lib)] if side == "pulsar" else []
        log(f"running pulsar-client-go's suite against {side}")
        with open(work / f"go-suite-{side}.log", "wb") as out:
            subprocess.run(cmd, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT, check=False)


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--work", type=Path, default=Path("/tmp/magnetar-pulsar-reference"), help="scratch dir"
    )
    parser.add_argument(
        "--output", type=Path, default=REPO_ROOT / "docs" / "REFERENCE.md", help="result table"
    )
    parser.add_argument(
        "--only", choices=("pulsar", "magnetar"), help="run one side (reuse the other's last run)"
    )
    parser.add_argument("--go-suite", type=Path, help="also run pulsar-client-go's suite from this git dir")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --), e.g. -k java")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    """Assemble, start Pulsar, run both sides, write the table."""
    args = parse_args(argv)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    lib = assemble(work)
    pulsar = PulsarStandalone(lib, work / "pulsar")
    version = pulsar.version()
    if args.only != "magnetar":
        log(f"starting Apache Pulsar {version} standalone ({pulsar.service_url}, {pulsar.http_url})")
        pulsar.start()
        try:
            env = {
                "MAGNETAR_INTEROP_SERVICE_URL": pulsar.service_url,
                "MAGNETAR_INTEROP_HTTP_URL": pulsar.http_url,
            }
            run_interop("pulsar", work, env, args.pytest_args)
        finally:
            pulsar.stop()
    if args.only != "pulsar":
        run_interop("magnetar", work, {}, args.pytest_args)
    if args.go_suite is not None:
        other = {"pulsar": "magnetar", "magnetar": "pulsar"}.get(args.only or "")
        run_go_suite(args.go_suite.resolve(), work, lib, other)
    on_pulsar = junit_outcomes(work / "interop-pulsar.xml")
    on_magnetar = junit_outcomes(work / "interop-magnetar.xml")
    command = "tools/pulsar-reference.sh" + (f" --go-suite {args.go_suite}" if args.go_suite else "")
    command += " -- " + " ".join(args.pytest_args) if args.pytest_args else ""
    text = render_reference(
        on_pulsar, on_magnetar, pulsar_version=version, magnetar=git_head(), command=command
    )
    if (work / "go-suite-magnetar" / "results.json").exists():
        text += render_go_suite_section(work / "go-suite-magnetar", work / "go-suite-pulsar")
    args.output.write_text(text)
    log(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
