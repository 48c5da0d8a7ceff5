"""``magnetar admin`` commands of the issue-#28 policies (generated from the registry), against a
broker: set, get, remove, and a bad value refused in one line."""

from __future__ import annotations


def test_namespace_limit_and_flag_commands(admin, uid: str) -> None:  # noqa: ANN001 - fixtures
    ns = f"public/cli-sp-{uid}"
    assert admin("namespaces", "create", ns).exit_code == 0
    for stem, flag, value in (
        ("max-consumers-per-topic", "-c", "6"),
        ("max-subscriptions-per-topic", "-m", "7"),
        ("max-topics-per-namespace", "-t", "100"),
        ("max-unacked-messages-per-subscription", "-c", "1000"),
        ("deduplication-snapshot-interval", "-i", "30"),
    ):
        assert admin("namespaces", f"set-{stem}", ns, flag, value).exit_code == 0, stem
        assert admin("namespaces", f"get-{stem}", ns).stdout.strip() == value, stem
        assert admin("namespaces", f"remove-{stem}", ns).exit_code == 0, stem
    assert admin("namespaces", "get-max-topics-per-namespace", ns).stdout.strip() == "0"
    assert admin("namespaces", "get-max-consumers-per-topic", ns).stdout.strip() == "null"
    for stem, unset in (("encryption-required", "false"), ("is-allow-auto-update-schema", "true"),
                        ("schema-validation-enforce", "false")):
        assert admin("namespaces", f"get-{stem}", ns).stdout.strip() == unset, stem
        flag = "--disable" if unset == "true" else "--enable"
        assert admin("namespaces", f"set-{stem}", ns, flag).exit_code == 0, stem
        assert admin("namespaces", f"get-{stem}", ns).stdout.strip() == ("false" if unset == "true" else "true"), stem
    r = admin("namespaces", "set-max-consumers-per-topic", ns, "-c", "-1")
    assert (r.exit_code, r.stderr.strip()) == (1, "error: 412 Precondition Failed: maxConsumersPerTopic must be 0 or more")


def test_topic_limit_commands(admin, uid: str) -> None:  # noqa: ANN001 - fixtures
    topic = f"persistent://public/default/cli-sp-{uid}"
    assert admin("topics", "create", topic).exit_code == 0
    assert admin("topics", "set-max-consumers", topic, "-c", "3").exit_code == 0
    assert admin("topics", "get-max-consumers", topic).stdout.strip() == "3"
    assert admin("topics", "set-max-subscriptions", topic, "-m", "2").exit_code == 0
    assert admin("topics", "get-max-subscriptions", topic).stdout.strip() == "2"
    assert admin("topics", "remove-max-subscriptions", topic).exit_code == 0
    assert admin("topics", "get-max-subscriptions", topic).stdout.strip() == "null"
    assert admin("topics", "set-schema-validation-enforce", topic, "--enable").exit_code == 0
    assert admin("topics", "get-schema-validation-enforce", topic).stdout.strip() == "true"
