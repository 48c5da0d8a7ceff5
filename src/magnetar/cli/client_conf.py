"""How the tools reach a broker: Pulsar's ``client.conf`` and pulsar-admin's connection flags.

``magnetar admin``, ``produce``, ``consume``, ``perf`` and ``sql`` read the file named by
``--client-conf`` (or ``$PULSAR_CLIENT_CONF``) with Pulsar's keys: ``webServiceUrl``,
``brokerServiceUrl``, ``authPlugin``, ``authParams``, ``tlsTrustCertsFilePath``,
``tlsAllowInsecureConnection``, ``tlsEnableHostnameVerification``; the flags ``--auth-plugin``,
``--auth-params``, ``--tls-trust-cert-path``, ``--tls-allow-insecure`` and
``--tls-enable-hostname-verification`` win over the file.

Auth plugins go by Pulsar's client class names (or the short ``token`` / ``basic`` / ``tls``)
with their parameter formats::

    org.apache.pulsar.client.impl.auth.AuthenticationToken   token:eyJ...  |  file:///path/token.txt
    org.apache.pulsar.client.impl.auth.AuthenticationBasic   {"userId": "admin", "password": "123456"}
    org.apache.pulsar.client.impl.auth.AuthenticationTls     tlsCertFile:/path/cert.pem,tlsKeyFile:/path/key.pem
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    import ssl

CLIENT_CONF_ENV = "PULSAR_CLIENT_CONF"
TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
BASIC_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationBasic"
TLS_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationTls"
_METHOD_OF_PLUGIN = {TOKEN_PLUGIN: "token", BASIC_PLUGIN: "basic", TLS_PLUGIN: "tls",
                     "token": "token", "basic": "basic", "tls": "tls"}
#: client.conf key -> ClientConf field
_KEYS = {
    "webServiceUrl": "web_service_url",
    "brokerServiceUrl": "broker_service_url",
    "authPlugin": "auth_plugin",
    "authParams": "auth_params",
    "tlsTrustCertsFilePath": "tls_trust_certs_file_path",
    "tlsAllowInsecureConnection": "tls_allow_insecure_connection",
    "tlsEnableHostnameVerification": "tls_enable_hostname_verification",
}

ClientConfOpt = Annotated[
    Path | None, typer.Option("--client-conf", envvar=CLIENT_CONF_ENV, help="Pulsar client.conf to read")
]
AuthPluginOpt = Annotated[
    str | None, typer.Option("--auth-plugin", help="Auth plugin class (AuthenticationToken, AuthenticationBasic, AuthenticationTls)")
]
AuthParamsOpt = Annotated[
    str | None, typer.Option("--auth-params", help="Auth parameters: token:..., file:..., JSON, tlsCertFile:...,tlsKeyFile:...")
]
TlsTrustOpt = Annotated[str | None, typer.Option("--tls-trust-cert-path", help="CA certificates (PEM) to trust")]
TlsInsecureOpt = Annotated[
    bool | None, typer.Option("--tls-allow-insecure/--no-tls-allow-insecure", help="Accept any server certificate")
]
TlsHostnameOpt = Annotated[
    bool | None,
    typer.Option("--tls-enable-hostname-verification/--no-tls-enable-hostname-verification",
                 help="Check that the server certificate names the host"),
]


class ClientConfError(ValueError):
    """A client.conf or connection flag that cannot be used; the message names it."""


@dataclass(frozen=True)
class ClientConf:
    """Connection settings of a tool, under Pulsar's client.conf meanings."""

    web_service_url: str | None = None
    broker_service_url: str | None = None
    auth_plugin: str | None = None
    auth_params: str | None = None
    tls_trust_certs_file_path: str | None = None
    tls_allow_insecure_connection: bool = False
    tls_enable_hostname_verification: bool = False

    @classmethod
    def read(cls, path: Path) -> ClientConf:
        """Read a client.conf (``key=value`` lines, ``#`` comments; unknown keys are skipped)."""
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise ClientConfError(f"cannot read client configuration {path}: {exc.strerror or exc}") from None
        values: dict[str, Any] = {}
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            key, _, value = line.partition("=")
            field = _KEYS.get(key.strip())
            if field is None or not value.strip():
                continue
            value = value.strip()
            if field.startswith("tls_") and field != "tls_trust_certs_file_path":
                values[field] = _boolean(key.strip(), value)
            else:
                values[field] = value
        return cls(**values)

    def with_flags(self, **flags: Any) -> ClientConf:
        """A copy where every flag that was given (not None) replaces the file's value."""
        return dataclasses.replace(self, **{k: v for k, v in flags.items() if v is not None})

    @property
    def auth_method(self) -> str | None:
        """``token``, ``basic`` or ``tls`` for the configured plugin, None without one."""
        if not self.auth_plugin:
            return None
        method = _METHOD_OF_PLUGIN.get(self.auth_plugin.strip())
        if method is None:
            simple = self.auth_plugin.strip().rsplit(".", 1)[-1]
            method = {"AuthenticationToken": "token", "AuthenticationBasic": "basic", "AuthenticationTls": "tls"}.get(simple)
        if method is None:
            raise ClientConfError(
                f"authPlugin {self.auth_plugin!r} is not supported: use {TOKEN_PLUGIN}, {BASIC_PLUGIN} or {TLS_PLUGIN}"
            )
        return method

    # -- what each auth method sends --------------------------------------------------------------
    def token(self) -> str:
        """The token of AuthenticationToken params (``token:``, ``file:``, JSON or the bare token)."""
        params = (self.auth_params or "").strip()
        if params.startswith("{"):
            params = str(_json_params(params).get("token", ""))
        if params.startswith("token:"):
            return params[len("token:"):]
        if params.startswith("file:"):
            path = params[len("file://"):] if params.startswith("file://") else params[len("file:"):]
            try:
                return Path(path).read_text().strip()
            except OSError as exc:
                raise ClientConfError(f"authParams: cannot read the token file {path}: {exc.strerror}") from None
        if not params:
            raise ClientConfError("authParams: AuthenticationToken needs token:<token> or file:<path>")
        return params

    def basic_credentials(self) -> tuple[str, str]:
        """(user, password) of AuthenticationBasic params (``{"userId", "password"}``)."""
        params = (self.auth_params or "").strip()
        values = _json_params(params) if params.startswith("{") else _comma_params(params)
        user, password = values.get("userId"), values.get("password")
        if not isinstance(user, str) or not isinstance(password, str):
            raise ClientConfError('authParams: AuthenticationBasic needs {"userId": "...", "password": "..."}')
        return user, password

    def tls_files(self) -> tuple[str, str]:
        """(certificate, key) files of AuthenticationTls params."""
        params = (self.auth_params or "").strip()
        values = _json_params(params) if params.startswith("{") else _comma_params(params)
        cert, key = values.get("tlsCertFile"), values.get("tlsKeyFile")
        if not cert or not key:
            raise ClientConfError("authParams: AuthenticationTls needs tlsCertFile:<path>,tlsKeyFile:<path>")
        return str(cert), str(key)

    def http_authorization(self) -> str | None:
        """The ``Authorization`` header value for the admin API (the plugin's, as its HTTP lookups
        send it), None when none is sent."""
        plugin = self.native_client_options().get("authentication")
        return plugin.http_headers().get("Authorization") if plugin is not None else None

    def http_ssl_context(self) -> ssl.SSLContext:
        """The TLS context of https:// admin requests: trust, hostname check, client certificate."""
        # ssl: 10-15 ms CPU, for https:// only
        import ssl

        context = ssl.create_default_context(cafile=self.tls_trust_certs_file_path or None)
        context.check_hostname = self.tls_enable_hostname_verification and not self.tls_allow_insecure_connection
        if self.tls_allow_insecure_connection:
            context.verify_mode = ssl.CERT_NONE
        if self.auth_method == "tls":
            cert, key = self.tls_files()
            context.load_cert_chain(cert, key)
        return context

    def native_client_options(self) -> dict[str, Any]:
        """Keyword arguments of magnetar's client for these settings."""
        options: dict[str, Any] = {
            "tls_allow_insecure_connection": self.tls_allow_insecure_connection,
            "tls_validate_hostname": self.tls_enable_hostname_verification,
        }
        if self.tls_trust_certs_file_path:
            options["tls_trust_certs_file_path"] = self.tls_trust_certs_file_path
        method = self.auth_method
        if method is None:
            return options
        # the client package is imported only when credentials are used, not at the admin CLI's start-up:
        # 200-270 ms CPU (python -X importtime)
        from magnetar.client import AuthenticationBasic, AuthenticationTLS, AuthenticationToken

        if method == "token":
            options["authentication"] = AuthenticationToken(self.token())
        elif method == "basic":
            options["authentication"] = AuthenticationBasic(*self.basic_credentials())
        elif method == "tls":
            cert, key = self.tls_files()
            options["authentication"] = AuthenticationTLS(cert, key)
            options["tls_certificate_file_path"] = cert
            options["tls_private_key_file_path"] = key
        return options


def _boolean(key: str, value: str) -> bool:
    low = value.lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise ClientConfError(f"{key}: expected true or false, not {value!r}")


def _json_params(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        raise ClientConfError("authParams is not valid JSON") from None
    if not isinstance(data, dict):
        raise ClientConfError("authParams must be a JSON object")
    return data


def _comma_params(text: str) -> dict[str, str]:
    """``key:value,key2:value2`` (Pulsar's older auth parameter form)."""
    out = {}
    for part in text.split(","):
        key, sep, value = part.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def load_client_conf(
    path: Path | None,
    *,
    auth_plugin: str | None = None,
    auth_params: str | None = None,
    tls_trust_cert_path: str | None = None,
    tls_allow_insecure: bool | None = None,
    tls_enable_hostname_verification: bool | None = None,
) -> ClientConf:
    """The tool's settings: the client.conf at ``path`` (or $PULSAR_CLIENT_CONF), then the flags."""
    if path is None and os.environ.get(CLIENT_CONF_ENV):
        path = Path(os.environ[CLIENT_CONF_ENV])
    conf = ClientConf.read(path) if path is not None else ClientConf()
    conf = conf.with_flags(
        auth_plugin=auth_plugin,
        auth_params=auth_params,
        tls_trust_certs_file_path=tls_trust_cert_path,
        tls_allow_insecure_connection=tls_allow_insecure,
        tls_enable_hostname_verification=tls_enable_hostname_verification,
    )
    conf.auth_method  # noqa: B018 - an unknown plugin is refused before any request
    return conf
