"""AuthenticationOauth2: key files, the token request, caching and renewal, refusals."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest

from magnetar.client import Authentication, AuthenticationError, AuthenticationOauth2
from magnetar.client.api.auth import InvalidAuthParams
from magnetar.client.api.oauth2 import AccessToken
from tests.broker.security.oidc_issuer import Issuer


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with Issuer(audience="aud-1") as running:
        yield running


def params(issuer: Issuer, **extra: object) -> str:
    return json.dumps({"issuer_url": issuer.url, **extra})


def claims(token: bytes) -> dict[str, object]:
    return dict(jwt.decode(token, options={"verify_signature": False}))


def test_credentials_from_every_key_file_form(issuer: Issuer, tmp_path: Path) -> None:
    key_file = tmp_path / "credentials.json"
    key_file.write_text(json.dumps({"client_id": "my-id", "client_secret": "my-secret"}))
    encoded = base64.b64encode(key_file.read_bytes()).decode()
    for private_key in (str(key_file), f"file://{key_file}", f"file:{key_file}",
                        f"data:application/json;base64,{encoded}"):
        auth = AuthenticationOauth2(params(issuer, private_key=private_key, audience="aud-2", scope="s1 s2"))
        got = claims(auth.auth_data())
        assert (got["sub"], got["aud"], got["scope"], got["iss"]) == ("my-id", "aud-2", "s1 s2", issuer.url)
    direct = AuthenticationOauth2(params(issuer, client_id="my-id", client_secret="my-secret"))
    assert claims(direct.auth_data())["aud"] == "aud-1"
    assert direct.auth_method_name == "token"
    assert direct.http_headers()["Authorization"].startswith("Bearer ey")


@pytest.mark.parametrize("private_key", ["xxx:yyy", "data:", "data:application/x-pem", "data:application/json;xxx",
                                         "/no/such/file.json"])
def test_bad_private_keys_fail_when_used(issuer: Issuer, private_key: str) -> None:
    auth = AuthenticationOauth2(params(issuer, private_key=private_key))  # constructs, as the official one
    with pytest.raises(AuthenticationError, match="private_key"):
        auth.auth_data()
    assert issuer.requests["/token"] == 0


def test_refusals_are_authentication_errors(issuer: Issuer) -> None:
    with pytest.raises(AuthenticationError, match="HTTP 401"):
        AuthenticationOauth2(params(issuer, client_id="my-id", client_secret="wrong")).auth_data()
    with pytest.raises(AuthenticationError, match="client_id and client_secret"):
        AuthenticationOauth2(params(issuer)).auth_data()
    with pytest.raises(AuthenticationError, match="is not an http"):
        AuthenticationOauth2(json.dumps({"client_id": "a", "client_secret": "b"})).auth_data()
    with pytest.raises(AuthenticationError, match="well-known"):
        AuthenticationOauth2(params(issuer, client_id="my-id", client_secret="my-secret")
                             .replace(issuer.url, issuer.url + "/nowhere")).auth_data()
    with pytest.raises(InvalidAuthParams):
        AuthenticationOauth2("not json")


def test_the_token_is_cached_and_renewed_before_expiry(issuer: Issuer) -> None:
    auth = AuthenticationOauth2(params(issuer, client_id="my-id", client_secret="my-secret"))
    first = auth.auth_data()
    assert auth.auth_data() == first and auth.respond(b"PulsarAuthRefresh") == first
    assert issuer.requests["/token"] == 1 and issuer.requests["/.well-known/openid-configuration"] == 1
    issuer.lifetime = 3
    short = AuthenticationOauth2(params(issuer, client_id="my-id", client_secret="my-secret"))
    short.auth_data()
    asyncio.run(short.prepare())
    assert issuer.requests["/token"] == 2  # fresh
    time.sleep(3)  # past the token's exp claim (whole seconds): renewed
    asyncio.run(short.prepare())
    assert issuer.requests["/token"] == 3


def test_the_renewal_follows_the_tokens_exp_claim() -> None:
    """A JWT's exp (what the broker checks) counts, not only received time + expires_in."""
    now = time.time()
    header = base64.urlsafe_b64encode(b'{"alg":"none"}').decode().rstrip("=")
    body = base64.urlsafe_b64encode(json.dumps({"exp": int(now) + 100}).encode()).decode().rstrip("=")
    token = AccessToken(f"{header}.{body}.sig", now, 3600)
    assert token.expires_at == int(now) + 100
    assert not token.due(now) and token.due(int(now) + 91)  # a tenth of its 100 s lifetime left
    opaque = AccessToken("opaque-token", now, 50)
    assert opaque.expires_at == now + 50 and opaque.due(now + 45.5) and not opaque.due(now + 44)
    assert AccessToken("opaque-token", now, None).expires_at is None


def test_prepare_fetches_in_a_thread_once(issuer: Issuer) -> None:
    auth = AuthenticationOauth2(params(issuer, client_id="my-id", client_secret="my-secret"))

    async def twice() -> None:
        await auth.prepare()
        await auth.prepare()

    asyncio.run(twice())
    assert issuer.requests["/token"] == 1
    assert claims(auth.auth_data())["sub"] == "my-id" and issuer.requests["/token"] == 1


def test_the_generic_constructor_names_it_oauth2(issuer: Issuer) -> None:
    for name in ("oauth2", "org.apache.pulsar.client.impl.auth.oauth2.AuthenticationOAuth2"):
        auth = Authentication(name, params(issuer, client_id="my-id", client_secret="my-secret"))
        assert auth.auth_method_name == "token" and claims(auth.auth_data())["sub"] == "my-id"
