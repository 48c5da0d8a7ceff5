"""The tools against the secured broker over TLS: client.conf, $PULSAR_CLIENT_CONF and
pulsar-admin's flags, with token, basic and TLS-certificate authentication."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from magnetar.cli.main import app

from .conftest import SecuredBroker

TOKEN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
BASIC = "org.apache.pulsar.client.impl.auth.AuthenticationBasic"
TLS = "org.apache.pulsar.client.impl.auth.AuthenticationTls"


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def _conf(secured: SecuredBroker, tmp_path: Path, plugin: str, params: str) -> Path:
    path = tmp_path / f"client-{uuid.uuid4().hex[:6]}.conf"
    path.write_text(
        "# Pulsar client configuration\n"
        f"webServiceUrl=https://localhost:{secured.https_port}/\n"
        f"brokerServiceUrl=pulsar+ssl://localhost:{secured.tls_port}/\n"
        f"authPlugin={plugin}\n"
        f"authParams={params}\n"
        f"tlsTrustCertsFilePath={secured.pki.ca_cert}\n"
        "tlsAllowInsecureConnection=false\n"
        "tlsEnableHostnameVerification=true\n"
    )
    return path


def test_admin_with_client_conf_token_over_https(secured: SecuredBroker, tmp_path: Path) -> None:
    conf = _conf(secured, tmp_path, TOKEN, f"token:{secured.token('super')}")
    code, out, err = _run("admin", "--client-conf", str(conf), "--json", "tenants", "list")
    assert code == 0, err
    assert "acme" in json.loads(out)
    # the same file from $PULSAR_CLIENT_CONF, the flags after the subcommand
    code, out, err = _run("admin", "tenants", "list", "--json", env={"PULSAR_CLIENT_CONF": str(conf)})
    assert code == 0, err
    assert "acme" in json.loads(out)


def test_admin_flags_win_over_the_file(secured: SecuredBroker, tmp_path: Path) -> None:
    conf = _conf(secured, tmp_path, TOKEN, f"token:{secured.token('super')}")
    token_file = tmp_path / "alice.token"
    token_file.write_text(secured.token("alice") + "\n")
    code, _, err = _run("admin", "--client-conf", str(conf), "--auth-params", f"file://{token_file}", "tenants", "list")
    assert code == 1
    assert "403" in err and "super-user" in err
    code, out, err = _run("admin", "--client-conf", str(conf), "--auth-params", f"file://{token_file}",
                          "namespaces", "list", "acme")
    assert code == 0, err
    assert "acme/shop" in out


def test_admin_pulsar_admin_flags_basic_and_tls(secured: SecuredBroker) -> None:
    https = f"https://localhost:{secured.https_port}"
    trust = ("--tls-trust-cert-path", str(secured.pki.ca_cert))
    code, out, err = _run("admin", "--admin-url", https, *trust, "--auth-plugin", BASIC,
                          "--auth-params", '{"userId": "admin", "password": "123456"}', "clusters", "get", "standalone")
    assert code == 0, err
    code, out, err = _run("admin", "--admin-url", https, *trust, "--auth-plugin", TLS, "--auth-params",
                          f"tlsCertFile:{secured.pki.client_cert},tlsKeyFile:{secured.pki.client_key}", "tenants", "list")
    assert code == 0, err
    assert "acme" in out
    code, _, err = _run("admin", "--admin-url", https, *trust, "tenants", "list")
    assert code == 1 and "401" in err
    # an untrusted server certificate is refused, unless --tls-allow-insecure
    code, _, err = _run("admin", "--admin-url", https, "--auth-plugin", TOKEN, "--auth-params",
                        f"token:{secured.token('super')}", "tenants", "list")
    assert code == 1 and "certificate" in err.lower()
    code, _, err = _run("admin", "--admin-url", https, "--tls-allow-insecure", "--auth-plugin", TOKEN,
                        "--auth-params", f"token:{secured.token('super')}", "tenants", "list")
    assert code == 0, err


def test_permissions_commands(secured: SecuredBroker, tmp_path: Path) -> None:
    conf = str(_conf(secured, tmp_path, TOKEN, f"token:{secured.token('alice')}"))
    code, _, err = _run("admin", "--client-conf", conf, "namespaces", "grant-permission", "acme/shop",
                        "--role", "ivan", "--actions", "produce,consume")
    assert code == 0, err
    code, out, err = _run("admin", "--client-conf", conf, "--json", "namespaces", "permissions", "acme/shop")
    assert json.loads(out)["ivan"] == ["consume", "produce"]
    assert _run("admin", "--client-conf", conf, "namespaces", "revoke-permission", "acme/shop", "--role", "ivan")[0] == 0
    topic = "persistent://acme/shop/tools-perm"
    assert _run("admin", "--client-conf", conf, "topics", "create", topic)[0] in (0, 1)
    code, _, err = _run("admin", "--client-conf", conf, "topics", "grant-permission", topic, "--role", "judy",
                        "--actions", "consume")
    assert code == 0, err
    code, out, _ = _run("admin", "--client-conf", conf, "--json", "topics", "permissions", topic)
    assert json.loads(out)["judy"] == ["consume"]
    assert _run("admin", "--client-conf", conf, "topics", "revoke-permission", topic, "--role", "judy")[0] == 0
    code, _, err = _run("admin", "--client-conf", conf, "topics", "revoke-permission", topic, "--role", "judy")
    assert code == 1 and "412" in err
    code, _, err = _run("admin", "--client-conf", conf, "namespaces", "grant-subscription-permission", "acme/shop",
                        "--subscription", "audit-tools", "--roles", "ivan,judy")
    assert code == 0, err
    code, out, _ = _run("admin", "--client-conf", conf, "--json", "namespaces", "subscription-permission", "acme/shop")
    assert json.loads(out)["audit-tools"] == ["ivan", "judy"]


def test_produce_and_consume_with_client_conf(secured: SecuredBroker, tmp_path: Path) -> None:
    topic = f"persistent://acme/shop/tools-{uuid.uuid4().hex[:6]}"
    bob = _conf(secured, tmp_path, TOKEN, f"token:{secured.token('bob')}")
    carol = _conf(secured, tmp_path, TOKEN, f"token:{secured.token('carol')}")
    code, _, err = _run("consume", topic, "-s", "tools", "-n", "0", "--timeout", "0.5", "--client-conf", str(carol))
    assert "no message" in err, err  # the subscription now exists
    code, out, err = _run("produce", topic, "-m", "hello", "--client-conf", str(bob))
    assert code == 0, err
    code, out, err = _run("consume", topic, "-s", "tools", "-n", "1", "--timeout", "10", "--client-conf", str(carol))
    assert code == 0, err
    assert "content=hello" in out
    # bob may not consume: the broker refuses the subscription
    code, _, err = _run("consume", topic, "-s", "tools-bob", "-n", "1", "--timeout", "2", "--client-conf", str(bob))
    assert code == 1 and "Authorization" in err


@pytest.mark.parametrize("params", ["token:", "{not json", ""])
def test_bad_auth_params_are_one_line_errors(secured: SecuredBroker, params: str) -> None:
    code, _, err = _run("admin", "--admin-url", secured.http_url, "--auth-plugin", BASIC, "--auth-params", params,
                        "tenants", "list")
    assert code == 1
    assert err.startswith("error: ") and "authParams" in err
