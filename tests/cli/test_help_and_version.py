"""``magnetar --version`` / ``magnetar version``, and help that reads well in an 80-column terminal."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from magnetar import __version__


def magnetar(*args: str) -> subprocess.CompletedProcess:
    """Run the entry point as the console script does, in an 80-column terminal."""
    code = "import sys; sys.argv[0] = 'magnetar'; from magnetar.cli.main import main; main()"
    env = {**os.environ, "COLUMNS": "80", "TERMINAL_WIDTH": "80"}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize("args", [("--version",), ("version",)])
def test_version_prints_the_version(args: tuple[str, ...]) -> None:
    out = magnetar(*args)
    assert (out.returncode, out.stdout, out.stderr) == (0, f"magnetar {__version__}\n", "")


def test_root_help_lists_version() -> None:
    out = magnetar("--help")
    assert out.returncode == 0
    assert out.stdout.startswith("Usage: magnetar [OPTIONS] COMMAND [ARGS]...")
    assert "--version" in out.stdout and "\n  version " in out.stdout


HELP_PAGES = [
    ("standalone",), ("admin",), ("admin", "topics"), ("admin", "topics", "terminate"), ("admin", "tenants", "create"),
    ("consume",), ("produce",), ("perf", "produce"), ("tokens", "create"), ("sql",),
]


@pytest.mark.parametrize("page", HELP_PAGES, ids=["-".join(p) for p in HELP_PAGES])
def test_help_fits_80_columns_with_whole_names_and_no_bool_type(page: tuple[str, ...]) -> None:
    out = magnetar(*page, "--help")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [line for line in lines if len(line) > 80] == []
    assert "<bool>" not in out.stdout
    assert "…" not in out.stdout  # nothing cut


def test_standalone_help_shows_the_defaults() -> None:
    text = " ".join(magnetar("standalone", "--help").stdout.split())
    for option, default in (("--port", "6650"), ("--http-port", "8080"), ("--data-dir", "./data"), ("--bind", "127.0.0.1")):
        assert f"{option} <" in text and f"[default: {default}]" in text


def test_admin_help_names_every_option_whole() -> None:
    text = magnetar("admin", "--help").stdout
    for option in ("--tls-trust-cert-path", "--tls-enable-hostname-verification", "--admin-url", "--client-conf"):
        assert f"  {option}" in text or f"/ {option}" in text
    assert "http://localhost:8080)" in text


def test_terminate_help_says_what_it_does() -> None:
    text = " ".join(magnetar("admin", "topics", "terminate", "--help").stdout.split())
    assert "not supported" not in text
    assert "Terminate a topic: no more messages may be published" in text


def test_a_wrong_option_is_a_plain_error() -> None:
    out = magnetar("tokens", "--no-such-flag")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1] == "Error: No such option: --no-such-flag"
