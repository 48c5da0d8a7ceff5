"""Options of the "pulsar" data source: names of the Scala pulsar-spark connector, checked once.

Spark hands options over with lower-cased keys; they are mapped back to their documented names
here, and every unknown, malformed or conflicting option is refused with an error naming it,
while the query is planned (before any task runs).

Pass-through options: ``pulsar.client.*`` (client settings), ``pulsar.reader.*`` (the readers
that read topic-partitions) and ``pulsar.producer.*`` (the sink's producers). They take the Java
client's names (``pulsar.client.operationTimeoutMs``) or the Python client's keyword names
(``pulsar.client.operation_timeout_seconds``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from magnetar.protocol.topic_name import InvalidTopicNameError, TopicName
from magnetar.spark.positions import EARLIEST, Position, from_message_id_bytes, parse

LATEST = "latest"


class PulsarOptionError(ValueError):
    """An option of the pulsar data source is unknown, malformed or conflicts with another."""


def _bool(name: str) -> Callable[[str], bool]:
    def conv(value: str) -> bool:
        low = value.strip().lower()
        if low in ("true", "1", "yes"):
            return True
        if low in ("false", "0", "no"):
            return False
        raise PulsarOptionError(f"option {name} must be true or false, not {value!r}")

    return conv


def _int(name: str, minimum: int | None = None) -> Callable[[str], int]:
    def conv(value: str) -> int:
        try:
            n = int(str(value).strip())
        except ValueError:
            raise PulsarOptionError(f"option {name} must be an integer, not {value!r}") from None
        if minimum is not None and n < minimum:
            raise PulsarOptionError(f"option {name} must be at least {minimum}, not {n}")
        return n

    return conv


def _float(name: str) -> Callable[[str], float]:
    def conv(value: str) -> float:
        try:
            return float(str(value).strip())
        except ValueError:
            raise PulsarOptionError(f"option {name} must be a number, not {value!r}") from None

    return conv


def _compression(name: str) -> Callable[[str], Any]:
    def conv(value: str) -> Any:
        # with compression options only: 6 ms CPU (python -X importtime)
        from magnetar.protocol.enums import CompressionType

        try:
            return CompressionType[value.strip().upper()]
        except KeyError:
            choices = ", ".join(c.name for c in CompressionType)
            raise PulsarOptionError(f"option {name} must be one of {choices}, not {value!r}") from None

    return conv


# (documented name, keyword of magnetar's client, converter factory, scale)
_CLIENT_KEYS: list[tuple[str, str, Callable[[str], Callable[[str], Any]], float]] = [
    ("operationTimeoutMs", "operation_timeout_seconds", _float, 0.001),
    ("operation_timeout_seconds", "operation_timeout_seconds", _float, 1),
    ("connectionTimeoutMs", "connection_timeout_ms", _int, 1),
    ("keepAliveIntervalSeconds", "keep_alive_interval_seconds", _float, 1),
    ("useTls", "use_tls", _bool, 1),
    ("tlsTrustCertsFilePath", "tls_trust_certs_file_path", str, 1),
    ("tlsAllowInsecureConnection", "tls_allow_insecure_connection", _bool, 1),
    ("tlsHostnameVerificationEnable", "tls_validate_hostname", _bool, 1),
    ("tlsCertificateFilePath", "tls_certificate_file_path", str, 1),
    ("tlsKeyFilePath", "tls_private_key_file_path", str, 1),
    ("listenerName", "listener_name", str, 1),
    ("authPluginClassName", "authPluginClassName", str, 1),
    ("authParams", "authParams", str, 1),
]
_READER_KEYS: list[tuple[str, str, Callable[[str], Callable[[str], Any]], float]] = [
    ("receiverQueueSize", "receiver_queue_size", lambda n: _int(n, 1), 1),
    ("readerName", "reader_name", str, 1),
    ("subscriptionRolePrefix", "subscription_role_prefix", str, 1),
]
_PRODUCER_KEYS: list[tuple[str, str, Callable[[str], Callable[[str], Any]], float]] = [
    ("batchingEnabled", "batching_enabled", _bool, 1),
    ("batchingMaxMessages", "batching_max_messages", lambda n: _int(n, 1), 1),
    ("batchingMaxBytes", "batching_max_allowed_size_in_bytes", lambda n: _int(n, 1), 1),
    ("batchingMaxAllowedSizeInBytes", "batching_max_allowed_size_in_bytes", lambda n: _int(n, 1), 1),
    ("batchingMaxPublishDelayMicros", "batching_max_publish_delay_ms", _float, 0.001),
    ("batchingMaxPublishDelayMs", "batching_max_publish_delay_ms", _float, 1),
    ("compressionType", "compression_type", _compression, 1),
    ("sendTimeoutMs", "send_timeout_millis", lambda n: _int(n, 0), 1),
    ("maxPendingMessages", "max_pending_messages", lambda n: _int(n, 0), 1),
    ("chunkingEnabled", "chunking_enabled", _bool, 1),
    # exactly once through transactions (spark/transactional.py takes these two out)
    ("transactional", "transactional", _bool, 1),
    ("transactionTimeoutMs", "transaction_timeout_ms", lambda n: _int(n, 1), 1),
]


def _pass_through(prefix: str, table: list, key: str, value: str) -> tuple[str, Any]:
    """(keyword, converted value) of a ``prefix.*`` option whose key arrived lower-cased."""
    rest = key[len(prefix):]
    for documented, keyword, factory, scale in table:
        if rest in (documented.lower(), keyword.lower()):
            name = prefix + documented
            converted = factory(name)(value) if factory is not str else value
            if scale != 1:
                converted = converted * scale
                if keyword.endswith("_ms") and isinstance(converted, float):
                    converted = max(0, int(converted))
            return keyword, converted
    known = ", ".join(prefix + d for d, *_ in table)
    raise PulsarOptionError(f"unknown option {key!r} (known {prefix}* options: {known})")


# -- source -------------------------------------------------------------------------------------

_SOURCE = [
    "service.url", "admin.url", "topic", "topics", "topicsPattern", "startingOffsets", "endingOffsets",
    "startingTime", "endingTime", "failOnDataLoss", "pollTimeoutMs", "maxEntriesPerTrigger",
    "predefinedSubscription", "subscriptionPrefix", "allowDifferentTopicSchemas", "maxEntriesPerSplit", "path",
]
_SINK = ["service.url", "admin.url", "topic", "path", "checkpointLocation"]
_CANON = {name.lower(): name for name in _SOURCE + _SINK}

#: default of pollTimeoutMs (as the Scala connector)
DEFAULT_POLL_TIMEOUT_MS = 120_000
#: default of maxEntriesPerSplit: a range of more entries is read by several tasks
DEFAULT_SPLIT_ENTRIES = 250_000


@dataclass
class ClientSettings:
    """How to build a client (picklable: executors build their own)."""

    service_url: str
    client: dict[str, Any] = field(default_factory=dict)

    def make(self) -> Any:
        """A new synchronous magnetar client."""
        # the client, when a query runs, not when the module loads: 200-350 ms CPU (python -X importtime)
        from magnetar.client import Client

        kwargs = dict(self.client)
        plugin = kwargs.pop("authPluginClassName", None)
        params = kwargs.pop("authParams", None)
        if plugin or params:
            kwargs.update(_authentication(plugin or "token", params or ""))
        return Client(self.service_url, **kwargs)


def _auth_params(params: str) -> dict[str, str]:
    """Auth parameters as JSON or Pulsar's ``key:value,key:value`` form."""
    if params.strip().startswith("{"):
        try:
            data = json.loads(params)
        except ValueError:
            raise PulsarOptionError("pulsar.client.authParams is not valid JSON") from None
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
    pairs = (part.partition(":") for part in params.split(","))
    return {key.strip(): value.strip() for key, sep, value in pairs if sep}


def _authentication(plugin: str, params: str) -> dict[str, Any]:
    """The client keywords of one of Pulsar's auth plugins (AuthenticationToken / Basic / Tls)."""
    # the client, when a query runs, not when the module loads: 200-350 ms CPU (python -X importtime)
    from magnetar.client import AuthenticationBasic, AuthenticationTLS, AuthenticationToken

    kind = plugin.strip().rsplit(".", 1)[-1].lower().removeprefix("authentication")
    if kind == "token":
        token = params.strip()
        if token.startswith("{"):
            token = _auth_params(token).get("token", "")
        return {"authentication": AuthenticationToken(token.removeprefix("token:"))}
    values = _auth_params(params)
    if kind == "basic" and "userId" in values and "password" in values:
        return {"authentication": AuthenticationBasic(values["userId"], values["password"])}
    if kind == "tls" and values.get("tlsCertFile") and values.get("tlsKeyFile"):
        cert, key = values["tlsCertFile"], values["tlsKeyFile"]
        return {"authentication": AuthenticationTLS(cert, key), "tls_certificate_file_path": cert,
                "tls_private_key_file_path": key}
    raise PulsarOptionError(
        f"pulsar.client.authPluginClassName {plugin!r} with these authParams is not supported: use AuthenticationToken"
        " (token:... or file:...), AuthenticationBasic ({\"userId\", \"password\"}) or AuthenticationTls"
        " (tlsCertFile:...,tlsKeyFile:...)"
    )


def _canonical(key: str) -> str:
    return _CANON.get(key, key)


def _split_options(options: Mapping[str, str], allowed: list[str], role: str) -> tuple[dict[str, str], dict[str, dict]]:
    """(plain options by documented name, pass-through keyword dicts by prefix)."""
    plain: dict[str, str] = {}
    passed: dict[str, dict] = {"pulsar.client.": {}, "pulsar.reader.": {}, "pulsar.producer.": {}}
    tables = {"pulsar.client.": _CLIENT_KEYS, "pulsar.reader.": _READER_KEYS, "pulsar.producer.": _PRODUCER_KEYS}
    allowed_prefixes = ["pulsar.client."] + (["pulsar.reader."] if role == "source" else ["pulsar.producer."])
    for raw_key, value in options.items():
        key = raw_key.lower()
        prefix = next((p for p in tables if key.startswith(p)), None)
        if prefix is not None:
            if prefix not in allowed_prefixes:
                raise PulsarOptionError(f"option {raw_key!r}: {prefix}* options apply to the {'sink' if role == 'source' else 'source'}, not the {role}")
            keyword, converted = _pass_through(prefix, tables[prefix], key, value)
            passed[prefix][keyword] = converted
            continue
        name = _canonical(key)
        if name not in allowed:
            other = _SINK if role == "source" else _SOURCE
            if name in other:
                raise PulsarOptionError(f"option {name!r} is not an option of the pulsar {role}")
            raise PulsarOptionError(f"unknown option {raw_key!r} for the pulsar {role} (known: {', '.join(allowed)})")
        plain[name] = value
    return plain, passed


def _topic_name(option: str, name: str, persistent_only: bool) -> str:
    try:
        tn = TopicName.parse(name.strip())
    except InvalidTopicNameError as exc:
        raise PulsarOptionError(f"option {option}: {exc}") from None
    if persistent_only and not tn.persistent:
        raise PulsarOptionError(f"option {option}: {tn} is non-persistent; only persistent topics keep positions to read from")
    return str(tn)


@dataclass
class SourceOptions:
    """Checked options of a read."""

    settings: ClientSettings
    admin_url: str | None
    topics: list[str]
    pattern: str | None
    #: "earliest", "latest" or {topic or topic-partition: Position | "latest"}
    starting: Any
    #: "latest" or {topic-partition: Position | "latest"}
    ending: Any
    starting_time: int | None
    ending_time: int | None
    fail_on_data_loss: bool
    poll_timeout_ms: int
    max_entries_per_trigger: int | None
    predefined_subscription: str | None
    subscription_prefix: str | None
    allow_different_schemas: bool
    split_entries: int
    reader: dict[str, Any]

    @property
    def topic_description(self) -> str:
        """The topics (or pattern) as the user gave them."""
        return self.pattern if self.pattern is not None else ",".join(self.topics)

    @property
    def namespace(self) -> str:
        """The namespace a pattern lists (public/default when it names none)."""
        assert self.pattern is not None
        m = re.match(r"^(?:persistent|non-persistent)://([^/]+)/([^/]+)/", self.pattern)
        return f"{m.group(1)}/{m.group(2)}" if m else "public/default"


def _offsets(option: str, value: str, allow: tuple[str, ...]) -> Any:
    text = value.strip()
    if text.lower() in allow:
        return text.lower()
    if text.lower() in ("earliest", "latest"):
        raise PulsarOptionError(f"option {option} cannot be {text.lower()!r} here (use {' or '.join(allow)} or a JSON object)")
    try:
        data = json.loads(text)
    except ValueError:
        raise PulsarOptionError(
            f"option {option} must be {', '.join(repr(a) for a in allow)} or a JSON object of topic-partition to position,"
            f" not {value!r}"
        ) from None
    if not isinstance(data, dict) or not data:
        raise PulsarOptionError(f"option {option} must be a non-empty JSON object of topic-partition to position")
    out: dict[str, Any] = {}
    for key, pos in data.items():
        name = _topic_name(option, key, True)
        try:
            if isinstance(pos, str) and pos.lower() in ("earliest", "latest"):
                if pos.lower() not in allow:
                    raise ValueError(f"{pos!r} is not allowed here")
                out[name] = EARLIEST if pos.lower() == "earliest" else LATEST
            elif isinstance(pos, int) and pos in (-1, -2):
                # Kafka's convention: -2 earliest, -1 latest
                word = "earliest" if pos == -2 else "latest"
                if word not in allow:
                    raise ValueError(f"{pos} ({word}) is not allowed here")
                out[name] = EARLIEST if pos == -2 else LATEST
            elif isinstance(pos, str):
                out[name] = parse(pos)
            elif isinstance(pos, list) and all(isinstance(b, int) for b in pos):
                out[name] = from_message_id_bytes(bytes(b & 0xFF for b in pos))
            elif isinstance(pos, dict) and "ledgerId" in pos and "entryId" in pos:
                out[name] = Position(int(pos["ledgerId"]), int(pos["entryId"]), int(pos.get("batchIndex", -1)))
            else:
                raise ValueError(f"unsupported position {pos!r}")
        except (ValueError, TypeError) as exc:
            raise PulsarOptionError(f"option {option}, entry {key!r}: {exc}") from None
    return out


def _check_service_url(plain: dict[str, str]) -> str:
    url = plain.get("service.url")
    if not url:
        raise PulsarOptionError("option service.url is required (e.g. pulsar://localhost:6650)")
    # the client, when a query runs, not when the module loads: 200-350 ms CPU (python -X importtime)
    from magnetar.client.core.lookup import ServiceUrl

    try:
        ServiceUrl.parse(url)
    except Exception as exc:  # noqa: BLE001 - InvalidConfiguration, reported as an option error
        raise PulsarOptionError(f"option service.url: {exc}") from None
    return url


def _source_topics(plain: dict[str, str]) -> tuple[list[str], str | None]:
    """(topics, pattern) of a read: one of topic (or the load() path), topics, topicsPattern."""
    if "path" in plain and "topic" not in plain:
        plain["topic"] = plain.pop("path")
    elif "path" in plain:
        raise PulsarOptionError("give the topic either as option topic or as the load() path, not both")
    given = [k for k in ("topic", "topics", "topicsPattern") if plain.get(k)]
    if len(given) != 1:
        raise PulsarOptionError(
            "exactly one of the options topic, topics, topicsPattern is required"
            + (f" (got {', '.join(given)})" if given else "")
        )
    if "topic" in given:
        return [_topic_name("topic", plain["topic"], True)], None
    if "topics" in given:
        names = [t for t in plain["topics"].split(",") if t.strip()]
        if not names:
            raise PulsarOptionError("option topics is empty")
        return list(dict.fromkeys(_topic_name("topics", t, True) for t in names)), None
    pattern = plain["topicsPattern"].strip()
    try:
        re.compile(pattern)
    except re.error as exc:
        raise PulsarOptionError(f"option topicsPattern is not a valid regular expression: {exc}") from None
    if pattern.startswith("non-persistent://"):
        raise PulsarOptionError("option topicsPattern: only persistent topics can be read")
    return [], pattern


def _check_query_kind(plain: dict[str, str], streaming: bool | None) -> None:
    """Options that conflict, or that belong to the other kind of query."""
    if "startingOffsets" in plain and "startingTime" in plain:
        raise PulsarOptionError("options startingOffsets and startingTime conflict: give one of them")
    if "endingOffsets" in plain and "endingTime" in plain:
        raise PulsarOptionError("options endingOffsets and endingTime conflict: give one of them")
    if streaming is None:
        return
    if streaming:
        for name in ("endingOffsets", "endingTime"):
            if name in plain:
                raise PulsarOptionError(f"option {name} is for batch queries; a streaming query has no end")
    else:
        for name in ("maxEntriesPerTrigger", "predefinedSubscription"):
            if name in plain:
                raise PulsarOptionError(f"option {name} is for streaming queries, not batch reads")


def _source_bounds(
    plain: dict[str, str], streaming: bool | None, topics: list[str], pattern: str | None
) -> tuple[Any, Any, int | None, int | None]:
    """(starting, ending, starting time, ending time) of a read, checked against its topics."""
    starting: Any = "latest" if streaming else "earliest"
    if "startingOffsets" in plain:
        allowed = ("earliest",) if streaming is False else ("earliest", "latest")
        starting = _offsets("startingOffsets", plain["startingOffsets"], allowed)
    ending: Any = "latest"
    if "endingOffsets" in plain:
        ending = _offsets("endingOffsets", plain["endingOffsets"], ("latest",))
    starting_time = _int("startingTime", 0)(plain["startingTime"]) if "startingTime" in plain else None
    ending_time = _int("endingTime", 0)(plain["endingTime"]) if "endingTime" in plain else None
    if starting_time is not None and ending_time is not None and ending_time < starting_time:
        raise PulsarOptionError(f"option endingTime ({ending_time}) is before startingTime ({starting_time})")
    for name, value in (("startingOffsets", starting), ("endingOffsets", ending)):
        if not isinstance(value, dict):
            continue
        if pattern is not None:
            raise PulsarOptionError(f"option {name} as JSON needs explicit topics (topic or topics), not topicsPattern")
        for key in value:
            parent = str(TopicName.parse(key).partitioned_parent)
            if key not in topics and parent not in topics:
                raise PulsarOptionError(f"option {name} names {key}, which is not one of the topics read ({', '.join(topics)})")
    return starting, ending, starting_time, ending_time


def source_options(options: Mapping[str, str], streaming: bool | None) -> SourceOptions:
    """Check the options of a read: batch (False), streaming (True), or either (None: the checks
    that do not depend on it, when the schema is derived)."""
    plain, passed = _split_options(options, _SOURCE, "source")
    url = _check_service_url(plain)
    topics, pattern = _source_topics(plain)
    _check_query_kind(plain, streaming)
    starting, ending, starting_time, ending_time = _source_bounds(plain, streaming, topics, pattern)
    admin = plain.get("admin.url")
    if admin is not None and not re.match(r"^https?://", admin):
        raise PulsarOptionError(f"option admin.url must be an http:// or https:// URL, not {admin!r}")
    sub = plain.get("predefinedSubscription")
    if sub is not None and not sub.strip():
        raise PulsarOptionError("option predefinedSubscription is empty")
    return SourceOptions(
        settings=ClientSettings(url, passed["pulsar.client."]),
        admin_url=admin,
        topics=topics,
        pattern=pattern,
        starting=starting,
        ending=ending,
        starting_time=starting_time,
        ending_time=ending_time,
        fail_on_data_loss=_bool("failOnDataLoss")(plain.get("failOnDataLoss", "true")),
        poll_timeout_ms=_int("pollTimeoutMs", 1)(plain.get("pollTimeoutMs", str(DEFAULT_POLL_TIMEOUT_MS))),
        max_entries_per_trigger=_int("maxEntriesPerTrigger", 1)(plain["maxEntriesPerTrigger"]) if "maxEntriesPerTrigger" in plain else None,
        predefined_subscription=sub.strip() if sub else None,
        subscription_prefix=plain.get("subscriptionPrefix") or None,
        allow_different_schemas=_bool("allowDifferentTopicSchemas")(plain.get("allowDifferentTopicSchemas", "false")),
        split_entries=_int("maxEntriesPerSplit", 1)(plain.get("maxEntriesPerSplit", str(DEFAULT_SPLIT_ENTRIES))),
        reader=passed["pulsar.reader."],
    )


@dataclass
class SinkOptions:
    """Checked options of a write."""

    settings: ClientSettings
    admin_url: str | None
    topic: str | None
    producer: dict[str, Any]
    checkpoint: str | None = None


def sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Check the options of a write (batch or streaming)."""
    plain, passed = _split_options(options, _SINK, "sink")
    url = plain.get("service.url")
    if not url:
        raise PulsarOptionError("option service.url is required (e.g. pulsar://localhost:6650)")
    # the client, when a query runs, not when the module loads: 200-350 ms CPU (python -X importtime)
    from magnetar.client.core.lookup import ServiceUrl

    try:
        ServiceUrl.parse(url)
    except Exception as exc:  # noqa: BLE001
        raise PulsarOptionError(f"option service.url: {exc}") from None
    if "path" in plain and "topic" in plain:
        raise PulsarOptionError("give the topic either as option topic or as the save() path, not both")
    topic = plain.get("topic") or plain.get("path")
    admin = plain.get("admin.url")
    if admin is not None and not re.match(r"^https?://", admin):
        raise PulsarOptionError(f"option admin.url must be an http:// or https:// URL, not {admin!r}")
    return SinkOptions(
        settings=ClientSettings(url, passed["pulsar.client."]),
        admin_url=admin,
        topic=_topic_name("topic", topic, False) if topic else None,
        producer=passed["pulsar.producer."],
        checkpoint=plain.get("checkpointLocation"),
    )
