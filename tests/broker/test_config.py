"""Broker settings: defaults, environment, TOML file and flags, in that order of precedence."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from magnetar.broker.config import BrokerConfig, ConfigError, default_entry_cache_total_bytes
from magnetar.broker.security.settings import SecuritySettings
from magnetar.testing import free_port


def test_defaults_are_documented_values() -> None:
    cfg = BrokerConfig.load({}, None, environ={})
    assert cfg.port == 6650
    assert cfg.http_port == 8080
    assert cfg.bind == "127.0.0.1"
    assert cfg.data_dir == Path("data")
    assert cfg.max_message_size == 5 * 1024 * 1024
    assert cfg.fsync == "always"
    assert cfg.cursor_persist_delay_seconds == 1.0
    assert cfg.mark_delete_rate_limit == 1.0  # Pulsar's managedLedgerDefaultMarkDeleteRateLimit
    assert (cfg.segment_min_rollover_minutes, cfg.segment_max_rollover_minutes) == (10, 240)  # Pulsar's
    assert cfg.broker_service_url == "pulsar://127.0.0.1:6650"
    assert cfg.entry_cache_eviction_seconds == 1.0  # Pulsar's managedLedgerCacheEvictionTimeThresholdMillis


def test_entry_cache_budget_is_a_64th_of_memory_within_16_and_64_mib(monkeypatch: pytest.MonkeyPatch) -> None:
    mib = 1024 * 1024
    for physical, expected in ((512 * mib, 16 * mib), (2048 * mib, 32 * mib), (24 * 1024 * mib, 64 * mib)):
        monkeypatch.setattr(os, "sysconf", lambda name, physical=physical: 4096 if name == "SC_PAGE_SIZE" else physical // 4096)
        assert default_entry_cache_total_bytes() == expected
    cfg = BrokerConfig.load({}, None, environ={"MAGNETAR_ENTRY_CACHE_TOTAL_BYTES": str(8 * mib),
                                                "MAGNETAR_ENTRY_CACHE_EVICTION_SECONDS": "0"})
    assert (cfg.entry_cache_total_bytes, cfg.entry_cache_eviction_seconds) == (8 * mib, 0.0)


def test_flags_beat_file_beat_environment(tmp_path: Path) -> None:
    toml = tmp_path / "broker.toml"
    toml.write_text('port = 7000\nfsync = "never"\n[broker]\nkeepalive_seconds = 5\n')
    env = {"MAGNETAR_PORT": "6000", "MAGNETAR_HTTP_PORT": "9000", "MAGNETAR_FSYNC": "always", "MAGNETAR_BIND": "0.0.0.0"}
    cfg = BrokerConfig.load({"port": 8000, "bind": None}, toml, environ=env)
    assert cfg.port == 8000  # flag
    assert cfg.fsync == "never"  # file over environment
    assert cfg.keepalive_seconds == 5.0  # file, [broker] table
    assert cfg.http_port == 9000  # environment over default
    assert cfg.bind == "0.0.0.0"  # a None flag does not override
    assert cfg.service_host == "localhost"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MAGNETAR_PORT": "abc"}, "'port'"),
        ({"MAGNETAR_FSYNC": "sometimes"}, "fsync"),
        ({"MAGNETAR_PORT": "70000"}, "port"),
        ({"MAGNETAR_BATCH_INDEX_ACK_ENABLED": "maybe"}, "batch_index_ack_enabled"),
        ({"MAGNETAR_SEGMENT_MIN_ROLLOVER_MINUTES": "-1"}, "segment_min_rollover_minutes"),
        ({"MAGNETAR_MARK_DELETE_RATE_LIMIT": "-0.5"}, "mark_delete_rate_limit must be 0 or more"),
    ],
)
def test_bad_values_are_refused_with_the_setting_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BrokerConfig.load({}, None, environ=env)


def test_unknown_key_in_file_is_refused(tmp_path: Path) -> None:
    toml = tmp_path / "broker.toml"
    toml.write_text("prot = 1\n")
    with pytest.raises(ConfigError, match="unknown setting 'prot'"):
        BrokerConfig.load({}, toml, environ={})


def test_unreadable_or_invalid_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        BrokerConfig.load({}, tmp_path / "missing.toml", environ={})
    bad = tmp_path / "bad.toml"
    bad.write_text("port = = 3")
    with pytest.raises(ConfigError, match="not valid TOML"):
        BrokerConfig.load({}, bad, environ={})


# -- Pulsar's configuration format and the security settings ------------------------------------

PULSAR_CONF = """\
# a Pulsar standalone.conf
brokerServicePort=7650
brokerServicePortTls=7651
webServicePort=
webServicePortTls=7443
bindAddress=0.0.0.0
advertisedAddress=broker.example
clusterName=standalone
maxMessageSize=1048576
tlsCertificateFilePath=/etc/broker.cert.pem
tlsKeyFilePath=/etc/broker.key.pem
authenticationEnabled=true
authenticationProviders=org.apache.pulsar.broker.authentication.AuthenticationProviderToken
tokenSecretKey=file:///etc/secret.key
authorizationEnabled=true
superUserRoles=admin, superUser
zookeeperServers=
loadBalancerEnabled=false
"""


def _pulsar_conf(tmp_path: Path, text: str = PULSAR_CONF, name: str = "standalone.conf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_pulsar_conf_is_read_with_its_security_settings(tmp_path: Path) -> None:
    cfg = BrokerConfig.load({}, _pulsar_conf(tmp_path), environ={})
    assert (cfg.port, cfg.tls_port, cfg.http_port, cfg.https_port) == (7650, 7651, 0, 7443)
    assert cfg.max_message_size == 1048576 and cfg.bind == "0.0.0.0"
    security = cfg.security
    assert security.authentication_enabled and security.authorization_enabled
    assert security.provider_methods == ("token",) and security.super_user_roles == ("admin", "superUser")
    assert cfg.broker_service_url == "pulsar://broker.example:7650"
    assert cfg.broker_service_url_tls == "pulsar+ssl://broker.example:7651"
    assert cfg.web_service_url == "https://broker.example:7443"  # plain HTTP is off
    assert cfg.web_service_url_tls == "https://broker.example:7443"
    assert cfg.ignored_settings == ["zookeeperServers", "loadBalancerEnabled"]


def test_pulsar_conf_recognised_by_content(tmp_path: Path) -> None:
    cfg = BrokerConfig.load({}, _pulsar_conf(tmp_path, "brokerServicePort=7000\nfsync=never\n", "broker"), environ={})
    assert (cfg.port, cfg.fsync) == (7000, "never")


def test_empty_broker_service_port_means_tls_only(tmp_path: Path) -> None:
    text = PULSAR_CONF.replace("brokerServicePort=7650", "brokerServicePort=")
    cfg = BrokerConfig.load({}, _pulsar_conf(tmp_path, text), environ={})
    assert cfg.port is None
    assert cfg.broker_service_url == "pulsar+ssl://broker.example:7651"
    no_listener = text.replace("brokerServicePortTls=7651", "brokerServicePortTls=")
    with pytest.raises(ConfigError, match="^brokerServicePort: no binary listener"):
        BrokerConfig.load({}, _pulsar_conf(tmp_path, no_listener), environ={})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("maxMessageSize=1048576", "maxMessageSize=big"), "maxMessageSize: 'big' is not an integer"),
        (("authorizationEnabled=true", "authorizationEnabled=yes"), "authorizationEnabled: 'yes' is not true or false"),
        (("tokenSecretKey=file:///etc/secret.key", "tokenSecretKey="), "tokenSecretKey: the token provider needs"),
        (("tlsKeyFilePath=/etc/broker.key.pem", "#"), "tlsKeyFilePath: a TLS port is set but no private key file is"),
    ],
)
def test_invalid_pulsar_value_is_one_line_naming_the_key(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    with pytest.raises(ConfigError) as failure:
        BrokerConfig.load({}, _pulsar_conf(tmp_path, PULSAR_CONF.replace(*change)), environ={})
    assert str(failure.value).startswith(message) and "\n" not in str(failure.value)


def test_flags_win_over_a_pulsar_conf(tmp_path: Path) -> None:
    flags = {"port": 9650, "http_port": 9080, "broker_service_port_tls": 9651}
    cfg = BrokerConfig.load(flags, _pulsar_conf(tmp_path), environ={"MAGNETAR_PORT": "1"})
    assert (cfg.port, cfg.http_port, cfg.tls_port, cfg.https_port) == (9650, 9080, 9651, 7443)


def test_security_from_toml_table_and_environment(tmp_path: Path) -> None:
    toml = tmp_path / "broker.toml"
    toml.write_text('port = 7000\n[security]\nauthenticationEnabled = true\nauthentication_providers = ["basic"]\n'
                    'basic_auth_conf = "/etc/htpasswd"\n')
    env = {"MAGNETAR_AUTHORIZATION_ENABLED": "true", "MAGNETAR_SUPER_USER_ROLES": "root,ops",
           "MAGNETAR_AUTHENTICATION_ENABLED": "false"}
    cfg = BrokerConfig.load({}, toml, environ=env)
    security = cfg.security
    assert security.authentication_enabled  # the file wins over the environment
    assert security.authorization_enabled and security.super_user_roles == ("root", "ops")
    assert security.provider_methods == ("basic",)
    toml.write_text("[security]\ntoken_secret = 'x'\n")
    with pytest.raises(ConfigError, match="token_secret: unknown security setting"):
        BrokerConfig.load({}, toml, environ={})


def _standalone(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "magnetar.cli.main", "standalone", "--data-dir", str(cwd / "data"), *args],
        capture_output=True, text=True, timeout=60, cwd=cwd,
    )


def test_standalone_stops_with_one_line_for_a_bad_setting(tmp_path: Path) -> None:
    bad = _pulsar_conf(tmp_path, "brokerServicePort=7650\nmaxMessageSize=-3\n")
    done = _standalone("--config", str(bad), cwd=tmp_path)
    assert (done.returncode, done.stderr) == (1, "error: maxMessageSize: -3 must be positive\n")


def test_standalone_stops_with_one_line_for_an_unreadable_certificate(tmp_path: Path) -> None:
    text = PULSAR_CONF.replace("7650", str(free_port())).replace("7651", str(free_port())).replace(
        "7443", str(free_port())).replace("0.0.0.0", "127.0.0.1")
    done = _standalone("--config", str(_pulsar_conf(tmp_path, text)), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith("error: tlsCertificateFilePath: cannot read /etc/broker.cert.pem")


def test_repr_shows_every_field_but_the_ignored_settings_by_name() -> None:
    config = BrokerConfig(port=7001, ignored_settings=["zookeeperServers"])
    text = repr(config)
    assert text.startswith("BrokerConfig(data_dir=PosixPath('data'), ")
    assert ", port=7001, " in text and "zookeeperServers" not in text and "ignored_settings" not in text
    # the generated __repr__'s format: the class name, then name=repr(value) of each field in order
    shown = [f.name for f in dataclasses.fields(BrokerConfig) if f.name != "ignored_settings"]
    assert text == "BrokerConfig(" + ", ".join(f"{name}={getattr(config, name)!r}" for name in shown) + ")"


def _generated(cls: type, **options: bool) -> type:
    """A dataclass with ``cls``'s fields whose methods dataclass generates (the reference of the written-out ones)."""

    def copy(f: dataclasses.Field) -> dataclasses.Field:
        if f.default_factory is not dataclasses.MISSING:
            return dataclasses.field(default_factory=f.default_factory, repr=f.repr, compare=f.compare)
        return dataclasses.field(default=f.default, repr=f.repr, compare=f.compare)

    return dataclasses.make_dataclass(cls.__name__, [(f.name, f.type, copy(f)) for f in dataclasses.fields(cls)],
                                      **options)


def test_equality_and_hash_are_the_generated_ones() -> None:
    reference = _generated(BrokerConfig)
    same = [(BrokerConfig(), BrokerConfig()), (BrokerConfig(port=1), BrokerConfig(port=2)),
            (BrokerConfig(ignored_settings=["a"]), BrokerConfig()),
            (BrokerConfig(security=SecuritySettings(authentication_enabled=True)), BrokerConfig())]
    for left, right in same:
        values = ({f.name: getattr(left, f.name) for f in dataclasses.fields(left)},
                  {f.name: getattr(right, f.name) for f in dataclasses.fields(right)})
        assert (left == right) == (reference(**values[0]) == reference(**values[1]))
        assert (left != right) == (reference(**values[0]) != reference(**values[1]))
    assert BrokerConfig().__eq__(object()) is NotImplemented
    assert BrokerConfig.__hash__ is None and reference.__hash__ is None

    secured = _generated(SecuritySettings, frozen=True)
    cases = [SecuritySettings(), SecuritySettings(super_user_roles=("admin",)), SecuritySettings(token_auth_claim="x")]
    for left in cases:
        as_generated = secured(**{f.name: getattr(left, f.name) for f in dataclasses.fields(left)})
        assert hash(left) == hash(as_generated)
        assert repr(left) == repr(as_generated)
        for right in cases:
            assert (left == right) == (as_generated == secured(**{f.name: getattr(right, f.name)
                                                                for f in dataclasses.fields(right)}))
    assert SecuritySettings().__eq__(object()) is NotImplemented
