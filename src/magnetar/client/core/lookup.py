"""Finding the broker that owns a topic: binary lookup, or HTTP lookup for http:// URLs."""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from magnetar.client.api.arguments import InvalidArgument
from magnetar.client.core.connection import BrokerUnreachable, ClientConnection, ConnectionPool
from magnetar.client.core.retrying import retrying
from magnetar.client.exceptions import (
    ConnectError,
    LookupError_,
    PulsarError,
    Timeout,
    TopicNotFound,
)
from magnetar.protocol.enums import CommandType, LookupType, TopicsMode
from magnetar.protocol.schema import BaseCommand
from magnetar.protocol.topic_name import TopicName

_MAX_REDIRECTS = 20


@dataclass(frozen=True)
class ServiceUrl:
    """A parsed service URL: scheme and the broker addresses it names."""

    scheme: str
    hosts: tuple[tuple[str, int], ...]

    @classmethod
    def parse(cls, url: str) -> ServiceUrl:
        """Parse ``pulsar://h:p[,h2:p2]``, ``pulsar+ssl://...``, ``http(s)://...``."""
        scheme, sep, rest = url.partition("://")
        if not sep or scheme not in ("pulsar", "pulsar+ssl", "http", "https"):
            raise InvalidArgument(f"invalid service URL {url!r}: expected pulsar://, pulsar+ssl://, http:// or https://")
        default_port = {"pulsar": 6650, "pulsar+ssl": 6651, "http": 8080, "https": 8443}[scheme]
        hosts = []
        for part in rest.rstrip("/").split("/")[0].split(","):
            host, _, port = part.rpartition(":") if ":" in part else (part, "", "")
            if not host:
                host, port = port, ""
            if not host:
                raise InvalidArgument(f"invalid service URL {url!r}: no host")
            try:
                hosts.append((host.strip("[]"), int(port) if port else default_port))
            except ValueError:
                raise InvalidArgument(f"invalid service URL {url!r}: bad port {port!r}") from None
        return cls(scheme, tuple(hosts))

    @property
    def tls(self) -> bool:
        """Whether the URL asks for TLS."""
        return self.scheme in ("pulsar+ssl", "https")

    @property
    def http(self) -> bool:
        """Whether lookups go through the HTTP API."""
        return self.scheme in ("http", "https")

    def pick(self) -> tuple[str, int]:
        """One of the addresses."""
        return random.choice(self.hosts)


def broker_address(url: str) -> tuple[str, int, bool]:
    """(host, port, tls) of a broker URL from a lookup answer."""
    parsed = urlsplit(url)
    tls = parsed.scheme == "pulsar+ssl"
    return parsed.hostname or "localhost", parsed.port or (6651 if tls else 6650), tls


class LookupService:
    """Lookups over the binary protocol, following redirects.

    A lookup whose broker cannot be reached is tried again with backoff within the operation
    timeout (:func:`~.retrying.retrying`), as the official clients do.
    """

    def __init__(
        self, pool: ConnectionPool, service_url: ServiceUrl, operation_timeout: float, listener_name: str | None = None
    ) -> None:
        self.pool = pool
        self.service_url = service_url
        self.timeout = operation_timeout
        self.listener_name = listener_name

    async def _service_connection(self) -> ClientConnection:
        host, port = self.service_url.pick()
        return await self.pool.get(host, port, self.service_url.tls)

    async def partitions(self, topic: str) -> int:
        """Number of partitions of ``topic`` (0: not partitioned)."""
        return await retrying(lambda: self._partitions(topic), self.timeout)

    async def connection_for(self, topic: str) -> ClientConnection:
        """A connection to the broker serving ``topic``."""
        return await retrying(lambda: self._connection_for(topic), self.timeout)

    async def topics_of_namespace(self, namespace: str, mode: TopicsMode) -> list[str]:
        """Topics of a namespace (partitions listed individually)."""
        return await retrying(lambda: self._topics_of_namespace(namespace, mode), self.timeout)

    async def _partitions(self, topic: str) -> int:
        conn = await self._service_connection()
        rid = conn.new_request_id()
        cmd = BaseCommand(type=CommandType.PARTITIONED_METADATA)
        cmd.partition_metadata.topic = topic
        cmd.partition_metadata.request_id = rid
        resp = await conn.request(cmd, rid, self.timeout)
        return resp.partition_metadata_response.partitions

    async def _connection_for(self, topic: str) -> ClientConnection:
        conn = await self._service_connection()
        authoritative = False
        for _ in range(_MAX_REDIRECTS):
            rid = conn.new_request_id()
            cmd = BaseCommand(type=CommandType.LOOKUP)
            cmd.lookup_topic.topic = topic
            cmd.lookup_topic.request_id = rid
            cmd.lookup_topic.authoritative = authoritative
            if self.listener_name:
                cmd.lookup_topic.advertised_listener_name = self.listener_name
            resp = (await conn.request(cmd, rid, self.timeout)).lookup_topic_response
            url = resp.broker_service_url_tls if self.service_url.tls and resp.broker_service_url_tls else resp.broker_service_url
            if resp.proxy_through_service_url:
                target = await self._service_connection()
            else:
                host, port, tls = broker_address(url)
                target = await self.pool.get(host, port, tls or self.service_url.tls)
            if resp.response == LookupType.Connect:
                return target
            conn = target
            authoritative = resp.authoritative
        raise LookupError_(f"too many lookup redirects for {topic}")

    async def _topics_of_namespace(self, namespace: str, mode: TopicsMode) -> list[str]:
        conn = await self._service_connection()
        rid = conn.new_request_id()
        cmd = BaseCommand(type=CommandType.GET_TOPICS_OF_NAMESPACE)
        cmd.get_topics_of_namespace.request_id = rid
        cmd.get_topics_of_namespace.namespace = namespace
        cmd.get_topics_of_namespace.mode = mode
        resp = await conn.request(cmd, rid, self.timeout)
        return list(resp.get_topics_of_namespace_response.topics)

    async def get_schema(self, topic: str, version: bytes | None = None):  # noqa: ANN201 - wire Schema or None
        """The topic's schema (a version or the latest), or None when it has none."""
        conn = await self._service_connection()
        rid = conn.new_request_id()
        cmd = BaseCommand(type=CommandType.GET_SCHEMA)
        cmd.get_schema.request_id = rid
        cmd.get_schema.topic = topic
        if version:
            cmd.get_schema.schema_version = version
        try:
            resp = await conn.request(cmd, rid, self.timeout)
        except TopicNotFound:
            return None
        return resp.get_schema_response.schema


class HttpLookupService(LookupService):
    """Lookups through the broker's HTTP API, for ``http(s)://`` service URLs.

    Requests carry the authentication plugin's HTTP headers, and on https its client
    certificate (the pool's TLS context). As the official client, a refusal (401, 403) or any
    other error status but 404 raises ConnectError; 404 raises TopicNotFound.
    """

    def _request(self, path: str, host: str, port: int) -> bytes:
        auth = self.pool.authentication
        headers = {"Host": f"{host}:{port}", "Accept": "application/json", "Connection": "close"}
        if auth is not None:
            headers.update(auth.http_headers())
        lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        return f"GET {path} HTTP/1.1\r\n{lines}\r\n".encode()

    async def _get(self, path: str) -> object:
        host, port = self.service_url.pick()
        if self.pool.authentication is not None:
            await self.pool.authentication.prepare()
        request = self._request(path, host, port)
        tls = (self.pool.ssl_context or True) if self.service_url.tls else None
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, ssl=tls), self.timeout)
        except (OSError, TimeoutError) as exc:
            raise BrokerUnreachable(f"could not reach {host}:{port}: {exc}") from None
        try:
            writer.write(request)
            data = await asyncio.wait_for(reader.read(), self.timeout)
        except TimeoutError:
            raise Timeout(f"HTTP lookup {path} timed out") from None
        except OSError as exc:
            raise ConnectError(f"HTTP lookup {path} on {host}:{port} failed: {exc}") from None
        finally:
            writer.close()
        return _answer(path, data)

    @staticmethod
    def _path(topic: str) -> str:
        t = TopicName.parse(topic)
        return f"{t.domain}/{quote(t.tenant)}/{quote(t.namespace_part)}/{quote(t.local_name)}"

    async def _partitions(self, topic: str) -> int:
        data = await self._get(f"/admin/v2/{self._path(topic)}/partitions?checkAllowAutoCreation=true")
        return int(data.get("partitions", 0)) if isinstance(data, dict) else 0

    async def _connection_for(self, topic: str) -> ClientConnection:
        data = await self._get(f"/lookup/v2/topic/{self._path(topic)}")
        if not isinstance(data, dict) or "brokerUrl" not in data:
            raise LookupError_(f"HTTP lookup of {topic} gave no brokerUrl")
        url = data.get("brokerUrlTls") if self.service_url.tls and data.get("brokerUrlTls") else data["brokerUrl"]
        host, port, tls = broker_address(url)
        return await self.pool.get(host, port, tls)

    async def _topics_of_namespace(self, namespace: str, mode: TopicsMode) -> list[str]:
        data = await self._get(f"/admin/v2/namespaces/{namespace}/topics?mode={mode.name}")
        return list(data) if isinstance(data, list) else []

    async def get_schema(self, topic: str, version: bytes | None = None):  # noqa: ANN201
        try:
            await self._get(f"/admin/v2/schemas/{self._path(topic).split('/', 1)[1]}/schema")
        except (TopicNotFound, PulsarError):
            return None
        return None


def _answer(path: str, data: bytes) -> object:
    """The JSON body of an HTTP answer; error statuses raise as the official client maps them."""
    head, _, body = data.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].decode(errors="replace")
    try:
        status = int(status_line.split()[1])
    except (IndexError, ValueError):
        raise LookupError_(f"bad HTTP answer to {path}: {status_line!r}") from None
    if b"transfer-encoding: chunked" in head.lower():
        body = _dechunk(body)
    if status == 404:
        raise TopicNotFound(f"{path}: not found")
    if status >= 400:
        raise ConnectError(f"HTTP {status} for {path}: {body[:200].decode(errors='replace')}")
    try:
        return json.loads(body)
    except ValueError:
        raise LookupError_(f"HTTP answer to {path} is not JSON") from None


def _dechunk(body: bytes) -> bytes:
    out = bytearray()
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        try:
            size = int(size_line.split(b";")[0], 16)
        except ValueError:
            break
        if size == 0:
            break
        out += rest[:size]
        body = rest[size + 2 :]
    return bytes(out)
