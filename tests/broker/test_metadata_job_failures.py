"""The broker's metadata writes made by jobs of the metadata thread (a topic's termination marker and
its row's deletion, dynamic configuration, the compactor's records): they run on that thread, not on
the loop; a failed commit answers its error and changes nothing in the broker's memory; concurrent
dynamic configuration changes all land."""

from __future__ import annotations

import concurrent.futures
import json
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.client import Client
from magnetar.storage.metadata import MetadataStore
from magnetar.testing import Admin, AdminError, BrokerThread, free_port
from magnetar.testing.admin import topic_path


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=free_port(), fsync="never")
    with BrokerThread(config) as thread:
        yield thread


def _admin(broker: BrokerThread) -> Admin:
    return Admin(f"http://127.0.0.1:{broker.server.config.http_port}")  # type: ignore[union-attr]


def _loaded_topic(broker: BrokerThread) -> str:
    topic = f"persistent://public/default/jobs-{uuid.uuid4().hex[:8]}"
    client = Client(broker.service_url)
    try:
        client.create_producer(topic).send(b"x")
    finally:
        client.close()
    return topic


class Failing:
    """MetadataStore methods that raise (a full disk) for the keys or names chosen, recording their threads."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, method: str, matches: str) -> None:
        self.threads: list[int] = []
        self.fail = True
        original = getattr(MetadataStore, method)

        def patched(store: MetadataStore, name: str, *args: object) -> object:
            if matches in name:
                self.threads.append(threading.get_ident())
                if self.fail:
                    raise sqlite3.OperationalError("database or disk is full")
            return original(store, name, *args)

        monkeypatch.setattr(MetadataStore, method, patched)


def test_a_termination_whose_marker_fails_answers_500_and_leaves_the_topic_open(
        broker: BrokerThread, monkeypatch: pytest.MonkeyPatch) -> None:
    topic = _loaded_topic(broker)
    failing = Failing(monkeypatch, "put_kv", "terminated/")
    with pytest.raises(AdminError) as refused:
        _admin(broker).request("POST", topic_path(topic) + "/terminate")
    assert refused.value.status == 500
    loaded = broker.server.service.topics[topic]  # type: ignore[union-attr]
    assert not loaded.terminated and failing.threads and broker._thread.ident not in failing.threads
    failing.fail = False
    assert _admin(broker).request("POST", topic_path(topic) + "/terminate")["entryId"] == 0
    assert loaded.terminated


def test_a_deletion_whose_row_fails_answers_500_and_keeps_the_topic(
        broker: BrokerThread, monkeypatch: pytest.MonkeyPatch) -> None:
    topic = _loaded_topic(broker)
    failing = Failing(monkeypatch, "delete_topic", topic)
    with pytest.raises(AdminError) as refused:
        _admin(broker).delete_topic(topic, force=True)
    assert refused.value.status == 500
    service = broker.server.service  # type: ignore[union-attr]
    assert topic in service.topics and not service.topics[topic].closed
    assert failing.threads and broker._thread.ident not in failing.threads
    failing.fail = False
    _admin(broker).delete_topic(topic, force=True)
    assert topic not in service.topics and service.metadata.get_topic(topic) is None


def test_a_dynamic_setting_whose_commit_fails_answers_500_and_is_not_applied(
        broker: BrokerThread, monkeypatch: pytest.MonkeyPatch) -> None:
    admin = _admin(broker)
    config = broker.server.service.config  # type: ignore[union-attr]
    failing = Failing(monkeypatch, "put_kv", "dynamic-configuration")
    with pytest.raises(AdminError) as refused:
        admin.request("POST", "brokers/configuration/maxProducersPerTopic/7")
    assert refused.value.status == 500 and config.max_producers_per_topic == 0
    assert admin.request("GET", "brokers/configuration/values") == {}
    assert failing.threads and broker._thread.ident not in failing.threads
    with pytest.raises(AdminError) as bad:  # bad input: its own error, nothing written
        admin.request("POST", "brokers/configuration/maxProducersPerTopic/seven")
    assert bad.value.status == 412 and len(failing.threads) == 1


def test_concurrent_dynamic_settings_all_land(broker: BrokerThread) -> None:
    admin = _admin(broker)
    keys = ["maxProducersPerTopic", "maxConsumersPerTopic", "maxConsumersPerSubscription", "maxTopicsPerNamespace"]
    with concurrent.futures.ThreadPoolExecutor(len(keys)) as pool:
        list(pool.map(lambda key: admin.request("POST", f"brokers/configuration/{key}/5"), keys))
    expected = dict.fromkeys(keys, "5")
    assert admin.request("GET", "brokers/configuration/values") == expected
    stored = broker.server.service.metadata.get_kv("dynamic-configuration")  # type: ignore[union-attr]
    assert stored is not None and sorted(json.loads(stored)) == sorted(keys)
