"""Pulsar's broker.conf / standalone.conf read as magnetar settings."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnetar.broker.pulsar_conf import (
    PulsarConfError,
    load_pulsar_conf,
    looks_like_pulsar_conf,
    parse_properties,
)

#: the security part of the official client's tests/test-conf/standalone-ssl.conf, as a user adapts it
SUITE_CONF = """\
# comments and blank lines are skipped

brokerServicePort=6650
brokerServicePortTls=6651
webServicePort=8080
webServicePortTls=8443
bindAddress=0.0.0.0
advertisedAddress=localhost
clusterName=standalone
zookeeperServers=
brokerShutdownTimeoutMs=3000
maxUnackedMessagesPerConsumer=50000
tlsEnabled=true
tlsCertificateFilePath=test-conf/broker-cert.pem
tlsKeyFilePath=test-conf/broker-key.pem
tlsTrustCertsFilePath=test-conf/cacert.pem
tlsAllowInsecureConnection=false
anonymousUserRole=anonymous
authenticationEnabled=true
authenticationProviders=org.apache.pulsar.broker.authentication.AuthenticationProviderTls,\
org.apache.pulsar.broker.authentication.AuthenticationProviderToken,\
org.apache.pulsar.broker.authentication.AuthenticationProviderBasic
authorizationEnabled=true
tokenSecretKey=file:///work/data/tokens/secret.key
superUserRoles=localhost,superUser,admin
brokerClientAuthenticationPlugin=
acknowledgmentAtBatchIndexLevelEnabled=true
managedLedgerCacheSizeMB=1024
defaultRetentionTimeInMinutes=0
defaultRetentionSizeInMB=0
keepAliveIntervalSeconds=30
allowAutoTopicCreation=true
allowAutoTopicCreationType=non-partitioned
defaultNumPartitions=1
maxMessageSize=1024000
subscriptionKeySharedUseConsistentHashing=false
topicLevelPoliciesEnabled=false
basicAuthConf=test-conf/.htpasswd
"""


def test_properties_syntax() -> None:
    text = (
        "# comment\n! also a comment\n\n"
        "  plain = value with spaces  \n"
        "colon: yes\n"
        "space separated\n"
        "escaped\\=key=a\\tb\\u0041\\\\\n"
        "continued=one,\\\n    two,\\\n    three\n"
        "empty=\n"
        "twice=1\ntwice=2\n"
        "inline=a # not a comment\n"
    )
    assert parse_properties(text) == {
        "plain": "value with spaces",
        "colon": "yes",
        "space": "separated",
        "escaped=key": "a\tbA\\",
        "continued": "one,two,three",
        "empty": "",
        "twice": "2",
        "inline": "a # not a comment",
    }


def test_windows_files() -> None:
    assert parse_properties("\ufeffclusterName=standalone\r\nbindAddress=0.0.0.0\r\n") == {
        "clusterName": "standalone", "bindAddress": "0.0.0.0"}


def test_the_official_suites_conf() -> None:
    conf = load_pulsar_conf(SUITE_CONF)
    assert conf.settings == {
        "port": 6650,
        "http_port": 8080,
        "bind": "0.0.0.0",
        "advertised_address": "localhost",
        "max_unacked_messages_per_consumer": 50000,
        "batch_index_ack_enabled": True,
        "entry_cache_total_bytes": 1024 * 1024 * 1024,
        "default_retention_minutes": 0,
        "default_retention_mb": 0,
        "keepalive_seconds": 30,
        "allow_auto_topic_creation": True,
        "default_num_partitions": 0,
        "max_message_size": 1024000,
        "key_shared_selector": "auto_split_hash_range",
        "cluster_name": "standalone",
    }
    security = conf.security
    assert security.authentication_enabled and security.authorization_enabled
    assert security.provider_methods == ("tls", "token", "basic")
    assert security.super_user_roles == ("localhost", "superUser", "admin")
    assert (security.broker_service_port_tls, security.web_service_port_tls) == (6651, 8443)
    assert security.token_secret_key == "file:///work/data/tokens/secret.key"
    assert security.basic_auth_conf == "test-conf/.htpasswd"
    assert conf.ignored == ["zookeeperServers", "brokerShutdownTimeoutMs", "tlsEnabled",
                            "topicLevelPoliciesEnabled"]


def test_the_real_file_from_the_official_client_when_available() -> None:
    git_dir = Path("/work/.mirror/apache+pulsar-client-python/repo")
    if not git_dir.exists():
        pytest.skip("no local copy of apache/pulsar-client-python")
    text = subprocess.run(["git", f"--git-dir={git_dir}", "show", "HEAD:tests/test-conf/standalone-ssl.conf"],
                          capture_output=True, text=True, check=True).stdout
    conf = load_pulsar_conf(text + "\nbasicAuthConf=test-conf/.htpasswd\n")
    assert conf.security.anonymous_user_role == "anonymous"
    assert conf.settings["port"] == 6650
    assert "managedLedgerDefaultEnsembleSize" in conf.ignored


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("brokerServicePort=\nwebServicePort=\n", {"port": None, "http_port": 0}),
        ("allowAutoTopicCreationType=partitioned\ndefaultNumPartitions=4\n", {"default_num_partitions": 4}),
        ("allowAutoTopicCreationType=partitioned\n", {"default_num_partitions": 1}),
        ("brokerDeleteInactiveTopicsEnabled=true\nbrokerDeleteInactiveTopicsFrequencySeconds=30\n",
         {"inactive_topic_expiry_seconds": 30.0}),
        ("brokerDeleteInactiveTopicsEnabled=true\nbrokerDeleteInactiveTopicsMaxInactiveDurationSeconds=90\n",
         {"inactive_topic_expiry_seconds": 90.0}),
        ("brokerDeleteInactiveTopicsEnabled=false\n", {"inactive_topic_expiry_seconds": 0.0}),
        ("subscriptionKeySharedUseConsistentHashing=true\n", {"key_shared_selector": "consistent_hashing"}),
        ("delayedDeliveryTickTimeMillis=250\nisDelayedDeliveryDeliverAtTimeStrict=true\n",
         {"delayed_delivery_tick_seconds": 0.25, "delayed_delivery_strict": True}),
        ("brokerDeduplicationEnabled=true\nttlDurationDefaultInSeconds=60\ndefaultRetentionTimeInMinutes=-1\n",
         {"deduplication_enabled": True, "default_message_ttl_seconds": 60, "default_retention_minutes": -1}),
        ("maxProducersPerTopic=3\nmaxConsumersPerSubscription=2\nbrokerMaxConnectionsPerIp=9\n",
         {"max_producers_per_topic": 3, "max_consumers_per_subscription": 2, "max_connections_per_ip": 9}),
        ("schemaCompatibilityStrategy=backward\nisSchemaValidationEnforced=true\n",
         {"schema_compatibility_strategy": "BACKWARD", "schema_validation_enforced": True}),
        ("maxUnackedMessagesPerSubscription=0\nsubscriptionExpirationTimeMinutes=5\n",
         {"max_unacked_messages_per_subscription": 0, "subscription_expiration_minutes": 5}),
        ("managedLedgerMaxSizePerLedgerMbytes=2\ndispatcherMaxReadBatchSize=50\n",
         {"segment_max_bytes": 2 * 1024 * 1024, "dispatch_batch_entries": 50}),
        ("managedLedgerMinLedgerRolloverTimeMinutes=0\nmanagedLedgerMaxLedgerRolloverTimeMinutes=60\n",
         {"segment_min_rollover_minutes": 0, "segment_max_rollover_minutes": 60}),
        ("managedLedgerCacheSizeMB=32\nmanagedLedgerCacheEvictionTimeThresholdMillis=2500\n",
         {"entry_cache_total_bytes": 32 * 1024 * 1024, "entry_cache_eviction_seconds": 2.5}),
        ("managedLedgerDefaultMarkDeleteRateLimit=0.5\n", {"mark_delete_rate_limit": 0.5}),
        ("managedLedgerDefaultMarkDeleteRateLimit=0\n", {"mark_delete_rate_limit": 0.0}),
    ],
)
def test_keys_map_to_magnetar_settings(text: str, expected: dict[str, object]) -> None:
    conf = load_pulsar_conf(text)
    assert conf.settings == expected
    assert conf.ignored == []


def test_fixed_values_and_magnetar_names() -> None:
    assert load_pulsar_conf("clusterName=standalone\ndelayedDeliveryEnabled=true\n").ignored == []
    conf = load_pulsar_conf("clusterName=prod\ndelayedDeliveryEnabled=false\n")
    assert conf.ignored == ["delayedDeliveryEnabled"]
    assert conf.settings["cluster_name"] == "prod"
    conf = load_pulsar_conf("fsync=never\nsegment_max_bytes=8192\n", magnetar_settings={"fsync", "segment_max_bytes"})
    assert conf.settings == {"fsync": "never", "segment_max_bytes": "8192"}
    assert load_pulsar_conf("fsync=never\n").ignored == ["fsync"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("brokerServicePort=66x", "brokerServicePort: '66x' is not an integer"),
        ("webServicePort=70000", "webServicePort: 70000 is not a port number (0-65535)"),
        ("maxMessageSize=0", "maxMessageSize: 0 must be positive"),
        ("brokerDeduplicationEnabled=yes", "brokerDeduplicationEnabled: 'yes' is not true or false"),
        ("maxUnackedMessagesPerConsumer=-5", "maxUnackedMessagesPerConsumer: -5 must not be negative"),
        ("managedLedgerDefaultMarkDeleteRateLimit=fast", "managedLedgerDefaultMarkDeleteRateLimit: 'fast' is not a number"),
        ("managedLedgerDefaultMarkDeleteRateLimit=-1", "managedLedgerDefaultMarkDeleteRateLimit: -1.0 must not be negative"),
        ("defaultRetentionTimeInMinutes=-2", "defaultRetentionTimeInMinutes: -2 must be -1 (no limit), 0 or positive"),
        ("delayedDeliveryTickTimeMillis=0", "delayedDeliveryTickTimeMillis: must be at least 1 millisecond"),
        ("schemaCompatibilityStrategy=LOOSE", "schemaCompatibilityStrategy: 'LOOSE' is not one of"),
        ("allowAutoTopicCreationType=sometimes", "allowAutoTopicCreationType: 'sometimes' is not partitioned"),
        ("allowAutoTopicCreationType=partitioned\ndefaultNumPartitions=0", "defaultNumPartitions: 0 must be positive"),
        ("authenticationEnabled=maybe", "authenticationEnabled: 'maybe' is not true or false"),
        ("authenticationEnabled=true\nauthenticationProviders=org.apache.pulsar.broker.authentication."
         "AuthenticationProviderToken", "tokenSecretKey: the token provider needs"),
    ],
)
def test_an_invalid_value_is_one_line_naming_the_key(text: str, message: str) -> None:
    with pytest.raises(PulsarConfError) as info:
        load_pulsar_conf(text)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("standalone.conf", "", True),
        ("broker.properties", "a = 1", True),
        ("magnetar.toml", "brokerServicePort=6650", False),
        ("settings", "brokerServicePort=6650\n", True),
        ("settings", "# pulsar\nclusterName=standalone\n", True),
        ("settings", 'port = 6650\nfsync = "never"\n', False),
        ("settings", "[broker]\nport = 6650\n", False),
        ("settings", "someKey=bare words\n", True),
    ],
)
def test_looks_like_pulsar_conf(name: str, text: str, expected: bool) -> None:
    assert looks_like_pulsar_conf(Path(name), text) is expected


@settings(max_examples=200, deadline=2000)
@given(st.text(max_size=300) | st.lists(st.sampled_from([
    "brokerServicePort=", "brokerServicePort=x", "maxMessageSize=5", "tlsProtocols=TLSv1.2", "a\\", "=", "\\u12",
    "authenticationEnabled=true", "superUserRoles=,", "allowAutoTopicCreationType=partitioned", "k:v", "#x",
]), max_size=10).map("\n".join))
def test_any_text_parses_or_names_a_key(text: str) -> None:
    try:
        load_pulsar_conf(text)
    except PulsarConfError as exc:
        assert exc.key and "\n" not in str(exc)
