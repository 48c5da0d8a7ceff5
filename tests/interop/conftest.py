"""Fixtures of the interop tests: one broker, and each suite run once per session in this order.

1. the Python writer fills the ``xlang-RUN-py-*`` topics (official ``pulsar`` client);
2. the Go binary's ``TestXlangWrite`` fills ``xlang-RUN-go-*``;
3. Maven runs the whole Java suite (its cross-language tests read py and go, write java);
4. the Go binary runs every other Go test (they read py and java);
5. the Python readers (test_cross_language.py) read java and go.
Each Java and Go test then becomes one pytest item (test_java.py, test_go.py).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from magnetar.testing import BrokerProcess

from . import harness
from .magnetar_side import write_key_files, write_magnetar_side
from .xlang import write_python_side

#: broker settings the suites rely on: ChunkingTest expects a 1 MiB max message size
BROKER_ENV = {
    "MAGNETAR_MAX_MESSAGE_SIZE": str(1024 * 1024),
    "MAGNETAR_FSYNC": "never",
    "MAGNETAR_DELAYED_DELIVERY_TICK_SECONDS": "0.2",
}

_RUNS: dict[str, harness.SuiteRun] = {}


@dataclass(frozen=True)
class ExternalBroker:
    """A broker started elsewhere (e.g. Apache Pulsar by tools/pulsar-reference.sh), by its URLs."""

    service_url: str
    http_url: str


@pytest.fixture(scope="session")
def interop_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess | ExternalBroker]:
    """The broker every interop suite talks to: a magnetar started here, or the one whose URLs
    MAGNETAR_INTEROP_SERVICE_URL and MAGNETAR_INTEROP_HTTP_URL give."""
    external = os.environ.get("MAGNETAR_INTEROP_SERVICE_URL")
    if external:
        yield ExternalBroker(external, os.environ["MAGNETAR_INTEROP_HTTP_URL"])
        return
    data_dir = tmp_path_factory.mktemp("interop-broker") / "data"
    proc = BrokerProcess(data_dir, env=BROKER_ENV).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="session")
def no_txn_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess | None]:
    """A magnetar with transactions disabled (transactionCoordinatorEnabled=false), for the test of
    the refusal; None against an external broker."""
    if os.environ.get("MAGNETAR_INTEROP_SERVICE_URL"):
        yield None
        return
    env = {**BROKER_ENV, "MAGNETAR_TRANSACTION_COORDINATOR_ENABLED": "false"}
    proc = BrokerProcess(tmp_path_factory.mktemp("interop-no-txn") / "data", env=env).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="session")
def interop_env(
    interop_broker: BrokerProcess | ExternalBroker, no_txn_broker: BrokerProcess | None,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, str]:
    """The variables the Java and Go suites read (with the encryption key files they share)."""
    keys = tmp_path_factory.mktemp("interop-keys")
    write_key_files(keys)
    env = {
        "MAGNETAR_SERVICE_URL": interop_broker.service_url,
        "MAGNETAR_HTTP_URL": interop_broker.http_url,
        "MAGNETAR_INTEROP_RUN": uuid.uuid4().hex[:10],
        "MAGNETAR_INTEROP_KEYS": str(keys),
    }
    if no_txn_broker is not None:
        env["MAGNETAR_NO_TXN_SERVICE_URL"] = no_txn_broker.service_url
    return env


@pytest.fixture(scope="session")
def python_written(interop_env: dict[str, str]) -> str:
    """The run id, once the Python side of the cross-language topics is written."""
    write_python_side(interop_env["MAGNETAR_SERVICE_URL"], interop_env["MAGNETAR_INTEROP_RUN"])
    write_magnetar_side(interop_env["MAGNETAR_SERVICE_URL"], interop_env["MAGNETAR_INTEROP_RUN"],
                        interop_env["MAGNETAR_INTEROP_KEYS"])
    return interop_env["MAGNETAR_INTEROP_RUN"]


@pytest.fixture(scope="session")
def go_binary(tmp_path_factory: pytest.TempPathFactory) -> Path | str:
    """The compiled Go test binary, or why it could not be built."""
    try:
        return harness.build_go(tmp_path_factory.mktemp("interop-go"))
    except (harness.ToolMissing, RuntimeError) as exc:
        return str(exc)


def _go_run(
    binary: Path | str, env: dict[str, str], build_dir: Path, label: str, **kwargs: str
) -> harness.SuiteRun:
    if isinstance(binary, str):
        return harness.SuiteRun(error=binary)
    started = time.monotonic()
    run = harness.run_go(binary, env, build_dir, label=label, **kwargs)
    run.seconds = time.monotonic() - started
    return run


@pytest.fixture(scope="session")
def go_writer_run(
    go_binary: Path | str, interop_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> harness.SuiteRun:
    """The Go test that writes the Go side of the cross-language topics (before Maven)."""
    build_dir = tmp_path_factory.mktemp("interop-go-writer")
    return _go_run(go_binary, interop_env, build_dir, "go-writer", only=f"^{harness.GO_WRITER_TEST}$")


@pytest.fixture(scope="session")
def java_run(
    interop_env: dict[str, str],
    python_written: str,
    go_writer_run: harness.SuiteRun,
    tmp_path_factory: pytest.TempPathFactory,
) -> harness.SuiteRun:
    """The whole Java suite, run once."""
    started = time.monotonic()
    try:
        run = harness.run_maven(interop_env, tmp_path_factory.mktemp("interop-java"))
    except harness.ToolMissing as exc:
        run = harness.SuiteRun(error=str(exc))
    run.seconds = time.monotonic() - started
    _RUNS["java"] = run
    return run


@pytest.fixture(scope="session")
def go_run(
    go_binary: Path | str,
    go_writer_run: harness.SuiteRun,
    java_run: harness.SuiteRun,
    interop_env: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> harness.SuiteRun:
    """Every Go test but the writer (after Maven, so the Java topics exist), merged with the writer's result."""
    build_dir = tmp_path_factory.mktemp("interop-go-run")
    run = _go_run(go_binary, interop_env, build_dir, "go", skip=f"^{harness.GO_WRITER_TEST}$")
    run.outcomes.update(go_writer_run.outcomes)
    run.seconds += go_writer_run.seconds
    _RUNS["go"] = run
    return run


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print passed/total of each interop suite that ran."""
    for language, run in sorted(_RUNS.items()):
        passed, total = run.counts()
        failed = sorted(name for name, o in run.outcomes.items() if o.status != "passed")
        line = f"interop {language}: {passed} passed / {total} total in {run.seconds:.0f} s"
        if run.error:
            line += f" (suite error: {run.error.splitlines()[0]})"
        terminalreporter.write_line(line)
        for name in failed:
            terminalreporter.write_line(f"    not passed: {name}")
