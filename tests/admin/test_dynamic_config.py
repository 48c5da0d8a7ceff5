"""Pulsar's dynamic configuration (pulsar-admin brokers update-dynamic-config / delete-dynamic-config):
an override applies at once, is kept in the metadata store across a restart, and its deletion brings
back the configuration file's value."""

from __future__ import annotations

from pathlib import Path

import pytest

import magnetar.client
from magnetar.testing import BrokerProcess

from .admin_http import Http

TOPIC = "persistent://public/default/dyn"


def _second_producer_allowed(broker: BrokerProcess) -> bool:
    client = magnetar.client.Client(broker.service_url, operation_timeout_seconds=5)
    try:
        client.create_producer(TOPIC)
        try:
            client.create_producer(TOPIC)
        except magnetar.client.PulsarException:
            return False
        return True
    finally:
        client.close()


def test_an_override_applies_at_once_survives_a_restart_and_is_deleted(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with BrokerProcess(data, args=("--fsync", "never")) as broker:
        http = Http(broker.http_url)
        assert http.get("/admin/v2/brokers/configuration/values").json() == {}
        assert _second_producer_allowed(broker)
        assert http.post("/admin/v2/brokers/configuration/maxProducersPerTopic/1").status == 204
        assert http.get("/admin/v2/brokers/configuration/values").json() == {"maxProducersPerTopic": "1"}
        assert http.get("/admin/v2/brokers/configuration/runtime").json()["maxProducersPerTopic"] == "1"
        assert not _second_producer_allowed(broker)
    with BrokerProcess(data, args=("--fsync", "never")) as broker:
        http = Http(broker.http_url)
        assert http.get("/admin/v2/brokers/configuration/values").json() == {"maxProducersPerTopic": "1"}
        assert not _second_producer_allowed(broker)
        assert http.delete("/admin/v2/brokers/configuration/maxProducersPerTopic").status == 204
        assert http.get("/admin/v2/brokers/configuration/values").json() == {}
        assert http.get("/admin/v2/brokers/configuration/runtime").json()["maxProducersPerTopic"] == "0"
        assert _second_producer_allowed(broker)


def test_allow_auto_topic_creation_is_dynamic(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "data", args=("--fsync", "never")) as broker:
        http = Http(broker.http_url)
        assert http.post("/admin/v2/brokers/configuration/allowAutoTopicCreation/false").status == 204
        client = magnetar.client.Client(broker.service_url, operation_timeout_seconds=5)
        try:
            with pytest.raises(magnetar.client.PulsarException):
                client.create_producer("persistent://public/default/not-created")
        finally:
            client.close()
        assert http.get("/admin/v2/persistent/public/default").json() == []


def test_the_dispatch_rate_default_is_dynamic(http: Http, name: str) -> None:
    """dispatchThrottlingRatePerTopicInMsg (the rate limits' broker default) changes a topic's applied dispatch rate."""
    path = f"/admin/v2/persistent/public/default/{name}"
    assert http.put(path).status == 204
    assert http.post("/admin/v2/brokers/configuration/dispatchThrottlingRatePerTopicInMsg/1000").status == 204
    try:
        assert http.get("/admin/v2/brokers/configuration/values").json()["dispatchThrottlingRatePerTopicInMsg"] == "1000"
        assert http.get(path + "/dispatchRate?applied=true").json()["dispatchThrottlingRateInMsg"] == 1000
    finally:
        assert http.delete("/admin/v2/brokers/configuration/dispatchThrottlingRatePerTopicInMsg").status == 204
    assert http.get(path + "/dispatchRate?applied=true").json()["dispatchThrottlingRateInMsg"] == 0
