"""Helpers of the data-lifecycle end-to-end tests: retention, TTL, backlog quotas, backpressure
and limits. Each of those modules runs brokers of its own (settings differ) and sets policies
through the REST admin API in namespaces of its own, so no policy leaks into other tests."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import pulsar
import pytest

from magnetar.testing import BrokerProcess

from ..admin.admin_http import Http
from .helpers import new_client

T = TypeVar("T")

#: the lifecycle brokers' check period (Pulsar's are a second and more; the tests wait for checks)
LIFECYCLE_CHECK_S = 0.3
#: a wait in which at least two lifecycle checks run, where a test shows a check changes nothing
CHECKS_PASS_S = 2 * LIFECYCLE_CHECK_S + 0.1
#: settings of the lifecycle brokers: tiny segments, frequent checks, fast cursor persistence
FAST_LIFECYCLE = {
    "MAGNETAR_SEGMENT_MAX_BYTES": "4096",
    "MAGNETAR_SEGMENT_MIN_ROLLOVER_MINUTES": "0",
    "MAGNETAR_LIFECYCLE_CHECK_INTERVAL_SECONDS": str(LIFECYCLE_CHECK_S),
    "MAGNETAR_CURSOR_PERSIST_DELAY_SECONDS": "0.2",
}


def start_broker(factory: pytest.TempPathFactory, name: str, env: dict[str, str]) -> BrokerProcess:
    """A broker of its own, in a fresh data directory."""
    return BrokerProcess(factory.mktemp(name) / "data", env=env).start()


class ClientPool:
    """Official clients of any broker; ``close()`` closes every one (use it from a fixture)."""

    def __init__(self) -> None:
        self.made: list[pulsar.Client] = []

    def __call__(self, broker: BrokerProcess, **kwargs: Any) -> pulsar.Client:
        if kwargs:
            kwargs.setdefault("operation_timeout_seconds", 10)
            kwargs.setdefault("connection_timeout_ms", 5_000)
            kwargs.setdefault("logger", pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
            c = pulsar.Client(broker.service_url, **kwargs)
        else:
            c = new_client(broker.service_url)
        self.made.append(c)
        return c

    def close(self) -> None:
        for c in self.made:
            try:
                c.close()
            except Exception:  # noqa: BLE001 - a client of a refused / stopped broker may fail to close
                pass
        self.made.clear()


def wait_until(check: Callable[[], T], timeout: float, what: str, interval: float = 0.1) -> T:
    """Poll ``check`` until it returns something true; fail with ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"after {timeout} s: {what} (last value {value!r})")
        time.sleep(interval)


def rss_mb(broker: BrokerProcess) -> float:
    """Resident memory of the broker process (VmRSS), in MiB."""
    assert broker.proc is not None
    with open(f"/proc/{broker.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS line")


def segment_files(broker: BrokerProcess, ledger_id: int) -> dict[int, int]:
    """{base entry id: size in bytes} of a topic's segment files on disk."""
    out = {}
    for path in (broker.data_dir / "ledgers" / str(ledger_id)).glob("*.log"):
        try:
            out[int(path.stem)] = path.stat().st_size
        except (OSError, ValueError):  # deleted meanwhile
            continue
    return dict(sorted(out.items()))


def local_name(topic: str) -> str:
    """tenant/namespace/topic of a persistent:// topic name."""
    return topic.split("://", 1)[1]


class Admin:
    """The REST admin calls these tests need; every call must succeed."""

    def __init__(self, broker: BrokerProcess) -> None:
        self.http = Http(broker.http_url)

    def _ok(self, method: str, path: str, body: Any = None, status: int = 204) -> Any:
        reply = self.http.request(method, path, body) if body is not None else self.http.request(method, path)
        assert reply.status == status, f"{method} {path} -> {reply.status} {reply.body!r}"
        return reply.json() if reply.body else None

    def new_namespace(self, prefix: str) -> str:
        """Create public/<prefix>-<random> and return it."""
        ns = f"public/{prefix}-{uuid.uuid4().hex[:8]}"
        self._ok("PUT", f"/admin/v2/namespaces/{ns}", {})
        return ns

    def set_namespace_policy(self, ns: str, path: str, body: Any) -> None:
        self._ok("POST", f"/admin/v2/namespaces/{ns}/{path}", body)

    def remove_namespace_policy(self, ns: str, path: str) -> None:
        self._ok("DELETE", f"/admin/v2/namespaces/{ns}/{path}")

    def set_backlog_quota(
        self, ns: str, quota_type: str, *, policy: str, limit_size: int = -1, limit_time: int = -1
    ) -> None:
        body = {"limitSize": limit_size, "limitTime": limit_time, "policy": policy}
        self._ok("POST", f"/admin/v2/namespaces/{ns}/backlogQuota?backlogQuotaType={quota_type}", body)
        quotas = self._ok("GET", f"/admin/v2/namespaces/{ns}/backlogQuotaMap", status=200)
        assert quotas[quota_type] == body

    def topic_path(self, topic: str) -> str:
        return "/admin/v2/persistent/" + local_name(topic)

    def set_topic_policy(self, topic: str, path: str, body: Any = None) -> None:
        self._ok("POST", f"{self.topic_path(topic)}/{path}", body)

    def get_topic_policy(self, topic: str, path: str) -> Any:
        return self._ok("GET", f"{self.topic_path(topic)}/{path}", status=200)

    def remove_topic_policy(self, topic: str, path: str) -> None:
        self._ok("DELETE", f"{self.topic_path(topic)}/{path}")

    def stats(self, topic: str) -> dict[str, Any]:
        return self._ok("GET", f"{self.topic_path(topic)}/stats", status=200)

    def backlog(self, topic: str, sub: str) -> int:
        return self.stats(topic)["subscriptions"][sub]["msgBacklog"]

    def skip_all(self, topic: str, sub: str) -> None:
        self._ok("POST", f"{self.topic_path(topic)}/subscription/{sub}/skip_all")


def read_all(client: pulsar.Client, topic: str) -> list[pulsar.Message]:
    """Every message a reader from the earliest position gets (until has_message_available is false)."""
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    out = []
    try:
        while reader.has_message_available():
            out.append(reader.read_next(timeout_millis=10_000))
        return out
    finally:
        reader.close()


def entry_ids(messages: list[pulsar.Message]) -> list[int]:
    return [m.message_id().entry_id() for m in messages]
