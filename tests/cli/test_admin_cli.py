"""`magnetar admin`: pulsar-admin verbs against a real broker, errors on one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pulsar

BIN = Path(sys.executable).with_name("magnetar")


def test_help_everywhere(admin) -> None:  # noqa: ANN001 - fixture
    for args in (["--help"], ["clusters", "--help"], ["tenants", "--help"], ["namespaces", "--help"],
                 ["topics", "--help"], ["topics", "create-partitioned-topic", "--help"],
                 ["namespaces", "set-message-ttl", "--help"], ["topics", "reset-cursor", "--help"]):
        r = admin(*args)
        assert r.exit_code == 0, (args, r.stdout, r.stderr)
        assert "Usage" in r.stdout


def test_tenant_namespace_policy_verbs(admin, uid: str) -> None:  # noqa: ANN001
    t = f"cli-{uid}"
    assert admin("clusters", "list", json_output=True).json() == ["standalone"]
    assert admin("tenants", "create", t, "--allowed-clusters", "standalone", "-r", "ops").exit_code == 0
    assert t in admin("tenants", "list", json_output=True).json()
    assert admin("tenants", "get", t, json_output=True).json() == {"adminRoles": ["ops"], "allowedClusters": ["standalone"]}
    r = admin("tenants", "create", t, "--allowed-clusters", "standalone")
    assert r.exit_code == 1
    assert r.stderr.strip() == "error: 409 Conflict: Tenant already exists"
    assert admin("namespaces", "create", f"{t}/ns").exit_code == 0
    assert admin("namespaces", "list", t, json_output=True).json() == [f"{t}/ns"]
    assert admin("namespaces", "set-message-ttl", f"{t}/ns", "--ttl", "60").exit_code == 0
    assert admin("namespaces", "get-message-ttl", f"{t}/ns").stdout.strip() == "60"
    assert admin("namespaces", "set-retention", f"{t}/ns", "-t", "2h", "-s", "1G").exit_code == 0
    assert admin("namespaces", "get-retention", f"{t}/ns", json_output=True).json() == {
        "retentionTimeInMinutes": 120, "retentionSizeInMB": 1024}
    assert admin("namespaces", "set-deduplication", f"{t}/ns", "--enable").exit_code == 0
    assert admin("namespaces", "get-deduplication", f"{t}/ns").stdout.strip() == "true"
    assert admin("namespaces", "set-backlog-quota", f"{t}/ns", "-l", "10M", "-p", "producer_exception").exit_code == 0
    quotas = admin("namespaces", "get-backlog-quotas", f"{t}/ns", json_output=True).json()
    assert quotas["destination_storage"]["limitSize"] == 10 * 1024 * 1024
    assert admin("namespaces", "set-auto-topic-creation", f"{t}/ns", "-e", "-t", "partitioned", "-n", "2").exit_code == 0
    assert admin("namespaces", "get-auto-topic-creation", f"{t}/ns", json_output=True).json()["defaultNumPartitions"] == 2
    assert admin("namespaces", "set-schema-compatibility-strategy", f"{t}/ns", "-c", "backward").exit_code == 0
    assert admin("namespaces", "get-schema-compatibility-strategy", f"{t}/ns").stdout.strip() == "BACKWARD"
    policies = admin("namespaces", "policies", f"{t}/ns", json_output=True).json()
    assert policies["message_ttl_in_seconds"] == 60
    assert admin("namespaces", "remove-message-ttl", f"{t}/ns").exit_code == 0
    assert admin("namespaces", "get-message-ttl", f"{t}/ns").stdout.strip() == "null"
    r = admin("namespaces", "set-message-ttl", f"{t}/ns", "--ttl", "soon")
    assert r.exit_code == 1 and r.stderr.startswith("error: invalid duration")
    r = admin("tenants", "delete", t)
    assert (r.exit_code, r.stderr.strip()) == (1, "error: 409 Conflict: The tenant still has active namespaces")
    assert admin("namespaces", "delete", f"{t}/ns").exit_code == 0
    assert admin("tenants", "delete", t).exit_code == 0


def test_topic_verbs_with_traffic(admin, broker, uid: str) -> None:  # noqa: ANN001
    topic = f"persistent://public/default/cli-{uid}"
    assert admin("topics", "create-partitioned-topic", topic, "-p", "4").exit_code == 0
    assert admin("topics", "get-partitioned-topic-metadata", topic, json_output=True).json() == {"partitions": 4}
    assert topic in admin("topics", "list-partitioned-topics", "public/default", json_output=True).json()
    assert admin("topics", "update-partitioned-topic", topic, "-p", "6").exit_code == 0
    r = admin("topics", "update-partitioned-topic", topic, "-p", "2")
    assert r.exit_code == 1
    assert r.stderr.strip() == "error: 422 Unprocessable Entity: Expect partitions 2 can't less than current partitions 6."
    plain = f"persistent://public/default/cli-plain-{uid}"
    assert admin("topics", "create", plain).exit_code == 0
    assert admin("topics", "create-subscription", plain, "-s", "sub", "-m", "earliest").exit_code == 0
    client = pulsar.Client(broker.service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer(plain)
        for i in range(10):
            producer.send(f"msg-{i}".encode(), properties={"n": str(i)})
        producer.close()
    finally:
        client.close()
    stats = admin("topics", "stats", plain, json_output=True).json()
    assert stats["msgInCounter"] == 10
    assert stats["subscriptions"]["sub"]["msgBacklog"] == 10
    table = admin("topics", "stats", plain)
    assert table.exit_code == 0 and "msgInCounter" in table.stdout and "sub" in table.stdout
    peeked = admin("topics", "peek-messages", plain, "-s", "sub", "-n", "3", json_output=True).json()
    assert [m["payload"] for m in peeked] == ["msg-0", "msg-1", "msg-2"]
    assert peeked[1]["properties"] == {"n": "1"}
    assert "msg-0" in admin("topics", "peek-messages", plain, "-s", "sub").stdout
    examined = admin("topics", "examine-message", plain, "-i", "latest", "-m", "1", json_output=True).json()
    assert examined[0]["payload"] == "msg-9"
    assert admin("topics", "skip", plain, "-s", "sub", "-n", "4").exit_code == 0
    assert admin("topics", "stats", plain, json_output=True).json()["subscriptions"]["sub"]["msgBacklog"] == 6
    assert admin("topics", "reset-cursor", plain, "-s", "sub", "-t", "60m").exit_code == 0
    assert admin("topics", "stats", plain, json_output=True).json()["subscriptions"]["sub"]["msgBacklog"] == 10
    assert admin("topics", "clear-backlog", plain, "-s", "sub").exit_code == 0
    assert admin("topics", "stats", plain, json_output=True).json()["subscriptions"]["sub"]["msgBacklog"] == 0
    assert admin("topics", "reset-cursor", plain, "-s", "sub", "-m", "earliest").exit_code == 0
    assert admin("topics", "stats", plain, json_output=True).json()["subscriptions"]["sub"]["msgBacklog"] == 10
    assert admin("topics", "expire-messages", plain, "-s", "sub", "-t", "0").exit_code == 0
    assert admin("topics", "subscriptions", plain, json_output=True).json() == ["sub"]
    internal = admin("topics", "stats-internal", plain, json_output=True).json()
    assert internal["numberOfEntries"] == 10
    assert admin("topics", "last-message-id", plain, json_output=True).json()["entryId"] == 9
    assert admin("topics", "lookup", plain, json_output=True).json()["brokerUrl"] == broker.service_url
    assert admin("topics", "set-message-ttl", plain, "-t", "30").exit_code == 0
    assert admin("topics", "get-message-ttl", plain).stdout.strip() == "30"
    assert admin("topics", "compaction-status", plain, json_output=True).json()["status"] == "NOT_RUN"
    r = admin("topics", "terminate", plain, json_output=True)
    assert r.exit_code == 0 and r.json() == {"ledgerId": internal["ledgers"][0]["ledgerId"], "entryId": 9, "partitionIndex": -1}
    assert admin("topics", "unsubscribe", plain, "-s", "sub").exit_code == 0
    assert admin("topics", "delete", plain).exit_code == 0
    r = admin("topics", "delete", plain)
    assert (r.exit_code, r.stderr.strip()) == (1, f"error: 404 Not Found: Topic {plain} not found")
    assert admin("topics", "delete-partitioned-topic", topic).exit_code == 0


def test_errors_are_one_line(admin) -> None:  # noqa: ANN001
    cases = [
        (("tenants", "get", "no-such"), "error: 404 Not Found: Tenant does not exist"),
        (("namespaces", "create", "no-such/ns"), "error: 404 Not Found: Tenant does not exist"),
        (("namespaces", "set-message-ttl", "public/default", "--ttl", "-1"),
         "error: 412 Precondition Failed: Invalid value for message TTL, message TTL must >= 0"),
        (("topics", "create-partitioned-topic", "persistent://public/default/neg", "-p", "-2"),
         "error: 406 Not Acceptable: Number of partitions should be more than 0"),
        (("topics", "stats", "persistent://public/default/nothing-here"),
         "error: 404 Not Found: Topic persistent://public/default/nothing-here not found"),
        (("namespaces", "create", "bad"), "error: invalid namespace 'bad': expected tenant/namespace"),
    ]
    for args, line in cases:
        r = admin(*args)
        assert r.exit_code == 1, args
        assert r.stderr.strip() == line
        assert r.stderr.count("\n") == 1
        assert r.stdout == ""


def test_real_entry_point(broker) -> None:  # noqa: ANN001
    env = {**os.environ, "MAGNETAR_ADMIN_URL": broker.http_url, "COLUMNS": "120"}
    ok = subprocess.run([str(BIN), "admin", "--json", "tenants", "list"], capture_output=True, text=True, env=env, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert "public" in ok.stdout
    bad = subprocess.run([str(BIN), "admin", "tenants", "create", "public", "-c", "standalone"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 1
    assert bad.stderr == "error: 409 Conflict: Tenant already exists\n"
    down = subprocess.run([str(BIN), "admin", "--admin-url", "http://127.0.0.1:1", "clusters", "list"],
                          capture_output=True, text=True, timeout=60)
    assert down.returncode == 1
    assert down.stderr.startswith("error: cannot reach http://127.0.0.1:1") and down.stderr.count("\n") == 1
