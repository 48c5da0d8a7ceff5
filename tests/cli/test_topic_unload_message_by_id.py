"""`magnetar admin topics unload` and `get-message-by-id`, as pulsar-admin spells them."""

from __future__ import annotations

import time

import pulsar


def test_unload_and_get_message_by_id(admin, broker, uid: str) -> None:  # noqa: ANN001 - fixtures
    topic = f"persistent://public/default/cli-unload-{uid}"
    client = pulsar.Client(broker.service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer(topic, batching_enabled=False)
        ids = [producer.send(f"msg-{i}".encode(), properties={"n": str(i)}) for i in range(3)]
        second = ids[1]
        got = admin("topics", "get-message-by-id", topic, "-l", str(second.ledger_id()), "-e",
                    str(second.entry_id()), json_output=True).json()
        assert [(m["payload"], m["properties"]) for m in got] == [("msg-1", {"n": "1"})]
        assert got[0]["messageId"] == f"{second.ledger_id()}:{second.entry_id()}"
        r = admin("topics", "get-message-by-id", topic, "--ledgerId", str(second.ledger_id()), "--entryId", "99")
        assert (r.exit_code, r.stderr.strip()) == (1, "error: 404 Not Found: Message not found")

        before = admin("topics", "stats", topic, json_output=True).json()["publishers"][0]["connectedSince"]
        time.sleep(0.01)
        assert admin("topics", "unload", topic).exit_code == 0
        deadline = time.monotonic() + 20
        while True:
            publishers = admin("topics", "stats", topic, json_output=True).json()["publishers"]
            if publishers and publishers[0]["connectedSince"] != before:
                break
            assert time.monotonic() < deadline, "the producer did not reconnect after the unload"
            time.sleep(0.1)
        producer.send(b"after the unload")
    finally:
        client.close()
    r = admin("topics", "unload", f"persistent://public/default/cli-unload-missing-{uid}")
    assert r.exit_code == 1 and r.stderr.startswith("error: 404 Not Found")
