"""The package as a user gets it: the sdist and the wheel built with ``python -m build``, the wheel
installed with its dependencies (from the registry) into a fresh venv outside the checkout, and the
broker started from there: version, console files, Swagger UI and OpenAPI page, and a round trip with
the official client."""

from __future__ import annotations

import email
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pulsar
import pytest

from magnetar import __version__
from magnetar.testing import free_port, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "src" / "magnetar" / "admin" / "console" / "static"


def _clean_env() -> dict[str, str]:
    """The environment without anything that would let the checkout's sources in."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}


def _run(cmd: list[str], cwd: Path, timeout: float = 600) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=_clean_env(), capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as reply:
        return reply.read()


def _build(tmp: Path) -> tuple[Path, Path]:
    """(sdist, wheel), the wheel built from the sdist, from a copy of the checkout's package files."""
    source = tmp / "source"
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp / "dist"), str(source)], tmp)
    sdist, = (tmp / "dist").glob("magnetar-*.tar.gz")
    wheel, = (tmp / "dist").glob("magnetar-*.whl")
    return sdist, wheel


@pytest.mark.timeout(900)  # pip installs the dependencies from the registry: minutes on a busy machine
def test_the_wheel_installs_and_runs_a_broker_outside_the_checkout(tmp_path: Path) -> None:
    sdist, wheel = _build(tmp_path)
    assert sdist.name == f"magnetar-{__version__}.tar.gz" and wheel.name == f"magnetar-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        metadata = email.message_from_bytes(archive.read(f"magnetar-{__version__}.dist-info/METADATA"))
    assert metadata["Version"] == __version__ and metadata["License-Expression"] == "Apache-2.0"
    assert metadata["Description-Content-Type"] == "text/markdown" and "## `magnetar standalone`" in metadata.get_payload()
    assert metadata.get_all("Classifier") and metadata.get_all("Project-URL")

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], tmp_path)
    where = _run([str(venv / "bin" / "python"), "-c", "import magnetar; print(magnetar.__file__)"], tmp_path)
    assert where.startswith(str(venv)), where
    assert _run([str(venv / "bin" / "magnetar"), "--version"], tmp_path) == f"magnetar {__version__}\n"

    port, http_port = free_port(), free_port()
    log = (tmp_path / "broker.log").open("wb")
    broker = subprocess.Popen(
        [str(venv / "bin" / "magnetar"), "standalone", "--data-dir", str(tmp_path / "data"),
         "--port", str(port), "--http-port", str(http_port), "--fsync", "never"],
        cwd=tmp_path, env=_clean_env(), stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port, 30)
        wait_for_port(http_port, 30)
        base = f"http://127.0.0.1:{http_port}"
        assert b'type="module"' in _get(f"{base}/console")
        for name in ("js/app.js", "console.css", "vendor/uPlot.esm.js", "vendor/swagger-ui/swagger-ui-bundle.js"):
            assert _get(f"{base}/console/static/{name}") == (STATIC / name).read_bytes(), name
        assert b"/console/static/vendor/swagger-ui/swagger-ui.css" in _get(f"{base}/docs")
        assert b'"title":"magnetar"' in _get(f"{base}/openapi.json")

        client = pulsar.Client(f"pulsar://127.0.0.1:{port}")
        try:
            consumer = client.subscribe("wheel-round-trip", "sub")
            producer = client.create_producer("wheel-round-trip")
            for i in range(3):
                producer.send(f"m{i}".encode(), properties={"i": str(i)})
            got = []
            for _ in range(3):
                msg = consumer.receive(10_000)
                got.append((msg.data(), msg.properties()))
                consumer.acknowledge(msg)
            assert got == [(f"m{i}".encode(), {"i": str(i)}) for i in range(3)]
        finally:
            client.close()
    finally:
        broker.send_signal(signal.SIGTERM)
        code = broker.wait(30)
        log.close()
    assert code == 0, (tmp_path / "broker.log").read_text(errors="replace")[-3000:]
