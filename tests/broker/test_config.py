"""Broker settings: defaults, environment, TOML file and flags, in that order of precedence."""

from __future__ import annotations

from pathlib import Path

import pytest

from magnetar.broker.config import BrokerConfig, ConfigError


def test_defaults_are_documented_values() -> None:
    cfg = BrokerConfig.load({}, None, environ={})
    assert cfg.port == 6650
    assert cfg.http_port == 8080
    assert cfg.bind == "127.0.0.1"
    assert cfg.data_dir == Path("data")
    assert cfg.max_message_size == 5 * 1024 * 1024
    assert cfg.fsync == "always"
    assert cfg.cursor_persist_delay_seconds == 1.0
    assert cfg.broker_service_url == "pulsar://127.0.0.1:6650"


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
