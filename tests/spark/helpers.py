"""Helpers of the Spark connector tests."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from magnetar.client import Client
from magnetar.testing import BrokerProcess


def admin(url: str, method: str, path: str, body: Any = None) -> Any:
    """Call the broker's admin REST API; returns the decoded JSON answer (None when empty)."""
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(url + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=15) as resp:
            text = resp.read()
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"{method} {path}: {exc.code} {exc.read()[:300]!r}") from None
    return json.loads(text) if text else None


def create_partitioned(broker: BrokerProcess, topic: str, partitions: int) -> None:
    """Create a partitioned topic over REST."""
    path = topic.replace("persistent://", "/admin/v2/persistent/") + "/partitions"
    admin(broker.http_url, "PUT", path, partitions)


def produce(client: Client, topic: str, payloads: list[bytes], **options: Any) -> None:
    """Publish and wait for every receipt (options: create_producer keywords)."""
    producer = client.create_producer(topic, **options)
    errors: list[Any] = []
    for p in payloads:
        producer.send_async(p, lambda e, _m: errors.append(e) if e else None)
    producer.flush()
    producer.close()
    assert not errors, errors


def reader_options(broker: BrokerProcess, topic: str, **extra: str) -> dict[str, str]:
    """Options of a read of ``topic``."""
    return {"service.url": broker.service_url, "topic": topic, **extra}


def stream_to_parquet(spark: Any, options: dict[str, str], out: Path, checkpoint: Path, select: list[str] | None = None) -> Any:
    """Run a streaming read to Parquet with Trigger.AvailableNow; returns the finished query."""
    df = spark.readStream.format("pulsar").options(**options).load()
    if select:
        df = df.selectExpr(*select)
    q = (
        df.writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True).start()
    )
    q.awaitTermination(180)
    assert not q.isActive, "the streaming query did not finish"
    if q.exception() is not None:
        raise q.exception()
    return q
