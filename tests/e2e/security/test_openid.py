"""OpenID Connect end to end: a broker with Pulsar's OIDC provider, a local issuer, OAuth2 clients.

The broker runs the token provider (its superuser's admin calls) and the OpenID provider side by
side, as a Pulsar deployment moving to OIDC does; the issuer (tests/broker/security/oidc_issuer.py)
serves discovery, JWKS and the client credentials grant over HTTP. The official client's
``pulsar.AuthenticationOauth2`` and magnetar's get their tokens from the issuer and produce and
consume; tokens of another issuer, for another audience, expired, or a wrong client secret are
refused with AuthenticationError. A token that expires while connected is refreshed through
AUTH_CHALLENGE and the connection stays.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator

import pulsar
import pytest

import magnetar.client as mc
from magnetar.testing import Broker
from tests.broker.security.oidc_issuer import Issuer

AUDIENCE = "https://magnetar.example/cluster"
ROLES = ("my-id", "short-lived")


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with Issuer(audience=AUDIENCE, clients={"my-id": "my-secret", "short-lived": "s"}) as running:
        yield running


@pytest.fixture(scope="module")
def broker(issuer: Issuer) -> Iterator[Broker]:
    settings = {
        "authentication_providers": ["token", "openid"],
        "openid_allowed_token_issuers": [issuer.url],
        "openid_allowed_audiences": [AUDIENCE],
        "openid_require_issuers_use_https": False,
        "authentication_refresh_check_seconds": 1,
    }
    running = Broker(settings, token_auth=True).start()
    try:
        for role in ROLES:
            running.admin.grant_permission("public/default", role, ["produce", "consume"])
        yield running
    finally:
        running.stop()


def oauth2_params(issuer: Issuer, secret: str = "my-secret", client: str = "my-id") -> str:
    credentials = json.dumps({"client_id": client, "client_secret": secret}).encode()
    return json.dumps({"issuer_url": issuer.url, "audience": AUDIENCE,
                       "private_key": "data:application/json;base64," + base64.b64encode(credentials).decode()})


def topic() -> str:
    return f"persistent://public/default/oidc-{uuid.uuid4().hex[:10]}"


def roundtrip(client: pulsar.Client | mc.Client, count: int = 5) -> list[bytes]:
    name = topic()
    consumer = client.subscribe(name, "s")
    producer = client.create_producer(name)
    for i in range(count):
        producer.send(f"m{i}".encode())
    received = []
    for _ in range(count):
        message = consumer.receive(10_000)
        received.append(message.data())
        consumer.acknowledge(message)
    return received


EXPECTED = [f"m{i}".encode() for i in range(5)]


def official(broker: Broker, auth: pulsar.Authentication) -> pulsar.Client:
    return pulsar.Client(broker.service_url, authentication=auth, operation_timeout_seconds=10,
                         logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


def test_the_official_oauth2_client_gets_a_token_and_the_broker_accepts_it(broker: Broker, issuer: Issuer) -> None:
    before = issuer.requests["/token"]
    client = official(broker, pulsar.AuthenticationOauth2(oauth2_params(issuer)))
    try:
        assert roundtrip(client) == EXPECTED
    finally:
        client.close()
    assert issuer.requests["/token"] > before


def test_magnetar_oauth2_client_gets_a_token_and_the_broker_accepts_it(broker: Broker, issuer: Issuer) -> None:
    before = issuer.requests["/token"]
    client = mc.Client(broker.service_url, authentication=mc.AuthenticationOauth2(oauth2_params(issuer)),
                       operation_timeout_seconds=10)
    try:
        assert roundtrip(client) == EXPECTED
    finally:
        client.close()
    assert issuer.requests["/token"] == before + 1  # one token serves every connection while fresh


def test_magnetar_oauth2_over_http_lookup(broker: Broker, issuer: Issuer) -> None:
    client = mc.Client(broker.http_url, authentication=mc.AuthenticationOauth2(oauth2_params(issuer)),
                       operation_timeout_seconds=10)
    try:
        assert roundtrip(client, 5) == EXPECTED
    finally:
        client.close()


@pytest.mark.parametrize("face", ["official", "magnetar"])
def test_a_wrong_client_secret_is_an_authentication_error(broker: Broker, issuer: Issuer, face: str) -> None:
    params = oauth2_params(issuer, secret="wrong")
    if face == "official":
        client, error = official(broker, pulsar.AuthenticationOauth2(params)), pulsar.AuthenticationError
    else:
        client = mc.Client(broker.service_url, authentication=mc.AuthenticationOauth2(params),
                           operation_timeout_seconds=10)
        error = mc.AuthenticationError
    try:
        with pytest.raises(error):
            client.create_producer(topic())
    finally:
        client.close()


#: each refused token, and what the broker's refusal says
REFUSED = {
    "other issuer": ({"issuer": "https://login.elsewhere.example"},
                     "Issuer not allowed: https://login.elsewhere.example"),
    "other audience": ({"audience": "https://another.example/cluster"}, "JWT contains invalid claim"),
    "expired": ({"lifetime": -10}, "JWT expired"),
    "unknown key": ({"kid": "not-in-the-jwks"}, "key id 'not-in-the-jwks' is not in the JWKS"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_tokens_the_provider_refuses(broker: Broker, issuer: Issuer, case: str) -> None:
    """magnetar.client gets AuthenticationError with the broker's reason; the official client (C++)
    retries a refused CONNECT until its operation timeout, as it does against Pulsar."""
    claims, reason = REFUSED[case]
    token = issuer.token(**claims)  # type: ignore[arg-type]
    client = mc.Client(broker.service_url, authentication=mc.AuthenticationToken(token), operation_timeout_seconds=10)
    try:
        with pytest.raises(mc.AuthenticationError, match=reason):
            client.create_producer(topic())
    finally:
        client.close()
    refusals = broker.log().count(reason)
    official_client = pulsar.Client(broker.service_url, authentication=pulsar.AuthenticationToken(token),
                                    operation_timeout_seconds=2,
                                    logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        with pytest.raises((pulsar.AuthenticationError, pulsar.Timeout)):
            official_client.create_producer(topic())
    finally:
        official_client.close()
    assert broker.log().count(reason) > refusals


def test_a_valid_issuer_token_passed_as_a_plain_token_works(broker: Broker, issuer: Issuer) -> None:
    client = official(broker, pulsar.AuthenticationToken(issuer.token("my-id")))
    try:
        assert roundtrip(client) == EXPECTED
    finally:
        client.close()


@pytest.mark.parametrize("face", ["official", "magnetar"])
def test_an_expiring_token_is_refreshed_through_the_challenge(broker: Broker, issuer: Issuer, face: str) -> None:
    """Tokens that live 3 s: the broker challenges after expiry, the plugin fetches a new one.

    magnetar's plugin fetches a new token a tenth of the lifetime before expiry and answers the
    challenge with it. The official (C++) plugin counts the lifetime from when it received the
    token, later than the issuer's ``iat``, so it may answer with the token that just expired:
    the broker closes that connection (as Pulsar's does) and the client reconnects with a new
    token; either way nothing sent is lost.
    """
    issuer.lifetime = 3
    try:
        params = oauth2_params(issuer, secret="s", client="short-lived")
        before = issuer.requests["/token"]
        if face == "official":
            client: pulsar.Client | mc.Client = official(broker, pulsar.AuthenticationOauth2(params))
        else:
            client = mc.Client(broker.service_url, authentication=mc.AuthenticationOauth2(params),
                               operation_timeout_seconds=10)
        try:
            name = topic()
            consumer = client.subscribe(name, "s")
            producer = client.create_producer(name)
            producer.send(b"before")
            time.sleep(6)  # two expiries and challenges
            producer.send(b"after")
            got = [consumer.receive(10_000).data() for _ in range(2)]
            assert got == [b"before", b"after"]
        finally:
            client.close()
        assert issuer.requests["/token"] >= before + 2
        if face == "magnetar":  # it fetches before expiry, so the challenge's answer is accepted
            assert "refreshed the credentials of role 'short-lived'" in broker.log()
    finally:
        issuer.lifetime = 3600
