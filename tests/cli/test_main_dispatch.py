"""The ``magnetar`` entry point loads only the sub-command it runs; a plain ``standalone`` command line
skips Typer, anything else goes through it with the usual help and errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from magnetar.cli.main import SUBCOMMANDS, app, build_app
from magnetar.cli.standalone import parse_flags

PROBE = """
import sys
sys.argv = ["magnetar", *sys.argv[1:]]
from magnetar.cli.main import main
try:
    main()
except SystemExit as exc:
    code = exc.code
loaded = [m for m in ("typer", "pydantic", "fastapi", "magnetar.cli.admin", "magnetar.client") if m in sys.modules]
print(code, ",".join(loaded))
"""


def probe(*args: str) -> tuple[str, str, str]:
    """Run the entry point with ``args`` in a fresh interpreter: (exit code, loaded heavy modules, stderr)."""
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=60)
    code, _, loaded = proc.stdout.strip().splitlines()[-1].partition(" ")
    return code, loaded, proc.stderr


def test_plain_standalone_flags_are_parsed_without_typer() -> None:
    assert parse_flags([]) == {}
    assert parse_flags(["--port", "6651", "--http-port=0", "--data-dir", "d", "--fsync", "never"]) == {
        "port": 6651, "http_port": 0, "data_dir": Path("d"), "fsync": "never",
    }
    assert parse_flags(["--tls-port", "6652", "--https-port", "8443"]) == {
        "broker_service_port_tls": 6652, "web_service_port_tls": 8443,
    }


def test_anything_unusual_is_left_to_typer() -> None:
    for args in (["--help"], ["--port", "abc"], ["--port"], ["--bogus", "1"], ["extra"], ["--bind", ""],
                 ["--data-dir", "--port"]):
        assert parse_flags(args) is None, args


def test_standalone_start_up_loads_no_cli_framework(tmp_path: Path) -> None:
    code, loaded, stderr = probe("standalone", "--config", str(tmp_path / "missing.toml"), "--data-dir", str(tmp_path))
    assert code == "1"
    assert "cannot read config file" in stderr
    assert loaded == ""


def test_standalone_errors_still_come_from_typer(tmp_path: Path) -> None:
    code, loaded, stderr = probe("standalone", "--port", "abc", "--data-dir", str(tmp_path))
    assert code == "2"
    assert "--port" in stderr
    assert "typer" in loaded.split(",")
    assert "magnetar.cli.admin" not in loaded.split(",")


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


def test_the_fast_path_knows_exactly_the_options_of_the_typer_command() -> None:
    import inspect

    import typer.models

    from magnetar.cli.standalone import OPTIONS
    from magnetar.cli.standalone_command import standalone

    declared = set()
    for parameter in inspect.signature(standalone, eval_str=True).parameters.values():
        for meta in getattr(parameter.annotation, "__metadata__", ()):
            if isinstance(meta, typer.models.OptionInfo):
                # typer.Option("--name", ...): the first argument is the name when it is a flag
                names = (meta.default, *meta.param_decls)
                declared.update(d for d in names if isinstance(d, str) and d.startswith("--"))
    assert declared == set(OPTIONS)
