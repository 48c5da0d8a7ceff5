"""The token, basic and TLS providers on their own."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import jwt
import pytest
from passlib.hash import apr_md5_crypt, des_crypt, sha512_crypt

from magnetar.broker.security import AuthenticationError, SecurityConfigError, SecuritySettings
from magnetar.broker.security.providers import (
    BasicProvider,
    TlsProvider,
    TokenProvider,
    common_name,
    parse_htpasswd,
)
from magnetar.broker.security.tokens import (
    create_token,
    generate_key_pair,
    generate_secret_key,
    load_private_key,
)
from tests.broker.security.conftest import Pki

#: the htpasswd line of the official client's test-conf (password 123456)
SUITE_HTPASSWD = "admin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.\n"
BCRYPT_2Y = "$2y$04$DZ8zI.8F78GZraPYoMaZNOJej58hrup2uX4rAhCbfvZf/AJ/jqIqC"  # password "pw"


def _refusal(call: Callable[..., object], *args: object) -> AuthenticationError:
    with pytest.raises(AuthenticationError) as info:
        call(*args)
    return info.value


def test_token_provider_with_a_secret_key_file(tmp_path: Path) -> None:
    key = generate_secret_key()
    (tmp_path / "secret.key").write_bytes(key)
    settings = SecuritySettings(token_secret_key=f"file://{tmp_path}/secret.key")
    provider = TokenProvider.from_settings(settings, clock=lambda: 1030)
    identity = provider.authenticate(create_token(key, "token-principal", 60, now=1000).encode(), None)
    assert identity.role == "token-principal" and identity.expires_at == 1060
    assert provider.authenticate_http("Bearer " + create_token(key, "alice"), None).role == "alice"
    with pytest.raises(AuthenticationError, match="JWT expired"):
        provider.validate(create_token(key, "alice", 60, now=1000), now=1061)


def test_token_provider_with_a_der_public_key_and_other_role_claim() -> None:
    private_der, public_der = generate_key_pair("RS256")
    settings = SecuritySettings(token_public_key="data:;base64," + base64.b64encode(public_der).decode(),
                                token_auth_claim="role")
    provider = TokenProvider.from_settings(settings)
    private = load_private_key(private_der, "k")
    token = jwt.encode({"sub": "ignored", "role": "reader"}, private, algorithm="RS256")
    assert provider.authenticate(token.encode(), None).role == "reader"
    no_role = create_token(private, "bob")
    assert "no role in claim 'role'" in _refusal(provider.authenticate, no_role.encode(), None).message


def test_token_refusals_say_why_without_the_token() -> None:
    key = generate_secret_key()
    provider = TokenProvider(key)
    expired = create_token(key, "alice", 1, now=0)
    error = _refusal(provider.authenticate, expired.encode(), None)
    assert (error.message, error.reason) == ("Failed to authentication token: JWT expired", "EXPIRED_TOKEN")
    assert expired not in error.message
    wrong = create_token(generate_secret_key(), "alice")
    assert _refusal(provider.authenticate, wrong.encode(), None).reason == "INVALID_TOKEN"
    assert _refusal(provider.authenticate, b"   ", None).message == "Blank token found"
    assert _refusal(provider.authenticate, b"\xff\xfe", None).message == "credentials are not UTF-8 text"
    assert _refusal(provider.authenticate_http, "Basic abc", None).reason == "INVALID_HEADER"


def test_token_audience() -> None:
    key = generate_secret_key()
    provider = TokenProvider(key, audience_claim="aud", audience="magnetar")
    def token(claims: dict[str, object]) -> bytes:
        return jwt.encode({"sub": "alice", **claims}, key, algorithm="HS256").encode()

    assert provider.authenticate(token({"aud": "magnetar"}), None).role == "alice"
    assert provider.authenticate(token({"aud": ["other", "magnetar"]}), None).role == "alice"
    assert _refusal(provider.authenticate, token({"aud": "other"}), None).message == (
        "Audiences in token: [other] not contains this broker: magnetar")
    assert _refusal(provider.authenticate, token({}), None).reason == "INVALID_AUDIENCES"
    assert _refusal(provider.authenticate, token({"aud": 5}), None).reason == "INVALID_AUDIENCES"


def test_htpasswd_with_apr1_crypt_and_bcrypt() -> None:
    text = "\n".join([
        SUITE_HTPASSWD.strip(),
        "# a comment",
        "",
        f"carol:{des_crypt.hash('secret')}",
        f"dave:{BCRYPT_2Y}",
        f"erin:{sha512_crypt.hash('pw2')}",
        f"frank:{apr_md5_crypt.hash('p:w')}",
    ])
    provider = BasicProvider(parse_htpasswd(text))
    assert provider.authenticate(b"admin:123456", None).role == "admin"
    assert provider.authenticate(b"carol:secret", None).role == "carol"
    assert provider.authenticate(b"dave:pw", None).role == "dave"
    assert provider.authenticate(b"erin:pw2", None).role == "erin"
    assert provider.authenticate(b"frank:p:w", None).role == "frank"
    header = "Basic " + base64.b64encode(b"admin:123456").decode()
    assert provider.authenticate_http(header, None).role == "admin"
    assert provider.authenticate_http(header.replace("Basic", "basic"), None).role == "admin"
    for data in (b"admin:wrong", b"nobody:123456", b"dave:" + b"x" * 200):
        assert _refusal(provider.authenticate, data, None).message == "Unknown user or invalid password"
    assert _refusal(provider.authenticate, b"no-colon", None).reason == "INVALID_AUTH_DATA"
    assert _refusal(provider.authenticate_http, "Basic !!!", None).reason == "INVALID_HEADER"
    assert _refusal(provider.authenticate_http, "Bearer x", None).reason == "INVALID_HEADER"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("no colon here", "basicAuthConf: line 1 is not user:password-hash"),
        ("user:", "basicAuthConf: line 1 is not user:password-hash"),
        ("user:$apr1$garbage", "basicAuthConf: line 1: the password of user 'user' is not"),
        ("user:$2y$04$short", "basicAuthConf: line 1: the password of user 'user' is not"),
        ("user:plaintext-password", "basicAuthConf: line 1: the password of user 'user' is not"),
    ],
)
def test_garbage_htpasswd_lines_are_refused_naming_the_line(line: str, message: str) -> None:
    with pytest.raises(SecurityConfigError) as info:
        parse_htpasswd(line)
    assert str(info.value).startswith(message)
    assert "plaintext-password" not in str(info.value)


def test_basic_provider_reads_basic_auth_conf(tmp_path: Path) -> None:
    path = tmp_path / ".htpasswd"
    path.write_text(SUITE_HTPASSWD)
    for value in (str(path), f"file://{path}", "data:;base64," + base64.b64encode(SUITE_HTPASSWD.encode()).decode()):
        provider = BasicProvider.from_settings(SecuritySettings(basic_auth_conf=value))
        assert provider.authenticate(b"admin:123456", None).role == "admin"


def test_tls_provider_uses_the_certificate_common_name(pki: Pki) -> None:
    provider = TlsProvider()
    assert provider.authenticate(b"", pki.client_cert_der).role == "admin"
    as_dict = {"subject": ((("organizationName", "x"),), (("commonName", "client-1"),))}
    assert provider.authenticate_http(None, as_dict).role == "client-1"
    assert common_name(b"not a certificate") is None
    assert _refusal(provider.authenticate, b"", None).message == "Failed to get TLS certificates from client"
    assert _refusal(provider.authenticate, b"", {"subject": ()}).reason == "INVALID_CN"
