"""pulsar-admin's storage verbs over REST (info-internal, partitioned-stats-internal, get-backlog-size,
get-message-id, offload-status, trim-topic, truncate) and the subscription state verbs (analyze-backlog,
subscription properties, replicated subscription status), with messages published by magnetar.client."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

import magnetar.client
from magnetar.testing import BrokerProcess

from .admin_http import Http

NS = "public/default"


def _topic(name: str) -> str:
    return f"persistent://{NS}/{name}"


def _path(name: str) -> str:
    return f"/admin/v2/persistent/{NS}/{name}"


def _publish(url: str, topic: str, payloads: list[bytes], batch: bool = False) -> list[magnetar.client.MessageId]:
    client = magnetar.client.Client(url)
    try:
        producer = client.create_producer(topic, batching_enabled=batch)
        if batch:
            for payload in payloads:
                producer.send_async(payload, None)
            producer.flush()
            ids: list = []
        else:
            ids = [producer.send(p) for p in payloads]
        producer.close()
        return ids
    finally:
        client.close()


def test_message_id_by_time_is_the_first_message_at_or_after_it(http: Http, broker: BrokerProcess, name: str) -> None:
    assert http.put(_path(name)).status == 204
    before = int(time.time() * 1000) - 1
    first = _publish(broker.service_url, _topic(name), [b"a", b"b"])
    time.sleep(0.05)
    middle = int(time.time() * 1000)
    second = _publish(broker.service_url, _topic(name), [b"c"])
    got = http.get(_path(name) + f"/messageid/{before}").json()
    assert got == {"ledgerId": first[0].ledger_id(), "entryId": first[0].entry_id(), "partitionIndex": -1}
    got = http.get(_path(name) + f"/messageid/{middle}").json()
    assert (got["ledgerId"], got["entryId"]) == (second[0].ledger_id(), second[0].entry_id())
    r = http.get(_path(name) + f"/messageid/{int(time.time() * 1000) + 60_000}")
    assert (r.status, r.reason) == (404, "Message ID not found")
    assert http.put(_path(name + "-p") + "/partitions", 2).status == 204
    r = http.get(_path(name + "-p") + f"/messageid/{before}")
    assert r.status == 405
    assert r.reason == (
        "Get message ID by timestamp on a partitioned topic is not allowed, please try do it on specific topic partition"
    )


def test_backlog_size_from_a_message_id(http: Http, broker: BrokerProcess, name: str) -> None:
    assert http.put(_path(name)).status == 204
    assert http.put(_path(name) + "/backlogSize", {"ledgerId": -1, "entryId": -1}).json() == 0
    ids = _publish(broker.service_url, _topic(name), [b"x" * 100] * 10)
    total = http.get(_path(name) + "/internalStats").json()["totalSize"]
    assert total > 1000
    assert http.put(_path(name) + "/backlogSize", {"ledgerId": -1, "entryId": -1}).json() == total
    lid = ids[0].ledger_id()
    from_fifth = http.put(_path(name) + "/backlogSize", {"ledgerId": lid, "entryId": ids[5].entry_id()}).json()
    assert 0 < from_fifth < total
    assert from_fifth == pytest.approx(total / 2, rel=0.2)
    assert http.put(_path(name) + "/backlogSize", {"ledgerId": lid, "entryId": 10_000}).json() == 0
    assert http.put(_path("missing-" + name) + "/backlogSize", {"ledgerId": -1, "entryId": -1}).status == 404


def test_internal_info_and_offload_status(http: Http, broker: BrokerProcess, name: str) -> None:
    assert http.put(_path(name) + "/subscription/s1", {"ledgerId": -1, "entryId": -1}).status == 204
    ids = _publish(broker.service_url, _topic(name), [b"a", b"b", b"c"])
    info = http.get(_path(name) + "/internal-info").json()
    lid = ids[0].ledger_id()
    [ledger] = info["ledgers"]
    assert (ledger["ledgerId"], ledger["isOffloaded"]) == (lid, False)
    assert abs(ledger["timestamp"] - time.time() * 1000) < 60_000
    assert set(info["cursors"]) == {"s1"}
    cursor = info["cursors"]["s1"]
    assert cursor["markDelete"] == {"ledgerId": lid, "entryId": ids[0].entry_id() - 1}
    assert "individualDeletedMessages" not in cursor
    assert info["creationDate"].startswith(time.strftime("%Y-%m-%dT", time.gmtime())) and info["creationDate"].endswith("Z")
    assert http.get(_path(name) + "/offload").json() == {
        "status": "NOT_RUN", "lastError": "", "firstUnoffloadedMessage": {"ledgerId": -1, "entryId": -1, "partitionIndex": -1},
    }
    r = http.get(f"/admin/v2/non-persistent/{NS}/{name}/internal-info")
    assert r.status == 405


def test_partitioned_internal_stats(http: Http, broker: BrokerProcess, name: str) -> None:
    assert http.put(_path(name) + "/partitions", 2).status == 204
    _publish(broker.service_url, _topic(name), [b"a", b"b", b"c", b"d"])
    out = http.get(_path(name) + "/partitioned-internalStats").json()
    assert out["metadata"] == {"partitions": 2}
    assert set(out["partitions"]) == {_topic(name) + "-partition-0", _topic(name) + "-partition-1"}
    assert sum(p["numberOfEntries"] for p in out["partitions"].values()) == 4
    r = http.get(_path(name + "-np") + "/partitioned-internalStats")
    assert (r.status, r.reason) == (404, "Partitioned Topic not found")


def test_analyze_backlog_counts_entries_and_batched_messages(http: Http, broker: BrokerProcess, name: str) -> None:
    assert http.put(_path(name) + "/subscription/s1", {"ledgerId": -1, "entryId": -1}).status == 204
    ids = _publish(broker.service_url, _topic(name), [b"a", b"b"])
    _publish(broker.service_url, _topic(name), [b"c", b"d", b"e"], batch=True)
    out = http.post(_path(name) + "/subscription/s1/analyzeBacklog").json()
    lid = ids[0].ledger_id()
    first = ids[0].entry_id()
    assert out == {
        "entries": 3, "messages": 5,
        "filterRejectedEntries": 0, "filterAcceptedEntries": 3, "filterRescheduledEntries": 0,
        "filterRejectedMessages": 0, "filterAcceptedMessages": 5, "filterRescheduledMessages": 0,
        "aborted": False, "firstMessageId": f"{lid}:{first}", "lastMessageId": f"{lid}:{first + 2}",
    }
    r = http.post(_path(name) + "/subscription/nope/analyzeBacklog")
    assert r.status == 404


def test_subscription_properties_are_replaced_kept_and_forgotten(http: Http, broker: BrokerProcess, name: str) -> None:
    sub = _path(name) + "/subscription/s1"
    assert http.put(sub).status == 204
    assert http.get(sub + "/properties").json() == {}
    assert http.put(sub + "/properties", {"a": "1", "b": "2"}).status == 204
    assert http.get(sub + "/properties").json() == {"a": "1", "b": "2"}
    assert http.put(sub + "/properties", {"c": "3"}).status == 204
    assert http.get(sub + "/properties").json() == {"c": "3"}
    r = http.put(sub + "/properties", {"c": 3})
    assert r.status in (400, 412)
    assert http.get(_path(name) + "/subscription/s2/properties").status == 404
    assert http.delete(sub).status == 204
    assert http.put(sub).status == 204
    assert http.get(sub + "/properties").json() == {}


def test_replicated_subscription_status_is_the_real_state(http: Http, name: str) -> None:
    sub = _path(name) + "/subscription/s1"
    assert http.put(sub).status == 204
    status = sub + "/replicatedSubscriptionStatus"
    assert http.get(status).json() == {_topic(name): False}
    assert http.post(status, True).status == 204
    assert http.get(status).json() == {_topic(name): True}
    assert http.post(status, False).status == 204
    assert http.get(status).json() == {_topic(name): False}
    assert http.get(_path(name) + "/subscription/s9/replicatedSubscriptionStatus").status == 404


@pytest.fixture(scope="module")
def small_segments(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker whose segments roll over every 4 KiB, at once."""
    env = {"MAGNETAR_SEGMENT_MAX_BYTES": "4096", "MAGNETAR_SEGMENT_MIN_ROLLOVER_MINUTES": "0"}
    proc = BrokerProcess(tmp_path_factory.mktemp("small-segments") / "data", args=("--fsync", "never"), env=env).start()
    yield proc
    proc.stop()


def test_truncate_moves_every_cursor_to_the_end_and_releases_the_sealed_segments(
    small_segments: BrokerProcess, name: str
) -> None:
    http = Http(small_segments.http_url)
    for sub in ("s1", "s2"):
        assert http.put(_path(name) + f"/subscription/{sub}", {"ledgerId": -1, "entryId": -1}).status == 204
    _publish(small_segments.service_url, _topic(name), [b"y" * 500] * 40)
    before = http.get(_path(name) + "/stats").json()
    assert before["subscriptions"]["s1"]["msgBacklog"] == 40
    assert before["storageSize"] > 20_000
    assert http.post(_path(name) + "/trim").status == 204  # nothing acknowledged: nothing released
    assert http.get(_path(name) + "/stats").json()["storageSize"] == before["storageSize"]
    assert http.delete(_path(name) + "/truncate").status == 204
    after = http.get(_path(name) + "/stats").json()
    assert [after["subscriptions"][s]["msgBacklog"] for s in ("s1", "s2")] == [0, 0]
    assert after["storageSize"] <= 4096 + 600  # the segment being written is all that is left
    client = magnetar.client.Client(small_segments.service_url)
    try:
        consumer = client.subscribe(_topic(name), "s1")
        _publish(small_segments.service_url, _topic(name), [b"after"])
        assert consumer.receive(timeout_millis=5000).data() == b"after"
    finally:
        client.close()
    assert http.delete(f"/admin/v2/non-persistent/{NS}/{name}/truncate").status == 405


def test_trim_releases_what_every_subscription_acknowledged(small_segments: BrokerProcess, name: str) -> None:
    http = Http(small_segments.http_url)
    assert http.put(_path(name) + "/subscription/s1", {"ledgerId": -1, "entryId": -1}).status == 204
    _publish(small_segments.service_url, _topic(name), [b"z" * 500] * 40)
    full = http.get(_path(name) + "/stats").json()["storageSize"]
    assert http.post(_path(name) + "/subscription/s1/skip_all").status == 204
    assert http.post(_path(name) + "/trim").status == 204
    assert http.get(_path(name) + "/stats").json()["storageSize"] < full / 2


def test_subscription_properties_outlive_a_restart(tmp_path) -> None:  # noqa: ANN001 - pytest's tmp_path
    data = tmp_path / "data"
    topic = _topic("kept")
    with BrokerProcess(data, args=("--fsync", "always")) as broker:
        client = magnetar.client.Client(broker.service_url)
        try:
            client.subscribe(topic, "s1").close()
        finally:
            client.close()
        _publish(broker.service_url, topic, [b"a", b"b"])
        http = Http(broker.http_url)
        assert http.put(_path("kept") + "/subscription/s1/properties", {"owner": "team-a"}).status == 204
    with BrokerProcess(data, args=("--fsync", "always")) as broker:
        http = Http(broker.http_url)
        assert http.get(_path("kept") + "/subscription/s1/properties").json() == {"owner": "team-a"}
        assert http.post(_path("kept") + "/subscription/s1/analyzeBacklog").json()["messages"] == 2
