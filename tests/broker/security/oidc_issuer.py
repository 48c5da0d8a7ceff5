"""A local OpenID Connect issuer for tests: discovery document, JWKS and an OAuth2 token endpoint.

Serves on 127.0.0.1 (plain HTTP) from a thread:

- ``GET /.well-known/openid-configuration``: ``issuer``, ``jwks_uri``, ``token_endpoint``;
- ``GET /jwks``: the public keys (RSA or EC), each with its ``kid`` and ``alg``;
- ``POST /token``: the client credentials grant (form-encoded, as the OAuth2 client plugins send it):
  a known ``client_id`` / ``client_secret`` gets a JWT signed with the current key, with ``sub`` the
  client id, ``aud`` the ``audience`` asked for (else the issuer's default), ``expires_in`` the
  token lifetime; anything else gets 401 ``invalid_client``.

Signing is PyJWT's, keys are pyca/cryptography's. ``requests`` counts what was asked, by path.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm


def new_key(algorithm: str) -> rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey:
    """A fresh private key for ``algorithm`` (RS* or ES256/ES384)."""
    if algorithm.startswith("ES"):
        return ec.generate_private_key(ec.SECP256R1() if algorithm == "ES256" else ec.SECP384R1())
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class Issuer:
    """An OpenID issuer on a free port; use as a context manager or call :meth:`start` / :meth:`stop`."""

    def __init__(self, audience: str = "magnetar-cluster", lifetime: int = 3600, algorithm: str = "RS256",
                 clients: dict[str, str] | None = None) -> None:
        self.audience = audience
        self.lifetime = lifetime
        self.algorithm = algorithm
        self.clients = clients if clients is not None else {"my-id": "my-secret"}
        self.requests: Counter[str] = Counter()
        self.keys: dict[str, Any] = {}
        self.kid = ""
        self.rotate()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        #: what the discovery document calls the issuer (tests change it to make a mismatch)
        self.advertised_issuer = self.url
        self._thread = threading.Thread(target=self._server.serve_forever, name="oidc-issuer", daemon=True)

    def __enter__(self) -> Issuer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Issuer:
        """Serve."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()

    def rotate(self) -> str:
        """Sign with a new key from now on (the old one stays in the JWKS); its key id."""
        self.kid = uuid.uuid4().hex[:12]
        self.keys[self.kid] = new_key(self.algorithm)
        return self.kid

    def token(self, sub: str = "my-id", *, issuer: str | None = None, audience: str | list[str] | None = None,
              lifetime: int | None = None, key: Any = None, kid: str | None = None, **claims: Any) -> str:
        """A JWT as the token endpoint signs them; keyword arguments override claims (None drops one)."""
        now = int(time.time())
        body: dict[str, Any] = {"iss": issuer or self.url, "sub": sub, "aud": audience or self.audience,
                                "iat": now, "nbf": now, "exp": now + (self.lifetime if lifetime is None else lifetime)}
        body.update(claims)
        body = {name: value for name, value in body.items() if value is not None}
        signing_kid = kid or self.kid
        return jwt.encode(body, key or self.keys[self.kid], algorithm=self.algorithm, headers={"kid": signing_kid})

    def jwks(self) -> dict[str, Any]:
        """The public keys as a JWKS."""
        make = ECAlgorithm.to_jwk if self.algorithm.startswith("ES") else RSAAlgorithm.to_jwk
        keys = []
        for kid, private in self.keys.items():
            jwk = make(private.public_key(), as_dict=True)
            keys.append({**jwk, "kid": kid, "alg": self.algorithm, "use": "sig"})
        return {"keys": keys}

    def _grant(self, form: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        def one(name: str) -> str | None:
            values = form.get(name)
            return values[0] if values else None

        client_id, secret = one("client_id"), one("client_secret")
        if one("grant_type") != "client_credentials" or client_id is None or self.clients.get(client_id) != secret:
            return 401, {"error": "invalid_client", "error_description": "Unauthorized"}
        token = self.token(client_id, audience=one("audience") or self.audience, scope=one("scope"))
        return 200, {"access_token": token, "token_type": "Bearer", "expires_in": self.lifetime}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
                return

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                issuer.requests[self.path] += 1
                if self.path == "/.well-known/openid-configuration":
                    self._answer(200, {"issuer": issuer.advertised_issuer, "jwks_uri": issuer.url + "/jwks",
                                       "token_endpoint": issuer.url + "/token",
                                       "grant_types_supported": ["client_credentials"]})
                elif self.path == "/jwks":
                    self._answer(200, issuer.jwks())
                else:
                    self._answer(404, {"error": "not found"})

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                issuer.requests[self.path] += 1
                length = int(self.headers.get("Content-Length") or 0)
                text = self.rfile.read(length).decode()
                if self.path != "/token":
                    self._answer(404, {"error": "not found"})
                    return
                if text.lstrip().startswith("{"):
                    form = {name: [str(value)] for name, value in json.loads(text).items()}
                else:
                    form = parse_qs(text)
                self._answer(*issuer._grant(form))

        return Handler
