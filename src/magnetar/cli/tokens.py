"""``magnetar tokens``: the verbs and flags of ``pulsar tokens``.

``create-secret-key``, ``create-key-pair``, ``create``, ``show`` and ``validate``, with Pulsar's
flags (``-sk/--secret-key``, ``-pk/--private-key``, ``-e/--expiry-time``, ...). Keys are given as
``file:///path``, ``data:;base64,...``, a plain path, or base64 text, and are written the way
Pulsar writes them (raw secret bytes; DER key pairs), so keys and tokens work with either tool. A
failure prints one line ``error: ...`` and exits 1.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from magnetar.broker.security.errors import SecurityConfigError
from magnetar.broker.security.tokens import (
    HMAC_ALGORITHMS,
    PublicKey,
    SigningKey,
    TokenError,
    create_token,
    decode_token,
    generate_key_pair,
    generate_secret_key,
    load_private_key,
    load_public_key,
    load_secret_key,
    parse_relative_time,
    read_key_material,
    unverified_parts,
)

tokens_app = typer.Typer(
    name="tokens",
    help="Create and inspect JWT authentication tokens and their keys (as `pulsar tokens`).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

Algorithm = Annotated[
    str | None, typer.Option("-a", "--signature-algorithm", "--algorithm", help="JWT signature algorithm")
]
TokenArgument = Annotated[str | None, typer.Argument(help="The token (else --stdin, --token-file or $TOKEN)")]
StdinOption = Annotated[bool, typer.Option("-i", "--stdin", help="Read the token from standard input")]
TokenFileOption = Annotated[Path | None, typer.Option("-f", "--token-file", help="Read the token from a file")]


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def _write(path: Path, data: bytes) -> None:
    try:
        path.write_bytes(data)
    except OSError as exc:
        _fail(f"cannot write {path}: {exc.strerror or exc}")


@tokens_app.command("create-secret-key")
def create_secret_key(
    algorithm: Algorithm = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write the key to this file")] = None,
    base64_encoded: Annotated[bool, typer.Option("-b", "--base64", help="Encode the key in base64")] = False,
) -> None:
    """Create a secret key for HS256/384/512 tokens (raw bytes, or base64 with --base64)."""
    try:
        key = generate_secret_key(algorithm or "HS256")
    except TokenError as exc:
        _fail(str(exc))
    data = base64.b64encode(key) if base64_encoded else key
    if output is not None:
        _write(output, data)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


@tokens_app.command("create-key-pair")
def create_key_pair(
    output_private_key: Annotated[Path, typer.Option("--output-private-key", help="File for the private key")],
    output_public_key: Annotated[Path, typer.Option("--output-public-key", help="File for the public key")],
    algorithm: Algorithm = None,
) -> None:
    """Create a key pair for RS256 (default) or ES256 tokens: DER private (PKCS#8) and public keys."""
    try:
        private_der, public_der = generate_key_pair(algorithm or "RS256")
    except TokenError as exc:
        _fail(str(exc))
    _write(output_private_key, private_der)
    _write(output_public_key, public_der)


@tokens_app.command("create")
def create(
    subject: Annotated[str, typer.Option("-s", "--subject", help="The role (subject) the token stands for")],
    secret_key: Annotated[
        str | None, typer.Option("-sk", "--secret-key", help="Secret key: file:///path, data:;base64,..., or a path")
    ] = None,
    private_key: Annotated[
        str | None, typer.Option("-pk", "--private-key", help="Private key: file:///path, data:;base64,..., or a path")
    ] = None,
    expiry_time: Annotated[
        str | None, typer.Option("-e", "--expiry-time", help="Relative expiry (30s, 10m, 1h, 3d, 2w, 1y); default none")
    ] = None,
    algorithm: Algorithm = None,
) -> None:
    """Create a token signed with a secret key or a private key, and print it."""
    if (secret_key is None) == (private_key is None):
        _fail("pass exactly one of --secret-key and --private-key")
    try:
        expires_in = parse_relative_time(expiry_time) if expiry_time is not None else None
        if secret_key is not None:
            if algorithm is not None and algorithm not in HMAC_ALGORITHMS:
                _fail(f"a secret key signs with {', '.join(HMAC_ALGORITHMS)}, not {algorithm}")
            key: SigningKey = load_secret_key(read_key_material(secret_key, "--secret-key"), "--secret-key")
        else:
            data = read_key_material(private_key or "", "--private-key")
            key = load_private_key(data, "--private-key", algorithm)
        token = create_token(key, subject, expires_in, algorithm)
    except (SecurityConfigError, TokenError) as exc:
        _fail(str(exc))
    typer.echo(token)


def _read_token(token: str | None, stdin: bool, token_file: Path | None) -> str:
    if token is not None:
        return token.strip()
    if stdin:
        return sys.stdin.readline().strip()
    if token_file is not None:
        try:
            return token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            _fail(f"cannot read {token_file}: {getattr(exc, 'strerror', None) or exc}")
    if os.environ.get("TOKEN"):
        return os.environ["TOKEN"].strip()
    _fail("pass the token as an argument, or with --stdin, --token-file or the TOKEN environment variable")


@tokens_app.command("show")
def show(token: TokenArgument = None, stdin: StdinOption = False, token_file: TokenFileOption = None) -> None:
    """Print a token's header and claims (nothing is checked)."""
    text = _read_token(token, stdin, token_file)
    try:
        header, claims = unverified_parts(text)
    except TokenError as exc:
        _fail(str(exc))
    typer.echo(json.dumps(header, separators=(",", ":")))
    typer.echo("---")
    typer.echo(json.dumps(claims, separators=(",", ":")))


@tokens_app.command("validate")
def validate(
    token: TokenArgument = None,
    stdin: StdinOption = False,
    token_file: TokenFileOption = None,
    secret_key: Annotated[str | None, typer.Option("-sk", "--secret-key", help="Secret key to check with")] = None,
    public_key: Annotated[str | None, typer.Option("-pk", "--public-key", help="Public key to check with")] = None,
    algorithm: Algorithm = None,
) -> None:
    """Check a token's signature and expiry against a key, and print its claims."""
    if (secret_key is None) == (public_key is None):
        _fail("pass exactly one of --secret-key and --public-key")
    text = _read_token(token, stdin, token_file)
    try:
        if secret_key is not None:
            checker: bytes | PublicKey = load_secret_key(
                read_key_material(secret_key, "--secret-key"), "--secret-key"
            )
        else:
            checker = load_public_key(read_key_material(public_key or "", "--public-key"), "--public-key", algorithm)
        claims = decode_token(text, checker)
    except (SecurityConfigError, TokenError) as exc:
        _fail(str(exc))
    typer.echo(json.dumps(claims, separators=(",", ":")))
