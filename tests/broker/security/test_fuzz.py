"""Hostile input to the authentication paths: only AuthenticationError or a role, always fast.

Random and mutated auth data for every method (and unknown ones), huge tokens, random HTTP
headers and client "certificates", and garbage htpasswd files.
"""

from __future__ import annotations

import base64
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magnetar.broker.security import (
    AuthenticationError,
    AuthenticationService,
    SecurityConfigError,
    SecuritySettings,
)
from magnetar.broker.security.providers import MAX_CREDENTIAL_BYTES, parse_htpasswd
from magnetar.broker.security.tokens import create_token, generate_secret_key
from tests.broker.security.test_providers import BCRYPT_2Y, SUITE_HTPASSWD

KEY = generate_secret_key()
VALID_TOKEN = create_token(KEY, "alice")
FUZZ = settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> AuthenticationService:
    directory = tmp_path_factory.mktemp("fuzz")
    (directory / "secret.key").write_bytes(KEY)
    (directory / ".htpasswd").write_text(SUITE_HTPASSWD + f"bob:{BCRYPT_2Y}\n")
    return AuthenticationService.from_settings(SecuritySettings(
        authentication_enabled=True,
        authentication_providers=("token", "basic", "tls"),
        token_secret_key=f"file://{directory}/secret.key",
        basic_auth_conf=str(directory / ".htpasswd"),
    ))


def _mutations() -> st.SearchStrategy[bytes]:
    """The valid token and credentials with bytes flipped, cut, or spliced."""
    seeds = st.sampled_from([VALID_TOKEN.encode(), b"admin:123456", b"bob:pw"])

    @st.composite
    def mutate(draw: st.DrawFn) -> bytes:
        data = bytearray(draw(seeds))
        for _ in range(draw(st.integers(1, 4))):
            position = draw(st.integers(0, len(data)))
            action = draw(st.sampled_from(["flip", "cut", "insert"]))
            if action == "flip" and position < len(data):
                data[position] ^= draw(st.integers(1, 255))
            elif action == "cut":
                del data[position:position + draw(st.integers(1, 20))]
            else:
                data[position:position] = draw(st.binary(min_size=1, max_size=20))
        return bytes(data)

    return mutate()


METHODS = st.sampled_from(["token", "basic", "tls", "none", "", "unknown"]) | st.text(max_size=40)
DATA = st.binary(max_size=2048) | _mutations() | st.text(max_size=500).map(str.encode)


@FUZZ
@given(method=METHODS, data=DATA, certificate=st.none() | st.binary(max_size=300))
def test_binary_auth_refuses_cleanly(service: AuthenticationService, method: str, data: bytes,
                                     certificate: bytes | None) -> None:
    started = time.monotonic()
    try:
        state = service.authenticate(method, data, certificate)
    except AuthenticationError as exc:
        assert exc.message and "\n" not in exc.message
        assert VALID_TOKEN not in exc.message and "123456" not in exc.message
    else:
        assert state.role in ("alice", "admin", "bob")
    assert time.monotonic() - started < 1.0


@FUZZ
@given(header=st.none() | st.text(max_size=600) | st.builds(
    lambda scheme, blob: f"{scheme} {base64.b64encode(blob).decode()}",
    st.sampled_from(["Basic", "Bearer", "basic"]), st.binary(max_size=200)),
    method=st.none() | METHODS)
def test_http_auth_refuses_cleanly(service: AuthenticationService, header: str | None, method: str | None) -> None:
    try:
        role = service.authenticate_http(header, None, method)
    except AuthenticationError as exc:
        assert exc.message
    else:
        assert role in ("alice", "admin", "bob")


@pytest.mark.parametrize("size", [MAX_CREDENTIAL_BYTES + 1, 16 * 1024 * 1024])
def test_huge_credentials_are_refused_unread_and_fast(service: AuthenticationService, size: int) -> None:
    huge_token = VALID_TOKEN + "A" * size
    started = time.monotonic()
    for method, data in (("token", huge_token.encode()), ("basic", b"admin:" + b"x" * size)):
        with pytest.raises(AuthenticationError, match="credentials are longer than"):
            service.authenticate(method, data)
    with pytest.raises(AuthenticationError):
        service.authenticate_http("Bearer " + huge_token)
    assert time.monotonic() - started < 1.0


def test_a_token_just_under_the_limit_is_checked_quickly(service: AuthenticationService) -> None:
    padded = create_token(KEY, "alice") + "." + "A" * (MAX_CREDENTIAL_BYTES - 200)
    started = time.monotonic()
    with pytest.raises(AuthenticationError, match="Failed to authentication token"):
        service.authenticate("token", padded.encode())
    assert time.monotonic() - started < 1.0


@FUZZ
@given(text=st.text(max_size=400) | st.lists(st.text(max_size=60), max_size=8).map("\n".join))
def test_garbage_htpasswd_is_a_config_error(text: str) -> None:
    try:
        users = parse_htpasswd(text)
    except SecurityConfigError as exc:
        assert exc.key == "basicAuthConf"
    else:
        assert all(user and hashed for user, hashed in users.items())


def test_garbage_htpasswd_file_stops_the_provider(tmp_path: Path) -> None:
    (tmp_path / "bad").write_bytes(b"\xff\xfe garbage")
    with pytest.raises(SecurityConfigError, match="^basicAuthConf: the htpasswd file is not UTF-8 text$"):
        AuthenticationService.from_settings(SecuritySettings(
            authentication_enabled=True, authentication_providers=("basic",), basic_auth_conf=str(tmp_path / "bad")))
