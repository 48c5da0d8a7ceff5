"""Broker metadata (clusters, tenants, namespaces, topics, cursors) in a SQLite database."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from pathlib import Path
from typing import Any

from magnetar.storage.health import storage_health
from magnetar.storage.metadata_schema import DB_FILE_NAME, SCHEMA_V1, SCHEMA_VERSION, create_database
from magnetar.storage.metadata_wal import WalSync

__all__ = [
    "DEFAULT_CLUSTER",
    "DEFAULT_NAMESPACE",
    "DEFAULT_TENANT",
    "MetadataConflictError",
    "MetadataError",
    "MetadataNotFoundError",
    "MetadataStore",
    "topic_namespace",
]

DEFAULT_CLUSTER = "standalone"
DEFAULT_TENANT = "public"
DEFAULT_NAMESPACE = "public/default"

#: key/value prefixes whose rows the store also holds in memory: the broker reads them per topic
#: on its loop (a topic's policies at each PRODUCER, its compacted-view pointer at each load)
MEMORY_KV_PREFIXES = ("topic-policies/", "compacted/")

#: set (by :func:`deferring_sync`) where a write's caller waits for :meth:`MetadataStore.sync_wal` itself
_DEFER_SYNC: ContextVar[bool] = ContextVar("magnetar_metadata_defer_sync", default=False)


@contextmanager
def deferring_sync() -> Iterator[None]:
    """Within: the store's writes commit without their fsync (see :meth:`MetadataStore.sync_wal`);
    the caller answers nobody before the sync that follows made them durable."""
    token = _DEFER_SYNC.set(True)
    try:
        yield
    finally:
        _DEFER_SYNC.reset(token)




class MetadataError(Exception):
    """Base class of metadata store errors."""


class MetadataConflictError(MetadataError, ValueError):
    """A create would duplicate an existing row, or a delete would orphan children."""


class MetadataNotFoundError(MetadataError, KeyError):
    """The named tenant, namespace or topic does not exist."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def topic_namespace(topic: str) -> str:
    """Return the ``tenant/namespace`` of a topic name like ``persistent://tenant/ns/topic``."""
    rest = topic.split("://", 1)[-1]
    parts = rest.split("/")
    if len(parts) < 3 or not all(parts[:3]):
        raise ValueError(f"invalid topic name {topic!r}")
    return f"{parts[0]}/{parts[1]}"


def _dumps(value: dict[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _prefix_query(prefix: str) -> tuple[str, tuple[Any, ...]]:
    """The SELECT of the key/value rows whose key starts with ``prefix``, and its parameters."""
    if prefix and prefix[-1] != chr(0x10FFFF):
        # a range of the primary key: the keys from ``prefix`` up to its successor are those it starts
        return "SELECT key, value FROM kv WHERE key >= ? AND key < ? ORDER BY key", (
            prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)
        )
    return "SELECT key, value FROM kv WHERE substr(key, 1, ?) = ? ORDER BY key", (len(prefix), prefix)


class MetadataStore:
    """Persistent broker metadata in ``<data_dir>/metadata.db`` (SQLite, WAL).

    Writes go through one connection under one lock; each thread reads through a connection of its
    own, so that a read (on the broker's loop) waits neither for another thread's commit nor for
    another thread's reads: in WAL mode a reader sees every transaction committed before its
    statement began.

    Nothing under the lock waits for the disk: commits are made with ``synchronous=NORMAL`` (no
    fsync) and no automatic checkpoint; a write is made durable after the lock is released, by an
    fsync of the write-ahead log on the writing thread before the write returns (or, within
    :func:`deferring_sync`, by :meth:`sync_wal` on the metadata thread), and the log is
    checkpointed on a connection of its own (:class:`~magnetar.storage.metadata_wal.WalSync`). So a
    write on the loop never waits for another thread's fsync or checkpoint.

    Namespaces, partitioned topics and the key/value rows under MEMORY_KV_PREFIXES are also held in memory (every row, read when the store opens,
    changed by this store's writes after they commit): the broker reads both on every lookup, and
    a SQLite call on its loop hands the GIL to the topic-load threads (benchmarks/PROFILES.md
    section 25). So one store must be the only writer of its database while it is open.
    """

    def __init__(self, data_dir: Path | str) -> None:
        """Open (creating if needed) the metadata database in ``data_dir``."""
        data_dir = Path(data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        self._path = data_dir / DB_FILE_NAME
        if not self._path.exists() and not Path(f"{self._path}-wal").exists():
            create_database(self._path)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._migrate()
            # from here on: no fsync and no checkpoint under the lock (see the class docstring)
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA wal_autocheckpoint=0")
            #: tenant -> its configuration as stored (JSON text): authorization reads it at every check
            self._tenants: dict[str, str] = dict(self._conn.execute("SELECT name, config FROM tenants"))
            #: namespace -> its policies as stored (JSON text)
            self._namespaces: dict[str, str] = dict(self._conn.execute("SELECT name, policies FROM namespaces"))
            #: partitioned topic -> its partition count
            self._partitioned: dict[str, int] = dict(self._conn.execute("SELECT name, partitions FROM partitioned_topics"))
            #: key -> value of every key/value row under MEMORY_KV_PREFIXES
            self._memory_kv: dict[str, bytes] = {}
            for prefix in MEMORY_KV_PREFIXES:
                sql, params = _prefix_query(prefix)
                self._memory_kv.update((key, bytes(value)) for key, value in self._conn.execute(sql, params))
        except BaseException:
            self._conn.close()
            raise
        self._local = threading.local()
        #: writes committed under :func:`deferring_sync` (their fsync left to :meth:`sync_wal`)
        self.deferred_commits = 0
        #: called (on the writing thread) after such a commit, when set: someone must run sync_wal;
        #: unset, writes commit with their fsync wherever they are made
        self.on_deferred_commit: Callable[[], None] | None = None
        #: every thread's read connection (closed with the store)
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        #: the fsync and checkpoint of the log, outside the write lock
        self.wal = WalSync(self._path)

    @classmethod
    def open(cls, data_dir: Path | str) -> MetadataStore:
        """Open the store in ``data_dir`` (same as the constructor)."""
        return cls(data_dir)

    @property
    def path(self) -> Path:
        """Path of the SQLite database file."""
        return self._path

    def close(self) -> None:
        """Close the database connections."""
        with self._readers_lock:
            readers, self._readers = self._readers, []
        for reader in readers:
            reader.close()
        self.wal.close()
        with self._lock:
            self._conn.close()

    def __enter__(self) -> MetadataStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- defaults and clusters ------------------------------------------------

    def ensure_defaults(self, cluster: str = DEFAULT_CLUSTER, admin_roles: list[str] | None = None,
                        namespace: bool = True) -> None:
        """Create the local ``cluster``, tenant ``public`` (administered by ``admin_roles``) and (with
        ``namespace``) namespace ``public/default`` if missing."""
        tenant_config = _dumps({"adminRoles": list(admin_roles or []), "allowedClusters": [cluster]})

        def created() -> None:
            self._tenants.setdefault(DEFAULT_TENANT, tenant_config)
            if namespace:
                self._namespaces.setdefault(DEFAULT_NAMESPACE, "{}")

        with self._tx(then=created) as db:
            db.execute("INSERT OR IGNORE INTO clusters (name, config) VALUES (?, ?)", (cluster, "{}"))
            db.execute(
                "INSERT OR IGNORE INTO tenants (name, config) VALUES (?, ?)",
                (DEFAULT_TENANT, tenant_config),
            )
            if namespace:
                db.execute(
                    "INSERT OR IGNORE INTO namespaces (name, tenant, policies) VALUES (?, ?, ?)",
                    (DEFAULT_NAMESPACE, DEFAULT_TENANT, "{}"),
                )

    def create_cluster(self, name: str, config: dict[str, Any] | None = None) -> None:
        """Register a cluster; raises MetadataConflictError if it exists."""
        with self._tx() as db:
            try:
                db.execute("INSERT INTO clusters (name, config) VALUES (?, ?)", (name, _dumps(config or {})))
            except sqlite3.IntegrityError as exc:
                raise MetadataConflictError(f"cluster {name!r} already exists") from exc

    def get_cluster(self, name: str) -> dict[str, Any] | None:
        """Return a cluster's configuration, or None."""
        row = self._one("SELECT config FROM clusters WHERE name = ?", (name,))
        return json.loads(row[0]) if row else None

    def update_cluster(self, name: str, config: dict[str, Any]) -> None:
        """Replace a cluster's configuration; raises MetadataNotFoundError if missing."""
        with self._tx() as db:
            cur = db.execute("UPDATE clusters SET config = ? WHERE name = ?", (_dumps(config), name))
            if cur.rowcount == 0:
                raise MetadataNotFoundError(f"cluster {name!r} does not exist")

    def delete_cluster(self, name: str) -> None:
        """Forget a cluster; raises MetadataNotFoundError if missing."""
        with self._tx() as db:
            if db.execute("DELETE FROM clusters WHERE name = ?", (name,)).rowcount == 0:
                raise MetadataNotFoundError(f"cluster {name!r} does not exist")

    def list_clusters(self) -> list[str]:
        """Return every cluster name, sorted."""
        return self._names("SELECT name FROM clusters ORDER BY name", ())

    # -- tenants --------------------------------------------------------------

    def create_tenant(self, name: str, config: dict[str, Any]) -> None:
        """Create a tenant; raises MetadataConflictError if it exists."""
        text = _dumps(config)
        with self._tx(then=partial(self._tenants.__setitem__, name, text)) as db:
            try:
                db.execute("INSERT INTO tenants (name, config) VALUES (?, ?)", (name, text))
            except sqlite3.IntegrityError as exc:
                raise MetadataConflictError(f"tenant {name!r} already exists") from exc

    def get_tenant(self, name: str) -> dict[str, Any] | None:
        """Return a tenant's configuration, or None (from memory: no statement, on any thread)."""
        text = self._tenants.get(name)
        return json.loads(text) if text is not None else None

    def list_tenants(self) -> list[str]:
        """Return every tenant name, sorted."""
        return sorted(self._tenants)

    def update_tenant(self, name: str, config: dict[str, Any]) -> None:
        """Replace a tenant's configuration; raises MetadataNotFoundError if missing."""
        text = _dumps(config)
        with self._tx(then=partial(self._tenants.__setitem__, name, text)) as db:
            cur = db.execute("UPDATE tenants SET config = ? WHERE name = ?", (text, name))
            if cur.rowcount == 0:
                raise MetadataNotFoundError(f"tenant {name!r} does not exist")

    def delete_tenant(self, name: str) -> None:
        """Delete a tenant that has no namespaces left."""
        with self._tx(then=partial(self._tenants.pop, name, None)) as db:
            if db.execute("SELECT 1 FROM namespaces WHERE tenant = ? LIMIT 1", (name,)).fetchone():
                raise MetadataConflictError(f"tenant {name!r} still has namespaces")
            if db.execute("DELETE FROM tenants WHERE name = ?", (name,)).rowcount == 0:
                raise MetadataNotFoundError(f"tenant {name!r} does not exist")

    # -- namespaces -----------------------------------------------------------

    def create_namespace(self, name: str, policies: dict[str, Any] | None = None) -> None:
        """Create namespace ``tenant/ns`` in an existing tenant."""
        tenant, sep, local = name.partition("/")
        if not sep or not tenant or not local or "/" in local:
            raise ValueError(f"invalid namespace name {name!r}")
        text = _dumps(policies or {})
        with self._tx(then=partial(self._namespaces.__setitem__, name, text)) as db:
            if not db.execute("SELECT 1 FROM tenants WHERE name = ?", (tenant,)).fetchone():
                raise MetadataNotFoundError(f"tenant {tenant!r} does not exist")
            try:
                db.execute(
                    "INSERT INTO namespaces (name, tenant, policies) VALUES (?, ?, ?)",
                    (name, tenant, text),
                )
            except sqlite3.IntegrityError as exc:
                raise MetadataConflictError(f"namespace {name!r} already exists") from exc

    def get_namespace(self, name: str) -> dict[str, Any] | None:
        """Return a namespace's policies, or None when it does not exist."""
        text = self._namespaces.get(name)
        return json.loads(text) if text is not None else None

    def list_namespaces(self, tenant: str) -> list[str]:
        """Return the namespaces (``tenant/ns``) of a tenant, sorted."""
        return self._names("SELECT name FROM namespaces WHERE tenant = ? ORDER BY name", (tenant,))

    def set_namespace_policies(self, name: str, policies: dict[str, Any]) -> None:
        """Replace a namespace's policies; raises MetadataNotFoundError if missing."""
        text = _dumps(policies)
        with self._tx(then=partial(self._namespaces.__setitem__, name, text)) as db:
            cur = db.execute("UPDATE namespaces SET policies = ? WHERE name = ?", (text, name))
            if cur.rowcount == 0:
                raise MetadataNotFoundError(f"namespace {name!r} does not exist")

    def delete_namespace(self, name: str) -> None:
        """Delete a namespace that has no topics or partitioned topics left."""
        with self._tx(then=partial(self._namespaces.pop, name, None)) as db:
            for table in ("topics", "partitioned_topics"):
                if db.execute(f"SELECT 1 FROM {table} WHERE namespace = ? LIMIT 1", (name,)).fetchone():
                    raise MetadataConflictError(f"namespace {name!r} still has topics")
            if db.execute("DELETE FROM namespaces WHERE name = ?", (name,)).rowcount == 0:
                raise MetadataNotFoundError(f"namespace {name!r} does not exist")

    # -- topics ---------------------------------------------------------------

    def get_or_create_topic(self, name: str, properties: dict[str, Any] | None = None) -> int:
        """Return the ledger id of a topic, creating the topic with a fresh id if needed.

        Ledger ids come from an AUTOINCREMENT column, so they are never reused, even
        after the topic is deleted. The namespace is not checked here.
        """
        namespace = topic_namespace(name)
        with self._tx() as db:
            row = db.execute("SELECT ledger_id FROM topics WHERE name = ?", (name,)).fetchone()
            if row:
                return int(row[0])
            cur = db.execute(
                "INSERT INTO topics (name, namespace, created_at, properties) VALUES (?, ?, ?, ?)",
                (name, namespace, time.time(), _dumps(properties or {})),
            )
            assert cur.lastrowid is not None
            return int(cur.lastrowid)

    def register_topic(self, name: str, ledger_id: int) -> bool:
        """Record a topic under an existing ledger id (repair); False when the name or id is taken."""
        with self._tx() as db:
            cur = db.execute(
                "INSERT OR IGNORE INTO topics (ledger_id, name, namespace, created_at, properties) VALUES (?, ?, ?, ?, ?)",
                (ledger_id, name, topic_namespace(name), time.time(), "{}"),
            )
            return cur.rowcount > 0

    def reserve_ledger_ids(self, upto: int) -> None:
        """New topics get ledger ids above ``upto`` (repair: ledgers on disk whose rows were lost)."""
        with self._tx() as db:
            row = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'topics'").fetchone()
            if row is None:
                db.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('topics', ?)", (upto,))
            elif row[0] < upto:
                db.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'topics'", (upto,))

    def get_topic(self, name: str) -> int | None:
        """Return the ledger id of a topic, or None."""
        row = self._one("SELECT ledger_id FROM topics WHERE name = ?", (name,))
        return int(row[0]) if row else None

    def get_topic_info(self, name: str) -> dict[str, Any] | None:
        """Return ``{"ledger_id", "created_at", "properties"}`` of a topic, or None."""
        row = self._one("SELECT ledger_id, created_at, properties FROM topics WHERE name = ?", (name,))
        if not row:
            return None
        return {"ledger_id": int(row[0]), "created_at": float(row[1]), "properties": json.loads(row[2])}

    def set_topic_properties(self, name: str, properties: dict[str, Any]) -> None:
        """Replace a topic's properties; raises MetadataNotFoundError if missing."""
        with self._tx() as db:
            cur = db.execute("UPDATE topics SET properties = ? WHERE name = ?", (_dumps(properties), name))
            if cur.rowcount == 0:
                raise MetadataNotFoundError(f"topic {name!r} does not exist")

    def list_topics(self, namespace: str | None = None) -> list[str]:
        """Return topic names, sorted; only those of ``namespace`` when given."""
        if namespace is None:
            return self._names("SELECT name FROM topics ORDER BY name", ())
        return self._names("SELECT name FROM topics WHERE namespace = ? ORDER BY name", (namespace,))

    def delete_topic(self, name: str) -> bool:
        """Delete a topic and its cursors; return False when it did not exist."""
        with self._tx() as db:
            db.execute("DELETE FROM cursors WHERE topic = ?", (name,))
            return db.execute("DELETE FROM topics WHERE name = ?", (name,)).rowcount > 0

    # -- partitioned topics ---------------------------------------------------

    def set_partitioned_topic(self, name: str, partitions: int) -> None:
        """Create or update the partition count of a partitioned topic."""
        if partitions <= 0:
            raise ValueError("partitions must be positive")
        namespace = topic_namespace(name)
        with self._tx(then=partial(self._partitioned.__setitem__, name, partitions)) as db:
            db.execute(
                "INSERT INTO partitioned_topics (name, namespace, partitions) VALUES (?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET partitions = excluded.partitions",
                (name, namespace, partitions),
            )

    def get_partitioned_topic(self, name: str) -> int | None:
        """Return the partition count of a partitioned topic, or None."""
        return self._partitioned.get(name)

    def delete_partitioned_topic(self, name: str) -> bool:
        """Delete a partitioned topic's metadata; return False when it did not exist."""
        with self._tx(then=partial(self._partitioned.pop, name, None)) as db:
            return db.execute("DELETE FROM partitioned_topics WHERE name = ?", (name,)).rowcount > 0

    def list_partitioned_topics(self, namespace: str | None = None) -> list[str]:
        """Return partitioned topic names, sorted; only those of ``namespace`` when given."""
        if namespace is None:
            return self._names("SELECT name FROM partitioned_topics ORDER BY name", ())
        return self._names(
            "SELECT name FROM partitioned_topics WHERE namespace = ? ORDER BY name", (namespace,)
        )

    # -- cursors --------------------------------------------------------------

    def save_cursors(self, items: list[tuple[str, str, bytes]]) -> None:
        """Upsert ``(topic, subscription, state)`` rows, all in one transaction."""
        with self._tx() as db:
            db.executemany(
                "INSERT INTO cursors (topic, subscription, state) VALUES (?, ?, ?) "
                "ON CONFLICT (topic, subscription) DO UPDATE SET state = excluded.state",
                items,
            )

    def load_cursors(self, topic: str) -> dict[str, bytes]:
        """Return the saved cursor states of a topic, keyed by subscription."""
        rows = self._reader().execute("SELECT subscription, state FROM cursors WHERE topic = ?", (topic,)).fetchall()
        return {sub: bytes(state) for sub, state in rows}

    def delete_cursor(self, topic: str, subscription: str) -> bool:
        """Delete one saved cursor; return False when it did not exist."""
        with self._tx() as db:
            cur = db.execute(
                "DELETE FROM cursors WHERE topic = ? AND subscription = ?", (topic, subscription)
            )
            return cur.rowcount > 0

    # -- generic key/value ----------------------------------------------------

    def put_kv(self, key: str, value: bytes) -> None:
        """Store ``value`` under ``key`` (overwriting)."""
        then = partial(self._memory_kv.__setitem__, key, bytes(value)) if key.startswith(MEMORY_KV_PREFIXES) else None
        with self._tx(then=then) as db:
            db.execute(
                "INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def get_kv(self, key: str) -> bytes | None:
        """Return the value stored under ``key``, or None."""
        if key.startswith(MEMORY_KV_PREFIXES):
            return self._memory_kv.get(key)
        row = self._one("SELECT value FROM kv WHERE key = ?", (key,))
        return bytes(row[0]) if row else None

    def delete_kv(self, key: str) -> bool:
        """Delete ``key``; return False when it did not exist."""
        then = partial(self._memory_kv.pop, key, None) if key.startswith(MEMORY_KV_PREFIXES) else None
        with self._tx(then=then) as db:
            return db.execute("DELETE FROM kv WHERE key = ?", (key,)).rowcount > 0

    def list_kv(self, prefix: str = "") -> dict[str, bytes]:
        """Return every key/value whose key starts with ``prefix``."""
        if prefix.startswith(MEMORY_KV_PREFIXES):
            return {key: value for key, value in sorted(self._memory_kv.items()) if key.startswith(prefix)}
        rows = self._reader().execute(*_prefix_query(prefix)).fetchall()
        return {key: bytes(value) for key, value in rows}

    # -- internals ------------------------------------------------------------

    @contextmanager
    def _tx(self, then: Callable[[], object] | None = None) -> Iterator[sqlite3.Connection]:
        """Run the body in one write transaction while holding the lock; ``then`` after it committed,
        still under the lock (what changes the in-memory rows, so they follow the database).

        The commit makes no fsync and no checkpoint (nothing under the lock waits on the disk).
        Within :func:`deferring_sync` (with a syncer set) the write is counted and announced and
        :meth:`sync_wal` makes it durable; otherwise the write is made durable here, after the lock is
        released, before returning (sqlite3.OperationalError when that fsync fails)."""
        deferred = self.on_deferred_commit if _DEFER_SYNC.get() else None
        with self._lock:
            changes = self._conn.total_changes
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException as exc:
                if isinstance(exc, sqlite3.OperationalError):
                    storage_health.write_failed(f"metadata write to {self._path}", exc, metadata=True)
                # Also when COMMIT itself failed (a full disk): never leave the transaction open.
                if self._conn.in_transaction:
                    try:
                        self._conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                raise
            wrote = self._conn.total_changes != changes
            if deferred is not None and wrote:
                self.deferred_commits += 1
            if then is not None:
                then()
        if not wrote:
            return
        if deferred is not None:
            deferred()
            return
        try:
            self.wal.sync()
        except OSError as exc:
            raise sqlite3.OperationalError(f"metadata write not made durable: {exc}") from exc

    def sync_wal(self) -> int:
        """Make every write committed so far durable (the metadata thread's job, off the loop): an
        fsync of the write-ahead log, which is what ``synchronous=FULL`` adds to a commit in WAL mode,
        then a checkpoint once the log is large. Returns :attr:`deferred_commits` as it was before the
        fsync (those are durable now); OSError when the fsync fails (nothing is known durable)."""
        target = self.deferred_commits  # counted after their COMMIT: their log frames are written
        self.wal.sync()
        return target

    def _reader(self) -> sqlite3.Connection:
        """This thread's read connection (opened on its first read)."""
        reader: sqlite3.Connection | None = getattr(self._local, "reader", None)
        if reader is None:
            reader = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
            with self._readers_lock:
                self._readers.append(reader)
            self._local.reader = reader
        return reader

    def _one(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        cursor = self._reader().execute(sql, params)
        try:
            return cursor.fetchone()
        finally:
            cursor.close()  # ends the statement's read transaction now, whatever holds the cursor

    def _names(self, sql: str, params: tuple[Any, ...]) -> list[str]:
        return [row[0] for row in self._reader().execute(sql, params).fetchall()]

    def _migrate(self) -> None:
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise MetadataError(f"{self._path} has schema version {version}, newer than {SCHEMA_VERSION}")
        if version == 0:
            # executescript commits implicitly, so run the DDL and version bump as one script.
            self._conn.executescript(f"BEGIN;{SCHEMA_V1}PRAGMA user_version = {SCHEMA_VERSION};COMMIT;")
