"""A handle closed while it registers again leaves nothing behind on the broker."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid

from magnetar.client import Client
from magnetar.testing import BrokerProcess


def _http(broker: BrokerProcess, method: str, path: str) -> bytes:
    request = urllib.request.Request(broker.http_url + path, method=method)
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read()


def _publishers(broker: BrokerProcess, topic: str) -> list:
    try:
        stats = json.loads(_http(broker, "GET", f"/admin/v2/persistent/public/default/{topic}/stats"))
    except urllib.error.HTTPError as exc:
        assert exc.code == 404
        return []
    return stats["publishers"]


def test_producer_closed_after_a_forced_delete_is_not_registered_again(broker: BrokerProcess, client: Client) -> None:
    names = [f"churn-{uuid.uuid4().hex[:8]}" for _ in range(5)]
    for name in names:
        _http(broker, "PUT", f"/admin/v2/persistent/public/default/{name}")
        producer = client.create_producer(f"persistent://public/default/{name}")
        producer.send(b"x")
        # the broker closes the producer (the client starts registering again) and the application closes it
        _http(broker, "DELETE", f"/admin/v2/persistent/public/default/{name}?force=true")
        producer.close()
    time.sleep(1.5)  # longer than a reconnection attempt takes on a local broker
    assert {name: _publishers(broker, name) for name in names} == {name: [] for name in names}
