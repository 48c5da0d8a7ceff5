"""``magnetar admin namespaces|topics set-/get-/remove-<rate>``: pulsar-admin's flags and bodies."""

from __future__ import annotations


def test_namespace_rate_commands(admin, uid: str) -> None:  # noqa: ANN001
    t, ns = f"rate-{uid}", f"rate-{uid}/ns"
    assert admin("tenants", "create", t, "--allowed-clusters", "standalone").exit_code == 0
    assert admin("namespaces", "create", ns).exit_code == 0
    steps = [
        (("set-publish-rate", "-m", "100", "-b", "1000"), "get-publish-rate",
         {"publishThrottlingRateInMsg": 100, "publishThrottlingRateInByte": 1000}),
        (("set-dispatch-rate", "-md", "100", "-bd", "1000", "-dt", "2"), "get-dispatch-rate",
         {"dispatchThrottlingRateInMsg": 100, "dispatchThrottlingRateInByte": 1000, "relativeToPublishRate": False,
          "ratePeriodInSecond": 2}),
        (("set-subscription-dispatch-rate", "-md", "50", "-bd", "500", "-dt", "1", "-rp"),
         "get-subscription-dispatch-rate",
         {"dispatchThrottlingRateInMsg": 50, "dispatchThrottlingRateInByte": 500, "relativeToPublishRate": True,
          "ratePeriodInSecond": 1}),
        (("set-subscribe-rate", "-sr", "10", "-st", "30"), "get-subscribe-rate",
         {"subscribeThrottlingRatePerConsumer": 10, "ratePeriodInSecond": 30}),
        (("set-replicator-dispatch-rate", "-md", "10", "-bd", "100", "-dt", "1"), "get-replicator-dispatch-rate",
         {"dispatchThrottlingRateInMsg": 10, "dispatchThrottlingRateInByte": 100, "relativeToPublishRate": False,
          "ratePeriodInSecond": 1}),
        (("set-inactive-topic-policies", "-e", "-t", "1h", "-m", "delete_when_no_subscriptions"),
         "get-inactive-topic-policies",
         {"inactiveTopicDeleteMode": "delete_when_no_subscriptions", "maxInactiveDurationSeconds": 3600,
          "deleteWhileInactive": True}),
    ]
    for set_args, get_verb, expected in steps:
        r = admin("namespaces", set_args[0], ns, *set_args[1:])
        assert r.exit_code == 0, (set_args, r.stdout, r.stderr)
        assert admin("namespaces", get_verb, ns, json_output=True).json() == expected, get_verb
        remove_verb = get_verb.replace("get-", "remove-", 1)
        assert admin("namespaces", remove_verb, ns).exit_code == 0, remove_verb
        assert admin("namespaces", get_verb, ns).stdout.strip() == "null", get_verb


def test_topic_rate_commands_and_bad_flags(admin, uid: str) -> None:  # noqa: ANN001
    t, ns = f"rate-{uid}", f"rate-{uid}/ns"
    assert admin("tenants", "create", t, "--allowed-clusters", "standalone").exit_code == 0
    assert admin("namespaces", "create", ns).exit_code == 0
    topic = f"persistent://{ns}/t"
    assert admin("topics", "create", topic).exit_code == 0
    assert admin("topics", "set-publish-rate", topic, "-m", "5").exit_code == 0
    assert admin("topics", "get-publish-rate", topic, json_output=True).json() == {
        "publishThrottlingRateInMsg": 5, "publishThrottlingRateInByte": -1}
    assert admin("topics", "get-subscribe-rate", topic, "--applied", json_output=True).json() == {
        "subscribeThrottlingRatePerConsumer": 0, "ratePeriodInSecond": 30}
    r = admin("topics", "set-inactive-topic-policies", topic, "-e", "-t", "1h", "-m", "never")
    assert r.exit_code == 1
    assert r.stderr.strip() == (
        "error: --delete-mode must be delete_when_no_subscriptions or delete_when_subscriptions_caught_up")
    r = admin("topics", "set-inactive-topic-policies", topic, "-t", "1h", "-m", "delete_when_no_subscriptions")
    assert r.exit_code == 1
    assert "exactly one of --enable-delete-while-inactive or --disable-delete-while-inactive" in r.stderr
