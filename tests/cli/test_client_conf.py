"""Pulsar's client.conf and the auth plugin parameters the tools accept (no broker needed)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from magnetar.cli.client_conf import (
    BASIC_PLUGIN,
    TLS_PLUGIN,
    TOKEN_PLUGIN,
    ClientConf,
    ClientConfError,
    load_client_conf,
)
from magnetar.client import AuthenticationBasic, AuthenticationTLS, AuthenticationToken


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "client.conf"
    path.write_text(text)
    return path


def test_reads_pulsars_keys(tmp_path: Path) -> None:
    path = _write(tmp_path, """
# Pulsar Client configuration
webServiceUrl=https://localhost:8443/
brokerServiceUrl=pulsar+ssl://localhost:6651/
tlsAllowInsecureConnection=false
tlsEnableHostnameVerification=true
tlsTrustCertsFilePath=test-conf/cacert.pem
authPlugin=org.apache.pulsar.client.impl.auth.AuthenticationTls
authParams=tlsCertFile:test-conf/client-cert.pem,tlsKeyFile:test-conf/client-key.pem
useTls=true
""")
    conf = ClientConf.read(path)
    assert conf.web_service_url == "https://localhost:8443/"
    assert conf.broker_service_url == "pulsar+ssl://localhost:6651/"
    assert conf.tls_trust_certs_file_path == "test-conf/cacert.pem"
    assert conf.tls_enable_hostname_verification and not conf.tls_allow_insecure_connection
    assert conf.auth_method == "tls"
    assert conf.tls_files() == ("test-conf/client-cert.pem", "test-conf/client-key.pem")
    options = conf.native_client_options()
    assert isinstance(options["authentication"], AuthenticationTLS)
    assert options["tls_certificate_file_path"] == "test-conf/client-cert.pem"
    assert conf.http_authorization() is None


def test_flags_win_and_env_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, f"authPlugin={TOKEN_PLUGIN}\nauthParams=token:abc\ntlsAllowInsecureConnection=true\n")
    monkeypatch.setenv("PULSAR_CLIENT_CONF", str(path))
    conf = load_client_conf(None, auth_params="token:xyz", tls_allow_insecure=False)
    assert conf.http_authorization() == "Bearer xyz"
    assert conf.tls_allow_insecure_connection is False
    assert isinstance(conf.native_client_options()["authentication"], AuthenticationToken)


def test_token_forms(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("from-file\n")
    for params, token in (("token:a.b.c", "a.b.c"), (f"file://{tmp_path}/t.txt", "from-file"),
                          (f"file:{tmp_path}/t.txt", "from-file"), ('{"token": "j"}', "j"), ("bare", "bare")):
        assert ClientConf(auth_plugin="token", auth_params=params).token() == token


def test_basic_forms() -> None:
    conf = ClientConf(auth_plugin=BASIC_PLUGIN, auth_params='{"userId": "admin", "password": "123456"}')
    assert conf.http_authorization() == "Basic " + base64.b64encode(b"admin:123456").decode()
    auth = conf.native_client_options()["authentication"]
    assert isinstance(auth, AuthenticationBasic) and auth.auth_data() == b"admin:123456"


@pytest.mark.parametrize(("plugin", "params", "words"), [
    ("com.example.Kerberos", "", "not supported"),
    (BASIC_PLUGIN, "{oops", "JSON"),
    (BASIC_PLUGIN, '{"userId": "x"}', "userId"),
    (TLS_PLUGIN, "tlsCertFile:/a", "tlsKeyFile"),
    (TOKEN_PLUGIN, "", "token:"),
])
def test_refusals_name_the_problem(plugin: str, params: str, words: str) -> None:
    with pytest.raises(ClientConfError, match=words):
        ClientConf(auth_plugin=plugin, auth_params=params).native_client_options()


def test_bad_boolean_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ClientConfError, match="tlsAllowInsecureConnection"):
        ClientConf.read(_write(tmp_path, "tlsAllowInsecureConnection=maybe\n"))
    with pytest.raises(ClientConfError, match="cannot read"):
        ClientConf.read(tmp_path / "missing.conf")


@pytest.mark.parametrize(("plugin", "params", "kind"), [
    (TOKEN_PLUGIN, "token:abc", AuthenticationToken),
    (BASIC_PLUGIN, '{"userId": "admin", "password": "123456"}', AuthenticationBasic),
    (TLS_PLUGIN, "tlsCertFile:/c.pem,tlsKeyFile:/k.pem", AuthenticationTLS),
])
def test_sql_hands_the_settings_to_the_spark_source(plugin: str, params: str, kind: type) -> None:
    from magnetar.cli.sql import connection_options
    from magnetar.spark.options import source_options

    conf = ClientConf(auth_plugin=plugin, auth_params=params, tls_trust_certs_file_path="/ca.pem")
    options = {"service.url": "pulsar+ssl://localhost:6651", "topic": "t", **connection_options(conf)}
    settings = source_options({k.lower(): v for k, v in options.items()}, False).settings
    assert settings.client["tls_trust_certs_file_path"] == "/ca.pem"
    from magnetar.spark import options as spark_options

    made = spark_options._authentication(settings.client["authPluginClassName"], settings.client["authParams"])
    assert isinstance(made["authentication"], kind)
