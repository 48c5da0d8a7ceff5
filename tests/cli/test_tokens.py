"""``magnetar tokens``: pulsar tokens' verbs and flags, keys and tokens that the broker accepts."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import typer
from click.testing import Result
from typer.testing import CliRunner

from magnetar.broker.security import AuthenticationService, SecuritySettings
from magnetar.cli.tokens import tokens_app

app = typer.Typer()
app.add_typer(tokens_app, name="tokens")


def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, ["tokens", *args], input=input, env=env)


def _token_service(**settings: Any) -> AuthenticationService:
    return AuthenticationService.from_settings(SecuritySettings(
        authentication_enabled=True, authentication_providers=("token",), **settings))


def test_secret_key_token_as_the_secure_suite_makes_them(tmp_path: Path) -> None:
    key_file = tmp_path / "secret.key"
    assert run("create-secret-key", "--output", str(key_file)).exit_code == 0
    assert len(key_file.read_bytes()) == 32
    result = run("create", "--subject", "token-principal", "--secret-key", f"file://{key_file}")
    assert result.exit_code == 0, result.output
    token = result.stdout.strip()
    service = _token_service(token_secret_key=f"file://{key_file}")
    assert service.authenticate("token", token.encode()).role == "token-principal"
    for form in (str(key_file), "data:;base64," + base64.b64encode(key_file.read_bytes()).decode()):
        again = run("create", "-s", "superUser", "-sk", form)
        assert again.exit_code == 0 and service.authenticate("token", again.stdout.strip().encode()).role == "superUser"


def test_secret_key_to_stdout_raw_or_base64(tmp_path: Path) -> None:
    raw = CliRunner().invoke(app, ["tokens", "create-secret-key"])
    assert raw.exit_code == 0 and len(raw.stdout_bytes) == 32
    encoded = run("create-secret-key", "--base64", "-a", "HS512")
    assert len(base64.b64decode(encoded.stdout_bytes)) == 64


@pytest.mark.parametrize("algorithm", ["RS256", "ES256"])
def test_key_pair_tokens_validate_with_the_public_key(tmp_path: Path, algorithm: str) -> None:
    private, public = tmp_path / "private.key", tmp_path / "public.key"
    result = run("create-key-pair", "--signature-algorithm", algorithm, "--output-private-key", str(private),
                 "--output-public-key", str(public))
    assert result.exit_code == 0, result.output
    token = run("create", "-s", "bob", "--private-key", f"file://{private}", "--expiry-time", "1d").stdout.strip()
    service = _token_service(token_public_key=f"file://{public}", token_public_alg=algorithm)
    state = service.authenticate("token", token.encode())
    assert state.role == "bob" and state.expires_at is not None
    validated = run("validate", token, "--public-key", str(public), "-a", algorithm)
    assert validated.exit_code == 0 and json.loads(validated.stdout)["sub"] == "bob"


def test_show_from_argument_file_stdin_and_environment(tmp_path: Path) -> None:
    key_file = tmp_path / "k"
    run("create-secret-key", "-o", str(key_file))
    token = run("create", "-s", "alice", "-sk", str(key_file)).stdout.strip()
    (tmp_path / "token.txt").write_text(token + "\n")
    expected = '{"alg":"HS256"}\n---\n{"sub":"alice"}\n'
    assert run("show", token).stdout == expected
    assert run("show", "-f", str(tmp_path / "token.txt")).stdout == expected
    assert run("show", "--stdin", input=token + "\n").stdout == expected
    assert run("show", env={"TOKEN": token}).stdout == expected
    assert run("validate", "-f", str(tmp_path / "token.txt"), "-sk", f"file://{key_file}").stdout == '{"sub":"alice"}\n'


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["create", "-s", "x"], "error: pass exactly one of --secret-key and --private-key"),
        (["create", "-s", "x", "-sk", "file:///nonexistent/key"], "error: --secret-key: cannot read /nonexistent/key"),
        (["create", "-s", "x", "-sk", "data:;base64,c2hvcnQ="], "error: --secret-key: the secret key has 40 bits"),
        (["create", "-s", "x", "-sk", "data:;base64," + base64.b64encode(b"k" * 32).decode(), "-e", "1x"],
         "error: invalid relative time '1x'"),
        (["create", "-s", "x", "-sk", "data:;base64," + base64.b64encode(b"k" * 32).decode(), "-a", "RS256"],
         "error: a secret key signs with HS256, HS384, HS512, not RS256"),
        (["create", "-s", "x", "-pk", "data:;base64,AAAA"], "error: --private-key: is not an unencrypted RSA or EC"),
        (["create-secret-key", "-a", "RS256"], "error: RS256 is not an HMAC algorithm"),
        (["create-key-pair", "-a", "HS256", "--output-private-key", "a", "--output-public-key", "b"],
         "error: HS256 is not a key pair algorithm"),
        (["show", "not-a-token"], "error: malformed JWT"),
        (["show"], "error: pass the token as an argument"),
        (["validate", "x.y.z"], "error: pass exactly one of --secret-key and --public-key"),
    ],
)
def test_errors_are_one_line_and_exit_1(args: list[str], message: str) -> None:
    result = run(*args, env={"TOKEN": ""})
    assert result.exit_code == 1
    assert result.stderr.startswith(message), result.stderr
    assert result.stderr.count("\n") == 1


def test_validate_refuses_expired_and_foreign_tokens(tmp_path: Path) -> None:
    key_file, other = tmp_path / "k", tmp_path / "other"
    run("create-secret-key", "-o", str(key_file))
    run("create-secret-key", "-o", str(other))
    token = run("create", "-s", "alice", "-sk", str(key_file)).stdout.strip()
    result = run("validate", token, "-sk", str(other))
    assert (result.exit_code, result.stderr) == (1, "error: JWT signature does not match the key\n")
    expired = run("create", "-s", "alice", "-sk", str(key_file), "-e", "0s").stdout.strip()
    result = run("validate", expired, "-sk", str(key_file))
    assert (result.exit_code, result.stderr) == (1, "error: JWT expired\n")
