"""Authentication plugins as the official client makes them: by plugin name and parameter string,
the credentials of HTTP lookups, and the exceptions of bad arguments."""

from __future__ import annotations

import base64

import pytest

from magnetar.client import (
    Authentication,
    AuthenticationBasic,
    AuthenticationError,
    AuthenticationTLS,
    AuthenticationToken,
    InvalidConfiguration,
)
from magnetar.client.api.auth import UnknownAuthentication


@pytest.mark.parametrize("name", ["tls", "TLS", "org.apache.pulsar.client.impl.auth.AuthenticationTls"])
def test_tls_plugin_by_name_presents_the_certificate(name: str) -> None:
    auth = Authentication(name, "tlsCertFile:/certs/client-cert.pem,tlsKeyFile:/certs/client-key.pem")
    assert auth.auth_method_name == "tls"
    assert auth.tls_certificate() == ("/certs/client-cert.pem", "/certs/client-key.pem")
    assert auth.http_headers() == {}


@pytest.mark.parametrize("name", ["token", "org.apache.pulsar.client.impl.auth.AuthenticationToken"])
def test_token_plugin_by_name(name: str, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    auth = Authentication(name, "token:abc.def")
    assert auth.auth_method_name == "token"
    assert auth.auth_data() == b"abc.def"
    assert auth.http_headers() == {"Authorization": "Bearer abc.def"}
    assert Authentication(name, "raw-token").auth_data() == b"raw-token"
    (tmp_path / "t").write_text("from-file\n")
    assert Authentication(name, f"file://{tmp_path / 't'}").auth_data() == b"from-file"
    monkeypatch.setenv("MAGNETAR_TEST_TOKEN", "from-env")
    assert Authentication(name, "env:MAGNETAR_TEST_TOKEN").auth_data() == b"from-env"
    with pytest.raises(AuthenticationError, match="MAGNETAR_TEST_NO_SUCH_TOKEN"):
        Authentication(name, "env:MAGNETAR_TEST_NO_SUCH_TOKEN").auth_data()


@pytest.mark.parametrize("name", ["basic", "org.apache.pulsar.client.impl.auth.AuthenticationBasic"])
def test_basic_plugin_by_name(name: str) -> None:
    auth = Authentication(name, '{"username": "admin", "password": "123456", "method": "oms3.0"}')
    assert auth.auth_method_name == "oms3.0"
    assert auth.auth_data() == b"admin:123456"
    assert auth.http_headers() == {"Authorization": "Basic " + base64.b64encode(b"admin:123456").decode()}


def test_unknown_plugin_constructs_but_fails_when_used() -> None:
    auth = Authentication("someoldjunk.so", "blah")
    assert isinstance(auth._plugin, UnknownAuthentication)
    with pytest.raises(AuthenticationError, match="someoldjunk.so"):
        auth.auth_data()
    with pytest.raises(AuthenticationError, match="someoldjunk.so"):
        auth.http_headers()


def test_plugin_name_and_params_must_be_strings() -> None:
    with pytest.raises(ValueError, match="Argument dynamicLibPath is expected to be of type 'str' and not 'int'"):
        Authentication(1, "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Argument authParamsString is expected to be of type 'str' and not 'NoneType'"):
        Authentication("tls", None)


def test_basic_credentials_on_http() -> None:
    auth = AuthenticationBasic("admin", "123456")
    assert auth.auth_method_name == "basic"
    assert auth.http_headers() == {"Authorization": "Basic YWRtaW46MTIzNDU2"}


def test_basic_params_string_official_and_java_keys() -> None:
    official = AuthenticationBasic(auth_params_string='{"username": "u", "password": "p"}')
    assert (official.auth_method_name, official.auth_data()) == ("basic", b"u:p")
    java = AuthenticationBasic(auth_params_string='{"userId": "u", "password": "p", "method": "unknown"}')
    assert (java.auth_method_name, java.auth_data()) == ("unknown", b"u:p")


@pytest.mark.parametrize("params", ["invalid auth params", "[1, 2]", '{"password": "p"}', '{"username": "u"}'])
def test_unusable_basic_params_raise_runtime_error(params: str) -> None:
    with pytest.raises(RuntimeError) as info:
        AuthenticationBasic(auth_params_string=params)
    assert isinstance(info.value, InvalidConfiguration)


def test_bad_argument_types_raise_value_error() -> None:
    with pytest.raises(ValueError, match="Argument username is expected to be of type 'str' and not 'NoneType'"):
        AuthenticationBasic()
    with pytest.raises(ValueError, match="Argument method is expected to be of type 'str' and not 'int'"):
        AuthenticationBasic("u", "p", 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Argument certificate_path is expected to be of type 'str'"):
        AuthenticationTLS(None, "key.pem")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Argument token is expected to be of type 'str' or a function returning 'str'"):
        AuthenticationToken(42)  # type: ignore[arg-type]


def test_plugin_classes_keep_their_own_behaviour() -> None:
    assert Authentication().auth_data() == b""
    assert Authentication().http_headers() == {}
    assert Authentication().tls_certificate() is None
    assert AuthenticationTLS("c.pem", "k.pem").tls_certificate() == ("c.pem", "k.pem")
    assert AuthenticationToken(lambda: "rotating").http_headers() == {"Authorization": "Bearer rotating"}
