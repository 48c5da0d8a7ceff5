"""Token authentication and TLS against the fake broker (it refuses credentials and challenges at will)."""

from __future__ import annotations

import ssl
import subprocess
from pathlib import Path

import pytest

from magnetar.client import AsyncClient, AuthenticationError, AuthenticationToken, InvalidConfiguration
from magnetar.client.api.auth import REFRESH_AUTH_DATA
from magnetar.protocol.enums import CommandType

from ..conftest import run
from ..fakebroker import FakeBroker


def test_token_is_sent_in_connect() -> None:
    async def main() -> None:
        async with FakeBroker() as fake:
            async with AsyncClient(fake.url, authentication=AuthenticationToken("secret-token")) as client:
                producer = await client.create_producer("t")
                await producer.send(b"x")
            (connect,) = fake.commands(CommandType.CONNECT)
            assert connect.auth_method_name == "token"
            assert connect.auth_data == b"secret-token"
            assert connect.feature_flags.supports_auth_refresh
            assert connect.client_version.startswith("magnetar-python-")

    run(main())


def test_no_authentication_sends_no_credentials() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            await client.create_producer("t")
            (connect,) = fake.commands(CommandType.CONNECT)
            assert not connect.HasField("auth_method_name")
            assert not connect.HasField("auth_data")

    run(main())


def test_token_supplier_is_called_per_connection_and_challenge() -> None:
    tokens = iter(["first", "second", "third"])
    calls = []

    def supplier() -> str:
        calls.append(1)
        return next(tokens)

    async def main() -> None:
        async with FakeBroker() as fake:
            fake.challenge = REFRESH_AUTH_DATA
            async with AsyncClient(fake.url, authentication=AuthenticationToken(supplier)) as client:
                await client.create_producer("t")
            (connect,) = fake.commands(CommandType.CONNECT)
            (response,) = fake.commands(CommandType.AUTH_RESPONSE)
            assert connect.auth_data == b"first"
            # the challenge is answered with a fresh token from the supplier
            assert response.response.auth_method_name == "token"
            assert response.response.auth_data == b"second"
            assert response.client_version.startswith("magnetar-python-")
            assert len(calls) == 2

    run(main())


def test_token_from_file(tmp_path: Path) -> None:
    path = tmp_path / "token.txt"
    path.write_text("file-token\n")

    async def main() -> None:
        async with FakeBroker() as fake:
            async with AsyncClient(fake.url, authentication=AuthenticationToken(f"file://{path}")) as client:
                await client.create_producer("t")
            assert fake.commands(CommandType.CONNECT)[0].auth_data == b"file-token"

    run(main())


def test_refused_credentials_raise_authentication_error() -> None:
    async def main() -> None:
        async with FakeBroker() as fake:
            fake.required_token = b"right"
            async with AsyncClient(fake.url, authentication=AuthenticationToken("wrong"), operation_timeout_seconds=5) as client:
                with pytest.raises(AuthenticationError) as info:
                    await client.create_producer("t")
                text = str(info.value)
                assert "could not create a producer" in text and "bad token" in text
            async with AsyncClient(fake.url, authentication=AuthenticationToken("right")) as client:
                await client.create_producer("t")

    run(main())


def test_failing_supplier_is_an_authentication_error() -> None:
    def supplier() -> str:
        raise OSError("vault unreachable")

    async def main() -> None:
        async with FakeBroker() as fake:
            async with AsyncClient(fake.url, authentication=AuthenticationToken(supplier), operation_timeout_seconds=5) as client:
                with pytest.raises(AuthenticationError, match="vault unreachable"):
                    await client.create_producer("t")

    run(main())


def test_foreign_authentication_object_is_refused() -> None:
    async def main() -> None:
        with pytest.raises(InvalidConfiguration, match="AuthenticationToken"):
            AsyncClient("pulsar://127.0.0.1:1", authentication=object())  # type: ignore[arg-type]

    run(main())


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (made with the openssl command)."""
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    try:
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
             "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
            check=True, capture_output=True, timeout=30,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"openssl cannot make a certificate here: {exc}")
    return cert, key


def test_pulsar_ssl_with_token(certificate: tuple[Path, Path]) -> None:
    cert, key = certificate
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)

    async def main() -> None:
        async with FakeBroker(ssl_context=server_ctx) as fake:
            assert fake.url.startswith("pulsar+ssl://")
            async with AsyncClient(
                fake.url, authentication=AuthenticationToken("tls-token"),
                tls_trust_certs_file_path=str(cert), tls_validate_hostname=True,
            ) as client:
                producer = await client.create_producer("t")
                await producer.send(b"over tls")
            assert fake.commands(CommandType.CONNECT)[0].auth_data == b"tls-token"
            # an untrusted certificate fails with a connection error that says why
            from magnetar.client import ConnectError

            async with AsyncClient(fake.url, connection_timeout_ms=3000, operation_timeout_seconds=3) as client:
                with pytest.raises(ConnectError, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
                    await client.create_producer("t")

    run(main())
