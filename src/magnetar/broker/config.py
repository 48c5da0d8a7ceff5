"""Broker settings: defaults, environment variables, an optional configuration file and flags.

Precedence, highest first: command-line flags, the file given with ``--config``, ``MAGNETAR_*``
environment variables, the defaults below. Every setting is a field of :class:`BrokerConfig`; its
environment variable is ``MAGNETAR_`` + the field name in upper case (``MAGNETAR_FSYNC=never``).

The file is TOML (keys are field names, at the top level or in a ``[broker]`` table; the security
settings in a ``[security]`` table, see :class:`~magnetar.broker.security.SecuritySettings`) or
Pulsar's ``broker.conf`` / ``standalone.conf`` format (:mod:`magnetar.broker.pulsar_conf`),
recognised by extension or content. The security settings also come from ``MAGNETAR_*`` variables
(``MAGNETAR_AUTHENTICATION_ENABLED=true``) and from flags named by their field.
"""

from __future__ import annotations

import dataclasses
import operator
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from magnetar.broker.pulsar_conf import (
    PulsarConfError,
    load_pulsar_conf,
    looks_like_pulsar_conf,
    parse_properties,
)
from magnetar.broker.schema_strategy import parse_strategy
from magnetar.broker.security.errors import SecurityConfigError
from magnetar.broker.security.settings import PULSAR_SECURITY_KEYS, SecuritySettings
from magnetar.protocol.framing import FRAME_HEADROOM

MiB = 1024 * 1024
#: the fields of SecuritySettings, the names security settings take in TOML, the environment and flags
SECURITY_FIELDS = frozenset(f.name for f in dataclasses.fields(SecuritySettings))

FsyncPolicy = Literal["always", "never"]


def default_entry_cache_total_bytes() -> int:
    """The default budget of all entry caches: 1/64 of the machine's memory, at least 16 and at most
    64 MiB (a small box keeps its memory; catch-up readers beyond the cache read the page cache)."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError):
        return 64 * MiB
    return max(16 * MiB, min(64 * MiB, physical // 64))


class ConfigError(ValueError):
    """A setting has an unknown name or a value of the wrong kind."""


@dataclass(repr=False, eq=False)
class BrokerConfig:
    """Every tunable of a standalone broker, with its documented default."""

    #: where segment files and the SQLite metadata live
    data_dir: Path = field(default_factory=lambda: Path("data"))
    #: address the binary protocol and HTTP listeners bind to
    bind: str = "127.0.0.1"
    #: binary protocol port (Pulsar's 6650); None: no plain listener (TLS only)
    port: int | None = 6650
    #: HTTP port of the admin API, lookups and metrics; 0 disables plain HTTP
    http_port: int = 8080
    #: host name put in lookup answers; defaults to the bind address (localhost for 0.0.0.0)
    advertised_address: str | None = None
    #: largest message a producer may send, announced in CONNECTED
    max_message_size: int = 5 * MiB
    #: "always": SEND_RECEIPT only after an fsync covering the entry; "never": leave it to the OS
    fsync: FsyncPolicy = "always"
    #: a connection silent for this long gets a PING, and is closed after twice as long
    keepalive_seconds: float = 30.0
    #: "commit": acknowledgements are persisted in their own rounds soon after they change (the first
    #: at once, then at most ``mark_delete_rate_limit`` rounds a second); "delay": at most every
    #: ``cursor_persist_delay_seconds``
    cursor_persist: Literal["commit", "delay"] = "commit"
    #: with ``cursor_persist = "commit"``, most cursor rounds a second (Pulsar's
    #: managedLedgerDefaultMarkDeleteRateLimit; 0: a round right after every change). After a
    #: kill -9 a subscription gets back what was acknowledged in the last 1 / rate seconds
    mark_delete_rate_limit: float = 1.0
    #: with ``cursor_persist = "delay"``, longest delay before an acknowledgement is persisted
    cursor_persist_delay_seconds: float = 1.0
    #: a segment file rolls over past this size (Pulsar's managedLedgerMaxSizePerLedgerMbytes) ...
    segment_max_bytes: int = 64 * MiB
    #: ... or once this old (managedLedgerMaxLedgerRolloverTimeMinutes; 0: no age limit) ...
    segment_max_rollover_minutes: float = 240.0
    #: ... but never sooner than this after it was started or its topic loaded
    #: (managedLedgerMinLedgerRolloverTimeMinutes): a topic without subscriptions keeps that long
    segment_min_rollover_minutes: float = 10.0
    #: recent entries kept in memory per topic for dispatch (a reader up to this far behind the tail
    #: reads from memory, one further behind from the segment files on the read thread): 4 MiB keeps a
    #: producing topic's broker within ~10 MB of its idle size (issue 27); raise it, with
    #: entry_cache_eviction_seconds, for faster catch-up of readers a few seconds behind
    entry_cache_max_bytes: int = 4 * MiB
    #: all topics' entry caches together (a topic over the shared budget evicts its own oldest);
    #: by default 1/64 of the machine's memory, between 16 and 64 MiB (docs/CONFIGURATION.md)
    entry_cache_total_bytes: int = default_entry_cache_total_bytes()
    #: an entry leaves the cache this long after it was appended (Pulsar's
    #: managedLedgerCacheEvictionTimeThresholdMillis; 0: only the byte bounds evict): a reader further
    #: behind reads from the segment files (the page cache), at some CPU per entry
    entry_cache_eviction_seconds: float = 1.0
    #: entries a dispatcher reads at once, and hands out in one turn of the event loop
    dispatch_batch_entries: int = 100
    #: bytes a dispatcher hands out in one turn of the event loop (at least one entry)
    dispatch_max_read_bytes: int = 5 * MiB
    #: a consumer with this many unacked messages gets no more until it acks (0 = no limit)
    max_unacked_messages_per_consumer: int = 50000
    #: a subscription with this many unacked messages stops dispatching (0 = no limit)
    max_unacked_messages_per_subscription: int = 200000
    #: keep per-entry ack sets so only unacked messages of a batch are redelivered
    batch_index_ack_enabled: bool = True
    #: topics are created when a producer or consumer first uses them
    allow_auto_topic_creation: bool = True
    #: partitions of auto-created topics (0: auto-created topics are not partitioned)
    default_num_partitions: int = 0
    #: broker-side deduplication for namespaces and topics without their own policy
    deduplication_enabled: bool = False
    #: delayed messages are released on ticks of this length (never early, at most a tick late)
    delayed_delivery_tick_seconds: float = 1.0
    #: release delayed messages at their exact time instead of on ticks
    delayed_delivery_strict: bool = False
    #: Key_Shared AUTO_SPLIT consumer selector: "auto_split_hash_range" or "consistent_hashing"
    key_shared_selector: str = "auto_split_hash_range"
    #: retention of acknowledged messages when no policy sets it (-1 = forever, 0 = none)
    default_retention_minutes: int = 0
    default_retention_mb: int = 0
    #: message TTL when no policy sets it (0 = none)
    default_message_ttl_seconds: int = 0
    #: delete topics without producers and subscriptions after this many idle seconds (0 = never)
    inactive_topic_expiry_seconds: float = 0.0
    #: what makes a topic inactive (Pulsar's brokerDeleteInactiveTopicsMode): delete_when_no_subscriptions
    #: or delete_when_subscriptions_caught_up
    inactive_topic_delete_mode: str = "delete_when_no_subscriptions"
    #: rate limits when no policy sets one (0 = none; Pulsar's maxPublishRatePerTopicIn*,
    #: dispatchThrottlingRatePer*In*, subscribeThrottlingRatePerConsumer, subscribeRatePeriodPerConsumerInSecond)
    max_publish_rate_per_topic_messages: int = 0
    max_publish_rate_per_topic_bytes: int = 0
    dispatch_throttling_rate_per_topic_messages: int = 0
    dispatch_throttling_rate_per_topic_bytes: int = 0
    dispatch_throttling_rate_per_subscription_messages: int = 0
    dispatch_throttling_rate_per_subscription_bytes: int = 0
    dispatch_throttling_rate_per_replicator_messages: int = 0
    dispatch_throttling_rate_per_replicator_bytes: int = 0
    dispatch_throttling_rate_relative_to_publish_rate: bool = False
    subscribe_throttling_rate_per_consumer: int = 0
    subscribe_rate_period_per_consumer_seconds: int = 30
    #: delete durable subscriptions without consumers after this many minutes (0 = never)
    subscription_expiration_minutes: float = 0.0
    #: how often retention, TTL, backlog quotas, compaction thresholds and expiry are checked
    lifecycle_check_interval_seconds: float = 60.0
    #: compaction threshold (bytes not yet compacted) when no policy sets one; 0 = no automatic compaction
    compaction_threshold_bytes: int = 0
    #: limits (0 = none); refusals use Pulsar's error codes
    max_producers_per_topic: int = 0
    max_consumers_per_subscription: int = 0
    max_consumers_per_topic: int = 0
    max_topics_per_namespace: int = 0
    max_subscriptions_per_topic: int = 0
    #: durable subscriptions are created on first subscribe (a namespace or topic policy overrides)
    allow_auto_subscription_creation: bool = True
    max_connections: int = 0
    max_connections_per_ip: int = 0
    #: publish bytes appended but not yet acknowledged to producers, per connection and in all;
    #: past the limit the broker stops reading from producing connections until storage catches up;
    #: 16 MiB per connection is 0.5-1 s of a fast producer's 1 KiB messages, and each MiB of it is
    #: resident while its group commit runs (64 MiB made a 1 KiB producer's broker peak ~30 MB higher)
    max_pending_publish_bytes_per_connection: int = 16 * MiB
    max_pending_publish_bytes: int = 512 * MiB
    #: schema compatibility strategy when neither the topic nor its namespace sets one
    schema_compatibility_strategy: str = "FULL"
    #: producers and consumers may register new schema versions (namespace policy overrides)
    allow_auto_update_schema: bool = True
    #: refuse producers without a schema on topics that have one, in every namespace
    schema_validation_enforced: bool = False
    #: run the transaction coordinators, buffers and pending acks (Pulsar's transactionCoordinatorEnabled);
    #: off: TC_CLIENT_CONNECT is refused as on a Pulsar broker without transactions
    transaction_coordinator_enabled: bool = True
    #: partitions of pulsar/system/transaction_coordinator_assign: one coordinator (and log) each
    transaction_coordinator_count: int = 1
    #: log level of the "magnetar" loggers
    log_level: str = "INFO"
    #: this broker's cluster (Pulsar's clusterName): the local cluster of geo-replication
    cluster_name: str = "standalone"
    #: how this broker authenticates as a client, to itself and to other clusters (Pulsar's
    #: brokerClientAuthenticationPlugin / brokerClientAuthenticationParameters; "" for none)
    broker_client_authentication_plugin: str = ""
    broker_client_authentication_parameters: str = ""
    #: where a new replicator cursor starts: "latest" (Pulsar's replicationStartAt default) or "earliest"
    replication_start_at: str = "latest"
    #: SENDs a non-persistent topic's replicator keeps in flight; past them a message is dropped
    #: (Pulsar's replicationProducerQueueSize)
    replication_producer_queue_size: int = 1000
    #: authentication, authorization and TLS (with the TLS ports), under Pulsar's semantics
    security: SecuritySettings = field(default_factory=SecuritySettings)
    #: keys of a Pulsar configuration file that magnetar does not implement (logged at start-up)
    ignored_settings: list[str] = field(default_factory=list, repr=False, compare=False)

    # not hashable, as a dataclass with the generated __eq__ is not
    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        """Whether ``other`` is a BrokerConfig with equal fields (but ``ignored_settings``), as dataclass's generated
        __eq__ answers; written out: the generated one (a comparison of two tuples of 68 fields, compiled when the
        class is made) is a sixth of the class's cost, on every broker's start path."""
        if other.__class__ is self.__class__:
            return _compared_values(self) == _compared_values(other)
        return NotImplemented

    def __repr__(self) -> str:
        """The text dataclass's own __repr__ gives: every field with repr=True, by name."""
        # written out, not generated: the generated one (an f-string of every field, compiled when the class
        # is made) is 8 of the class's 17 ms (best of 30 at load 8), on every broker's start path
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self) if f.repr)
        return f"{type(self).__qualname__}({shown})"

    @property
    def max_frame_size(self) -> int:
        """Largest frame accepted on the wire: a full message plus command and metadata room."""
        return self.max_message_size + FRAME_HEADROOM

    @property
    def service_host(self) -> str:
        """Host name for broker URLs handed to clients."""
        if self.advertised_address:
            return self.advertised_address
        return "localhost" if self.bind in ("0.0.0.0", "::", "") else self.bind

    @property
    def tls_port(self) -> int | None:
        """The ``pulsar+ssl://`` port (``brokerServicePortTls``), or None."""
        return self.security.broker_service_port_tls

    @property
    def https_port(self) -> int | None:
        """The HTTPS port (``webServicePortTls``), or None."""
        return self.security.web_service_port_tls

    @property
    def broker_service_url(self) -> str:
        """The pulsar:// URL of this broker, as lookups return it (the TLS URL when there is no plain port)."""
        if self.port is None and self.tls_port is not None:
            return f"pulsar+ssl://{self.service_host}:{self.tls_port}"
        return f"pulsar://{self.service_host}:{self.port}"

    @property
    def broker_service_url_tls(self) -> str | None:
        """The pulsar+ssl:// URL of this broker (``brokerServiceUrlTls``), or None without a TLS port."""
        if self.tls_port is None:
            return None
        return f"pulsar+ssl://{self.service_host}:{self.tls_port}"

    @property
    def web_service_url(self) -> str:
        """The http:// URL of this broker's HTTP port (the HTTPS URL when plain HTTP is off)."""
        if not self.http_port and self.https_port is not None:
            return f"https://{self.service_host}:{self.https_port}"
        return f"http://{self.service_host}:{self.http_port}"

    @property
    def web_service_url_tls(self) -> str | None:
        """The https:// URL of this broker (``webServiceUrlTls``), or None without an HTTPS port."""
        if self.https_port is None:
            return None
        return f"https://{self.service_host}:{self.https_port}"

    def with_security(self, **changes: Any) -> None:
        """Change security settings in place (bound TLS ports, flags); validated as a whole."""
        try:
            self.security = dataclasses.replace(self.security, **changes)
        except SecurityConfigError as exc:
            raise ConfigError(str(exc)) from None

    @classmethod
    def load(
        cls,
        flags: Mapping[str, Any] | None = None,
        config_file: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> BrokerConfig:
        """Build a config from defaults, environment, configuration file and flags (flags win).

        ``flags`` holds only the flags the user actually gave (None values are ignored); a flag may
        name a security setting by its field (``broker_service_port_tls``). ConfigError names a bad
        setting in one line.
        """
        names = _setting_names(cls)
        values: dict[str, Any] = {}
        security: dict[str, Any] = {}
        env = os.environ if environ is None else environ
        for name in names | SECURITY_FIELDS:
            key = "MAGNETAR_" + name.upper()
            if key in env:
                (values if name in names else security)[name] = env[key]
        ignored: list[str] = []
        if config_file is not None:
            ignored = _load_file(Path(config_file), names, values, security)
        for key, value in (flags or {}).items():
            if value is None:
                continue
            if key in names:
                values[key] = value
            elif key in SECURITY_FIELDS:
                security[key] = value
            else:
                raise ConfigError(f"unknown setting {key!r}")
        try:
            values["security"] = SecuritySettings.from_values(security)
        except SecurityConfigError as exc:
            raise ConfigError(str(exc)) from None
        config = cls.from_values(values)
        config.ignored_settings = ignored
        return config

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> BrokerConfig:
        """Build a config from raw values (strings from the environment are converted)."""
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name not in values:
                continue
            if f.name == "security":
                security = values[f.name]
                if not isinstance(security, SecuritySettings):
                    raise ConfigError("setting 'security' must be a table of security settings")
                kwargs[f.name] = security
            elif f.name == "port" and (values[f.name] is None or str(values[f.name]).strip() == ""):
                kwargs[f.name] = None
            elif f.name != "ignored_settings":
                kwargs[f.name] = _convert(f.name, values[f.name], _type_of(cls, f))
        config = cls(**kwargs)
        config.validate()
        return config

    def validate(self) -> None:
        """Reject values that cannot work."""
        if self.fsync not in ("always", "never"):
            raise ConfigError(f"fsync must be 'always' or 'never', not {self.fsync!r}")
        if self.cursor_persist not in ("commit", "delay"):
            raise ConfigError(f"cursor_persist must be 'commit' or 'delay', not {self.cursor_persist!r}")
        if self.port is None and self.tls_port is None:
            raise ConfigError("brokerServicePort: no binary listener (the plain port is off and no brokerServicePortTls is set)")
        for name in ("port", "http_port"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= 65535:
                raise ConfigError(f"{name} must be between 0 and 65535, not {value}")
        if self.max_message_size < 1024:
            raise ConfigError("max_message_size must be at least 1024 bytes")
        for name in ("keepalive_seconds", "cursor_persist_delay_seconds"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive")
        if not self.mark_delete_rate_limit >= 0:
            raise ConfigError(f"mark_delete_rate_limit must be 0 or more, not {self.mark_delete_rate_limit}")
        if self.segment_max_bytes < 4096:
            raise ConfigError("segment_max_bytes must be at least 4096")
        for name in ("segment_min_rollover_minutes", "segment_max_rollover_minutes"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must not be negative")
        if parse_strategy(self.schema_compatibility_strategy) is None:
            raise ConfigError(
                "schema_compatibility_strategy must be one of ALWAYS_COMPATIBLE, ALWAYS_INCOMPATIBLE, "
                "BACKWARD, FORWARD, FULL, BACKWARD_TRANSITIVE, FORWARD_TRANSITIVE, FULL_TRANSITIVE, "
                f"not {self.schema_compatibility_strategy!r}"
            )
        self.schema_compatibility_strategy = str(parse_strategy(self.schema_compatibility_strategy))
        if not self.cluster_name or not all(c.isalnum() or c in "-_.=:" for c in self.cluster_name):
            raise ConfigError(f"cluster_name {self.cluster_name!r} is not a valid cluster name")
        if self.replication_start_at not in ("latest", "earliest"):
            raise ConfigError(f"replication_start_at must be 'latest' or 'earliest', not {self.replication_start_at!r}")
        if self.key_shared_selector not in ("auto_split_hash_range", "consistent_hashing"):
            raise ConfigError(
                "key_shared_selector must be 'auto_split_hash_range' or 'consistent_hashing', "
                f"not {self.key_shared_selector!r}"
            )
        if self.inactive_topic_delete_mode not in ("delete_when_no_subscriptions", "delete_when_subscriptions_caught_up"):
            raise ConfigError(
                "inactive_topic_delete_mode must be 'delete_when_no_subscriptions' or "
                f"'delete_when_subscriptions_caught_up', not {self.inactive_topic_delete_mode!r}"
            )


#: the values of the fields an equality compares, in their order, as a tuple
_compared_values = operator.attrgetter(*(f.name for f in dataclasses.fields(BrokerConfig) if f.compare))


def _setting_names(cls: type) -> set[str]:
    """The settings a file, the environment or a flag may give directly (not the security table)."""
    return {f.name for f in dataclasses.fields(cls)} - {"security", "ignored_settings"}


def _load_file(path: Path, names: set[str], values: dict[str, Any], security: dict[str, Any]) -> list[str]:
    """Read a TOML or Pulsar configuration file into ``values`` / ``security``; return the ignored keys."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8 text") from None
    if looks_like_pulsar_conf(path, text):
        try:
            conf = load_pulsar_conf(text, names)
        except PulsarConfError as exc:
            raise ConfigError(str(exc)) from None
        values.update(conf.settings)
        present = {PULSAR_SECURITY_KEYS[key] for key, value in parse_properties(text).items()
                   if key in PULSAR_SECURITY_KEYS and value.strip()}
        security.update({name: getattr(conf.security, name) for name in present})
        return conf.ignored
    # tomllib only for a TOML file: 4-6 ms of every broker start without one (python -X importtime)
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    table = data.pop("broker", {})
    if not isinstance(table, dict):
        raise ConfigError(f"config file {path}: [broker] must be a table")
    security_table = data.pop("security", {})
    if not isinstance(security_table, dict):
        raise ConfigError(f"config file {path}: [security] must be a table")
    data.update(table)
    for key, value in data.items():
        if key not in names:
            raise ConfigError(f"config file {path}: unknown setting {key!r}")
        values[key] = value
    security.update(security_table)
    return []


def _type_of(cls: type, f: dataclasses.Field) -> Any:
    hints = {"data_dir": Path, "advertised_address": str, "fsync": str, "port": int}
    if f.name in hints:
        return hints[f.name]
    return type(f.default)


def _convert(name: str, value: Any, kind: Any) -> Any:
    if value is None:
        return None
    try:
        if kind is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if kind is int:
            if isinstance(value, bool):
                raise ValueError(value)
            return int(value)
        if kind is float:
            return float(value)
        if kind is Path:
            return Path(value)
        return str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"setting {name!r}: {value!r} is not a valid {kind.__name__}") from None
