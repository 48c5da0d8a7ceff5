"""SecuritySettings: Pulsar's names, defaults, and one clear error per bad value."""

from __future__ import annotations

import pytest

from magnetar.broker.security import PULSAR_SECURITY_KEYS, SecurityConfigError, SecuritySettings

TOKEN = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
BASIC = "org.apache.pulsar.broker.authentication.AuthenticationProviderBasic"
TLS = "org.apache.pulsar.broker.authentication.AuthenticationProviderTls"


def test_defaults_are_pulsars() -> None:
    settings = SecuritySettings()
    assert not settings.authentication_enabled and not settings.authorization_enabled
    assert settings.token_auth_claim == "sub"
    assert settings.token_public_alg == "RS256"
    assert settings.authentication_refresh_check_seconds == 60
    assert settings.anonymous_user_role is None
    assert not settings.tls_enabled


def test_from_pulsar_maps_every_key_to_its_snake_case_field() -> None:
    raw = {
        "authenticationEnabled": "true",
        "authenticationProviders": f"{TLS}, {TOKEN},{BASIC}",
        "authorizationEnabled": "TRUE",
        "superUserRoles": "localhost,superUser,admin",
        "anonymousUserRole": "anonymous",
        "authenticationRefreshCheckSeconds": "5",
        "tokenSecretKey": "file:///keys/secret.key",
        "tokenAuthClaim": "",
        "tokenAudienceClaim": "aud",
        "tokenAudience": "magnetar",
        "basicAuthConf": "/etc/htpasswd",
        "brokerServicePortTls": "6651",
        "webServicePortTls": "8443",
        "tlsCertificateFilePath": "broker-cert.pem",
        "tlsKeyFilePath": "broker-key.pem",
        "tlsTrustCertsFilePath": "ca.pem",
        "tlsRequireTrustedClientCertOnConnect": "false",
        "tlsAllowInsecureConnection": "false",
        "tlsProtocols": "TLSv1.3,TLSv1.2",
        "tlsCiphers": "",
        "authorizationAllowWildcardsMatching": "true",
        "unrelatedKey": "x",
    }
    settings = SecuritySettings.from_pulsar(raw)
    assert settings.authentication_enabled and settings.authorization_enabled
    assert settings.provider_methods == ("tls", "token", "basic")
    assert settings.super_user_roles == ("localhost", "superUser", "admin")
    assert settings.is_super_user("admin") and not settings.is_super_user("anonymous")
    assert settings.is_super_user(None) is False
    assert settings.anonymous_user_role == "anonymous"
    assert settings.authentication_refresh_check_seconds == 5
    assert settings.token_auth_claim == "sub"  # empty value: unset, Pulsar's default
    assert (settings.token_audience_claim, settings.token_audience) == ("aud", "magnetar")
    assert (settings.broker_service_port_tls, settings.web_service_port_tls) == (6651, 8443)
    assert settings.tls_protocols == ("TLSv1.3", "TLSv1.2")
    assert settings.tls_ciphers == ()
    assert settings.authorization_allow_wildcards_matching
    assert settings.tls_enabled


def test_every_pulsar_key_names_a_field() -> None:
    fields = set(SecuritySettings.__dataclass_fields__)
    assert set(PULSAR_SECURITY_KEYS.values()) <= fields
    assert len(PULSAR_SECURITY_KEYS) >= 25


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"authenticationEnabled": "yes"}, "authenticationEnabled: 'yes' is not true or false"),
        ({"authenticationRefreshCheckSeconds": "soon"}, "authenticationRefreshCheckSeconds: 'soon' is not an integer"),
        ({"authenticationRefreshCheckSeconds": "0"}, "authenticationRefreshCheckSeconds: must be at least 1 second"),
        ({"authenticationProviders": "com.example.MyProvider"}, "authenticationProviders: unknown provider"),
        ({"authorizationProvider": "com.example.Authz"}, "authorizationProvider: only"),
        ({"tokenPublicAlg": "HS256"}, "tokenPublicAlg: 'HS256' is not one of"),
        ({"tokenAudienceClaim": "aud"}, "tokenAudience: tokenAudienceClaim is 'aud' but tokenAudience is not set"),
        ({"authenticationEnabled": "true", "authenticationProviders": TOKEN},
         "tokenSecretKey: the token provider needs tokenSecretKey or tokenPublicKey"),
        ({"authenticationEnabled": "true", "authenticationProviders": BASIC},
         "basicAuthConf: the basic provider needs an htpasswd file"),
        ({"brokerServicePortTls": "70000", "tlsCertificateFilePath": "c", "tlsKeyFilePath": "k"},
         "brokerServicePortTls: 70000 is not a port number"),
        ({"brokerServicePortTls": "6651", "tlsKeyFilePath": "k"},
         "tlsCertificateFilePath: a TLS port is set but no certificate file is"),
        ({"webServicePortTls": "8443", "tlsCertificateFilePath": "c"},
         "tlsKeyFilePath: a TLS port is set but no private key file is"),
        ({"tlsProtocols": "SSLv3"}, "tlsProtocols: 'SSLv3' is not one of"),
        ({"tokenAllowedClockSkewSeconds": "-1"}, "tokenAllowedClockSkewSeconds: must not be negative"),
    ],
)
def test_a_bad_value_raises_one_error_naming_the_key(raw: dict[str, str], message: str) -> None:
    with pytest.raises(SecurityConfigError) as info:
        SecuritySettings.from_pulsar(raw)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_direct_construction_accepts_comma_lists_and_validates_too() -> None:
    settings = SecuritySettings(super_user_roles="a, b", authentication_providers="token", authentication_enabled=False)
    assert settings.super_user_roles == ("a", "b")
    with pytest.raises(SecurityConfigError, match="^authenticationProviders: unknown provider 'jwt'"):
        SecuritySettings(authentication_providers=("jwt",))


def test_settings_are_frozen() -> None:
    settings = SecuritySettings()
    with pytest.raises(AttributeError):
        settings.authentication_enabled = True  # type: ignore[misc]


def test_from_values_takes_typed_values_under_either_name() -> None:
    settings = SecuritySettings.from_values({
        "authenticationEnabled": True,
        "authentication_providers": ["tls"],
        "superUserRoles": "admin,ops",
        "broker_service_port_tls": 6651,
        "tlsCertificateFilePath": "c.pem",
        "tls_key_file_path": "k.pem",
        "anonymousUserRole": "",
    })
    assert settings.authentication_enabled and settings.provider_methods == ("tls",)
    assert settings.super_user_roles == ("admin", "ops")
    assert settings.broker_service_port_tls == 6651 and settings.anonymous_user_role is None
    with pytest.raises(SecurityConfigError, match="^tokenSecret: unknown security setting$"):
        SecuritySettings.from_values({"tokenSecret": "x"})
    with pytest.raises(SecurityConfigError, match="^authorizationEnabled: 1 is not a valid bool$"):
        SecuritySettings.from_values({"authorizationEnabled": 1})
