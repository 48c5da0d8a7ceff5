"""The few admin REST calls a replicator makes on a remote cluster (blocking: run them in a thread)."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from typing import TYPE_CHECKING
from urllib.parse import quote

if TYPE_CHECKING:
    from magnetar.broker.replication.replicator import RemoteCluster
    from magnetar.protocol.topic_name import TopicName


def _call(remote: RemoteCluster, method: str, path: str, body: object = None) -> tuple[int, object]:
    """(status, decoded JSON body or None) of one request to the remote's admin API."""
    headers = {"Accept": "application/json", **remote.credentials.headers}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(remote.http_url.rstrip("/") + path, data=data, method=method, headers=headers)
    context = remote.tls if remote.http_url.startswith("https://") else None
    try:
        with urllib.request.urlopen(request, timeout=15, context=context) as answer:
            status, raw = answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    except ssl.SSLError as exc:
        raise OSError(f"TLS: {exc}") from None
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, None


def ensure_partitioned_topic(remote: RemoteCluster, topic: TopicName, partitions: int) -> None:
    """Create ``topic`` on the remote as a partitioned topic of ``partitions`` partitions unless it is one."""
    path = f"/admin/v2/{topic.domain}/{quote(topic.tenant)}/{quote(topic.namespace_part)}/{quote(topic.local_name)}/partitions"
    status, body = _call(remote, "GET", path)
    if status == 200 and isinstance(body, dict) and int(body.get("partitions") or 0) > 0:
        return
    status, body = _call(remote, "PUT", path, partitions)
    if status not in (204, 409):
        reason = body.get("reason") if isinstance(body, dict) else body
        raise OSError(f"creating {topic} with {partitions} partitions answered {status}: {reason}")
