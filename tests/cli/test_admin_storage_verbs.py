"""`magnetar admin` commands of the non-policy pulsar-admin verbs: cluster peers, failure domains and
migration; namespace properties; the topic storage and subscription-state verbs."""

from __future__ import annotations

import magnetar.client
from magnetar.testing import BrokerProcess


def test_cluster_topology_commands(admin, uid: str) -> None:  # noqa: ANN001 - fixture
    c = f"c-{uid}"
    assert admin("clusters", "create", c, "--url", "http://127.0.0.1:9").exit_code == 0
    assert admin("clusters", "update-peer-clusters", c, "--peer-clusters", "standalone").exit_code == 0
    assert admin("clusters", "get-peer-clusters", c, json_output=True).json() == ["standalone"]
    r = admin("clusters", "update-peer-clusters", c, "--peer-clusters", "nowhere")
    assert (r.exit_code, r.stderr.strip()) == (1, "error: 412 Precondition Failed: Peer cluster nowhere does not exist")
    assert admin("clusters", "create-failure-domain", c, "--domain-name", "d1", "--broker-list", "127.0.0.1:9,127.0.0.1:10").exit_code == 0
    assert admin("clusters", "get-failure-domain", c, "-dn", "d1", json_output=True).json() == {"brokers": ["127.0.0.1:9", "127.0.0.1:10"]}
    assert admin("clusters", "update-failure-domain", c, "--domain-name", "d1", "-b", "127.0.0.1:11").exit_code == 0
    assert admin("clusters", "list-failure-domains", c, json_output=True).json() == {"d1": {"brokers": ["127.0.0.1:11"]}}
    assert admin("clusters", "delete-failure-domain", c, "--domain-name", "d1").exit_code == 0
    assert admin("clusters", "list-failure-domains", c, json_output=True).json() == {}
    assert admin("clusters", "update-cluster-migration", c, "--migrated", "--broker-url", "pulsar://127.0.0.1:9").exit_code == 0
    got = admin("clusters", "get-cluster-migration", c, json_output=True).json()
    assert got["migrated"] is True and got["migratedClusterUrl"]["brokerServiceUrl"] == "pulsar://127.0.0.1:9"
    assert admin("clusters", "delete", c).exit_code == 0


def test_namespace_property_commands(admin, uid: str) -> None:  # noqa: ANN001
    ns = f"public/props-{uid}"
    assert admin("namespaces", "create", ns).exit_code == 0
    assert admin("namespaces", "set-property", ns, "-k", "a", "-v", "x1").exit_code == 0
    assert admin("namespaces", "get-property", ns, "-k", "a").stdout.strip() == "x1"
    assert admin("namespaces", "set-properties", ns, "-p", "b=2,c=3").exit_code == 0
    assert admin("namespaces", "get-properties", ns, json_output=True).json() == {"a": "x1", "b": "2", "c": "3"}
    assert admin("namespaces", "remove-property", ns, "-k", "a").stdout.strip() == "x1"
    assert admin("namespaces", "clear-properties", ns).exit_code == 0
    assert admin("namespaces", "get-properties", ns, json_output=True).json() == {}
    r = admin("namespaces", "set-properties", ns, "-p", "novalue")
    assert (r.exit_code, r.stderr.strip()) == (1, "error: invalid property 'novalue': expected key=value")


def test_topic_storage_commands(admin, broker: BrokerProcess, uid: str) -> None:  # noqa: ANN001
    topic = f"persistent://public/default/cli-storage-{uid}"
    assert admin("topics", "create-subscription", topic, "-s", "s1", "-m", "earliest").exit_code == 0
    client = magnetar.client.Client(broker.service_url)
    try:
        producer = client.create_producer(topic)
        ids = [producer.send(b"m%d" % i) for i in range(4)]
    finally:
        client.close()
    lid, first = ids[0].ledger_id(), ids[0].entry_id()
    got = admin("topics", "get-message-id", topic, "-d", "2020-01-01T00:00:00Z", json_output=True).json()
    assert (got["ledgerId"], got["entryId"]) == (lid, first)
    r = admin("topics", "get-message-id", topic, "-d", "yesterday")
    assert r.exit_code == 1 and r.stderr.startswith("error: invalid date and time 'yesterday'")
    total = int(admin("topics", "get-backlog-size", topic).stdout.strip())
    assert total > 0
    assert 0 < int(admin("topics", "get-backlog-size", topic, "-m", f"{lid}:{first + 2}").stdout.strip()) < total
    assert admin("topics", "analyze-backlog", topic, "-s", "s1", json_output=True).json()["messages"] == 4
    assert admin("topics", "info-internal", topic, json_output=True).json()["ledgers"][0]["ledgerId"] == lid
    assert admin("topics", "offload-status", topic, json_output=True).json()["status"] == "NOT_RUN"
    assert admin("topics", "update-subscription-properties", topic, "-s", "s1", "-p", "k=v").exit_code == 0
    assert admin("topics", "get-subscription-properties", topic, "-s", "s1", json_output=True).json() == {"k": "v"}
    assert admin("topics", "update-subscription-properties", topic, "-s", "s1", "--clear").exit_code == 0
    assert admin("topics", "get-subscription-properties", topic, "-s", "s1", json_output=True).json() == {}
    assert admin("topics", "set-replicated-subscription-status", topic, "-s", "s1", "--enable").exit_code == 0
    assert admin("topics", "get-replicated-subscription-status", topic, "-s", "s1", json_output=True).json() == {topic: True}
    assert admin("topics", "trim-topic", topic).exit_code == 0
    assert admin("topics", "truncate", topic).exit_code == 0
    assert admin("topics", "analyze-backlog", topic, "-s", "s1", json_output=True).json()["messages"] == 0
