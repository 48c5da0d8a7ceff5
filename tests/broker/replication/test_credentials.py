"""The broker client's and clusters' authentication plugins, as CONNECT and HTTP carry them."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from magnetar.broker.replication.credentials import CredentialsError, client_credentials


def test_no_plugin_no_credentials() -> None:
    assert client_credentials("", "").empty and client_credentials(None, None).empty


@pytest.mark.parametrize("params", ["token:abc", "abc", '{"token": "abc"}'])
def test_token_forms(params: str) -> None:
    creds = client_credentials("org.apache.pulsar.client.impl.auth.AuthenticationToken", params)
    assert (creds.method, creds.data, creds.headers) == ("token", b"abc", {"Authorization": "Bearer abc"})


def test_token_file(tmp_path: Path) -> None:
    (tmp_path / "t").write_text("from-file\n")
    assert client_credentials("token", f"file://{tmp_path / 't'}").data == b"from-file"
    with pytest.raises(CredentialsError, match="cannot read token file"):
        client_credentials("token", f"file://{tmp_path / 'missing'}")


def test_basic_and_tls() -> None:
    creds = client_credentials("org.apache.pulsar.client.impl.auth.AuthenticationBasic",
                               '{"userId": "admin", "password": "123456"}')
    assert (creds.method, creds.data) == ("basic", b"admin:123456")
    assert creds.headers == {"Authorization": "Basic " + base64.b64encode(b"admin:123456").decode()}
    tls = client_credentials("tls", "tlsCertFile:/c.pem,tlsKeyFile:/k.pem")
    assert (tls.method, tls.certificate) == ("tls", ("/c.pem", "/k.pem"))
    with pytest.raises(CredentialsError, match="unknown authentication plugin"):
        client_credentials("kerberos", "")
