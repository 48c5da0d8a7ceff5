"""The ``magnetar`` entry point loads only the sub-command it runs; ``standalone`` has one flag parser
(argparse, no Typer on a broker's start-up), which the whole Typer command hands its arguments to; the
root's help lists every sub-command without importing any."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from magnetar.cli.main import SUBCOMMANDS, SUMMARIES, app, build_app
from magnetar.cli.standalone import parse_flags, parser, plain_flags

PROBE = """
import sys
sys.argv = ["magnetar", *sys.argv[1:]]
from magnetar.cli.main import main
try:
    main()
except SystemExit as exc:
    code = exc.code
loaded = [m for m in ("typer", "argparse", "pydantic", "fastapi", "magnetar.cli.admin", "magnetar.client", "magnetar.broker",
                      "magnetar.cli.perf", "magnetar.cli.tokens", "magnetar.cli.messaging") if m in sys.modules]
print(code, ",".join(loaded))
"""


def probe(*args: str) -> tuple[str, str, str]:
    """Run the entry point with ``args`` in a fresh interpreter: (exit code, loaded heavy modules, stderr)."""
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=60)
    code, _, loaded = proc.stdout.strip().splitlines()[-1].partition(" ")
    return code, loaded, proc.stderr


def test_standalone_flags_are_parsed_by_one_parser() -> None:
    assert parse_flags([]) == {}
    assert parse_flags(["--port", "6651", "--http-port=0", "--data-dir", "d", "--fsync", "never"]) == {
        "port": 6651, "http_port": 0, "data_dir": Path("d"), "fsync": "never",
    }
    assert parse_flags(["--tls-port", "6652", "--https-port", "8443"]) == {
        "broker_service_port_tls": 6652, "web_service_port_tls": 8443,
    }


@pytest.mark.parametrize("args", [["--port", "abc"], ["--port"], ["--bogus", "1"], ["extra"], ["--data-dir", "--port"],
                                  ["--http"]])
def test_a_bad_standalone_flag_is_a_usage_error(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_flags(args)
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith("magnetar standalone: error: ")


def test_standalone_start_up_loads_no_cli_framework(tmp_path: Path) -> None:
    code, loaded, stderr = probe("standalone", "--config", str(tmp_path / "missing.toml"), "--data-dir", str(tmp_path))
    assert code == "1"
    assert "cannot read config file" in stderr
    assert loaded == "magnetar.broker"


@pytest.mark.parametrize("args", [
    [], ["--port", "6651", "--data-dir", "d", "--fsync", "never"], ["--port", "1", "--port", "2"],
    ["--bind", ""], ["--http-port", " 7 "], ["--config", "c.conf", "--log-level", "DEBUG", "--tls-port", "6652"],
])
def test_plain_flags_read_what_argparse_reads(args: list[str]) -> None:
    assert plain_flags(args) == vars(parser().parse_args(args))


@pytest.mark.parametrize("args", [
    ["--port"], ["--port", "abc"], ["--port", "-1"], ["--http-port=0"], ["--bogus", "1"], ["--data-dir", "--port"],
    ["--help", "x"], ["--", "x"], ["--por", "1"],
])
def test_any_other_command_line_is_argparses(args: list[str]) -> None:
    assert plain_flags(args) is None


def test_a_plain_standalone_command_line_loads_no_argparse(tmp_path: Path) -> None:
    code, loaded, stderr = probe("standalone", "--config", str(tmp_path / "missing.toml"), "--port", "0")
    assert (code, loaded) == ("1", "magnetar.broker")
    assert "cannot read config file" in stderr


def test_standalone_errors_come_from_its_parser_without_typer(tmp_path: Path) -> None:
    code, loaded, stderr = probe("standalone", "--port", "abc", "--data-dir", str(tmp_path))
    assert code == "2"
    assert stderr.splitlines()[-1] == "magnetar standalone: error: argument --port: invalid int value: 'abc'"
    assert loaded == "argparse,magnetar.broker"


def test_the_typer_command_hands_standalone_to_its_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    result = CliRunner().invoke(app, ["standalone", "--help"])
    assert result.exit_code == 0
    assert result.output == parser().format_help()
    refused = CliRunner().invoke(app, ["standalone", "--port", "x"])
    assert refused.exit_code == 2
    assert "argument --port: invalid int value: 'x'" in refused.output


def test_the_root_help_imports_no_sub_command_and_reads_as_the_whole_command() -> None:
    code, loaded, _ = probe("--help")
    assert (code, loaded) == ("0", "typer")
    whole = CliRunner().invoke(app, ["--help"])
    summaries = CliRunner().invoke(build_app(summaries_only=True), ["--help"])
    assert whole.exit_code == summaries.exit_code == 0
    assert summaries.output == whole.output
    assert set(SUMMARIES) == set(SUBCOMMANDS)
    typo = CliRunner().invoke(build_app(summaries_only=True), ["standalon"])
    assert typo.exit_code == 2 and "No such command 'standalon'" in typo.output


def test_a_sub_command_loads_only_itself() -> None:
    code, loaded, _ = probe("tokens", "--help")
    assert code == "0"
    assert "magnetar.cli.admin" not in loaded.split(",")


def test_the_whole_command_lists_every_sub_command() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for name in SUBCOMMANDS:
        assert name in result.output
    only = CliRunner().invoke(build_app(["repair"]), ["repair", "--help"])
    assert only.exit_code == 0 and "Usage" in only.output


def test_the_open_files_limit_is_raised_to_the_hard_limit() -> None:
    import resource

    from magnetar.cli.standalone import raise_open_files_limit

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        lowered = min(soft, 256)
        resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard))
        limit = raise_open_files_limit(cap=lowered + 100)
        expected = lowered + 100 if hard == resource.RLIM_INFINITY or hard >= lowered + 100 else hard
        assert limit == expected
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == expected
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
