"""A small client of Pulsar's admin REST API (``/admin/v2``) for tests: the operations test set-ups need.

It speaks to magnetar and to Apache Pulsar alike, over one kept-alive HTTP connection per thread
(``http.client``, no dependency), and raises :class:`AdminError` with the broker's status and reason.
:meth:`Admin.request` reaches every other route.
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.parse
from typing import Any


class AdminError(Exception):
    """The admin API answered with an error status (``status``: the HTTP status, ``reason``: its text)."""

    def __init__(self, method: str, path: str, status: int, reason: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {reason}")
        self.status = status
        self.reason = reason


def topic_path(topic: str) -> str:
    """``persistent://tenant/ns/name`` (or ``tenant/ns/name``) -> ``persistent/tenant/ns/name``, quoted."""
    domain, sep, rest = topic.partition("://")
    if not sep:
        domain, rest = "persistent", topic
    tenant, namespace, local = rest.split("/", 2)
    return f"{domain}/{tenant}/{namespace}/{urllib.parse.quote(local, safe='')}"


class Admin:
    """Pulsar's admin API at ``http_url`` (``http://host:port``), with a token when authentication is on."""

    def __init__(self, http_url: str, token: str | None = None, timeout: float = 30.0) -> None:
        url = urllib.parse.urlsplit(http_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"admin URL must be http://host:port or https://host:port, not {http_url!r}")
        self.http_url = http_url.rstrip("/")
        self._url = url
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._timeout = timeout
        self._local = threading.local()

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            kind = http.client.HTTPSConnection if self._url.scheme == "https" else http.client.HTTPConnection
            conn = kind(self._url.hostname, self._url.port, timeout=self._timeout)
            self._local.conn = conn
        return conn

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """``method`` on ``/admin/v2/`` + ``path``; the decoded JSON answer (None when empty)."""
        full = f"/admin/v2/{path.lstrip('/')}"
        data = None if body is None else json.dumps(body).encode()
        for attempt in (1, 2):  # a kept-alive connection the server closed meanwhile: once more, anew
            conn = self._connection()
            try:
                conn.request(method, full, body=data, headers=self._headers)
                response = conn.getresponse()
                payload = response.read()
                break
            except (http.client.RemoteDisconnected, ConnectionError, http.client.CannotSendRequest,
                    http.client.BadStatusLine):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
        if response.status >= 300:
            raise AdminError(method, full, response.status, _reason(payload))
        if not payload:
            return None
        try:
            return json.loads(payload)
        except ValueError:
            return payload.decode(errors="replace")

    def close(self) -> None:
        """Close this thread's connection (others close with their threads)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- brokers, tenants, namespaces -------------------------------------------------------------
    def ready(self) -> bool:
        """Whether the broker answers ``/admin/v2/brokers/ready`` with 200."""
        try:
            self.request("GET", "brokers/ready")
        except (AdminError, OSError):
            return False
        return True

    def clusters(self) -> list[str]:
        """Cluster names."""
        return self.request("GET", "clusters")

    def tenants(self) -> list[str]:
        """Tenant names."""
        return self.request("GET", "tenants")

    def create_tenant(self, tenant: str, allowed_clusters: list[str] | None = None,
                      admin_roles: list[str] | None = None) -> None:
        """Create ``tenant`` (allowed on every cluster of the broker unless ``allowed_clusters`` says)."""
        clusters = allowed_clusters if allowed_clusters is not None else self.clusters()
        self.request("PUT", f"tenants/{tenant}", {"allowedClusters": clusters, "adminRoles": admin_roles or []})

    def delete_tenant(self, tenant: str, force: bool = False) -> None:
        """Delete ``tenant`` (``force``: with its namespaces and topics)."""
        self.request("DELETE", f"tenants/{tenant}" + ("?force=true" if force else ""))

    def namespaces(self, tenant: str) -> list[str]:
        """Namespaces of ``tenant`` (``tenant/ns``)."""
        return self.request("GET", f"namespaces/{tenant}")

    def create_namespace(self, namespace: str) -> None:
        """Create ``tenant/ns``."""
        self.request("PUT", f"namespaces/{namespace}")

    def delete_namespace(self, namespace: str, force: bool = False) -> None:
        """Delete ``tenant/ns`` (``force``: with its topics, closing their producers and consumers)."""
        self.request("DELETE", f"namespaces/{namespace}" + ("?force=true" if force else ""))

    def set_namespace_policy(self, namespace: str, policy: str, value: Any) -> None:
        """Set a namespace policy by its REST name (``retention``, ``deduplication``, ``messageTTL``, ...)."""
        self.request("POST", f"namespaces/{namespace}/{policy}", value)

    def namespace_policy(self, namespace: str, policy: str) -> Any:
        """A namespace policy by its REST name."""
        return self.request("GET", f"namespaces/{namespace}/{policy}")

    def grant_permission(self, namespace: str, role: str, actions: list[str]) -> None:
        """Grant ``role`` the ``actions`` (``produce``, ``consume``, ...) on ``namespace``."""
        self.request("POST", f"namespaces/{namespace}/permissions/{role}", actions)

    # -- topics -----------------------------------------------------------------------------------
    def topics(self, namespace: str) -> list[str]:
        """Persistent topics of ``namespace`` (partitions one by one)."""
        return self.request("GET", f"persistent/{namespace}")

    def partitioned_topics(self, namespace: str) -> list[str]:
        """Partitioned persistent topics of ``namespace``."""
        return self.request("GET", f"persistent/{namespace}/partitioned")

    def create_topic(self, topic: str) -> None:
        """Create a non-partitioned topic."""
        self.request("PUT", topic_path(topic))

    def create_partitioned_topic(self, topic: str, partitions: int) -> None:
        """Create a topic of ``partitions`` partitions."""
        self.request("PUT", f"{topic_path(topic)}/partitions", partitions)

    def update_partitions(self, topic: str, partitions: int) -> None:
        """Grow a partitioned topic to ``partitions``."""
        self.request("POST", f"{topic_path(topic)}/partitions", partitions)

    def delete_topic(self, topic: str, force: bool = False) -> None:
        """Delete a non-partitioned topic (``force``: even with producers and consumers)."""
        self.request("DELETE", topic_path(topic) + ("?force=true" if force else ""))

    def delete_partitioned_topic(self, topic: str, force: bool = False) -> None:
        """Delete a partitioned topic and its partitions."""
        self.request("DELETE", f"{topic_path(topic)}/partitions" + ("?force=true" if force else ""))

    def topic_stats(self, topic: str) -> dict[str, Any]:
        """Statistics of a topic (``msgInCounter``, ``subscriptions``, ...)."""
        return self.request("GET", f"{topic_path(topic)}/stats")

    def partitioned_stats(self, topic: str) -> dict[str, Any]:
        """Statistics of a partitioned topic, summed over its partitions."""
        return self.request("GET", f"{topic_path(topic)}/partitioned-stats")

    def subscriptions(self, topic: str) -> list[str]:
        """Subscription names of a topic."""
        return self.request("GET", f"{topic_path(topic)}/subscriptions")

    def backlog(self, topic: str, subscription: str) -> int:
        """Messages of ``subscription`` not yet acknowledged."""
        return self.topic_stats(topic)["subscriptions"][subscription]["msgBacklog"]

    def clear_backlog(self, topic: str, subscription: str) -> None:
        """Acknowledge everything of ``subscription``."""
        self.request("POST", f"{topic_path(topic)}/subscription/{urllib.parse.quote(subscription, safe='')}/skip_all")

    def unload(self, topic: str) -> None:
        """Unload a topic (its clients reconnect)."""
        self.request("PUT", f"{topic_path(topic)}/unload")


def _reason(payload: bytes) -> str:
    """The ``reason`` of an error body (Pulsar's ``{"reason": ...}``), else the body's text."""
    try:
        body = json.loads(payload)
    except ValueError:
        return payload.decode(errors="replace").strip()
    if isinstance(body, dict) and "reason" in body:
        return str(body["reason"])
    return json.dumps(body)
