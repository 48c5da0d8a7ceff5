"""What `magnetar admin` prints: a line per change, `(none)` for nothing, pulsar-admin's words in
tables, indented JSON for nested documents (tests/cli/conftest.py: the broker and the runner)."""

from __future__ import annotations

import json

import pytest

from magnetar.cli.admin import output


def test_cells_use_pulsar_admins_words() -> None:
    assert [output.cell(v) for v in (True, False, None, 1.5, 3, "x", ["a"], {"k": None})] == [
        "true", "false", "null", "1.500", "3", "x", '["a"]', '{"k":null}',
    ]


def test_print_value(capsys: pytest.CaptureFixture[str]) -> None:
    output.print_value([])
    output.print_value({})
    output.print_value(["a", "b"])
    output.print_value(None)
    output.print_value(False)
    output.print_value({"ledgers": [{"ledgerId": 1}], "state": "LedgerOpened"})
    assert capsys.readouterr().out == "(none)\n(none)\na\nb\nnull\nfalse\n" + json.dumps(
        {"ledgers": [{"ledgerId": 1}], "state": "LedgerOpened"}, indent=2) + "\n"


def test_a_flat_object_is_a_table_of_words(capsys: pytest.CaptureFixture[str]) -> None:
    output.print_value({"offloaded": False, "lastError": None})
    rows = [line for line in capsys.readouterr().out.splitlines() if "offloaded" in line or "lastError" in line]
    assert [row.split()[1:4:2] for row in rows] == [["offloaded", "false"], ["lastError", "null"]]


@pytest.mark.parametrize(("group", "command", "params", "line"), [
    ("tenants", "create", {"tenant": "acme", "admin_roles": None}, "Created tenant acme"),
    ("namespaces", "delete", {"namespace": "acme/ns", "force": False}, "Deleted namespace acme/ns"),
    ("namespaces", "set-message-ttl", {"namespace": "acme/ns", "value": 60}, "Set message ttl of namespace acme/ns"),
    ("topics", "remove-retention", {"topic": "t"}, "Removed retention of topic t"),
    ("topics", "create-partitioned-topic", {"topic": "t", "partitions": 4}, "Created partitioned topic t with 4 partitions"),
    ("topics", "skip", {"topic": "t", "subscription": "s", "count": 3}, "Skipped 3 messages of subscription s on t"),
    ("topics", "unload", {"topic": "t"}, "Unloaded topic t"),
    ("clusters", "create", {"cluster": "east"}, "Created cluster east"),
    ("topics", "frobnicate", {"topic": "t"}, "Done: topics frobnicate t"),
])
def test_done_messages(group: str, command: str, params: dict, line: str) -> None:
    assert output.done_message(group, command, params) == line


def test_changes_say_what_was_done(admin, uid: str) -> None:  # noqa: ANN001 - fixtures
    t = f"out-{uid}"
    assert admin("tenants", "create", t, "--allowed-clusters", "standalone").stdout == f"Created tenant {t}\n"
    assert admin("namespaces", "create", f"{t}/ns").stdout == f"Created namespace {t}/ns\n"
    assert admin("namespaces", "list", t).stdout == f"{t}/ns\n"
    assert admin("topics", "list", f"{t}/ns").stdout == "(none)\n"
    assert admin("namespaces", "set-message-ttl", f"{t}/ns", "--ttl", "60").stdout == f"Set message ttl of namespace {t}/ns\n"
    topic = f"persistent://{t}/ns/events"
    assert admin("topics", "create-partitioned-topic", topic, "-p", "2").stdout == (
        f"Created partitioned topic {topic} with 2 partitions\n")
    assert admin("topics", "create-subscription", f"{topic}-partition-0", "-s", "sub").stdout == (
        f"Created subscription sub on {topic}-partition-0\n")
    # --json: scripts get the answers only
    assert admin("topics", "unsubscribe", f"{topic}-partition-0", "-s", "sub", json_output=True).stdout == ""
    assert admin("topics", "delete-partitioned-topic", topic).stdout == f"Deleted partitioned topic {topic}\n"
    assert admin("namespaces", "delete", f"{t}/ns").stdout == f"Deleted namespace {t}/ns\n"
    assert admin("tenants", "delete", t).stdout == f"Deleted tenant {t}\n"
    r = admin("tenants", "delete", t)
    assert (r.exit_code, r.stdout) == (1, "")


def test_stats_internal_is_indented_json(admin, uid: str) -> None:  # noqa: ANN001 - fixtures
    topic = f"persistent://public/default/internal-{uid}"
    assert admin("topics", "create", topic).exit_code == 0
    r = admin("topics", "stats-internal", topic)
    assert r.exit_code == 0
    stats = json.loads(r.stdout)
    assert r.stdout == json.dumps(stats, indent=2) + "\n"
    assert stats["ledgers"][0]["offloaded"] is False and '"offloaded": false' in r.stdout
