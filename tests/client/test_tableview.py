"""Table views of magnetar's client against a real broker: the latest value per key, what the view
holds when it is created, the changes after it (as the listeners see them), deletes, keyless
messages, schemas, partitioned topics, and the sync face's ``pulsar.TableView`` API."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from magnetar.client import AsyncClient, Client, StringSchema, TableView
from magnetar.testing import BrokerProcess

from .conftest import create_partitioned_topic, run


async def _send(client: AsyncClient, topic: str, pairs: list[tuple[str | None, bytes | None]], **options: Any) -> None:
    producer = await client.create_producer(topic, **options)
    for key, value in pairs:
        await producer.send(value, partition_key=key)
    await producer.close()


async def _until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the table view never caught up"
        await asyncio.sleep(0.02)


def test_a_new_view_holds_the_latest_value_of_each_key(url: str, topic: str) -> None:
    history: list[tuple[str | None, bytes | None]] = [
        ("a", b"a-1"), ("b", b"b-1"), (None, b"no key"), ("a", b"a-2"), ("c", b"c-1"),
        ("b", b""),  # an empty payload deletes b
        ("d", b"d-1"), ("d", None),  # so does a null value
        ("e", b"e-1"),
    ]

    async def main() -> tuple[dict[str, Any], int, Any, bool]:
        async with AsyncClient(url) as client:
            await _send(client, topic, history, batching_enabled=True, batching_max_publish_delay_ms=1)
            view = await client.create_table_view(topic)
            held = dict(view.items())
            missing = view.get("b")
            await view.close()
            return held, len(view), missing, "d" in view

    held, size, missing, has_d = run(main(), timeout=30)
    assert held == {"a": b"a-2", "c": b"c-1", "e": b"e-1"}
    assert size == 3
    assert missing is None and not has_d


def _subscriptions(broker: BrokerProcess, topic: str) -> list[str]:
    path = topic.replace("persistent://", "persistent/")
    with urllib.request.urlopen(f"{broker.http_url}/admin/v2/{path}/stats", timeout=10) as reply:
        return sorted(json.loads(reply.read())["subscriptions"])


def test_listeners_see_every_later_change_in_order(broker: BrokerProcess, url: str, topic: str) -> None:
    async def main() -> tuple[list[tuple[str, Any]], dict[str, Any]]:
        async with AsyncClient(url) as client:
            await _send(client, topic, [("k1", b"v1"), ("k2", b"v2")])
            view = await client.create_table_view(topic, subscription_name="table-view-sub")
            assert await asyncio.to_thread(_subscriptions, broker, topic) == ["table-view-sub"]
            seen: list[tuple[str, Any]] = []
            view.for_each_and_listen(lambda key, value: seen.append((key, value)))
            await _send(client, topic, [("k1", b"v1-new"), ("k2", None), (None, b"ignored"), ("k3", b"v3")])
            await _until(lambda: len(seen) == 5)
            await asyncio.sleep(0.2)  # nothing more comes
            held = dict(view.items())
            await view.close()
            return seen, held

    seen, held = run(main(), timeout=30)
    assert seen == [("k1", b"v1"), ("k2", b"v2"), ("k1", b"v1-new"), ("k2", b""), ("k3", b"v3")]
    assert held == {"k1": b"v1-new", "k3": b"v3"}


def test_a_view_of_a_partitioned_topic_reads_every_partition(broker: BrokerProcess, url: str, topic: str) -> None:
    create_partitioned_topic(broker, topic, 3)
    keys = [f"key-{i}" for i in range(30)]

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with AsyncClient(url) as client:
            await _send(client, topic, [(key, f"{key}-old".encode()) for key in keys])
            view = await client.create_table_view(topic)
            before = dict(view.items())
            await _send(client, topic, [(key, f"{key}-new".encode()) for key in keys[:10]])
            await _until(lambda: all(view.get(key) == f"{key}-new".encode() for key in keys[:10]))
            after = dict(view.items())
            await view.close()
            return before, after

    before, after = run(main(), timeout=30)
    assert before == {key: f"{key}-old".encode() for key in keys}
    assert after == {key: f"{key}-{'new' if i < 10 else 'old'}".encode() for i, key in enumerate(keys)}


def test_the_sync_face_as_pulsar_table_view(url: str, topic: str) -> None:
    client = Client(url)
    try:
        producer = client.create_producer(topic, schema=StringSchema(), batching_enabled=False)
        producer.send("first", partition_key="key")
        view = client.create_table_view(topic, schema=StringSchema())
        assert isinstance(view, TableView)
        assert str(view) == f"TableView(topic={topic})"
        assert len(view) == 1
        assert view.get("key") == "first"
        assert view.get("missed-key") is None
        entries: dict[str, Any] = {}
        view.for_each(entries.__setitem__)
        assert entries == {"key": "first"}

        changes: list[tuple[str, Any]] = []
        view.for_each_and_listen(lambda key, value: changes.append((key, value)))
        producer.send("second", partition_key="key")
        producer.send("other", partition_key="other")
        producer.send(None, partition_key="key")
        deadline = time.monotonic() + 10
        while len(changes) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert changes == [("key", "first"), ("key", "second"), ("other", "other"), ("key", "")]
        assert view.get("key") is None and view.get("other") == "other" and len(view) == 1
        view.close()
        producer.send("after close", partition_key="late")
        time.sleep(0.2)
        assert view.get("late") is None and len(changes) == 4
    finally:
        client.close()


def test_a_failing_listener_does_not_stop_the_view(url: str, topic: str) -> None:
    async def main() -> tuple[list[str], Any]:
        async with AsyncClient(url) as client:
            view = await client.create_table_view(topic)
            calls: list[str] = []

            def failing(key: str, value: Any) -> None:
                calls.append(key)
                raise RuntimeError("listener bug")

            view.for_each_and_listen(failing)
            await _send(client, topic, [("x", b"1"), ("y", b"2")])
            await _until(lambda: view.get("y") == b"2")
            value = view.get("x")
            await view.close()
            return calls, value

    calls, value = run(main(), timeout=30)
    assert calls == ["x", "y"]
    assert value == b"1"


def _compact(broker: BrokerProcess, topic: str) -> None:
    url = f"{broker.http_url}/admin/v2/{topic.replace('persistent://', 'persistent/')}/compaction"
    with urllib.request.urlopen(urllib.request.Request(url, method="PUT"), timeout=10) as reply:
        assert reply.status == 204
    deadline = time.monotonic() + 30
    while True:
        with urllib.request.urlopen(url, timeout=10) as reply:
            status = json.loads(reply.read())["status"]
        assert status != "ERROR"
        if status == "SUCCESS":
            return
        assert time.monotonic() < deadline, f"compaction still {status}"
        time.sleep(0.05)


def test_a_view_of_a_compacted_topic_reads_the_view_then_the_rest(broker: BrokerProcess, url: str, topic: str) -> None:
    async def main() -> dict[str, Any]:
        async with AsyncClient(url) as client:
            await _send(client, topic, [(f"k{i % 5}", f"v{i}".encode()) for i in range(50)] + [("k0", None)])
            await asyncio.to_thread(_compact, broker, topic)
            await _send(client, topic, [("k1", b"after"), ("k9", b"new")])
            view = await client.create_table_view(topic)
            held = dict(view.items())
            await view.close()
            return held

    assert run(main(), timeout=60) == {"k1": b"after", "k2": b"v47", "k3": b"v48", "k4": b"v49", "k9": b"new"}
